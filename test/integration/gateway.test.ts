/**
 * The RFC 2136 gateway end to end (docs/protocol.md, "RFC 2136 gateway"): the real `serve` with the gateway on,
 * keys made by the real CLI, messages built byte by byte (every class and section nsupdate cannot be made to send),
 * knotd as the primary behind a counting proxy, redis-server. Each case asserts the rcode and TSIG of the answer,
 * the record the primary serves, what Redis recorded, and whether an UPDATE reached the primary.
 */
import { expect } from 'chai';
import { Redis } from 'ioredis';
import { requireBinariesOrSkip } from '../../src/lab/index.js';
import { Keys } from '../../src/store/keys.js';
import type { TsigKeyConfig } from '../../src/core/tsig.js';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { BridgeEnv, runCli, ZONE } from '../support/bridge.js';
import { BridgeCommands, clearLoginCounters } from '../support/bridge-commands.js';
import {
  a,
  aaaa,
  buildMessage,
  CLASS,
  keyFromOutput,
  readAnswer,
  sign,
  tcp,
  txt,
  TYPE,
  udp,
  type Answer,
  type MessageParts,
  type Rr,
} from '../support/gateway-client.js';
import { waitFor } from '../support/wait.js';

const KEYS = new Keys('ddns:');
let seq = 0;

