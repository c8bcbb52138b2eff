/**
 * Scoped update tokens end to end: the real `ddns-bridge` CLI makes and revokes them, the real
 * serve process takes them as the Basic password, redis-server keeps only their hashes, and
 * the record is read back from the primary (knotd and named). A cached token costs one Redis
 * round trip (MONITOR), and no password check.
 */
import { expect } from 'chai';
import { Redis } from 'ioredis';
import { tokenHash } from '../../src/auth/update-token.js';
import { requireBinariesOrSkip, type LabKind } from '../../src/lab/index.js';
import { Keys, TOKEN_FIELDS } from '../../src/store/keys.js';
import { BridgeEnv, ZONE, expectedReply } from '../support/bridge.js';
import { waitFor } from '../support/wait.js';
import { BridgeCommands, clearLoginCounters, isCommitOf, isTokenScriptOf } from '../support/bridge-commands.js';

const OK = (body: string) => expectedReply(200, 'OK', body);
const BADAUTH = expectedReply(401, 'Unauthorized', 'badauth\n', ['WWW-Authenticate: Basic realm="ddns-bridge"']);
const KEYS = new Keys('ddns:');
const NAMESERVERS: { kind: LabKind; binaries: string[] }[] = [
  { kind: 'knot', binaries: ['redis-server', 'knotd', 'kdig'] },
  { kind: 'bind', binaries: ['redis-server', 'named', 'dig'] },
];

let seq = 0;
const uniq = (label: string) => `${label}-${process.pid}-${++seq}.${ZONE}`;

