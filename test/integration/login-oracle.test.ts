/**
 * No oracle before every login check passed, seen from everywhere a stranger or an operator
 * looks: for a right and a wrong credential in each cool-down (the source's, the account's, the
 * junk block of the source and agent), the reply bytes, the Redis commands the serve process
 * sends (MONITOR, with the values that are random per request or derived from the guessed
 * secret itself normalised away) and the deltas of its /metrics (the admin listener of a real
 * serve) must be the same. Also update tokens: one used from outside its --from range costs what
 * a wrong one costs, and a revoked token stops at once on every serve process, cached or not.
 * Real serve, redis-server, knotd (docs/security.md, "No password oracle").
 */
import { expect } from 'chai';
import { createHash, randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Redis } from 'ioredis';
import { freePort, requireBinariesOrSkip } from '../../src/lab/index.js';
import { Keys } from '../../src/store/keys.js';
import { tokenHash } from '../../src/auth/update-token.js';
import { BridgeEnv, ZONE, expectedReply, type HttpResult } from '../support/bridge.js';
import { BridgeCommands, clearLoginCounters } from '../support/bridge-commands.js';

const KEYS = new Keys('ddns:');
const UA = `login-oracle-test/${process.pid}`;
const ADMIN_TOKEN = 'b'.repeat(24) + '0123456789abcdef0123456789abcdef';
const BADAUTH = expectedReply(401, 'Unauthorized', 'badauth\n', ['WWW-Authenticate: Basic realm="ddns-bridge"']);
const OK = (body: string) => expectedReply(200, 'OK', body);
/** Store calls made by timers, not by requests: the reconciler's sweep, the agent list refresh, scrape-time gauges. */
const BACKGROUND = new Set(['stale leases', 'postpone', 'agent list', 'repairs due', 'ping']);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** The guard's blinded digest (lua.ts blindDigest): a nonce and a SHA-1, new on every request. */
const BLINDED = /^[0-9a-f]{72}$/;

/** Every sample of a scrape by its series (`name{labels}`): ours only, without timings (sums, buckets). */
function parseMetrics(text: string): Map<string, number> {
  const series = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line.startsWith('ddns_bridge_')) continue;
    const space = line.lastIndexOf(' ');
    const name = line.slice(0, space);
    if (/_(sum|bucket)(\{|$)/.test(name)) continue;
    const op = /operation="([^"]*)"/.exec(name)?.[1];
    if (op !== undefined && BACKGROUND.has(op)) continue;
    series.set(name, Number(line.slice(space + 1)));
  }
  return series;
}

/** What changed between two scrapes, by series. */
function deltas(before: Map<string, number>, after: Map<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, value] of after) {
    const d = value - (before.get(name) ?? 0);
    if (d !== 0) out[name] = d;
  }
  return out;
}

interface Observed {
  reply: string;
  commands: string[][];
  metrics: Record<string, number>;
  /** The serve process's log lines (level debug), without their time. */
  logs: string[];
}

