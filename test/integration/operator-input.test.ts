/**
 * Operator input the service must refuse cleanly (issue 27). `import-all` enforces what `account
 * add`, `host add` and `host link` enforce (docs/operators.md, "Restore"): a file that breaks one
 * of their rules is refused in the validation pass, the line named, with or without --merge, and
 * Redis is left exactly as it was (every key DUMPed before and after); the link script itself
 * refuses a host as its own parent. A zoned IPv6 address in `token add --from` and in
 * `trustedProxies` is one line and an exit code, no stack; `check` warns about trustedProxies.
 * The real CLI and a real redis-server (none of it needs a primary: the config's is 127.0.0.1:1).
 */
import { expect } from 'chai';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Redis } from 'ioredis';
import { hashPassword } from '../../src/auth/index.js';
import { InvalidInputError } from '../../src/core/errors.js';
import { makeTempDir, removeDir, requireBinariesOrSkip, startRedis, type RedisServer } from '../../src/lab/index.js';
import { Keys } from '../../src/store/keys.js';
import { RedisLinkStore } from '../../src/store/link-store.js';
import { runScript } from '../../src/store/script.js';
import { LINK } from '../../src/store/scripts/links.js';
import { ZONE, runCli, writeRedisOnlyConfig } from '../support/bridge.js';

const IID = '::1234:5678:9abc:def0';
const SHADOWING = '(docs/security.md, "No shadowing across accounts")';
const NAME_RULE = '1-64 of letters, digits and . _ @ + - (a letter or digit first)';

type Line = Record<string, unknown>;

const header: Line = {
  kind: 'header',
  format: 'ddns-bridge-export',
  version: 1,
  exportedAt: '2026-01-01T00:00:00.000Z',
};
const host = (fqdn: string, owner: string, extra: Line = {}): Line => ({
  kind: 'host',
  fqdn,
  owner,
  type: 'dynamic',
  state: 'active',
  ipv4: null,
  ipv6: null,
  wildcard: false,
  mx: null,
  backmx: false,
  updatedAt: 0,
  ...extra,
});

/** An export: the header (line 1), `records` from line 2 on, and the end line with their counts. */
function exportText(records: readonly Line[]): string {
  const count = (kind: string) => records.filter((r) => r.kind === kind).length;
  const end = {
    kind: 'end',
    accounts: count('account'),
    hosts: count('host'),
    tokens: count('token'),
    agentBlocks: count('agentBlock'),
  };
  return [header, ...records, end].map((l) => JSON.stringify(l)).join('\n') + '\n';
}

/** Every key of the server (all prefixes) with its DUMP and its time to live: equal means nothing was written. */
async function dumpAll(redis: Redis): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const key of (await redis.keys('*')).sort()) {
    out[key] = `${(await redis.dumpBuffer(key))?.toString('base64')} ttl=${await redis.pttl(key)}`;
  }
  return out;
}