for (const { kind, binaries } of NAMESERVERS) {
  describe(`update tokens (${kind})`, function () {
    this.timeout(60000);
    let env: BridgeEnv;
    let raw: Redis;
    let commands: BridgeCommands;

    before(async function () {
      requireBinariesOrSkip(this, binaries);
      env = await BridgeEnv.start({
        kind,
        config: {
          frequency: { minInterval: 0.001, donatorMinInterval: 0.001 },
          credentials: { maxFailures: 3, window: 60, cooldown: 2, cacheTtl: 3600 },
          junk: { threshold: 1000 },
        },
      });
      raw = new Redis(env.redis.url, { connectionName: 'tokens-test' });
      commands = await BridgeCommands.attach(env, raw, KEYS);
    });

    after(async () => {
      commands?.close();
      raw?.disconnect();
      await env?.stop();
    });

    beforeEach(async () => {
      await clearLoginCounters(raw, KEYS);
    });

    /** An account with one host and a token for it: [account, host, token, token id]. */
    async function withToken(
      label: string,
      args: string[] = [],
    ): Promise<{ account: string; host: string; token: string; id: string }> {
      const account = `${label}-${process.pid}-${++seq}`;
      const host = uniq(label);
      await env.addAccount(account, `${account}-password`);
      await env.addHost(host, account);
      const { token, id } = await addToken(host, args);
      return { account, host, token, id };
    }

    async function addToken(host: string, args: string[] = []): Promise<{ token: string; id: string; stdout: string }> {
      const stdout = await env.cliOk(['token', 'add', host, ...args]);
      const lines = stdout.trimEnd().split('\n');
      const token = lines.at(-1)!;
      made.push(token);
      const id = /^token ([0-9a-f]{12}) for /.exec(lines[0]!)![1]!;
      return { token, id, stdout };
    }

    const send = (query: string, user: string, password: string, ua = 'TokenTest/1.0') =>
      env.get(`/nic/update?${query}`, { auth: [user, password], ua });

    /** Every token this suite made: none may appear in the serve process's log (debug level). */
    const made: string[] = [];
    after(() => {
      const log = env?.logs.join('') ?? '';
      expect(log.length, 'the serve log was captured').to.be.above(0);
      for (const t of made) expect(log.includes(t), 'a token in the serve log').to.equal(false);
    });

    it('token add prints the token alone on the last line, once; Redis keeps only its keyed hash', async () => {
      const host = uniq('shown');
      const account = `shown-${process.pid}`;
      await env.addAccount(account, 'pw-shown');
      await env.addHost(host, account);
      const { token, id, stdout } = await addToken(host, [
        '--expires',
        '30d',
        '--from',
        '192.0.2.0/24,2001:db8::/48',
        '--note',
        'router in the hall',
      ]);
      expect(token).to.match(/^[A-Za-z0-9_-]{32}$/);
      expect(stdout.split('\n').filter((l) => l.includes(token))).to.deep.equal([token]);
      // Nothing in Redis holds the token: the record is found by its HMAC.
      const dump = JSON.stringify(
        await Promise.all(
          (await raw.keys('ddns:*')).map(async (k) => [
            k,
            (await raw.type(k)) === 'hash' ? await raw.hgetall(k) : await raw.type(k),
          ]),
        ),
      );
      expect(dump).to.not.include(token);
      expect(await raw.get(KEYS.tokenIndex(tokenHash(token)))).to.equal(id);
      const record = await raw.hgetall(KEYS.token(id));
      expect(record).to.include({
        f: host,
        a: account,
        k: tokenHash(token),
        r: '192.0.2.0/24,2001:db8::/48',
        n: 'router in the hall',
      });
      expect(Number(record.e) - Number(record.c)).to.equal(30 * 86_400_000);

      const listed = JSON.parse(await env.cliOk(['token', 'list', host, '--json'])) as Record<string, unknown>[];
      expect(listed).to.have.length(1);
      expect(listed[0]).to.include({ id, host, account, lastUsed: null, note: 'router in the hall' });
      expect(listed[0]!.from).to.deep.equal(['192.0.2.0/24', '2001:db8::/48']);
      expect(JSON.stringify(listed)).to.not.include(token);
      const text = await env.cliOk(['token', 'list']);
      expect(text).to.include(id).and.not.include(token);
    });

    it('updates its host with the FQDN or the account as user; no hostname with the FQDN as user means that host', async () => {
      const { account, host, token } = await withToken('router');
      expect((await send(`hostname=${host}&myip=192.0.2.41`, host, token)).raw.toString()).to.equal(
        OK('good 192.0.2.41\n'),
      );
      expect(await env.ns.query(host, 'A')).to.deep.equal(['192.0.2.41']);
      expect((await send(`hostname=${host}&myip=192.0.2.42`, account, token)).raw.toString()).to.equal(
        OK('good 192.0.2.42\n'),
      );
      expect((await send('myip=192.0.2.43', host, token)).raw.toString()).to.equal(OK('good 192.0.2.43\n'));
      expect(await env.ns.query(host, 'A')).to.deep.equal(['192.0.2.43']);
      expect((await send('myip=192.0.2.43', host.toUpperCase() + '.', token)).raw.toString()).to.equal(
        OK('nochg 192.0.2.43\n'),
      );
      expect(await env.hostJson(host)).to.include({ ipv4: '192.0.2.43', state: 'active' });
      const [listed] = JSON.parse(await env.cliOk(['token', 'list', host, '--json'])) as { lastUsed: string | null }[];
      expect(listed!.lastUsed).to.be.a('string');
    });

    it('another host in the request, even of the same account, gets !yours and stays as it is', async () => {
      const { account, host, token } = await withToken('scope');
      const sibling = uniq('sibling');
      await env.addHost(sibling, account);
      const r = await send(`hostname=${host},${sibling},bad..name&myip=192.0.2.51`, host, token);
      expect(r.raw.toString()).to.equal(OK('good 192.0.2.51\n!yours\nnotfqdn\n'));
      expect(await env.ns.query(host, 'A')).to.deep.equal(['192.0.2.51']);
      expect(await env.ns.query(sibling, 'A')).to.deep.equal([]);
      expect((await send(`hostname=${sibling}&myip=192.0.2.52`, account, token)).raw.toString()).to.equal(
        OK('!yours\n'),
      );
      // An account name with the user's password still reaches every host of the account.
      const byPassword = await send(`hostname=${sibling}&myip=192.0.2.53`, account, `${account}-password`);
      expect(byPassword.raw.toString()).to.equal(OK('good 192.0.2.53\n'));
    });

    it('a cached token: a nochg is ONE Redis command, a change two (token admit + commit); no login lookup', async () => {
      const { host, token } = await withToken('cached');
      expect((await send(`hostname=${host}&myip=192.0.2.61`, host, token)).raw.toString()).to.equal(
        OK('good 192.0.2.61\n'),
      );
      await commands.settle(raw); // what the good left behind is counted before the mark
      let mark = commands.mark();
      expect((await send(`hostname=${host}&myip=192.0.2.61`, host, token)).raw.toString()).to.equal(
        OK('nochg 192.0.2.61\n'),
      );
      await commands.settle(raw);
      const nochg = commands.since(mark);
      expect(nochg, JSON.stringify(nochg)).to.have.length(1);
      expect(isTokenScriptOf(KEYS, host)(nochg[0]!)).to.equal(true);

      mark = commands.mark();
      expect((await send(`hostname=${host}&myip=192.0.2.62`, host, token)).raw.toString()).to.equal(
        OK('good 192.0.2.62\n'),
      );
      await commands.settle(raw);
      const change = commands.since(mark);
      expect(change, JSON.stringify(change)).to.have.length(2);
      expect(isTokenScriptOf(KEYS, host)(change[0]!)).to.equal(true);
      expect(change[1]![3]).to.equal(KEYS.host(host));
      expect(isCommitOf(KEYS, host, change[1]![5]!)(change[1]!)).to.equal(true);
      expect(await env.ns.query(host, 'A')).to.deep.equal(['192.0.2.62']);
    });

    it('revoked, expired, or used from outside --from: badauth, and nothing changes', async () => {
      const { host, token, id } = await withToken('revoked');
      expect((await send(`hostname=${host}&myip=192.0.2.71`, host, token)).raw.toString()).to.equal(
        OK('good 192.0.2.71\n'),
      );
      expect(await env.cliOk(['token', 'remove', id])).to.include(`token ${id} of ${host} removed`);
      // Cached in the serve process, refused at once: the admission reads the record.
      expect((await send(`hostname=${host}&myip=192.0.2.72`, host, token)).raw.toString()).to.equal(BADAUTH);
      expect(await raw.exists(KEYS.token(id), KEYS.tokenIndex(tokenHash(token)))).to.equal(0);

      const { token: brief, id: briefId } = await addToken(host, ['--expires', '2s']);
      expect((await send(`hostname=${host}&myip=192.0.2.73`, host, brief)).raw.toString()).to.equal(
        OK('good 192.0.2.73\n'),
      );
      // The admission compares the expiry with Redis's clock: wait until that clock is past it.
      const expiresAt = Number(await raw.hget(KEYS.token(briefId), TOKEN_FIELDS.expiresAt));
      expect(expiresAt).to.be.above(0);
      await waitFor(
        async () => {
          const [seconds, micros] = await raw.time();
          return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000) > expiresAt;
        },
        { what: "Redis's clock past the token's expiry", intervalMs: 100 },
      );
      expect((await send(`hostname=${host}&myip=192.0.2.74`, host, brief)).raw.toString()).to.equal(BADAUTH);

      const { token: fenced } = await addToken(host, ['--from', '192.0.2.0/24']);
      expect((await send(`hostname=${host}&myip=192.0.2.75`, host, fenced)).raw.toString()).to.equal(BADAUTH);
      // Each refusal counted against this source (maxFailures 3): its cool-down is on now.
      expect(await raw.exists(KEYS.cooldownBySource('127.0.0.1'))).to.equal(1);
      await raw.del(KEYS.cooldownBySource('127.0.0.1'), KEYS.failuresBySource('127.0.0.1'));
      const { token: local } = await addToken(host, ['--from', '127.0.0.0/8,::1']);
      expect((await send(`hostname=${host}&myip=192.0.2.76`, host, local)).raw.toString()).to.equal(
        OK('good 192.0.2.76\n'),
      );
      expect(await env.ns.query(host, 'A')).to.deep.equal(['192.0.2.76']);
    });

    it('the account cool-down does not lock a token out; wrong tokens count against their source', async () => {
      const { account, host, token } = await withToken('locked');
      for (let i = 0; i < 3; i++) {
        expect((await send(`hostname=${host}`, account, `wrong-${i}`, `Guesser/${i}`)).raw.toString()).to.equal(
          BADAUTH,
        );
      }
      expect(await raw.exists(KEYS.cooldownByAccount(account))).to.equal(1);
      await raw.del(KEYS.cooldownBySource('127.0.0.1'), KEYS.failuresBySource('127.0.0.1'));
      expect((await send(`hostname=${host}&myip=192.0.2.81`, host, token)).raw.toString()).to.equal(
        OK('good 192.0.2.81\n'),
      );
      // The password is refused during the account's cool-down; the token is not.
      expect((await send(`hostname=${host}&myip=192.0.2.82`, account, `${account}-password`)).raw.toString()).to.equal(
        BADAUTH,
      );

      // Three wrong tokens (token-shaped, the FQDN as user) from this source start its cool-down, and
      // count nothing against the account: then even the right token waits.
      await raw.del(KEYS.cooldownByAccount(account), KEYS.failuresByAccount(account));
      for (let i = 0; i < 3; i++) {
        expect((await send(`hostname=${host}`, host, `${'x'.repeat(31)}${i}`)).raw.toString()).to.equal(BADAUTH);
      }
      expect(await raw.exists(KEYS.cooldownBySource('127.0.0.1'))).to.equal(1);
      expect(await raw.exists(KEYS.failuresByAccount(account), KEYS.cooldownByAccount(account))).to.equal(0);
      expect((await send(`hostname=${host}&myip=192.0.2.83`, host, token)).raw.toString()).to.equal(BADAUTH);
      expect(await env.ns.query(host, 'A')).to.deep.equal(['192.0.2.81']);
    });

    it('a donator change while the token is cached: still good, with the new flag (offline=YES allowed)', async () => {
      const { account, host, token } = await withToken('donor');
      expect((await send(`hostname=${host}&myip=192.0.2.86`, host, token)).raw.toString()).to.equal(
        OK('good 192.0.2.86\n'),
      );
      expect((await send(`hostname=${host}&offline=YES`, host, token)).raw.toString()).to.equal(OK('!donator\n'));
      await env.cliOk(['account', 'donator', account]);
      const offline = await send(`hostname=${host}&myip=192.0.2.86&offline=YES`, host, token);
      expect(offline.raw.toString()).to.equal(OK('good 192.0.2.86\n'));
      expect(await env.hostJson(host)).to.include({ state: 'offline' });
      expect(await env.ns.query(host, 'A')).to.deep.equal([]);
      expect(await raw.exists(KEYS.failuresBySource('127.0.0.1'))).to.equal(0);
    });

    it('host remove takes its tokens; account remove refuses while the account has hosts (and so tokens)', async () => {
      const { account, host, token, id } = await withToken('gone');
      const second = await addToken(host);
      const refused = await env.cli(['account', 'remove', account]);
      expect(refused.code).to.equal(1);
      expect(refused.stderr).to.include('still owns hosts');
      await env.cliOk(['host', 'remove', host]);
      for (const [tid, t] of [
        [id, token],
        [second.id, second.token],
      ] as const) {
        expect(await raw.exists(KEYS.token(tid), KEYS.tokenIndex(tokenHash(t)))).to.equal(0);
      }
      expect(await raw.exists(KEYS.hostTokens(host))).to.equal(0);
      expect(await raw.hget(KEYS.account(account), 'k')).to.equal(null);
      expect(await env.cliOk(['token', 'list', host])).to.equal('');
      expect((await send(`hostname=${host}&myip=192.0.2.91`, host, token)).raw.toString()).to.equal(BADAUTH);
      await env.cliOk(['account', 'remove', account]);
    });

    it('the address echo with a token counts its own host only', async () => {
      const { account, host, token } = await withToken('echo');
      const other = uniq('echo-other');
      await env.addHost(other, account);
      await raw.del(KEYS.echo('127.0.0.1'));
      const r = await env.get(`/checkip?hostname=${host},${other}`, { auth: [host, token], ua: 'TokenTest/1.0' });
      expect(r.body).to.equal('Current IP Address: 127.0.0.1\n');
      expect(await raw.hexists(KEYS.host(host), 'fl')).to.equal(1);
      expect(await raw.hexists(KEYS.host(other), 'fl')).to.equal(0);
    });

    it('bad input to token add and remove: a clear error, nothing written', async () => {
      const { host } = await withToken('input');
      const before = await raw.dbsize();
      const cases = [
        [['token', 'add', host, '--expires', 'soon'], '--expires'],
        [['token', 'add', host, '--from', '192.0.2.0/33'], '--from'],
        [['token', 'add', host, '--note', 'a\u0007b'], '--note'],
        [['token', 'add', uniq('nobody')], 'no such host'],
        [['token', 'remove', 'not-an-id'], 'not a token id'],
        [['token', 'remove', '0123456789ab'], 'no such token'],
      ] as const;
      // Refusals that write nothing (the key count below): one CLI process each, side by side.
      const runs = await Promise.all(cases.map(([args]) => env.cli([...args])));
      for (const [i, [args, message]] of cases.entries()) {
        expect(runs[i]!.code, args.join(' ')).to.not.equal(0);
        expect(runs[i]!.stderr, args.join(' ')).to.include(message);
      }
      expect(await raw.dbsize()).to.equal(before);
    });
  });
}
