/**
 * No password oracle, tested the way it was found: during a login cool-down the right
 * password, still in the bridge's credential cache, must be indistinguishable from wrong
 * ones. A UDP stand-in resolver (the `mx` resolver of the bridge) records the names it is
 * asked and never answers: a lookup of an attacker-chosen `mx` name before the login checks
 * passed would show there, and cost `mx.timeout` of delay. Real serve, redis-server, knotd.
 */
import { expect } from 'chai';
import { createSocket, type Socket } from 'node:dgram';
import { Redis } from 'ioredis';
import { BridgeEnv, ZONE, expectedReply, sleep } from '../support/bridge.js';
import { BridgeCommands } from '../support/bridge-commands.js';
import { requireBinariesOrSkip } from '../../src/lab/index.js';
import { Keys } from '../../src/store/keys.js';

const BADAUTH = expectedReply(401, 'Unauthorized', 'badauth\n', ['WWW-Authenticate: Basic realm="ddns-bridge"']);
const OK = (body: string) => expectedReply(200, 'OK', body);
const KEYS = new Keys('ddns:');
const UA = `oracle-test/${process.pid}`;

/** A resolver that never answers and remembers every name it was asked. */
class SilentResolver {
  readonly names: string[] = [];
  private constructor(private readonly socket: Socket) {
    socket.on('message', (msg) => this.names.push(questionName(msg)));
  }
  static async start(): Promise<SilentResolver> {
    const socket = createSocket('udp4');
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
    return new SilentResolver(socket);
  }
  get port(): number {
    return this.socket.address().port;
  }
  close(): void {
    this.socket.close();
  }
}

