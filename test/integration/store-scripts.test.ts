/**
 * Every Lua script of the store (ALL_SCRIPTS, src/store/scripts/index.ts) against a real
 * redis-server: each compiles (SCRIPT LOAD, the batch form too), and each one's happy path runs
 * through runScript with the keys and arguments its store adapter sends, its reply decoded and
 * the key it writes checked. The last test fails when a script of the list has no happy path
 * here. Redis refuses a read of an undefined global, so a name the prologue does not bind fails
 * the path that reads it.
 */
import { expect } from 'chai';
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { TargetState } from '../../src/core/types.js';
import { ScriptBatcher } from '../../src/store/batch.js';
import { ACCOUNT_FIELDS as AF, HOST_FIELDS as HF, Keys, TOKEN_FIELDS as TF } from '../../src/store/keys.js';
import { runScript, type ScriptDefinition } from '../../src/store/script.js';
import { ACCOUNT_CREATE, ACCOUNT_REMOVE, ACCOUNT_SET } from '../../src/store/scripts/accounts.js';
import { HOST_RESTORE, TOKEN_RESTORE } from '../../src/store/scripts/backup.js';
import { ECHO, STRIKE } from '../../src/store/scripts/counters.js';
import { HOST_ADD, HOST_IMPORT, HOST_REMOVE, HOST_SET_STATE, QUIET_STAMP } from '../../src/store/scripts/hosts.js';
import { ALL_SCRIPTS } from '../../src/store/scripts/index.js';
import {
  ABANDON,
  ADMIT,
  ADMIT_GUARDED,
  ADMIT_TOKEN,
  COMMIT,
  HOST_CLAIM,
  NO_COUNT_UNDO,
  POSTPONE,
  RECLAIM,
  RELEASE,
  STALE,
  type AdmitReply,
} from '../../src/store/scripts/lease.js';
import { ADMIT_LINKED, FORGET, LINK, UNLINK } from '../../src/store/scripts/links.js';
import { TOKEN_ADD, TOKEN_CHECK, TOKEN_FIND, TOKEN_REMOVE } from '../../src/store/scripts/tokens.js';
import { TXT_ADMIT, TXT_ADMIT_GUARDED, TXT_ADMIT_TOKEN, TXT_COMMIT } from '../../src/store/scripts/txt.js';
import { storeTestConfig, useRedisStore } from '../support/store-server.js';

const PREFIX = 'sc:';
const k = new Keys(PREFIX);
const ACCOUNT = 'alice';
const PASSWORD_HASH = '$scrypt$test-hash';
const SOURCE = '192.0.2.9';
const AGENT = 'script-test/1';
const H1 = 'h1.dyn.example.org';
const CHILD = `a.${H1}`;
const H2 = 'h2.dyn.example.org';
const H3 = 'h3.dyn.example.org';
const H4 = 'h4.dyn.example.org';
const H5 = 'h5.dyn.example.org';
const TOKEN_ID = 'tid1';
const TOKEN_HASH = 'thash1';

const sha1 = (text: string) => createHash('sha1').update(text).digest('hex');

const target = (ipv4: string | null, ipv6: string | null = null): TargetState => ({
  ipv4,
  ipv6,
  wildcard: false,
  mx: null,
  backmx: false,
  offline: false,
});