describe('RFC 2136 gateway (knotd)', function () {
  this.timeout(60000);
  let env: BridgeEnv;
  let raw: Redis;

  before(async function () {
    requireBinariesOrSkip(this, ['redis-server', 'knotd', 'kdig']);
    env = await BridgeEnv.start({
      gateway: true,
      countDns: true,
      config: {
        frequency: { minInterval: 0.001, donatorMinInterval: 0.001 },
        credentials: { maxFailures: 3, window: 60, cooldown: 600 },
        junk: { threshold: 1000 },
        dns: { timeout: 1.5 },
      },
    });
    raw = new Redis(env.redis.url, { connectionName: 'gateway-test' });
  });
  after(async () => {
    raw?.disconnect();
    await env?.stop();
  });
  beforeEach(async () => {
    await clearLoginCounters(raw, KEYS);
  });

  /** A new account with host H (and host B), a key for H: [H, key, B]. */
  async function hostWithKey(
    args: string[] = [],
  ): Promise<{ host: string; key: TsigKeyConfig & { id: string }; other: string }> {
    const n = ++seq;
    const account = `gw${n}`;
    const host = `h${n}.${ZONE}`;
    const other = `b${n}.${ZONE}`;
    await env.addAccount(account, 'secret-pw-1');
    // The second host is independent of the first and its key: added side by side (one CLI process each).
    const [key] = await Promise.all([
      env
        .addHost(host, account)
        .then(async () => keyFromOutput(await env.cliOk(['token', 'add', host, '--tsig', ...args]))),
      env.addHost(other, account),
    ]);
    return { host, key, other };
  }

  function update(key: TsigKeyConfig, parts: MessageParts, over: 'udp' | 'tcp' = 'udp'): Promise<Answer> {
    const { message, mac } = sign(buildMessage({ zone: [{ name: ZONE }], ...parts }), key);
    return (over === 'udp' ? udp : tcp)(env.gatewayPort, message).then((r) => readAnswer(r, key, mac));
  }

  const del = (name: string, type: number): Rr => ({ name, type, klass: CLASS.ANY });
  const add = (name: string, type: number, rdata: Buffer): Rr => ({ name, type, klass: CLASS.IN, ttl: 60, rdata });
  const delValue = (name: string, type: number, rdata: Buffer): Rr => ({ name, type, klass: CLASS.NONE, rdata });
  const setA = (host: string, address: string): Rr[] => [del(host, TYPE.A), add(host, TYPE.A, a(address))];

  async function recorded(host: string): Promise<Record<string, unknown>> {
    return env.hostJson(host);
  }

  describe("changes of the key's own host", () => {
    it('delete + add of A: NOERROR signed with the key, the primary serves it, Redis records it; over TCP too', async () => {
      const { host, key } = await hostWithKey();
      const before = env.dnsMessages('update');
      const answer = await update(key, { updates: setA(host, '192.0.2.10') });
      expect(answer.rcode).to.equal('NOERROR');
      expect(answer.verified).to.equal(true);
      expect(env.dnsMessages('update')).to.equal(before + 1);
      expect(await env.ns.query(host, 'A')).to.deep.equal(['192.0.2.10']);
      expect((await recorded(host)).ipv4).to.equal('192.0.2.10');
      const overTcp = await update(key, { updates: [add(host, TYPE.AAAA, aaaa('2001:db8::10'))] }, 'tcp');
      expect(overTcp.rcode).to.equal('NOERROR');
      expect(overTcp.verified).to.equal(true);
      expect(await env.ns.query(host, 'AAAA')).to.deep.equal(['2001:db8::10']);
      expect(await env.ns.query(host, 'A')).to.deep.equal(['192.0.2.10']);
    });

    it('the same value again: NOERROR with no UPDATE sent to the primary', async () => {
      const { host, key } = await hostWithKey();
      expect((await update(key, { updates: setA(host, '192.0.2.11') })).rcode).to.equal('NOERROR');
      const before = env.dnsMessages('update');
      const again = await update(key, { updates: setA(host, '192.0.2.11') });
      expect(again.rcode).to.equal('NOERROR');
      expect(again.verified).to.equal(true);
      expect(env.dnsMessages('update')).to.equal(before);
    });

    it("an add without a delete replaces the family's address; two adds of one family are REFUSED", async () => {
      const { host, key } = await hostWithKey();
      await update(key, { updates: setA(host, '192.0.2.12') });
      expect((await update(key, { updates: [add(host, TYPE.A, a('192.0.2.13'))] })).rcode).to.equal('NOERROR');
      expect(await env.ns.query(host, 'A')).to.deep.equal(['192.0.2.13']);
      const before = env.dnsMessages('update');
      const two = await update(key, {
        updates: [add(host, TYPE.A, a('192.0.2.14')), add(host, TYPE.A, a('192.0.2.15'))],
      });
      expect(two.rcode).to.equal('REFUSED');
      expect(two.verified).to.equal(true);
      expect(env.dnsMessages('update')).to.equal(before);
      expect(await env.ns.query(host, 'A')).to.deep.equal(['192.0.2.13']);
    });

    it('a delete of the RRset alone removes that family; a delete of one value only when it is the recorded one', async () => {
      const { host, key } = await hostWithKey();
      await update(key, { updates: [...setA(host, '192.0.2.16'), add(host, TYPE.AAAA, aaaa('2001:db8::16'))] });
      const before = env.dnsMessages('update');
      const other = await update(key, { updates: [delValue(host, TYPE.A, a('192.0.2.99'))] });
      expect(other.rcode).to.equal('NOERROR');
      expect(env.dnsMessages('update')).to.equal(before);
      expect(await env.ns.query(host, 'A')).to.deep.equal(['192.0.2.16']);
      expect((await update(key, { updates: [delValue(host, TYPE.A, a('192.0.2.16'))] })).rcode).to.equal('NOERROR');
      expect(await env.ns.query(host, 'A')).to.deep.equal([]);
      expect((await recorded(host)).ipv4).to.equal(null);
      expect((await update(key, { updates: [del(host, TYPE.AAAA)] })).rcode).to.equal('NOERROR');
      expect(await env.ns.query(host, 'AAAA')).to.deep.equal([]);
      expect((await recorded(host)).ipv6).to.equal(null);
    });

    it('TXT at _acme-challenge: add, the lego form (delete set + add) keeps two values, delete one, delete the set', async () => {
      const { host, key } = await hostWithKey(['--acme-only']);
      const name = `_acme-challenge.${host}`;
      expect((await update(key, { updates: [add(name, TYPE.TXT, txt('value-one'))] })).rcode).to.equal('NOERROR');
      const lego = await update(key, { updates: [del(name, TYPE.TXT), add(name, TYPE.TXT, txt('value-two'))] });
      expect(lego.rcode).to.equal('NOERROR');
      expect(await env.ns.query(name, 'TXT')).to.deep.equal(['"value-one"', '"value-two"']);
      expect((await recorded(host)).txt).to.deep.equal(['value-one', 'value-two']);
      expect((await update(key, { updates: [delValue(name, TYPE.TXT, txt('value-one'))] })).rcode).to.equal('NOERROR');
      expect(await env.ns.query(name, 'TXT')).to.deep.equal(['"value-two"']);
      expect((await update(key, { updates: [del(name, TYPE.TXT)] })).rcode).to.equal('NOERROR');
      expect(await env.ns.query(name, 'TXT')).to.deep.equal([]);
      expect((await recorded(host)).txt).to.deep.equal([]);
    });
  });

  describe('scope: REFUSED, nothing forwarded, nothing changed', () => {
    it('another host of the same account, its own MX, NS or TXT, an address with an ACME-only key, address + TXT', async () => {
      const [{ host, key, other }, acme] = await Promise.all([hostWithKey(), hostWithKey(['--acme-only'])]);
      await update(key, { updates: setA(host, '192.0.2.20') });
      const before = env.dnsMessages('update');
      const mx = Buffer.concat([Buffer.from([0, 10]), Buffer.from([4, ...Buffer.from('mail'), 0])]);
      const cases: [TsigKeyConfig, Rr[]][] = [
        [key, setA(other, '192.0.2.21')],
        [key, [add(host, TYPE.MX, mx)]],
        [key, [add(host, TYPE.NS, Buffer.from([2, ...Buffer.from('ns'), 0]))]],
        [key, [add(host, TYPE.TXT, txt('not-here'))]],
        [key, [del(host, TYPE.ANY)]],
        [key, [add(`www.${host}`, TYPE.A, a('192.0.2.22'))]],
        [acme.key, setA(acme.host, '192.0.2.23')],
        [key, [...setA(host, '192.0.2.24'), add(`_acme-challenge.${host}`, TYPE.TXT, txt('x'))]],
      ];
      for (const [k, updates] of cases) {
        const answer = await update(k, { updates });
        expect(answer.rcode, JSON.stringify(updates.map((u) => [u.name, u.type]))).to.equal('REFUSED');
        expect(answer.verified).to.equal(true);
      }
      expect(env.dnsMessages('update')).to.equal(before);
      expect(await env.ns.query(other, 'A')).to.deep.equal([]);
      expect(await env.ns.query(host, 'A')).to.deep.equal(['192.0.2.20']);
      expect(await env.ns.query(host, 'MX')).to.deep.equal([]);
    });

    it('the zone section: another zone NOTAUTH, two entries FORMERR; a name outside the zone NOTZONE', async () => {
      const { host, key } = await hostWithKey();
      expect(
        (await update(key, { zone: [{ name: 'example.net' }], updates: setA(host, '192.0.2.30') })).rcode,
      ).to.equal('NOTAUTH');
      expect((await update(key, { zone: [{ name: ZONE }, { name: ZONE }], updates: [] })).rcode).to.equal('FORMERR');
      expect((await update(key, { zone: [{ name: ZONE, type: TYPE.A }], updates: [] })).rcode).to.equal('FORMERR');
      expect((await update(key, { updates: setA('h.example.net', '192.0.2.31') })).rcode).to.equal('NOTZONE');
      expect((await update(key, { updates: [{ name: host, type: TYPE.A, klass: CLASS.ANY, ttl: 5 }] })).rcode).to.equal(
        'FORMERR',
      );
      expect(await env.ns.query(host, 'A')).to.deep.equal([]);
    });

    it('an unsigned UPDATE: REFUSED; another opcode: NOTIMP; a response: no answer; garbage: FORMERR', async () => {
      const { host } = await hostWithKey();
      const unsigned = readAnswer(
        await udp(env.gatewayPort, buildMessage({ zone: [{ name: ZONE }], updates: setA(host, '192.0.2.32') })),
      );
      expect(unsigned.rcode).to.equal('REFUSED');
      const notify = readAnswer(await udp(env.gatewayPort, buildMessage({ opcode: 4, zone: [{ name: ZONE }] })));
      expect(notify.rcode).to.equal('NOTIMP');
      const response = buildMessage({ flags: 0x8000 | (5 << 11), zone: [{ name: ZONE }] });
      const silence = await udp(env.gatewayPort, response, 500).then(
        () => 'answered',
        (err: Error) => err.message,
      );
      expect(silence).to.equal('no answer');
      const garbage = Buffer.concat([
        buildMessage({ zone: [{ name: ZONE }] }).subarray(0, 12),
        Buffer.from([0xc0, 0x0c]),
      ]);
      garbage.writeUInt16BE(1, 4);
      expect(readAnswer(await udp(env.gatewayPort, garbage)).rcode).to.equal('FORMERR');
      expect(await env.ns.query(host, 'A')).to.deep.equal([]);
    });
  });

  describe('prerequisites against what the bridge records', () => {
    it('each kind of RFC 2136 §2.4, held and failed, with the rcodes of §3.2', async () => {
      const { host, key } = await hostWithKey();
      await update(key, { updates: setA(host, '192.0.2.40') });
      const p = (type: number, klass: number, rdata?: Buffer, name = host): Rr => ({ name, type, klass, rdata });
      const cases: [Rr[], string][] = [
        [[p(TYPE.ANY, CLASS.ANY)], 'NOERROR'],
        [[p(TYPE.ANY, CLASS.NONE)], 'YXDOMAIN'],
        [[p(TYPE.ANY, CLASS.ANY, undefined, `_acme-challenge.${host}`)], 'NXDOMAIN'],
        [[p(TYPE.A, CLASS.ANY)], 'NOERROR'],
        [[p(TYPE.AAAA, CLASS.ANY)], 'NXRRSET'],
        [[p(TYPE.AAAA, CLASS.NONE)], 'NOERROR'],
        [[p(TYPE.A, CLASS.NONE)], 'YXRRSET'],
        [[p(TYPE.A, CLASS.IN, a('192.0.2.40'))], 'NOERROR'],
        [[p(TYPE.A, CLASS.IN, a('192.0.2.41'))], 'NXRRSET'],
        [[p(TYPE.A, CLASS.IN, a('192.0.2.40')), p(TYPE.A, CLASS.IN, a('192.0.2.41'))], 'NXRRSET'],
      ];
      for (const [prerequisites, rcode] of cases) {
        const answer = await update(key, { prerequisites, updates: [] });
        expect(answer.rcode, JSON.stringify(prerequisites.map((r) => [r.type, r.klass]))).to.equal(rcode);
      }
      const before = env.dnsMessages('update');
      const guarded = await update(key, {
        prerequisites: [p(TYPE.A, CLASS.IN, a('192.0.2.99'))],
        updates: setA(host, '192.0.2.42'),
      });
      expect(guarded.rcode).to.equal('NXRRSET');
      expect(env.dnsMessages('update')).to.equal(before);
      const held = await update(key, {
        prerequisites: [p(TYPE.A, CLASS.IN, a('192.0.2.40'))],
        updates: setA(host, '192.0.2.42'),
      });
      expect(held.rcode).to.equal('NOERROR');
      expect(await env.ns.query(host, 'A')).to.deep.equal(['192.0.2.42']);
      const outside = await update(key, { prerequisites: [p(TYPE.A, CLASS.ANY, undefined, `x.${ZONE}`)], updates: [] });
      expect(outside.rcode).to.equal('REFUSED');
    });
  });

  describe('TSIG answers (RFC 8945)', () => {
    it('no such key: NOTAUTH/BADKEY unsigned; a wrong secret: NOTAUTH/BADSIG unsigned; a revoked key: BADKEY', async () => {
      const { host, key } = await hostWithKey();
      const unknown = await update({ ...key, name: `aaaaaaaaaaaa.${host}` }, { updates: setA(host, '192.0.2.50') });
      expect([unknown.rcode, unknown.tsigError, unknown.unsignedTsig]).to.deep.equal(['NOTAUTH', 17, true]);
      const wrong = await update({ ...key, secret: Buffer.alloc(32, 7) }, { updates: setA(host, '192.0.2.50') });
      expect([wrong.rcode, wrong.tsigError, wrong.unsignedTsig]).to.deep.equal(['NOTAUTH', 16, true]);
      const sha1 = await update({ ...key, algorithm: 'hmac-sha1' }, { updates: setA(host, '192.0.2.50') });
      expect([sha1.rcode, sha1.tsigError]).to.deep.equal(['NOTAUTH', 17]);
      await clearLoginCounters(raw, KEYS);
      await env.cliOk(['token', 'remove', key.id]);
      const revoked = await update(key, { updates: setA(host, '192.0.2.50') });
      expect([revoked.rcode, revoked.tsigError]).to.deep.equal(['NOTAUTH', 17]);
      expect(await env.ns.query(host, 'A')).to.deep.equal([]);
    });

    it('a clock 1000 s off: NOTAUTH/BADTIME, signed with the key, our time in Other Data', async () => {
      const { host, key } = await hostWithKey();
      const { message, mac } = sign(
        buildMessage({ zone: [{ name: ZONE }], updates: setA(host, '192.0.2.51') }),
        key,
        Math.floor(Date.now() / 1000) - 1000,
      );
      const answer = readAnswer(await udp(env.gatewayPort, message), key, mac);
      expect([answer.rcode, answer.tsigError, answer.unsignedTsig, answer.verified]).to.deep.equal([
        'NOTAUTH',
        18,
        false,
        true,
      ]);
      expect(await env.ns.query(host, 'A')).to.deep.equal([]);
    });

    it('bad signatures over TCP count like wrong passwords: past credentials.maxFailures the source is REFUSED, even with the right key; over UDP (forgeable sources) they do not count', async () => {
      const { host, key } = await hostWithKey();
      for (let i = 0; i < 3; i++)
        await update({ ...key, secret: Buffer.alloc(32, i) }, { updates: setA(host, '192.0.2.52') }, 'udp');
      expect((await update(key, { updates: setA(host, '192.0.2.51') })).rcode).to.equal('NOERROR');
      for (let i = 0; i < 3; i++)
        await update({ ...key, secret: Buffer.alloc(32, i) }, { updates: setA(host, '192.0.2.52') }, 'tcp');
      const refused = await update(key, { updates: setA(host, '192.0.2.52') });
      expect(refused.rcode).to.equal('REFUSED');
      expect(refused.counts[3]).to.equal(0);
      expect(await env.ns.query(host, 'A')).to.deep.equal(['192.0.2.51']);
    });
  });

  describe('no oracle: before every check passed, a right and a wrong secret look the same', () => {
    let commands: BridgeCommands;
    before(async () => {
      commands = await BridgeCommands.attach(env, raw, KEYS);
    });
    after(() => commands?.close());

    it("in the source's cool-down, and outside the key's --from: the same answer bytes and the same Redis commands", async () => {
      const [{ host, key }, ranged] = await Promise.all([hostWithKey(), hostWithKey(['--from', '198.51.100.0/24'])]);
      for (let i = 0; i < 3; i++)
        await update({ ...key, secret: Buffer.alloc(32, i) }, { updates: setA(host, '192.0.2.53') }, 'tcp');
      const observe = async (k: TsigKeyConfig, h: string): Promise<[string, string[][]]> => {
        await commands.settle(raw);
        const mark = commands.mark();
        const { message } = sign(
          buildMessage({ id: 4242, zone: [{ name: ZONE }], updates: setA(h, '192.0.2.54') }),
          k,
          1_800_000_000,
        );
        const bytes = await udp(env.gatewayPort, message);
        await commands.settle(raw);
        return [bytes.toString('hex'), commands.since(mark)];
      };
      const right = await observe(key, host);
      const wrong = await observe({ ...key, secret: Buffer.alloc(32, 9) }, host);
      expect(readAnswer(Buffer.from(right[0], 'hex')).rcode).to.equal('REFUSED');
      expect(wrong).to.deep.equal(right);
      await clearLoginCounters(raw, KEYS);
      const rightRanged = await observe(ranged.key, ranged.host);
      const wrongRanged = await observe({ ...ranged.key, secret: Buffer.alloc(32, 9) }, ranged.host);
      expect(readAnswer(Buffer.from(rightRanged[0], 'hex')).rcode).to.equal('REFUSED');
      expect(wrongRanged).to.deep.equal(rightRanged);
    });
  });

  describe("the update path's rules", () => {
    it('a closed host: REFUSED; the primary failing: SERVFAIL with the recorded state untouched', async () => {
      const { host, key } = await hostWithKey();
      await update(key, { updates: setA(host, '192.0.2.60') });
      await env.cliOk(['host', 'close', host]);
      expect((await update(key, { updates: setA(host, '192.0.2.61') })).rcode).to.equal('REFUSED');
      await env.cliOk(['host', 'reopen', host]);
      env.delayDns(5000);
      try {
        const failed = await update(key, { updates: setA(host, '192.0.2.62') }, 'tcp');
        expect(failed.rcode).to.equal('SERVFAIL');
        expect(failed.verified).to.equal(true);
      } finally {
        env.delayDns(0);
      }
      expect((await recorded(host)).ipv4).to.equal('192.0.2.60');
      await waitFor(async () => (await env.ns.query(host, 'A')).join() === '192.0.2.60', {
        what: 'the primary to serve the recorded state',
      });
    });
  });

  describe('zone discovery', () => {
    it('SOA at the apex in the answer with AA; below it in the authority section; outside REFUSED; signed when asked signed', async () => {
      const { host, key } = await hostWithKey();
      const query = (name: string, type: number = TYPE.SOA) => buildMessage({ opcode: 0, zone: [{ name, type }] });
      const apex = readAnswer(await udp(env.gatewayPort, query(ZONE)));
      expect([apex.rcode, apex.aa, apex.counts]).to.deep.equal(['NOERROR', true, [1, 1, 0, 0]]);
      const below = readAnswer(await udp(env.gatewayPort, query(`_acme-challenge.${host}`)));
      expect([below.rcode, below.aa, below.counts]).to.deep.equal(['NOERROR', true, [1, 0, 1, 0]]);
      expect(readAnswer(await udp(env.gatewayPort, query('example.net'))).rcode).to.equal('REFUSED');
      expect(readAnswer(await udp(env.gatewayPort, query(ZONE, TYPE.A))).rcode).to.equal('REFUSED');
      const { message, mac } = sign(query(host), key);
      const signed = readAnswer(await tcp(env.gatewayPort, message), key, mac);
      expect([signed.rcode, signed.verified]).to.deep.equal(['NOERROR', true]);
    });
  });

  describe('keys on the command line', () => {
    it('token add --tsig: the three forms; token list shows the kind; export holds no secret; no gateway: a clear error', async () => {
      const { host, key } = await hostWithKey(['--algorithm', 'hmac-sha384']);
      expect(key.algorithm).to.equal('hmac-sha384');
      expect(key.secret).to.have.length(48);
      const listed = JSON.parse(await env.cliOk(['token', 'list', host, '--json'])) as { id: string; tsig: string }[];
      expect(listed.map((t) => [t.id, t.tsig])).to.deep.equal([[key.id, 'hmac-sha384']]);
      const exported = await env.cliOk(['export']);
      expect(exported).to.include(`"tsig":"hmac-sha384"`);
      expect(exported).to.not.include(key.secret.toString('base64'));
      const { gateway: _omitted, ...withoutGateway } = env.config;
      const file = path.join(env.dir, 'no-gateway.json');
      await writeFile(file, JSON.stringify(withoutGateway), { mode: 0o600 });
      const refused = await runCli(['token', 'add', host, '--tsig', '--config', file]);
      expect(refused.code).to.equal(2);
      expect(refused.stderr).to.include('TSIG keys need the RFC 2136 gateway: set gateway.keyFile in the config');
    });
  });

  describe('the frequency rule, shared with HTTP (last: it reloads the config)', () => {
    it('the frequency rule counts gateway UPDATEs; past frequency.maxFrequent the host is blocked, for HTTP too', async () => {
      const { host, key } = await hostWithKey();
      await env.writeConfig({ frequency: { minInterval: 60, donatorMinInterval: 60, maxFrequent: 2 } });
      const reloads = env.logs.join('').split('"msg":"reloaded"').length;
      env.serves[0]!.kill('SIGHUP');
      await waitFor(() => env.logs.join('').split('"msg":"reloaded"').length > reloads, { what: 'the reload' });
      expect((await update(key, { updates: setA(host, '192.0.2.70') })).rcode).to.equal('NOERROR');
      expect((await update(key, { updates: setA(host, '192.0.2.71') })).rcode).to.equal('NOERROR');
      expect((await update(key, { updates: setA(host, '192.0.2.72') })).rcode).to.equal('NOERROR');
      const blocked = await update(key, { updates: setA(host, '192.0.2.73') });
      expect([blocked.rcode, blocked.verified]).to.deep.equal(['REFUSED', true]);
      expect((await recorded(host)).state).to.equal('blocked');
      expect(await env.ns.query(host, 'A')).to.deep.equal(['192.0.2.72']);
      // The account's password over HTTP meets the same block.
      const account = `gw${host.slice(1, host.indexOf('.'))}`;
      const http = await env.get(`/nic/update?hostname=${host}&myip=192.0.2.74`, { auth: [account, 'secret-pw-1'] });
      expect(http.body).to.equal('abuse\n');
    });
  });

  describe('afterwards', () => {
    it('each answer was logged at debug, and no error line', () => {
      expect(env.logs.join('')).to.include('"msg":"gateway answer"');
      expect(env.logs.join('')).to.not.match(/"level":"error"/);
    });
  });
});