/** The first question's name of a DNS query (uncompressed, as a stub resolver sends it). */
function questionName(msg: Buffer): string {
  const labels: string[] = [];
  for (let at = 12; at < msg.length && msg[at]! > 0; at += msg[at]! + 1)
    labels.push(msg.subarray(at + 1, at + 1 + msg[at]!).toString());
  return labels.join('.');
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

describe('no password oracle during a login cool-down (knot)', function () {
  this.timeout(60000);
  let env: BridgeEnv;
  let resolver: SilentResolver;
  let raw: Redis;
  const user = 'victim';
  const password = 'victim-right-password';
  const host = `oracle-${process.pid}.${ZONE}`;
  let token: string;
  let commands: BridgeCommands;

  before(async function () {
    requireBinariesOrSkip(this, ['redis-server', 'knotd', 'dig']);
    resolver = await SilentResolver.start();
    env = await BridgeEnv.start({
      kind: 'knot',
      config: {
        frequency: { minInterval: 0.001, donatorMinInterval: 0.001 },
        // A cool-down long enough for the whole suite; junk blocking out of the way.
        credentials: { maxFailures: 3, window: 600, cooldown: 600, cacheTtl: 3600 },
        junk: { threshold: 1000 },
        mx: { resolvers: [`127.0.0.1:${resolver.port}`], timeout: 1 },
      },
    });
    raw = new Redis(env.redis.url);
    await env.addAccount(user, password);
    await env.addHost(host, user);
    // The right password, verified once: now in the credential cache.
    const first = await env.get(`/nic/update?hostname=${host}&myip=192.0.2.10`, { auth: [user, password], ua: UA });
    expect(first.raw.toString()).to.equal(OK('good 192.0.2.10\n'));
    // An update token, used once: now in the token cache.
    token = (await env.cliOk(['token', 'add', host])).trimEnd().split('\n').at(-1)!;
    const byToken = await env.get(`/nic/update?hostname=${host}&myip=192.0.2.10`, { auth: [host, token], ua: UA });
    expect(byToken.raw.toString()).to.equal(OK('nochg 192.0.2.10\n'));
    commands = await BridgeCommands.attach(env, raw, KEYS);
    // maxFailures wrong logins of unknown users from this source start its cool-down.
    for (let i = 0; i < 3; i++) {
      const r = await env.get(`/nic/update?hostname=${host}`, { auth: [`nobody-${i}`, 'x'], ua: UA });
      expect(r.raw.toString()).to.equal(BADAUTH);
    }
    expect(await raw.exists(KEYS.cooldownBySource('127.0.0.1'))).to.equal(1);
  });

  after(async () => {
    commands?.close();
    resolver?.close();
    raw?.disconnect();
    await env?.stop();
  });

  const guess = (pw: string, query: string) => env.get(`/nic/update?${query}`, { auth: [user, pw], ua: UA });

  it('an mx probe: the right and wrong passwords get the same bytes, and no name reaches the resolver', async () => {
    const before = await raw.hgetall(KEYS.host(host));
    const replies = new Map<string, string>();
    for (const pw of ['wrong-1', password, 'wrong-2', 'wrong-3']) {
      const r = await guess(pw, `hostname=${host}&myip=192.0.2.11&mx=probe-${pw}.oob.attacker.example`);
      replies.set(pw, r.raw.toString());
    }
    await sleep(200); // a lookup, had one been started, would have reached the stand-in by now
    expect([...replies.values()]).to.deep.equal([BADAUTH, BADAUTH, BADAUTH, BADAUTH]);
    expect(resolver.names).to.deep.equal([]);
    expect(await raw.hgetall(KEYS.host(host))).to.deep.equal(before);
    expect(await env.ns.query(host, 'A')).to.deep.equal(['192.0.2.10']);
  });

  it('without mx: the same bytes, the host untouched (the fast path refuses in its one round trip)', async () => {
    const before = await raw.hgetall(KEYS.host(host));
    for (const pw of [password, 'wrong-4']) {
      expect((await guess(pw, `hostname=${host}&myip=192.0.2.12`)).raw.toString(), pw).to.equal(BADAUTH);
    }
    expect(await raw.hgetall(KEYS.host(host))).to.deep.equal(before);
  });

  it('an update token: the right one (cached or not) and wrong ones get the same bytes and Redis commands; no mx query', async () => {
    const fresh = (await env.cliOk(['token', 'add', host])).trimEnd().split('\n').at(-1)!;
    const before = await raw.hgetall(KEYS.host(host));
    const wrong = 'W'.repeat(32);
    const sent: number[] = [];
    for (const pw of [token, wrong, fresh, token]) {
      for (const query of [
        `hostname=${host}&myip=192.0.2.14&mx=probe-token.oob.attacker.example`,
        `myip=192.0.2.14`,
        `hostname=other.${ZONE}&myip=192.0.2.14`,
      ]) {
        const mark = commands.mark();
        const r = await env.get(`/nic/update?${query}`, { auth: [host, pw], ua: UA });
        expect(r.raw.toString(), query).to.equal(BADAUTH);
        await sleep(100);
        sent.push(commands.since(mark).length);
      }
    }
    // The same for every one: the cached token's check or admission, or the lookup that refuses
    // at once; then the junk count after the reply.
    expect(sent).to.deep.equal(sent.map(() => 2));
    await sleep(100);
    expect(resolver.names).to.deep.equal([]);
    expect(await raw.hgetall(KEYS.host(host))).to.deep.equal(before);
  });

  it('the address echo with credentials: the same reply, and no frequency count for the host', async () => {
    const before = await raw.hgetall(KEYS.host(host));
    const bodies: string[] = [];
    for (const pw of [password, 'wrong-5']) {
      await raw.del(KEYS.echo('127.0.0.1'));
      bodies.push((await env.get(`/checkip?hostname=${host}`, { auth: [user, pw], ua: UA })).body);
    }
    expect(bodies).to.deep.equal(['Current IP Address: 127.0.0.1\n', 'Current IP Address: 127.0.0.1\n']);
    expect(await raw.hgetall(KEYS.host(host))).to.deep.equal(before);
  });

  it('timing: the right password and wrong ones take the same time (medians printed; no timed assert)', async () => {
    const rounds = 40;
    const right: number[] = [];
    const wrong: number[] = [];
    for (let i = 0; i < rounds; i++) {
      for (const [pw, into] of [
        [password, right],
        [`wrong-t${i}`, wrong],
      ] as const) {
        const started = process.hrtime.bigint();
        const r = await guess(pw, `hostname=${host}&myip=192.0.2.13&mx=probe-t${i}.oob.attacker.example`);
        into.push(Number(process.hrtime.bigint() - started) / 1e6);
        expect(r.raw.toString()).to.equal(BADAUTH);
      }
    }
    expect(resolver.names).to.deep.equal([]);
    console.log(
      `      oracle timing over ${rounds} rounds: right ${median(right).toFixed(2)} ms, wrong ${median(wrong).toFixed(2)} ms (medians)`,
    );
  });
});

describe('a password changed while a request is past its password check (knot)', function () {
  this.timeout(60000);
  let env: BridgeEnv;
  let resolver: SilentResolver;
  let raw: Redis;

  before(async function () {
    requireBinariesOrSkip(this, ['redis-server', 'knotd', 'dig']);
    resolver = await SilentResolver.start();
    env = await BridgeEnv.start({
      kind: 'knot',
      // The mx lookup holds the full path between its password check and its admission.
      config: { frequency: { minInterval: 0.001 }, mx: { resolvers: [`127.0.0.1:${resolver.port}`], timeout: 1.5 } },
    });
    raw = new Redis(env.redis.url);
  });

  after(async () => {
    resolver?.close();
    raw?.disconnect();
    await env?.stop();
  });

  it('a cool-down begun by others during the request does not refuse it: good, published', async () => {
    const host = `steady-${process.pid}.${ZONE}`;
    await env.addAccount('steady', 'steady-password');
    await env.addHost(host, 'steady');
    const mxName = `held-steady-${process.pid}.example`;
    const inFlight = env.get(`/nic/update?hostname=${host}&myip=192.0.2.60&mx=${mxName}`, {
      auth: ['steady', 'steady-password'],
      ua: UA,
    });
    for (let i = 0; i < 100 && !resolver.names.includes(mxName); i++) await sleep(20);
    expect(resolver.names).to.include(mxName);
    // Someone else's wrong passwords start the account's and the source's cool-downs now.
    await raw.set(KEYS.cooldownByAccount('steady'), '1', 'PX', 60_000);
    await raw.set(KEYS.cooldownBySource('127.0.0.1'), '1', 'PX', 60_000);
    expect((await inFlight).raw.toString()).to.equal(OK('good 192.0.2.60\n'));
    expect(await env.ns.query(host, 'A')).to.deep.equal(['192.0.2.60']);
    await raw.del(KEYS.cooldownByAccount('steady'), KEYS.cooldownBySource('127.0.0.1'));
  });

  it('account passwd during the request: badauth, nothing recorded or published; the new password works', async () => {
    const host = `moved-${process.pid}.${ZONE}`;
    await env.addAccount('mover', 'old-password');
    await env.addHost(host, 'mover');
    const before = await raw.hgetall(KEYS.host(host));
    const mxName = `held-${process.pid}.example`;
    const inFlight = env.get(`/nic/update?hostname=${host}&myip=192.0.2.50&mx=${mxName}`, {
      auth: ['mover', 'old-password'],
      ua: UA,
    });
    // Its mx lookup reaching the resolver shows the password check is behind it.
    for (let i = 0; i < 100 && !resolver.names.includes(mxName); i++) await sleep(20);
    expect(resolver.names).to.include(mxName);
    await env.cliOk(['account', 'passwd', 'mover'], 'new-password\n');

    expect((await inFlight).raw.toString()).to.equal(BADAUTH);
    expect(await raw.hgetall(KEYS.host(host))).to.deep.equal(before);
    expect(await env.ns.query(host, 'A')).to.deep.equal([]);

    const old = await env.get(`/nic/update?hostname=${host}&myip=192.0.2.51`, {
      auth: ['mover', 'old-password'],
      ua: UA,
    });
    expect(old.raw.toString()).to.equal(BADAUTH);
    const fresh = await env.get(`/nic/update?hostname=${host}&myip=192.0.2.52`, {
      auth: ['mover', 'new-password'],
      ua: UA,
    });
    expect(fresh.raw.toString()).to.equal(OK('good 192.0.2.52\n'));
    expect(await env.ns.query(host, 'A')).to.deep.equal(['192.0.2.52']);
  });
});