describe('store scripts: every script loads into Redis and runs its happy path (real redis-server)', function () {
  const lab = useRedisStore('store-scripts', (url) => storeTestConfig(url, { keyPrefix: PREFIX }));
  const ran = new Set<string>();
  const nameOf = new Map(Object.entries(ALL_SCRIPTS).map(([name, s]) => [s as object, name]));

  /** runScript on the plain client, noting which script of the list ran. */
  function run<K, A, R>(script: ScriptDefinition<K, A, R>, keys: K, args: A): Promise<R> {
    ran.add(nameOf.get(script) ?? `unlisted ${script.name}`);
    return runScript(lab.raw, script, keys, args);
  }
  const redis = (): Redis => lab.raw;
  const lease = (host: string) => ({ host: k.host(host), pending: k.pendingChanges() });
  const guardKeys = (host: string) => ({
    ...lease(host),
    junkBlock: k.junkBlock(SOURCE, AGENT),
    sourceCooldown: k.cooldownBySource(SOURCE),
    accountCooldown: k.cooldownByAccount(ACCOUNT),
    account: k.account(ACCOUNT),
  });
  const tokenKeys = (host: string) => ({
    ...lease(host),
    junkBlock: k.junkBlock(SOURCE, AGENT),
    sourceCooldown: k.cooldownBySource(SOURCE),
    token: k.token(TOKEN_ID),
    account: k.account(ACCOUNT),
  });
  const admitArgs = (leaseToken: string, ipv4: string) => ({
    account: ACCOUNT,
    minIntervalMs: 0,
    maxFrequent: 5,
    leaseMs: 5000,
    leaseToken,
    expect: { state: 'active', ipv4 },
  });
  const txtArgs = (leaseToken: string, value: string) => ({
    account: ACCOUNT,
    op: 'set' as const,
    value,
    keep: 2,
    limit: 10,
    windowMs: 60_000,
    leaseMs: 5000,
    leaseToken,
  });
  const field = (key: string, f: string) => redis().hget(key, f);
  const change = (reply: AdmitReply) => {
    if (reply.kind !== 'change') return expect.fail(`expected a change, got ${JSON.stringify(reply)}`);
    return reply;
  };
  const commit = async (host: string, token: string, reply: AdmitReply, to: TargetState) => {
    const { undo, families } = change(reply);
    expect(await run(COMMIT, lease(host), { token, target: to, republish: false, undo, families })).to.equal('ok');
    expect(await field(k.host(host), HF.leaseToken)).to.equal(null);
  };

  it('SCRIPT LOAD compiles every script of the list, and the batch form of the batchable ones', async () => {
    const scripts = Object.values(ALL_SCRIPTS);
    expect(scripts.length).to.be.at.least(30);
    for (const s of scripts) {
      for (const lua of [s.lua, ...('batch' in s ? [(s as { batch: { lua: string } }).batch.lua] : [])]) {
        expect(await redis().script('LOAD', lua), s.name).to.equal(sha1(lua));
      }
    }
  });

  it('accounts: create, set a field', async () => {
    const keys = { account: k.account(ACCOUNT), accounts: k.accountSet() };
    const args = { name: ACCOUNT, passwordHash: PASSWORD_HASH, donator: true, createdAt: 1_700_000_000_000 };
    expect(await run(ACCOUNT_CREATE, keys, args)).to.equal(true);
    expect(await redis().hgetall(k.account(ACCOUNT))).to.deep.equal({ h: PASSWORD_HASH, d: '1', c: '1700000000000' });
    expect(await redis().sismember(k.accountSet(), ACCOUNT)).to.equal(1);
    expect(await run(ACCOUNT_SET, { account: k.account(ACCOUNT) }, { field: AF.donator, value: '0' })).to.equal(true);
    expect(await field(k.account(ACCOUNT), AF.donator)).to.equal('0');
  });

  it('hosts: add (flat, and nested below another: the tails), set state, import', async () => {
    const add = (fqdn: string, between: string[]) =>
      run(
        HOST_ADD,
        {
          host: k.host(fqdn),
          account: k.account(ACCOUNT),
          nestIndex: k.nestIndex(fqdn),
          between: between.map((b) => ({ host: k.host(b), nestIndex: k.nestIndex(b) })),
        },
        { owner: ACCOUNT, type: 'dynamic', fqdn, between },
      );
    for (const fqdn of [H1, H2, H3]) expect(await add(fqdn, [])).to.deep.equal({ kind: 'ok' });
    expect(await add(CHILD, [H1])).to.deep.equal({ kind: 'ok' });
    expect(await redis().hgetall(k.host(CHILD))).to.deep.equal({ o: ACCOUNT, t: 'dynamic', s: 'active' });
    expect(await redis().hgetall(k.nestIndex(H1))).to.deep.equal({ [CHILD]: ACCOUNT });
    expect(await field(k.account(ACCOUNT), AF.hostCount)).to.equal('4');

    await redis().hset(k.host(H1), HF.lastRequest, '1', HF.frequentCount, '2');
    expect(
      await run(HOST_SET_STATE, { host: k.host(H1) }, { state: 'active', onlyFrom: ['active', 'blocked'] }),
    ).to.equal('set');
    expect(await redis().hmget(k.host(H1), HF.lastRequest, HF.frequentCount, HF.frequencySeq)).to.deep.equal([
      null,
      null,
      '1',
    ]);
    // Made active again: quiet from now (the quiet-host sweep would close it at once otherwise).
    expect(Number(await field(k.host(H1), HF.createdAt))).to.be.greaterThan(0);
    await redis().hdel(k.host(H1), HF.createdAt);
    expect(await run(QUIET_STAMP, { host: k.host(H1) }, { now: '42' })).to.equal(1);
    expect(await field(k.host(H1), HF.createdAt)).to.equal('42');
    expect(await run(QUIET_STAMP, { host: k.host('gone.' + H1) }, { now: '42' })).to.equal(0);
    expect(await redis().exists(k.host('gone.' + H1))).to.equal(0);
    await redis().hdel(k.host(H1), HF.createdAt);

    const outcomes = await run(
      HOST_IMPORT,
      { accounts: [k.account(ACCOUNT)], hosts: [{ host: k.host(H4), nestIndex: k.nestIndex(H4), between: [] }] },
      { accounts: [ACCOUNT], hosts: [{ account: 1, type: 'dynamic', fqdn: H4, between: [] }] },
    );
    expect(outcomes).to.deep.equal([{ kind: 'ok' }]);
    expect(await redis().hgetall(k.host(H4))).to.deep.equal({ o: ACCOUNT, t: 'dynamic', s: 'active' });
    expect(await field(k.account(ACCOUNT), AF.hostCount)).to.equal('5');
  });

  it('admit and commit, without a guard and after a password login (GUARD)', async () => {
    const first = await run(ADMIT, lease(H1), admitArgs('L1', '192.0.2.1'));
    expect(change(first).families).to.equal('4');
    expect(await field(k.host(H1), HF.leaseToken)).to.equal('L1');
    expect(await redis().zscore(k.pendingChanges(), k.host(H1))).to.not.equal(null);
    await commit(H1, 'L1', first, target('192.0.2.1'));
    expect(await field(k.host(H1), HF.ipv4)).to.equal('192.0.2.1');

    const guarded = await run(ADMIT_GUARDED, guardKeys(H1), {
      ...admitArgs('L2', '192.0.2.2'),
      hashDigest: sha1(PASSWORD_HASH),
      donator: false,
      passwordOnly: false,
    });
    expect(await field(k.host(H1), HF.leaseToken)).to.equal('L2');
    await commit(H1, 'L2', guarded, target('192.0.2.2'));
    expect(await field(k.host(H1), HF.ipv4)).to.equal('192.0.2.2');
  });

  it('the batch form binds each item its own keys and arguments: two guarded admissions in one call', async () => {
    const batcher = new ScriptBatcher(redis(), ADMIT_GUARDED, 'admit');
    const guard = { hashDigest: sha1(PASSWORD_HASH), donator: false, passwordOnly: false };
    const replies = await Promise.all([
      batcher.run(guardKeys(H1), { ...admitArgs('B1', '192.0.2.11'), ...guard }),
      batcher.run(guardKeys(H2), { ...admitArgs('B2', '192.0.2.12'), ...guard }),
    ]);
    expect(replies.map((r) => r.kind)).to.deep.equal(['change', 'change']);
    expect(await field(k.host(H1), HF.leaseToken)).to.equal('B1');
    expect(await field(k.host(H2), HF.leaseToken)).to.equal('B2');
    await commit(H1, 'B1', replies[0], target('192.0.2.11'));
    await commit(H2, 'B2', replies[1], target('192.0.2.12'));
  });

  it('tokens: add, find, check, and a token login’s admission (its last use written)', async () => {
    const added = await run(
      TOKEN_ADD,
      {
        host: k.host(H1),
        account: k.account(ACCOUNT),
        token: k.token(TOKEN_ID),
        index: k.tokenIndex(TOKEN_HASH),
        hostTokens: k.hostTokens(H1),
      },
      { owner: ACCOUNT, id: TOKEN_ID, fqdn: H1, hash: TOKEN_HASH, from: ['192.0.2.0/24'], note: 'n' },
    );
    expect(added.kind).to.equal('ok');
    expect(await redis().hmget(k.token(TOKEN_ID), TF.fqdn, TF.hash, TF.from, TF.note)).to.deep.equal([
      H1,
      TOKEN_HASH,
      '192.0.2.0/24',
      'n',
    ]);
    expect(await redis().get(k.tokenIndex(TOKEN_HASH))).to.equal(TOKEN_ID);

    const found = await run(
      TOKEN_FIND,
      {
        index: k.tokenIndex(TOKEN_HASH),
        junkBlock: k.junkBlock(SOURCE, AGENT),
        sourceCooldown: k.cooldownBySource(SOURCE),
      },
      { keyPrefix: PREFIX, hash: TOKEN_HASH },
    );
    expect(found).to.deep.equal({
      id: TOKEN_ID,
      fqdn: H1,
      account: ACCOUNT,
      donator: false,
      from: '192.0.2.0/24',
      acmeOnly: false,
      tsig: '',
    });
    expect(await run(TOKEN_CHECK, tokenKeys(H1), { tokenHash: TOKEN_HASH, donator: false })).to.equal('ok');

    const admitted = await run(ADMIT_TOKEN, tokenKeys(H1), {
      ...admitArgs('T1', '192.0.2.3'),
      tokenHash: TOKEN_HASH,
      donator: false,
    });
    expect(await field(k.token(TOKEN_ID), TF.lastUsedAt)).to.match(/^\d+$/);
    await commit(H1, 'T1', admitted, target('192.0.2.3'));
  });

  it('the reconciler’s scripts: abandon, stale, reclaim, postpone, release; an operator’s claim', async () => {
    change(await run(ADMIT, lease(H1), admitArgs('A1', '192.0.2.4')));
    const items = [{ ...lease(H1), token: 'A1', mark: false }];
    expect(await run(ABANDON, { items }, { items })).to.equal(1);
    expect(await run(STALE, { pending: k.pendingChanges() }, { limit: 10 })).to.deep.equal([k.host(H1)]);

    const reclaimed = await run(RECLAIM, lease(H1), { token: 'R1', leaseMs: 5000 });
    expect(reclaimed.kind).to.equal('reclaimed');
    expect(await field(k.host(H1), HF.leaseToken)).to.equal('R1');

    const before = Date.now();
    expect(await run(POSTPONE, { pending: k.pendingChanges() }, { ms: 60_000, hostKeys: [k.host(H1)] })).to.equal(1);
    expect(Number(await redis().zscore(k.pendingChanges(), k.host(H1)))).to.be.at.least(before + 59_000);

    const released = await run(RELEASE, lease(H1), {
      token: 'R1',
      undo: NO_COUNT_UNDO,
      failedRepublish: false,
      families: '46',
      refused: false,
    });
    expect(released).to.equal(true);
    expect(await field(k.host(H1), HF.leaseToken)).to.equal(null);
    expect(await redis().zscore(k.pendingChanges(), k.host(H1))).to.equal(null);

    const claimed = await run(HOST_CLAIM, lease(H1), { token: 'C1', leaseMs: 5000 });
    expect(claimed.kind).to.equal('claimed');
    expect(await field(k.host(H1), HF.leaseToken)).to.equal('C1');
  });

  it('ACME TXT: admit (three forms) and commit', async () => {
    const forms = [
      () => run(TXT_ADMIT, lease(H2), txtArgs('X1', 'v1')),
      () =>
        run(TXT_ADMIT_GUARDED, guardKeys(H2), {
          ...txtArgs('X2', 'v2'),
          hashDigest: sha1(PASSWORD_HASH),
          donator: false,
          passwordOnly: false,
        }),
      () => run(TXT_ADMIT_TOKEN, tokenKeys(H2), { ...txtArgs('X3', 'v3'), tokenHash: TOKEN_HASH, donator: false }),
    ];
    const expected = [['v1'], ['v1', 'v2'], ['v2', 'v3']];
    for (const [i, admit] of forms.entries()) {
      const reply = await admit();
      if (reply.kind !== 'change') return expect.fail(`expected a change, got ${JSON.stringify(reply)}`);
      expect(reply.values).to.deep.equal(expected[i]);
      const token = `X${i + 1}`;
      expect(await field(k.host(H2), HF.leaseToken)).to.equal(token);
      expect(await run(TXT_COMMIT, lease(H2), { token, values: reply.values, families: '' })).to.equal('ok');
      expect(await field(k.host(H2), HF.txt)).to.equal(reply.values.join('\n'));
      expect(await field(k.host(H2), HF.leaseToken)).to.equal(null);
    }
  });

  it('links: link, a linked host’s admission, unlink, forget', async () => {
    const link = () =>
      run(
        LINK,
        {
          host: k.host(H3),
          parent: k.host(H2),
          parentLinks: k.hostLinks(H2),
          formerParentLinks: k.hostLinks(H2),
          hostLinks: k.hostLinks(H3),
        },
        { fqdn: H3, parent: H2, iid: '::1', formerParent: '', maxLinks: 10 },
      );
    expect(await link()).to.deep.equal({ kind: 'ok' });
    expect(await redis().hmget(k.host(H3), HF.linkParent, HF.linkIid)).to.deep.equal([H2, '::1']);
    expect(await redis().smembers(k.hostLinks(H2))).to.deep.equal([H3]);

    const linked = await run(ADMIT_LINKED, lease(H3), {
      token: 'K1',
      leaseMs: 5000,
      parent: H2,
      account: ACCOUNT,
      iid: '::1',
      ipv6: '2001:db8::1',
    });
    if (linked.kind !== 'change') return expect.fail(`expected a change, got ${JSON.stringify(linked)}`);
    expect(linked.families).to.equal('6');
    expect(await field(k.host(H3), HF.leaseToken)).to.equal('K1');
    const done = await run(COMMIT, lease(H3), {
      token: 'K1',
      target: target(null, '2001:db8::1'),
      republish: false,
      undo: NO_COUNT_UNDO,
      families: '6',
    });
    expect(done).to.equal('ok');
    expect(await field(k.host(H3), HF.ipv6)).to.equal('2001:db8::1');

    const unlink = { host: k.host(H3), parentLinks: k.hostLinks(H2) };
    expect(await run(UNLINK, unlink, { fqdn: H3, parent: H2 })).to.equal('ok');
    expect(await field(k.host(H3), HF.linkParent)).to.equal(null);

    expect(await link()).to.deep.equal({ kind: 'ok' });
    const forget = { hostLinks: k.hostLinks(H2), parentLinks: k.hostLinks(H2), followers: [k.host(H3)] };
    expect(await run(FORGET, forget, { fqdn: H2 })).to.equal(1);
    expect(await field(k.host(H3), HF.linkParent)).to.equal(null);
    expect(await redis().exists(k.hostLinks(H2))).to.equal(0);
  });

  it('counters: strike sets the marker at the threshold; the echo counts a request', async () => {
    const ip = '198.51.100.7';
    const pairs = [{ counter: k.failuresBySource(ip), marker: k.cooldownBySource(ip) }];
    expect(await run(STRIKE, { pairs }, { threshold: 1, windowMs: 10_000, markMs: 10_000 })).to.equal(1);
    expect(await redis().get(k.cooldownBySource(ip))).to.equal('1');
    expect(await redis().exists(k.failuresBySource(ip))).to.equal(0);

    const echo = { minIntervalMs: 10_000, maxFrequent: 3, cooldownMs: 10_000 };
    expect(await run(ECHO, { echo: k.echo(ip) }, echo)).to.equal('ok');
    expect(await redis().hmget(k.echo(ip), 'fl', 'fc')).to.satisfy(
      ([fl, fc]: (string | null)[]) => /^\d+$/.test(fl ?? '') && fc === '0',
    );
  });

  it('backups: a host and a token restored whole', async () => {
    const hostKeys = { host: k.host(H5), account: k.account(ACCOUNT), nestIndex: k.nestIndex(H5), between: [] };
    const fields = { o: ACCOUNT, t: 'dynamic', s: 'active', '4': '192.0.2.5' };
    const restored = await run(HOST_RESTORE, hostKeys, {
      owner: ACCOUNT,
      fqdn: H5,
      checkNesting: true,
      fields,
      between: [],
    });
    expect(restored).to.deep.equal({ kind: 'ok' });
    expect(await redis().hgetall(k.host(H5))).to.deep.equal(fields);

    const tokenFields = { f: H5, a: ACCOUNT, k: 'thash2', c: '1700000000000' };
    const token = await run(
      TOKEN_RESTORE,
      {
        host: k.host(H5),
        account: k.account(ACCOUNT),
        token: k.token('tid2'),
        index: k.tokenIndex('thash2'),
        hostTokens: k.hostTokens(H5),
      },
      { owner: ACCOUNT, id: 'tid2', fields: tokenFields, hash: 'thash2' },
    );
    expect(token).to.deep.equal({ kind: 'ok' });
    expect(await redis().hgetall(k.token('tid2'))).to.deep.equal(tokenFields);
    expect(await redis().smembers(k.hostTokens(H5))).to.deep.equal(['tid2']);
  });

  it('removals: a token, a nested host, a claimed host with its token, an account', async () => {
    const removed = await run(
      TOKEN_REMOVE,
      {
        token: k.token(TOKEN_ID),
        index: k.tokenIndex(TOKEN_HASH),
        hostTokens: k.hostTokens(H1),
        account: k.account(ACCOUNT),
      },
      { id: TOKEN_ID, hash: TOKEN_HASH },
    );
    expect(removed).to.equal('ok');
    expect(await redis().exists(k.token(TOKEN_ID), k.tokenIndex(TOKEN_HASH))).to.equal(0);

    const remove = (fqdn: string, leaseToken: string, ancestors: string[], tokens: [id: string, hash: string][]) =>
      run(
        HOST_REMOVE,
        {
          host: k.host(fqdn),
          account: k.account(ACCOUNT),
          pending: k.pendingChanges(),
          hostTokens: k.hostTokens(fqdn),
          nestIndexes: ancestors.map((a) => k.nestIndex(a)),
          tokens: tokens.map(([id, hash]) => ({ record: k.token(id), index: k.tokenIndex(hash) })),
        },
        { owner: ACCOUNT, leaseToken, fqdn, ancestors: ancestors.length, tokenIds: tokens.map(([id]) => id) },
      );
    expect(await remove(CHILD, '', [H1], [])).to.equal('ok');
    expect(await redis().exists(k.host(CHILD), k.nestIndex(H1))).to.equal(0);
    // H1 holds the operator's claim (C1) from the reconciler's test.
    expect(await remove(H1, 'C1', [], [])).to.equal('ok');
    expect(await redis().exists(k.host(H1))).to.equal(0);
    expect(await redis().zscore(k.pendingChanges(), k.host(H1))).to.equal(null);
    expect(await remove(H5, '', [], [['tid2', 'thash2']])).to.equal('ok');
    expect(await redis().exists(k.host(H5), k.token('tid2'), k.tokenIndex('thash2'), k.hostTokens(H5))).to.equal(0);

    const bob = { account: k.account('bob'), accounts: k.accountSet() };
    expect(await run(ACCOUNT_CREATE, bob, { name: 'bob', passwordHash: 'x', donator: false, createdAt: 1 })).to.equal(
      true,
    );
    expect(await run(ACCOUNT_REMOVE, bob, { name: 'bob' })).to.equal('ok');
    expect(await redis().exists(k.account('bob'))).to.equal(0);
    expect(await redis().sismember(k.accountSet(), 'bob')).to.equal(0);
  });

  it('every script of ALL_SCRIPTS ran its happy path above', () => {
    const names = Object.keys(ALL_SCRIPTS).sort();
    expect([...ran].sort()).to.deep.equal(names);
  });
});
