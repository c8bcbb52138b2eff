/**
 * Every dialect shares the frequency rule and the host states with dyndns2 (issue 31, docs/protocol.md, "Dialects"):
 * one host updated in turn through `/nic/update`, DuckDNS, dynv6, deSEC's `Authorization: Token`, and the RFC 2136
 * gateway, each with a new address; the fourth frequent request (frequency.maxFrequent 3) blocks it, whatever
 * dialect it came in, and every dialect then says so in its own words.
 */
import { expect } from 'chai';
import { requireBinariesOrSkip } from '../../src/lab/index.js';
import { BridgeEnv, ZONE } from '../support/bridge.js';
import { a, buildMessage, CLASS, keyFromOutput, readAnswer, sign, TYPE, udp } from '../support/gateway-client.js';

const UA = 'dialects-test/1.0 tests@example.test';

describe('dialects share one frequency rule (knotd)', function () {
  this.timeout(60000);
  let env: BridgeEnv;
  const label = `dial-${process.pid}`;
  const host = `${label}.${ZONE}`;

  before(async function () {
    requireBinariesOrSkip(this, ['redis-server', 'knotd', 'kdig']);
    env = await BridgeEnv.start({
      gateway: true,
      config: {
        frequency: { minInterval: 60, donatorMinInterval: 60, maxFrequent: 3 },
        dialects: { duckdns: { zone: ZONE } },
      },
    });
    await env.addAccount('dial', 'dial-account-pw-1');
    await env.addHost(host, 'dial');
  });
  after(async () => {
    await env?.stop();
  });

  it('five requests in five dialects: the first sets, three frequent ones pass, the fourth frequent blocks the host', async () => {
    const token = (await env.cliOk(['token', 'add', host])).trim().split('\n').at(-1)!;
    const key = keyFromOutput(await env.cliOk(['token', 'add', host, '--tsig']));
    const dyndns2 = (ip: string) =>
      env.get(`/nic/update?hostname=${host}&myip=${ip}`, { auth: ['dial', 'dial-account-pw-1'], ua: UA });
    const duckdns = (ip: string) => env.get(`/update?domains=${label}&token=${token}&ip=${ip}`, { ua: UA });
    const dynv6 = (ip: string) => env.get(`/api/update?zone=${host}&token=${token}&ipv4=${ip}`, { ua: UA });
    const desec = (ip: string) =>
      env.get(`/nic/update?hostname=${host}&myipv4=${ip}`, { ua: UA, headers: [`Authorization: Token ${token}`] });
    const gateway = async (ip: string) => {
      const message = buildMessage({
        zone: [{ name: ZONE }],
        updates: [
          { name: host, type: TYPE.A, klass: CLASS.ANY },
          { name: host, type: TYPE.A, klass: CLASS.IN, ttl: 60, rdata: a(ip) },
        ],
      });
      return readAnswer(await udp(env.gatewayPort, sign(message, key).message)).rcode;
    };
    expect((await dyndns2('192.0.2.1')).body).to.equal('good 192.0.2.1\n');
    expect((await duckdns('192.0.2.2')).body).to.equal('OK');
    expect((await dynv6('192.0.2.3')).body).to.equal('addresses updated');
    expect(await gateway('192.0.2.4')).to.equal('NOERROR');
    // The fourth frequent request, in deSEC's form: the host is blocked.
    expect((await desec('192.0.2.5')).body).to.equal('abuse\n');
    expect((await env.hostJson(host)).state).to.equal('blocked');
    expect(await env.ns.query(host, 'A')).to.deep.equal(['192.0.2.4']);
    // Every dialect now refuses it in its own words.
    expect((await dyndns2('192.0.2.6')).body).to.equal('abuse\n');
    expect((await duckdns('192.0.2.6')).body).to.equal('KO');
    const blocked = await dynv6('192.0.2.6');
    expect([blocked.status, blocked.headers['retry-after']]).to.deep.equal([429, '3600']);
    expect(await gateway('192.0.2.6')).to.equal('REFUSED');
    expect(await env.ns.query(host, 'A')).to.deep.equal(['192.0.2.4']);
    // host show: the last request (the gateway's, refused), and the day's counts of every dialect's requests.
    const shown = await env.cliOk(['host', 'show', host]);
    expect(shown).to.match(/^lastRequest: \d{4}-\d\d-\d\dT[\d:.]+Z abuse from 127\.0\.0\.1 agent "rfc2136"$/m);
    expect(shown).to.match(/^requests24h: good 4, nochg 0, refused 5, failed 0$/m);
  });
});