function median(values: number[]): number {
  return [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
}

describe('no login oracle in replies, Redis commands or /metrics (knot, admin listener)', function () {
  this.timeout(120000);
  let env: BridgeEnv;
  let raw: Redis;
  let commands: BridgeCommands;
  let adminPort: number;
  const user = 'victim';
  const password = 'victim-right-password';
  const host = `oracle-${process.pid}.${ZONE}`;
  const other = `oracle-b-${process.pid}.${ZONE}`;
  // An account whose password is shaped like an update token (32 base64url characters).
  const tUser = 'tvictim';
  const tPassword = randomBytes(24).toString('base64url');
  const tHost = `oracle-t-${process.pid}.${ZONE}`;
  let fenced: string; // a token usable from 10.0.0.0/8 only
  let live: string; // a token usable from anywhere

  const scrape = async (): Promise<Map<string, number>> =>
    parseMetrics(await (await fetch(`http://127.0.0.1:${adminPort}/metrics`)).text());

  const settle = () => commands.settle(raw);

  /** One request's reply, its commands (normalised) and its metric deltas. */
  async function observe(send: () => Promise<HttpResult>, secret: string): Promise<Observed> {
    await settle();
    const before = await scrape();
    await settle();
    const mark = commands.mark();
    const logged = env.logs.length;
    const reply = (await send()).raw.toString();
    // A refusal is junk: its count goes to Redis after the reply (app/update.ts), maybe late on a busy machine.
    const junkCount = KEYS.junkCount('127.0.0.1', UA);
    const counted = () => commands.since(mark).some((c) => c.includes(junkCount));
    for (let i = 0; i < 500 && !reply.startsWith('HTTP/1.0 200') && !counted(); i++) await settle();
    await settle();
    const sent = commands.since(mark);
    const logs = env.logs
      .slice(logged)
      .join('')
      .split('\n')
      .filter((l) => l !== '' && !l.includes('"msg":"admin request"')) // our own scrapes
      .map((l) => l.replace(/"time":"[^"]*",?/, ''));
    const after = await scrape();
    const derived = [tokenHash(secret), KEYS.tokenIndex(tokenHash(secret))];
    const normalised = sent.map((cmd) =>
      cmd.map((arg, i) => {
        // A script's first call on a connection is an EVAL of its text, later ones EVALSHA (store/script.ts).
        if (i === 0 && arg.toLowerCase() === 'eval') return 'evalsha';
        if (i === 1 && cmd[0]!.toLowerCase() === 'eval') return createHash('sha1').update(arg).digest('hex');
        if (UUID.test(arg)) return '<lease token>';
        if (BLINDED.test(arg)) return '<blinded digest>';
        if (derived.includes(arg)) return arg === derived[0] ? '<hash of the guess>' : '<index of the guess>';
        return arg;
      }),
    );
    return { reply, commands: normalised, metrics: deltas(before, after), logs };
  }

  const send = (u: string, pw: string, query: string) => () =>
    env.get(`/nic/update?${query}`, { auth: [u, pw], ua: UA });

  before(async function () {
    requireBinariesOrSkip(this, ['redis-server', 'knotd']);
    adminPort = await freePort();
    env = await BridgeEnv.start({
      kind: 'knot',
      serves: 0,
      config: {
        frequency: { minInterval: 0.001, donatorMinInterval: 0.001 },
        credentials: { maxFailures: 3, window: 600, cooldown: 600, cacheTtl: 3600 },
        junk: { threshold: 1000 },
      },
    });
    const tokenFile = path.join(env.dir, 'admin.token');
    await writeFile(tokenFile, ADMIN_TOKEN + '\n', { mode: 0o600 });
    await env.writeConfig({ admin: { listen: [`127.0.0.1:${adminPort}`], tokenFile } });
    raw = new Redis(env.redis.url);
    await env.addAccount(user, password);
    await env.addHost(host, user);
    await env.addHost(other, user);
    await env.addAccount(tUser, tPassword);
    await env.addHost(tHost, tUser);
    fenced = (await env.cliOk(['token', 'add', host, '--from', '10.0.0.0/8'])).trimEnd().split('\n').at(-1)!;
    live = (await env.cliOk(['token', 'add', host])).trimEnd().split('\n').at(-1)!;
    await env.startServe();
    // The right passwords verified once: now in the credential cache.
    for (const [u, pw, h] of [
      [user, password, host],
      [tUser, tPassword, tHost],
    ] as const) {
      const first = await env.get(`/nic/update?hostname=${h}&myip=192.0.2.10`, { auth: [u, pw], ua: UA });
      expect(first.raw.toString()).to.equal(OK('good 192.0.2.10\n'));
    }
    commands = await BridgeCommands.attach(env, raw, KEYS);
  });

  after(async () => {
    commands?.close();
    raw?.disconnect();
    await env?.stop();
  });

  beforeEach(() => clearLoginCounters(raw, KEYS));

  const coolDowns: [string, () => Promise<unknown>][] = [
    ['the source cool-down', () => raw.set(KEYS.cooldownBySource('127.0.0.1'), '1', 'PX', 600_000)],
    ['the account cool-down', () => raw.set(KEYS.cooldownByAccount(user), '1', 'PX', 600_000)],
    ['the junk block', () => raw.set(KEYS.junkBlock('127.0.0.1', UA), '1', 'PX', 600_000)],
  ];
  const queries = [
    `hostname=${host}&myip=192.0.2.11`, // the fast path's one admission
    `hostname=${host}&myip=192.0.2.11&mx=mail.example.org`, // an mx to look up: the full path
    `hostname=${host},${other}&myip=192.0.2.11`, // two names: the full path
  ];

  for (const [name, start] of coolDowns) {
    it(`${name}: the right cached password and a wrong one differ in nothing`, async () => {
      await start();
      const before = await raw.hgetall(KEYS.host(host));
      for (const query of queries) {
        const right = await observe(send(user, password, query), password);
        const wrong = await observe(send(user, 'a-wrong-password', query), 'a-wrong-password');
        expect(wrong, query).to.deep.equal(right);
        expect(right.reply, query).to.be.oneOf([BADAUTH, expectedReply(200, 'OK', 'badagent\n')]);
        expect(right.commands.length, query).to.be.greaterThan(0);
        // Nothing counted as a cache hit or miss while the login is refused.
        expect(
          Object.keys(right.metrics).filter((s) => s.includes('credential_cache')),
          query,
        ).to.deep.equal([]);
      }
      expect(await raw.hgetall(KEYS.host(host))).to.deep.equal(before);
    });
  }

  for (const [name, start] of [
    ['the account cool-down', () => raw.set(KEYS.cooldownByAccount(tUser), '1', 'PX', 600_000)],
    coolDowns[0]!,
    coolDowns[2]!,
  ] as const) {
    it(`${name}: a right cached password shaped like a token and a wrong token-shaped one`, async () => {
      await start();
      const wrongPassword = randomBytes(24).toString('base64url');
      for (const query of [
        `hostname=${tHost}&myip=192.0.2.12`,
        `hostname=${tHost}&myip=192.0.2.12&mx=mx.example.org`,
      ]) {
        const right = await observe(send(tUser, tPassword, query), tPassword);
        const wrong = await observe(send(tUser, wrongPassword, query), wrongPassword);
        expect(right.reply, query).to.be.oneOf([BADAUTH, expectedReply(200, 'OK', 'badagent\n')]);
        expect(wrong, query).to.deep.equal(right);
      }
    });
  }

  it('timing in the account cool-down, fast path: right cached and wrong (medians printed; no timed assert)', async () => {
    await raw.set(KEYS.cooldownByAccount(user), '1', 'PX', 600_000);
    const times: Record<'right' | 'wrong', number[]> = { right: [], wrong: [] };
    for (let i = 0; i < 40; i++) {
      for (const [which, pw] of [
        ['right', password],
        ['wrong', `wrong-${i}`],
      ] as const) {
        const started = process.hrtime.bigint();
        const r = await send(user, pw, `hostname=${host}&myip=192.0.2.16`)();
        times[which].push(Number(process.hrtime.bigint() - started) / 1e6);
        expect(r.raw.toString()).to.equal(BADAUTH);
      }
    }
    console.log(
      `      40 rounds: right ${median(times.right).toFixed(2)} ms, wrong ${median(times.wrong).toFixed(2)} ms (medians)`,
    );
  });

  it('outside any cool-down the right cached password still costs one admission (the fast path)', async () => {
    const r = await observe(send(user, password, `hostname=${host}&myip=192.0.2.10`), password);
    expect(r.reply).to.equal(OK('nochg 192.0.2.10\n'));
    expect(r.commands, JSON.stringify(r.commands)).to.have.length(1);
    expect(r.metrics['ddns_bridge_credential_cache_lookups_total{result="hit"}']).to.equal(1);
    expect(r.metrics['ddns_bridge_redis_command_duration_seconds_count{operation="admit"}']).to.equal(1);
  });

  it('a token from outside its --from range costs what a wrong token costs (used before, or not)', async () => {
    const wrong = randomBytes(24).toString('base64url');
    const query = `hostname=${host}&myip=192.0.2.13`;
    const sample: Observed[] = [];
    for (const [pw, i] of [
      [fenced, 0],
      [wrong, 1],
      [fenced, 2],
      [wrong, 3],
    ] as const) {
      await clearLoginCounters(raw, KEYS);
      sample[i] = await observe(send(host, pw, query), pw);
    }
    expect(sample[0]!.reply).to.equal(BADAUTH);
    expect(sample[1]).to.deep.equal(sample[0]);
    expect(sample[2]).to.deep.equal(sample[0]);
    expect(sample[3]).to.deep.equal(sample[0]);
    expect(sample[0]!.metrics['ddns_bridge_redis_command_duration_seconds_count{operation="token find"}']).to.equal(1);
    // Revoked: it does not look live from outside its range either.
    const tokens = JSON.parse(await env.cliOk(['token', 'list', host, '--json'])) as { id: string; from: string[] }[];
    await env.cliOk(['token', 'remove', tokens.find((t) => t.from.length > 0)!.id]);
    await clearLoginCounters(raw, KEYS);
    expect(await observe(send(host, fenced, query), fenced)).to.deep.equal(sample[0]);
  });

  it('a revoked token is refused at once on every serve process, though both have it cached', async () => {
    await env.writeConfig({ admin: undefined }); // one admin listener: the first process's
    const second = await env.startServe();
    const query = `hostname=${host}&myip=192.0.2.14`;
    for (const port of [env.ports[0]!, second]) {
      for (const pw of [live, live]) {
        const r = await env.get(`/nic/update?${query}`, { auth: [host, pw], ua: UA, port });
        expect(r.raw.toString()).to.be.oneOf([OK('good 192.0.2.14\n'), OK('nochg 192.0.2.14\n')]);
      }
    }
    const tokens = JSON.parse(await env.cliOk(['token', 'list', host, '--json'])) as { id: string; from: string[] }[];
    const id = tokens.find((t) => t.from.length === 0)!.id;
    await env.cliOk(['token', 'remove', id]);
    const before = await raw.hgetall(KEYS.host(host));
    for (const port of [second, env.ports[0]!]) {
      const r = await env.get(`/nic/update?hostname=${host}&myip=192.0.2.15`, { auth: [host, live], ua: UA, port });
      expect(r.raw.toString()).to.equal(BADAUTH);
    }
    expect(await raw.hgetall(KEYS.host(host))).to.deep.equal(before);
    expect(await env.ns.query(host, 'A')).to.deep.equal(['192.0.2.14']);
  });
});
