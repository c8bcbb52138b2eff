/**
 * The fast path end to end: real `ddns-bridge serve`, real redis-server and knotd. A request
 * whose credentials were verified recently costs ONE Redis round trip (the guarded admit),
 * counted with MONITOR; every check the full path makes (password, cool-downs, junk block,
 * agent block list, donator flag) still applies at once. Replies are checked byte for byte.
 */
import { expect } from 'chai';
import { Redis } from 'ioredis';
import { BridgeEnv, ZONE, expectedReply, sleep } from '../support/bridge.js';
import { requireBinariesOrSkip } from '../../src/lab/index.js';
import { AGENT_LIST_CACHE_MS } from '../../src/store/client-policy.js';
import { Keys } from '../../src/store/keys.js';
import { BridgeCommands, clearLoginCounters, isCommitOf, isGuardedAdmitOf } from '../support/bridge-commands.js';

const OK = (body: string) => expectedReply(200, 'OK', body);
const BADAUTH = expectedReply(401, 'Unauthorized', 'badauth\n', ['WWW-Authenticate: Basic realm="ddns-bridge"']);
const PREFIX = 'ddns:';
const KEYS = new Keys(PREFIX);
const PENDING = KEYS.pendingChanges();
/** How long to wait after a reply before reading what MONITOR saw. */
const SETTLE_MS = 150;

let seq = 0;
const uniq = (label: string) => `${label}-${process.pid}-${++seq}.${ZONE}`;
/** The agent of the credential-less requests that refresh the bridge's block list (see prime). */
const PRIMER = `FastPath-primer/${process.pid} tests@example.test`;
const agent = (label: string) => `FastPath-${label}/${process.pid}.${++seq} tests@example.test`;