describe('operator input: import-all holds the rules of account add, host add and host link; CIDR lists (real redis-server)', function () {
  this.timeout(60000);
  let dir: string;
  let server: RedisServer;
  let raw: Redis;
  /** A key space holding the base records (--merge cases) and an empty one (the plain cases). */
  let filled: string;
  let empty: string;
  let hash: string;
  let n = 0;
  const account = (name: string, passwordHash = hash): Line => ({
    kind: 'account',
    name,
    passwordHash,
    donator: false,
    createdAt: 1,
  });

  before(async function () {
    requireBinariesOrSkip(this, ['redis-server']);
    dir = await makeTempDir('ddns-import-rules-');
    server = await startRedis({ dir, appendonly: false });
    raw = new Redis(server.url, { connectionName: 'import-rules-test' });
    filled = await writeRedisOnlyConfig(dir, { url: server.url, keyPrefix: 'ddns:' }, { name: 'filled' });
    empty = await writeRedisOnlyConfig(dir, { url: server.url, keyPrefix: 'fresh:' }, { name: 'empty' });
    hash = await hashPassword('ann-import-secret'); // the cost account add uses
    // The base records: accounts ann and bob, a host of each, and a link within ann's.
    const base = exportText([
      account('ann'),
      account('bob'),
      host(`anns.${ZONE}`, 'ann'),
      host(`nas.anns.${ZONE}`, 'ann', { link: { parent: `anns.${ZONE}`, iid: IID } }),
      host(`bobs.${ZONE}`, 'bob'),
    ]);
    const file = path.join(dir, 'base.jsonl');
    await writeFile(file, base);
    const r = await runCli(['import-all', file, '--config', filled]);
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stdout).to.match(/^restored 2 accounts, 3 hosts, 0 tokens, 0 agent blocks;/);
  });

  after(async () => {
    raw?.disconnect();
    await server?.stop().catch(() => undefined);
    if (dir) await removeDir(dir);
  });

  /**
   * `records` refused with exactly `line N: message` (exit 2), with and without --merge, and not
   * a byte of Redis changed. The two runs write nothing (or the test fails): they run side by side, between one
   * dump of the whole server and the next; so may several calls of this (Promise.all).
   */
  async function expectRefused(records: readonly Line[], line: number, message: string): Promise<void> {
    const file = path.join(dir, `case-${++n}.jsonl`);
    await writeFile(file, exportText(records));
    const runs = [
      [empty, []],
      [filled, ['--merge']],
    ] as const;
    const before = await dumpAll(raw);
    const results = await Promise.all(
      runs.map(([config, extra]) => runCli(['import-all', file, ...extra, '--config', config])),
    );
    for (const [i, [config, extra]] of runs.entries()) {
      const r = results[i]!;
      const what = `${path.basename(config)} ${extra.join(' ')}`;
      expect(r.stderr, what).to.equal(
        `ddns-bridge: import-all: nothing written, the file is not a valid export:\nline ${line}: ${message}\n`,
      );
      expect(r.code, what).to.equal(2);
      expect(r.stdout, what).to.equal('');
    }
    expect(await dumpAll(raw), `${path.basename(file)}: empty and filled --merge`).to.deep.equal(before);
  }

  it('a host below a host of another account in the file: refused, naming both lines', async () => {
    await expectRefused(
      [account('ann'), account('bob'), host(`top.${ZONE}`, 'ann'), host(`b.x.top.${ZONE}`, 'bob')],
      5,
      `host b.x.top.${ZONE} would lie below top.${ZONE} (line 4) of account ann ${SHADOWING}`,
    );
  });

  it('a host above a host of another account in the file (the lower one first): refused', async () => {
    await expectRefused(
      [account('ann'), account('bob'), host(`b.x.up.${ZONE}`, 'bob'), host(`up.${ZONE}`, 'ann')],
      5,
      `host up.${ZONE} would lie above b.x.up.${ZONE} (line 4) of account bob ${SHADOWING}`,
    );
  });

  it('a host linked to itself: refused', async () => {
    await expectRefused(
      [account('ann'), host(`loop.${ZONE}`, 'ann', { link: { parent: `loop.${ZONE}`, iid: IID } })],
      3,
      `host loop.${ZONE}: link: a host cannot follow itself`,
    );
  });

  it("a link to another account's host, and a chain of links: refused", async () => {
    await Promise.all([
      expectRefused(
        [
          account('ann'),
          account('bob'),
          host(`bobs-router.${ZONE}`, 'bob'),
          host(`anns-nas.${ZONE}`, 'ann', { link: { parent: `bobs-router.${ZONE}`, iid: IID } }),
        ],
        5,
        `host anns-nas.${ZONE}: link to bobs-router.${ZONE}: bobs-router.${ZONE} belongs to bob, ` +
          `anns-nas.${ZONE} to ann: only hosts of one account link`,
      ),
      expectRefused(
        [
          account('ann'),
          host(`r3.${ZONE}`, 'ann', { link: { parent: `r2.${ZONE}`, iid: IID } }),
          host(`r2.${ZONE}`, 'ann', { link: { parent: `r1.${ZONE}`, iid: IID } }),
          host(`r1.${ZONE}`, 'ann'),
        ],
        3,
        `host r3.${ZONE}: link to r2.${ZONE}: r2.${ZONE} follows r1.${ZONE} itself (line 4): links do not chain`,
      ),
    ]);
  });

  it('account names outside the rule of account add: refused (as an account and as an owner)', async () => {
    await Promise.all([
      ...['*x', '{a}', '-a', 'a b'].map((name) =>
        expectRefused([account(name)], 2, `account ${JSON.stringify(name)}: not a valid account name (${NAME_RULE})`),
      ),
      expectRefused(
        [account('ann'), host(`odd.${ZONE}`, '{a}')],
        3,
        `host odd.${ZONE}: owner "{a}" is not an account name (${NAME_RULE})`,
      ),
    ]);
  });

  it('a password hash that costs more than account add writes (ln=15,r=8,p=1): refused, the bound named', async () => {
    const salt = Buffer.alloc(16, 7).toString('base64').replace(/=+$/, '');
    const digest = Buffer.alloc(32, 9).toString('base64').replace(/=+$/, '');
    await Promise.all(
      ['ln=19,r=4,p=16', 'ln=16,r=8,p=1', 'ln=15,r=16,p=1', 'ln=15,r=8,p=2'].map((cost) =>
        expectRefused(
          [account('ann', `$scrypt$${cost}$${salt}$${digest}`)],
          2,
          `account ann: passwordHash: its scrypt cost ${cost} is above ln=15,r=8,p=1 ` +
            '(what account add writes; each parameter at most that)',
        ),
      ),
    );
  });

  it('an mx that is not a host name (as an update would store it): refused', async () => {
    await Promise.all(
      ['not a host', 'bad_name.example.org', `MAIL.${ZONE}`, 'localhost'].map((mx) =>
        expectRefused(
          [account('ann'), host(`mx.${ZONE}`, 'ann', { mx })],
          3,
          `host mx.${ZONE}: mx ${JSON.stringify(mx)} is not a host name`,
        ),
      ),
    );
  });

  it('what the rules allow still restores: nested hosts of one account, a link, an mx', async () => {
    const file = path.join(dir, 'allowed.jsonl');
    await writeFile(
      file,
      exportText([
        account('carol.w@example+1'),
        host(`c.${ZONE}`, 'carol.w@example+1', { mx: `mail.${ZONE}` }),
        host(`d.c.${ZONE}`, 'carol.w@example+1', { link: { parent: `c.${ZONE}`, iid: IID } }),
      ]),
    );
    const r = await runCli(['import-all', file, '--merge', '--config', filled]);
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stdout).to.match(/^restored 1 account, 2 hosts, 0 tokens, 0 agent blocks;/);
    expect(await raw.hmget(`ddns:h:d.c.${ZONE}`, 'o', 'pp')).to.deep.equal(['carol.w@example+1', `c.${ZONE}`]);
  });

  describe('zoned addresses and trustedProxies (CLI)', () => {
    const ZONED = (text: string) =>
      `"${text}" has a zone index (%eth0): a CIDR block names addresses, not an interface; leave out %eth0`;

    it('token add --from with a zoned address: exit 2, one line naming it, nothing written', async () => {
      // Refusals that write nothing: side by side, between one dump of the server and the next.
      const froms = ['fe80::1%eth0', 'fe80::1%eth0/64', '192.0.2.0/24,fe80::1%eth0'];
      const before = await dumpAll(raw);
      const results = await Promise.all(
        froms.map((from) => runCli(['token', 'add', `anns.${ZONE}`, '--from', from, '--config', filled])),
      );
      for (const [i, from] of froms.entries()) {
        const r = results[i]!;
        const text = from.split(',').at(-1)!;
        expect(r.stderr, from).to.equal(`ddns-bridge: --from: ${ZONED(text)}\n`);
        expect(r.code, from).to.equal(2);
        expect(r.stdout, from).to.equal('');
      }
      expect(await dumpAll(raw), froms.join(' ')).to.deep.equal(before);
    });

    it('serve with a zoned address in trustedProxies: exit 2, the key named, before anything starts', async () => {
      const config = await writeRedisOnlyConfig(
        dir,
        { url: server.url },
        { name: 'zoned', extra: { trustedProxies: ['10.0.0.1', 'fe80::1%eth0/64'] } },
      );
      const r = await runCli(['serve', '--config', config]);
      expect(r.stderr).to.equal(`ddns-bridge: config: trustedProxies[1]: ${ZONED('fe80::1%eth0/64')}\n`);
      expect(r.code).to.equal(2);
    });

    it('check warns about a block wider than /24 and about loopback behind a plain loopback listener', async () => {
      const config = await writeRedisOnlyConfig(
        dir,
        { url: server.url },
        { name: 'proxies', extra: { listen: ['127.0.0.1:0'], trustedProxies: ['10.0.0.0/8', '127.0.0.1'] } },
      );
      // Proxies only: no warning (the second config, checked beside the first).
      const quiet = await writeRedisOnlyConfig(
        dir,
        { url: server.url },
        { name: 'quiet', extra: { listen: ['127.0.0.1:0'], trustedProxies: ['192.0.2.7', '2001:db8::/64'] } },
      );
      const [r, quietCheck] = await Promise.all([
        runCli(['check', '--config', config]),
        runCli(['check', '--config', quiet]),
      ]);
      const warnings = r.stderr.split('\n').filter((l) => l.includes('trustedProxies'));
      expect(warnings).to.have.length(2);
      expect(warnings[0]).to.match(
        /^warning: trustedProxies\[0\]: 10\.0\.0\.0\/8 is wider than one proxy network \(\/24 for IPv4\)/,
      );
      expect(warnings[1]).to.match(
        /^warning: trustedProxies\[1\]: 127\.0\.0\.1 holds loopback and listen\[0\] \(127\.0\.0\.1:0\) is plain HTTP .*any local process, of any user, can connect there and send X-Forwarded-For/,
      );
      expect(quietCheck.stderr).not.to.include('trustedProxies');
    });
  });

  it('the link script refuses a host as its own parent: nothing written', async () => {
    const keys = new Keys('ddns:');
    const fqdn = `bobs.${ZONE}`; // no followers: before the check, the script linked it
    const before = await dumpAll(raw);
    const reply = await runScript(
      raw,
      LINK,
      {
        host: keys.host(fqdn),
        parent: keys.host(fqdn),
        parentLinks: keys.hostLinks(fqdn),
        formerParentLinks: keys.hostLinks(fqdn),
        hostLinks: keys.hostLinks(fqdn),
      },
      { fqdn, parent: fqdn, iid: IID, formerParent: '', maxLinks: 40 },
      'host link',
    );
    expect(reply).to.deep.equal({ kind: 'self' });
    expect(await dumpAll(raw)).to.deep.equal(before);
    // The store says so as the CLI does.
    const error = await new RedisLinkStore(raw, keys).link(fqdn, fqdn, IID, 40).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).to.be.instanceOf(InvalidInputError);
    expect((error as Error).message).to.equal(`to: host ${fqdn} cannot follow itself`);
    expect(await dumpAll(raw)).to.deep.equal(before);
  });
});