describe('fast path: one Redis round trip for verified credentials (knot)', function () {
  this.timeout(60000);
  let env: BridgeEnv;
  let raw: Redis;
  let commands: BridgeCommands;

  before(async function () {
    requireBinariesOrSkip(this, ['redis-server', 'knotd', 'dig']);
    env = await BridgeEnv.start({
      kind: 'knot',
      config: {
        frequency: { minInterval: 0.01, donatorMinInterval: 0.01 },
        credentials: { maxFailures: 3, window: 60, cooldown: 1.5, cacheTtl: 3600 },
        junk: { threshold: 5, window: 60, block: 60 },
        dns: { timeout: 2 },
      },
      records: [`mail.${ZONE}. 60 IN A 192.0.2.25`],
    });
    raw = new Redis(env.redis.url, { connectionName: 'fast-path-test' });
    commands = await BridgeCommands.attach(env, raw, KEYS);
  });

  after(async () => {
    commands?.close();
    raw?.disconnect();
    await env?.stop();
  });

  // Each test starts with a clean record for 127.0.0.1: no failure counts, cool-downs or junk.
  beforeEach(async () => {
    await clearLoginCounters(raw, KEYS);
  });

  const update = (query: string, creds: [string, string], ua: string) =>
    env.get(`/nic/update?${query}`, { auth: creds, ua });

  /**
   * Make sure the bridge's copy of the agent block list is fresh (it is kept 2 s and, once a
   * request asked for a verdict, refetched in the background every second), so the next
   * request may take the fast path. A
   * request without credentials takes the full path and costs nothing (a credential challenge
   * is neither a failure nor junk). When the copy was still fresh, its age is known from
   * MONITOR: wait until it is stale and ask again.
   */
  async function prime(): Promise<void> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const r = await env.get('/nic/update?hostname=x', { ua: PRIMER });
      expect(r.raw.toString()).to.equal(BADAUTH);
      await sleep(SETTLE_MS);
      const fetched = commands.lastListFetch();
      if (fetched !== undefined && Date.now() - fetched < 1000) return;
      await sleep(fetched === undefined ? 0 : Math.max(0, fetched + AGENT_LIST_CACHE_MS + 100 - Date.now()));
    }
    throw new Error('the bridge did not refresh its agent block list');
  }

  /**
   * Prime, send, wait for MONITOR to catch up: the reply and what the bridge sent Redis for
   * this request alone.
   */
  async function measured(
    query: string,
    creds: [string, string],
    ua: string,
  ): Promise<{ reply: string; sent: string[][] }> {
    await prime();
    const mark = commands.mark();
    const r = await update(query, creds, ua);
    await sleep(SETTLE_MS);
    return { reply: r.raw.toString(), sent: commands.since(mark) };
  }

  async function account(
    name: string,
    opts: { donator?: boolean; hosts?: number } = {},
  ): Promise<{ creds: [string, string]; hosts: string[] }> {
    const creds: [string, string] = [name, `${name}-secret-pw`];
    await env.addAccount(name, creds[1], opts.donator ?? false);
    const hosts: string[] = [];
    for (let i = 0; i < (opts.hosts ?? 1); i++) {
      const h = uniq(name);
      await env.addHost(h, name);
      hosts.push(h);
    }
    return { creds, hosts };
  }

  it('a repeated request is nochg in exactly ONE Redis command; a change costs exactly two (admit + commit)', async () => {
    const {
      creds,
      hosts: [h],
    } = await account('una');
    const ua = agent('una');
    // First: the fast path's guarded admission for credentials it does not know (refused at the
    // password check, as a wrong password is), then the full path verifies the password (login
    // lookup, admit, commit).
    const first = await measured(`hostname=${h}&myip=192.0.2.1`, creds, ua);
    expect(first.reply).to.equal(OK('good 192.0.2.1\n'));
    expect(first.sent.length).to.be.above(2);
    // The full path admits with the guard too: a password changed after its check stops it.
    expect(first.sent.filter(isGuardedAdmitOf(KEYS, h!))).to.have.length(2);

    // Repeated: one guarded admit and nothing else.
    const again = await measured(`hostname=${h}&myip=192.0.2.1`, creds, ua);
    expect(again.reply).to.equal(OK('nochg 192.0.2.1\n'));
    expect(again.sent, JSON.stringify(again.sent)).to.have.length(1);
    expect(isGuardedAdmitOf(KEYS, h!)(again.sent[0]!)).to.equal(true);

    // Once the script is known on the connection it goes as EVALSHA.
    const third = await measured(`hostname=${h}&myip=192.0.2.1`, creds, ua);
    expect(third.reply).to.equal(OK('nochg 192.0.2.1\n'));
    expect(third.sent, JSON.stringify(third.sent)).to.have.length(1);
    expect(third.sent[0]![0]!.toLowerCase()).to.equal('evalsha');
    expect(isGuardedAdmitOf(KEYS, h!)(third.sent[0]!)).to.equal(true);

    // A change on the fast path: the guarded admit, then the commit of the same lease.
    const change = await measured(`hostname=${h}&myip=192.0.2.2`, creds, ua);
    expect(change.reply).to.equal(OK('good 192.0.2.2\n'));
    expect(change.sent, JSON.stringify(change.sent)).to.have.length(2);
    const [admit, commit] = change.sent as [string[], string[]];
    expect(isGuardedAdmitOf(KEYS, h!)(admit)).to.equal(true);
    // guarded ARGV: blinded digest (a nonce and a SHA-1: lua.ts blindDigest), donator,
    // passwordOnly (the fast path: empty), account, minInterval, maxFrequent, leaseMs, token, …
    expect(admit.slice(9, 13)).to.deep.equal([admit[9]!, '0', '', 'una']);
    expect(admit[9]).to.match(/^[0-9a-f]{72}$/);
    const token = admit[16]!;
    expect(isCommitOf(KEYS, h!, token)(commit), JSON.stringify(commit)).to.equal(true);

    expect(await env.ns.query(h!, 'A')).to.deep.equal(['192.0.2.2']);
    expect(await env.hostJson(h!)).to.include({ ipv4: '192.0.2.2', state: 'active' });
    expect(await raw.hexists(KEYS.host(h!), 'lk')).to.equal(0);
    expect(await raw.zcard(PENDING)).to.equal(0);
  });

  it('a sparse client still gets one round trip: the block list is refreshed in the background, not by requests', async () => {
    const {
      creds,
      hosts: [h],
    } = await account('sparse');
    const ua = agent('sparse');
    expect((await update(`hostname=${h}&myip=192.0.2.9`, creds, ua)).raw.toString()).to.equal(OK('good 192.0.2.9\n'));
    // No request for longer than the list is trusted (2 s): only the background refresh keeps it fresh.
    await sleep(AGENT_LIST_CACHE_MS + 700);
    const mark = commands.mark();
    const r = await update(`hostname=${h}&myip=192.0.2.9`, creds, ua);
    await sleep(SETTLE_MS);
    expect(r.raw.toString()).to.equal(OK('nochg 192.0.2.9\n'));
    const sent = commands.since(mark);
    expect(sent, JSON.stringify(sent)).to.have.length(1);
    expect(isGuardedAdmitOf(KEYS, h!)(sent[0]!)).to.equal(true);
  });

  it('a password change takes effect at once: the old password gets badauth, nothing changes; the new one works', async () => {
    const {
      creds,
      hosts: [h],
    } = await account('pat');
    const ua = agent('pat');
    expect((await update(`hostname=${h}&myip=192.0.2.10`, creds, ua)).raw.toString()).to.equal(OK('good 192.0.2.10\n'));
    const cached = await measured(`hostname=${h}&myip=192.0.2.10`, creds, ua);
    expect(cached.reply).to.equal(OK('nochg 192.0.2.10\n'));
    expect(cached.sent).to.have.length(1); // the credentials are cached: fast path

    await env.cliOk(['account', 'passwd', 'pat'], 'pat-new-pw\n');
    const hostBefore = await raw.hgetall(KEYS.host(h!));
    const old = await measured(`hostname=${h}&myip=192.0.2.11`, creds, ua);
    expect(old.reply).to.equal(BADAUTH);
    // The fast path was tried (and refused by the guard), then the full path said why.
    expect(old.sent.some(isGuardedAdmitOf(KEYS, h!))).to.equal(true);
    expect(old.sent.length).to.be.above(1);
    expect(await raw.hgetall(KEYS.host(h!))).to.deep.equal(hostBefore);
    expect(await env.hostJson(h!)).to.include({ ipv4: '192.0.2.10', state: 'active' });
    expect(await env.ns.query(h!, 'A')).to.deep.equal(['192.0.2.10']);

    const fresh: [string, string] = ['pat', 'pat-new-pw'];
    expect((await update(`hostname=${h}&myip=192.0.2.11`, fresh, ua)).raw.toString()).to.equal(OK('good 192.0.2.11\n'));
    expect(await env.ns.query(h!, 'A')).to.deep.equal(['192.0.2.11']);
    const after = await measured(`hostname=${h}&myip=192.0.2.11`, fresh, ua);
    expect(after.reply).to.equal(OK('nochg 192.0.2.11\n'));
    expect(after.sent).to.have.length(1);
    // and the old password stays refused
    expect((await update(`hostname=${h}&myip=192.0.2.12`, creds, ua)).raw.toString()).to.equal(BADAUTH);
    expect((await env.hostJson(h!)).ipv4).to.equal('192.0.2.11');
  });

  it('an account removed and made again under its name: the old password, still cached, gets badauth at once', async () => {
    const {
      creds,
      hosts: [h],
    } = await account('rex');
    const ua = agent('rex');
    expect((await update(`hostname=${h}&myip=192.0.2.20`, creds, ua)).raw.toString()).to.equal(OK('good 192.0.2.20\n'));
    const cached = await measured(`hostname=${h}&myip=192.0.2.20`, creds, ua);
    expect(cached.sent).to.have.length(1); // fast path: the credentials are cached (for an hour here)

    // The same name again, another password, the same host name: the cache entry is fresh but
    // was verified against the old account's hash.
    await env.cliOk(['host', 'remove', h!]);
    await env.cliOk(['account', 'remove', 'rex']);
    await env.addAccount('rex', 'rex-other-pw');
    await env.addHost(h!, 'rex');
    const old = await measured(`hostname=${h}&myip=192.0.2.22`, creds, ua);
    expect(old.reply).to.equal(BADAUTH);
    expect(old.sent.some(isGuardedAdmitOf(KEYS, h!)), 'the fast path was tried and refused by its guard').to.equal(
      true,
    );
    expect(await raw.hgetall(KEYS.host(h!))).to.not.have.property('fl');
    expect(await env.ns.query(h!, 'A')).to.deep.equal([]);
    expect((await update(`hostname=${h}&myip=192.0.2.22`, ['rex', 'rex-other-pw'], ua)).raw.toString()).to.equal(
      OK('good 192.0.2.22\n'),
    );
  });

  it('an account removed: badauth at once; the next request costs what credentials never verified cost', async () => {
    const {
      creds,
      hosts: [h],
    } = await account('rox');
    const ua = agent('rox');
    expect((await update(`hostname=${h}&myip=192.0.2.30`, creds, ua)).raw.toString()).to.equal(OK('good 192.0.2.30\n'));
    expect((await measured(`hostname=${h}&myip=192.0.2.30`, creds, ua)).sent).to.have.length(1);

    await env.cliOk(['host', 'remove', h!]);
    await env.cliOk(['account', 'remove', 'rox']);
    const first = await measured(`hostname=${h}&myip=192.0.2.31`, creds, ua);
    expect(first.reply).to.equal(BADAUTH);
    expect(first.sent.some(isGuardedAdmitOf(KEYS, h!)), 'still cached: the guard refused it').to.equal(true);
    const second = await measured(`hostname=${h}&myip=192.0.2.31`, creds, ua);
    expect(second.reply).to.equal(BADAUTH);
    // Cached or forgotten, the same commands: the admission for credentials nobody verified
    // (docs/security.md, "No password oracle"), then the full path's unknown user.
    const shape = (sent: string[][]) =>
      sent.map((c) => c.map((a) => (/^[0-9a-f]{72}$|^[0-9a-f-]{36}$/.test(a) ? '<random>' : a.toLowerCase())));
    expect(shape(second.sent)).to.deep.equal(shape(first.sent));
  });

  it('the login cool-down applies on the fast path: the right password gets badauth, the host is unchanged', async () => {
    const {
      creds,
      hosts: [h],
    } = await account('cody');
    const ua = agent('cody');
    expect((await update(`hostname=${h}&myip=192.0.2.20`, creds, ua)).raw.toString()).to.equal(OK('good 192.0.2.20\n'));
    // maxFailures (3) wrong passwords from the same source start the cool-down.
    for (let i = 0; i < 3; i++) {
      expect((await update(`hostname=${h}&myip=192.0.2.21`, ['cody', `wrong-${i}`], ua)).raw.toString()).to.equal(
        BADAUTH,
      );
    }
    expect(await raw.exists(KEYS.cooldownBySource('127.0.0.1'))).to.equal(1);
    expect(await raw.exists(KEYS.cooldownByAccount('cody'))).to.equal(1);
    const hostBefore = await raw.hgetall(KEYS.host(h!));
    const refused = await measured(`hostname=${h}&myip=192.0.2.21`, creds, ua);
    expect(refused.reply).to.equal(BADAUTH);
    expect(refused.sent.some(isGuardedAdmitOf(KEYS, h!))).to.equal(true);
    expect(await raw.hgetall(KEYS.host(h!))).to.deep.equal(hostBefore);
    expect((await env.hostJson(h!)).ipv4).to.equal('192.0.2.20');
    expect(await env.ns.query(h!, 'A')).to.deep.equal(['192.0.2.20']);

    // The cool-down (1.5 s) over, the same request is served.
    await sleep(1700);
    expect((await update(`hostname=${h}&myip=192.0.2.21`, creds, ua)).raw.toString()).to.equal(OK('good 192.0.2.21\n'));
    expect(await env.ns.query(h!, 'A')).to.deep.equal(['192.0.2.21']);
  });

  it('a junk block applies on the fast path: badagent, nothing changes; another agent is not affected', async () => {
    const {
      creds,
      hosts: [h],
    } = await account('judy');
    const ua = agent('judy');
    expect((await update(`hostname=${h}&myip=192.0.2.30`, creds, ua)).raw.toString()).to.equal(OK('good 192.0.2.30\n'));
    // junk.threshold (5) junk replies for the same (source, agent): names nobody registered.
    for (let i = 0; i < 5; i++) {
      expect((await update(`hostname=${uniq('nobody')}&myip=192.0.2.31`, creds, ua)).raw.toString()).to.equal(
        OK('nohost\n'),
      );
    }
    await sleep(SETTLE_MS); // junk is counted after the reply
    expect(await raw.exists(KEYS.junkBlock('127.0.0.1', ua))).to.equal(1);
    const hostBefore = await raw.hgetall(KEYS.host(h!));
    const blocked = await measured(`hostname=${h}&myip=192.0.2.31`, creds, ua);
    expect(blocked.reply).to.equal(OK('badagent\n'));
    expect(blocked.sent.some(isGuardedAdmitOf(KEYS, h!))).to.equal(true);
    expect(await raw.hgetall(KEYS.host(h!))).to.deep.equal(hostBefore);
    expect((await env.hostJson(h!)).ipv4).to.equal('192.0.2.30');
    expect(await env.ns.query(h!, 'A')).to.deep.equal(['192.0.2.30']);

    const other = agent('judy-other');
    expect((await update(`hostname=${h}&myip=192.0.2.31`, creds, other)).raw.toString()).to.equal(
      OK('good 192.0.2.31\n'),
    );
    expect(await env.ns.query(h!, 'A')).to.deep.equal(['192.0.2.31']);
  });

  it('donator flag change: !donator first, then (same cached credentials) offline=YES is honoured', async () => {
    const {
      creds,
      hosts: [h],
    } = await account('dora');
    const ua = agent('dora');
    expect((await update(`hostname=${h}&myip=192.0.2.40`, creds, ua)).raw.toString()).to.equal(OK('good 192.0.2.40\n'));
    const refused = await measured(`hostname=${h}&myip=192.0.2.40&offline=YES`, creds, ua);
    expect(refused.reply).to.equal(OK('!donator\n'));
    expect(refused.sent).to.have.length(1); // answered on the fast path
    expect((await env.hostJson(h!)).state).to.equal('active');
    expect(await env.ns.query(h!, 'A')).to.deep.equal(['192.0.2.40']);

    await env.cliOk(['account', 'donator', 'dora']);
    // The cached view says non-donator: the guard fails, the full path reads the new flag.
    const honoured = await measured(`hostname=${h}&myip=192.0.2.40&offline=YES`, creds, ua);
    expect(honoured.reply).to.equal(OK('good 192.0.2.40\n'));
    expect(honoured.sent.some(isGuardedAdmitOf(KEYS, h!))).to.equal(true);
    expect((await env.hostJson(h!)).state).to.equal('offline');
    expect(await env.ns.query(h!, 'A')).to.deep.equal([]);

    // The cached view was refreshed: the fast path holds again, as a donator.
    const again = await measured(`hostname=${h}&myip=192.0.2.40&offline=YES`, creds, ua);
    expect(again.reply).to.equal(OK('nochg 192.0.2.40\n'));
    expect(again.sent, JSON.stringify(again.sent)).to.have.length(1);
    expect(again.sent[0]![10]).to.equal('1'); // the guard's donator flag
  });

  it('an agent added to the Redis block list is answered badagent within 3 s, even for cached credentials', async () => {
    const {
      creds,
      hosts: [h],
    } = await account('ally');
    const label = `Blocked${process.pid}`;
    const ua = `${label}/1.0`;
    expect((await update(`hostname=${h}&myip=192.0.2.50`, creds, ua)).raw.toString()).to.equal(OK('good 192.0.2.50\n'));
    expect((await measured(`hostname=${h}&myip=192.0.2.50`, creds, ua)).sent).to.have.length(1);

    await env.cliOk(['agent', 'block', `${label}/*`]);
    try {
      const blockedAt = Date.now();
      let reply = '';
      while (Date.now() - blockedAt < 3000) {
        reply = (await update(`hostname=${h}&myip=192.0.2.51`, creds, ua)).raw.toString();
        if (
          reply !== OK('nochg 192.0.2.50\n') &&
          reply !== OK('good 192.0.2.51\n') &&
          reply !== OK('nochg 192.0.2.51\n')
        )
          break;
        await sleep(100);
      }
      expect(reply).to.equal(OK('badagent\n'));
      expect(Date.now() - blockedAt).to.be.below(3000);
      const hostBefore = await raw.hgetall(KEYS.host(h!));
      // From now on the verdict is in memory: no admit at all.
      const blocked = await measured(`hostname=${h}&myip=192.0.2.52`, creds, ua);
      expect(blocked.reply).to.equal(OK('badagent\n'));
      expect(blocked.sent.some((c) => c.includes(KEYS.host(h!)))).to.equal(false);
      expect(await raw.hgetall(KEYS.host(h!))).to.deep.equal(hostBefore);
      expect((await env.hostJson(h!)).ipv4).to.not.equal('192.0.2.52');
    } finally {
      await env.cliOk(['agent', 'unblock', `${label}/*`]);
    }
  });

  it('several names and mx= with cached credentials: one line per host, exact bytes; mx takes the full path', async () => {
    const {
      creds,
      hosts: [a, b],
    } = await account('mona', { hosts: 2 });
    const ua = agent('mona');
    expect((await update(`hostname=${a}&myip=192.0.2.60`, creds, ua)).raw.toString()).to.equal(OK('good 192.0.2.60\n'));

    const both = await update(`hostname=${a},${b}&myip=192.0.2.61`, creds, ua);
    expect(both.raw.toString()).to.equal(OK('good 192.0.2.61\ngood 192.0.2.61\n'));
    expect(await env.ns.query(a!, 'A')).to.deep.equal(['192.0.2.61']);
    expect(await env.ns.query(b!, 'A')).to.deep.equal(['192.0.2.61']);
    const mixed = await update(`hostname=${a},${uniq('nobody')},${b}&myip=192.0.2.61`, creds, ua);
    expect(mixed.raw.toString()).to.equal(OK('nochg 192.0.2.61\nnohost\nnochg 192.0.2.61\n'));

    // An mx to look up takes the full path: no DNS query before every login check passed
    // (password-oracle.test). The agent and login reads, then the guarded admit and the commit.
    const mx = await measured(`hostname=${a}&myip=192.0.2.61&mx=mail.${ZONE}`, creds, ua);
    expect(mx.reply).to.equal(OK('good 192.0.2.61\n'));
    expect(mx.sent.length, JSON.stringify(mx.sent)).to.be.above(2);
    expect(isGuardedAdmitOf(KEYS, a!)(mx.sent.at(-2)!)).to.equal(true);
    expect(await env.ns.query(a!, 'MX')).to.deep.equal([`10 mail.${ZONE}.`]);
    expect(await env.hostJson(a!)).to.include({ mx: `mail.${ZONE}`, ipv4: '192.0.2.61' });
    const mxAgain = await measured(`hostname=${a}&myip=192.0.2.61&mx=mail.${ZONE}`, creds, ua);
    expect(mxAgain.reply).to.equal(OK('nochg 192.0.2.61\n'));
    expect(isGuardedAdmitOf(KEYS, a!)(mxAgain.sent.at(-1)!)).to.equal(true);
    // An unresolvable mx removes the MX, also on the fast path.
    const gone = await update(`hostname=${a}&myip=192.0.2.61&mx=no-such-name.${ZONE}`, creds, ua);
    expect(gone.raw.toString()).to.equal(OK('good 192.0.2.61\n'));
    expect(await env.ns.query(a!, 'MX')).to.deep.equal([]);
    expect(await env.ns.query(b!, 'MX')).to.deep.equal([]);

    // A system the service does not support is not for the fast path either.
    expect((await update(`system=webhop&hostname=${b}&myip=192.0.2.62`, creds, ua)).raw.toString()).to.equal(
      OK('badsys\n'),
    );
    expect(await env.ns.query(b!, 'A')).to.deep.equal(['192.0.2.61']);
  });
});
