/**
 * Backups end to end (docs/operators.md, "Backups"): the real CLI exports a store that a real
 * serve process and knotd have filled (accounts, hosts of every type and state, addresses,
 * wildcard and MX, an update token, an agent block), restores it into fresh key spaces of a
 * second redis-server, and the restored store reads the same through the CLI, holds the same
 * indexes, and takes a password login and a token login through the bridge.
 */
import { expect } from 'chai';
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Redis } from 'ioredis';
import { makeTempDir, removeDir, requireBinariesOrSkip, startRedis, type RedisServer } from '../../src/lab/index.js';
import { HOST_FIELDS, LEASE_FIELDS, REQUEST_LOG_FIELDS } from '../../src/store/keys.js';
import { BridgeEnv, ZONE, deepMerge, runCli, type CliResult } from '../support/bridge.js';

const UA = 'ddns-bridge-backup-tests/1.0 tests@example.test';
const PASSWORDS = { ann: 'ann-Backup-secret-1', bob: 'bob-Backup-secret-2' };
const SOURCE_PREFIX = 'ddns:';

/**
 * Fields of the host hash a backup leaves out: leases, repairs, frequency and TXT counts, and the
 * "links changed" mark (a restored link sets it: the parent's next prefix update republishes its hosts).
 */
const TRANSIENT_HOST_FIELDS: readonly string[] = [
  ...LEASE_FIELDS,
  HOST_FIELDS.republishFailures,
  HOST_FIELDS.lastRequest,
  HOST_FIELDS.frequentCount,
  HOST_FIELDS.frequencySeq,
  ...REQUEST_LOG_FIELDS,
  HOST_FIELDS.txtWindowStart,
  HOST_FIELDS.txtCount,
  HOST_FIELDS.linksChanged,
];

/** Key families under a prefix that are records or their indexes (the rest expires or is bookkeeping). */
const RECORD_KEY = /^(a:|h:|t:|tk:|ht:|hl:|d:|accounts$|ag$)/;

/** Every record key under `prefix` and its value (hashes without transient host fields), prefix stripped. */
async function dumpRecords(redis: Redis, prefix: string): Promise<Record<string, unknown>> {
  const keys = (await redis.keys(`${prefix}*`)).map((k) => k.slice(prefix.length)).filter((k) => RECORD_KEY.test(k));
  const out: Record<string, unknown> = {};
  for (const key of keys.sort()) {
    const full = prefix + key;
    const type = await redis.type(full);
    if (type === 'hash') {
      const fields = await redis.hgetall(full);
      if (key.startsWith('h:')) for (const f of TRANSIENT_HOST_FIELDS) delete fields[f];
      out[key] = fields;
    } else if (type === 'set') out[key] = (await redis.smembers(full)).sort();
    else if (type === 'string') out[key] = await redis.get(full);
    else out[key] = type;
  }
  return out;
}

function expectOk(r: CliResult, what: string): string {
  expect(r.code, `${what}: ${r.stderr}`).to.equal(0);
  return r.stdout;
}

describe('backups: export and import-all (knot)', function () {
  this.timeout(90000);
  let env: BridgeEnv;
  let target: RedisServer;
  let targetDir: string;
  let source: Redis;
  let restored: Redis;
  let exportFile: string;
  let token: string;
  let tokenId: string;
  const hosts = {
    live: `live.${ZONE}`,
    nested: `deep.live.${ZONE}`,
    away: `away.${ZONE}`,
    fixed: `fixed.${ZONE}`,
    web: `web.${ZONE}`,
    sub: `sub.${ZONE}`,
    bobs: `bobs.${ZONE}`,
    banned: `banned.${ZONE}`,
    shut: `shut.${ZONE}`,
  };

  /** A config file like the env's, on the second redis-server under `prefix`. */
  async function targetConfig(prefix: string): Promise<string> {
    const file = path.join(env.dir, `config-${prefix.replace(/\W/g, '')}.json`);
    const config = deepMerge(env.config, { redis: { url: target.url, keyPrefix: prefix } });
    await writeFile(file, JSON.stringify(config, null, 2), { mode: 0o600 });
    return file;
  }

  const cliOn = (config: string, args: string[], stdin?: string) => runCli([...args, '--config', config], stdin);

  const update = (query: string, auth: [string, string]) => env.get(`/nic/update?${query}`, { auth, ua: UA });

  /**
   * What the operator sees of a store: every show, list and token, through the CLI. The commands only read, so
   * they run side by side (one CLI process each, as an operator would run them).
   */
  async function operatorView(config: string): Promise<Record<string, string>> {
    const view: Record<string, string> = {};
    const run = async (args: string[]) => (view[args.join(' ')] = expectOk(await cliOn(config, args), args.join(' ')));
    const showHost = async (fqdn: string) => {
      await run(['host', 'show', fqdn, '--json']);
      // The last request and the day's counts are observations, not state: export leaves them out (operators.md).
      const key = `host show ${fqdn} --json`;
      const { lastRequest: _last, requests24h: _counts, ...rest } = JSON.parse(view[key]!) as Record<string, unknown>;
      view[key] = JSON.stringify(rest);
    };
    await Promise.all([
      run(['account', 'list', '--json']),
      ...Object.keys(PASSWORDS).map((name) => run(['account', 'show', name, '--json'])),
      run(['host', 'list', '--json']),
      ...Object.values(hosts).map(showHost),
      run(['token', 'list', '--json']),
      run(['agent', 'list']),
    ]);
    return view;
  }

  before(async function () {
    requireBinariesOrSkip(this, ['redis-server', 'knotd', 'kdig']);
    env = await BridgeEnv.start({
      kind: 'knot',
      records: [`mail.${ZONE}. 60 IN A 192.0.2.25`],
      config: { frequency: { minInterval: 0.001, donatorMinInterval: 0.001 } },
    });
    targetDir = await makeTempDir('ddns-restore-');
    target = await startRedis({ dir: targetDir, appendonly: false });
    source = new Redis(env.redis.url, { connectionName: 'backup-test-source' });
    restored = new Redis(target.url, { connectionName: 'backup-test-target' });
    exportFile = path.join(env.dir, 'backups', 'ddns-bridge.jsonl');
    await mkdir(path.dirname(exportFile));

    await env.addAccount('ann', PASSWORDS.ann, true);
    await env.addAccount('bob', PASSWORDS.bob);
    const ann: [string, string] = ['ann', PASSWORDS.ann];
    const bob: [string, string] = ['bob', PASSWORDS.bob];
    await Promise.all([hosts.live, hosts.nested, hosts.away].map((fqdn) => env.addHost(fqdn, 'ann')));
    await env.addHost(hosts.fixed, 'ann', 'static');
    await env.addHost(hosts.web, 'ann', 'webhop');
    await env.addHost(hosts.sub, 'ann', 'subdomain');
    await Promise.all([hosts.bobs, hosts.banned, hosts.shut].map((fqdn) => env.addHost(fqdn, 'bob')));

    const mx = `mail.${ZONE}`;
    let r = await update(`hostname=${hosts.live}&myip=192.0.2.8,2001:db8::8&wildcard=ON&mx=${mx}&backmx=YES`, ann);
    expect(r.body).to.equal('good 192.0.2.8,2001:db8::8\n');
    r = await update(`hostname=${hosts.nested}&myip=192.0.2.9`, ann);
    expect(r.body).to.equal('good 192.0.2.9\n');
    r = await update(`hostname=${hosts.away}&myip=192.0.2.10`, ann);
    expect(r.body).to.equal('good 192.0.2.10\n');
    r = await update(`hostname=${hosts.away}&offline=YES`, ann);
    expect(r.body).to.match(/^good/);
    r = await update(`hostname=${hosts.bobs}&myip=198.51.100.1`, bob);
    expect(r.body).to.equal('good 198.51.100.1\n');
    r = await update(`hostname=${hosts.banned}&myip=198.51.100.2`, bob);
    expect(r.body).to.equal('good 198.51.100.2\n');
    await env.cliOk(['host', 'block', hosts.banned]);
    await env.cliOk(['host', 'close', hosts.shut]);
    // An IPv6 prefix link (nested follows live) and ACME TXT values: they must come back too.
    await env.cliOk(['host', 'link', hosts.nested, '--to', hosts.live, '--iid', '::1234:5678:9abc:def0']);
    r = await update(
      `hostname=${hosts.live}&myip=192.0.2.8,2001:db8::8&wildcard=ON&mx=${mx}&backmx=YES&ipv6prefix=2001:db8:1200:3400::/56`,
      ann,
    );
    expect(r.body).to.match(/^(good|nochg) /);
    expect((await env.hostJson(hosts.nested)).ipv6).to.equal('2001:db8:1200:3400:1234:5678:9abc:def0');
    for (const v of ['acme-value-one', 'acme-value-two']) {
      r = await update(`hostname=${hosts.live}&txt=${v}`, ann);
      expect(r.body).to.equal(`good ${v}\n`);
    }

    const made = (await env.cliOk(['token', 'add', hosts.bobs, '--note', 'router', '--from', '127.0.0.0/8'])).trim();
    token = made.split('\n').at(-1)!;
    tokenId = /^token ([0-9a-f]{12}) /.exec(made)![1]!;
    r = await update(`hostname=${hosts.bobs}&myip=198.51.100.3`, [hosts.bobs, token]);
    expect(r.body).to.equal('good 198.51.100.3\n');
    await env.cliOk(['agent', 'block', 'BadRouter/1.*']);
  });

  after(async () => {
    source?.disconnect();
    restored?.disconnect();
    await target?.stop().catch(() => undefined);
    if (targetDir) await removeDir(targetDir);
    await env?.stop();
  });

  it('export FILE writes JSON lines, mode 0600, with hashes but no password or token', async () => {
    const summary = await env.cliOk(['export', exportFile]);
    expect(summary).to.equal(`exported 2 accounts, 9 hosts, 1 token, 1 agent block to ${exportFile}\n`);
    expect((await stat(exportFile)).mode & 0o777).to.equal(0o600);
    const text = await readFile(exportFile, 'utf8');
    for (const secret of [PASSWORDS.ann, PASSWORDS.bob, token]) expect(text).not.to.include(secret);
    const lines = text
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.map((l) => l.kind)).to.deep.equal([
      'header',
      'account',
      'account',
      ...Array(9).fill('host'),
      'token',
      'agentBlock',
      'end',
    ]);
    expect(lines[0]).to.include({ kind: 'header', format: 'ddns-bridge-export', version: 1 });
    const ann = lines.find((l) => l.kind === 'account' && l.name === 'ann')!;
    expect(ann).to.include({ donator: true });
    expect(ann.passwordHash).to.match(/^\$scrypt\$/);
    expect(lines.find((l) => l.kind === 'host' && l.fqdn === hosts.live)).to.deep.include({
      owner: 'ann',
      type: 'dynamic',
      state: 'active',
      ipv4: '192.0.2.8',
      ipv6: '2001:db8::8',
      wildcard: true,
      mx: `mail.${ZONE}`,
      backmx: true,
    });
    expect(lines.find((l) => l.kind === 'host' && l.fqdn === hosts.away)).to.include({ state: 'offline', ipv4: null });
    const t = lines.find((l) => l.kind === 'token')!;
    expect(t).to.deep.include({ id: tokenId, host: hosts.bobs, account: 'bob', from: ['127.0.0.0/8'], note: 'router' });
    expect(t.lastUsedAt).to.be.a('number');
    expect(Object.keys(t)).not.to.include('token');
    expect(lines.at(-1)).to.deep.equal({ kind: 'end', accounts: 2, hosts: 9, tokens: 1, agentBlocks: 1 });
    // No lease, repair or frequency field of the host hash.
    expect(Object.keys(lines.find((l) => l.kind === 'host' && l.fqdn === hosts.bobs)!).sort()).to.deep.equal(
      ['kind', 'fqdn', 'owner', 'type', 'state', 'ipv4', 'ipv6', 'wildcard', 'mx', 'backmx', 'updatedAt'].sort(),
    );
  });

  it('export - (and no FILE) writes the same lines to stdout', async () => {
    const file = (await readFile(exportFile, 'utf8')).split('\n').slice(1);
    const forms = [['export', '-'], ['export']];
    const runs = await Promise.all(forms.map((args) => env.cli(args)));
    for (const [i, args] of forms.entries()) {
      const r = runs[i]!;
      expect(r.code, r.stderr).to.equal(0);
      expect(r.stdout.split('\n').slice(1), args.join(' ')).to.deep.equal(file);
      expect(r.stdout.split('\n')[0]).to.match(/^\{"kind":"header","format":"ddns-bridge-export","version":1,/);
      expect(r.stderr).to.include('exported 2 accounts, 9 hosts, 1 token, 1 agent block');
    }
  });

  it('import-all into a fresh key space gives the same store: CLI views, records and indexes', async () => {
    const config = await targetConfig('restored:');
    const r = await cliOn(config, ['import-all', exportFile]);
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stdout).to.equal(
      'restored 2 accounts, 9 hosts, 1 token, 1 agent block; unchanged 0 accounts, 0 hosts, 0 tokens, 0 agent blocks; ' +
        '0 conflicts\n',
    );
    const [restoredView, sourceView] = await Promise.all([operatorView(config), operatorView(env.configPath)]);
    expect(restoredView).to.deep.equal(sourceView);
    // The records and every index (nest index, account counts, token index and sets) as the add paths made them.
    const before = await dumpRecords(source, SOURCE_PREFIX);
    expect(Object.keys(before)).to.include.members([`d:live.${ZONE}`, `ht:${hosts.bobs}`, 'accounts', 'ag']);
    expect(await dumpRecords(restored, 'restored:')).to.deep.equal(before);
  });

  it('a login works against the restored store: password and token, through the bridge', async () => {
    await env.stopServes();
    await env.writeConfig({ redis: { url: target.url, keyPrefix: 'restored:' } });
    try {
      await env.startServe();
      let r = await update(`hostname=${hosts.live}&myip=192.0.2.8,2001:db8::8&wildcard=ON&mx=mail.${ZONE}&backmx=YES`, [
        'ann',
        PASSWORDS.ann,
      ]);
      expect(r.body).to.equal('nochg 192.0.2.8,2001:db8::8\n');
      r = await update(`hostname=${hosts.nested}&myip=192.0.2.99`, ['ann', PASSWORDS.ann]);
      expect(r.body).to.equal('good 192.0.2.99\n');
      expect(await env.ns.query(hosts.nested, 'A')).to.deep.equal(['192.0.2.99']);
      r = await update(`hostname=${hosts.bobs}&myip=198.51.100.77`, [hosts.bobs, token]);
      expect(r.body).to.equal('good 198.51.100.77\n');
      expect(await env.ns.query(hosts.bobs, 'A')).to.deep.equal(['198.51.100.77']);
      // The restored states hold: blocked and closed hosts stay so, the blocked agent too.
      r = await update(`hostname=${hosts.banned}&myip=198.51.100.2`, ['bob', PASSWORDS.bob]);
      expect(r.body).to.equal('abuse\n');
      r = await update(`hostname=${hosts.shut}&myip=198.51.100.5`, ['bob', PASSWORDS.bob]);
      expect(r.body).to.equal('!active\n');
      const blocked = await env.get(`/nic/update?hostname=${hosts.bobs}&myip=198.51.100.6`, {
        auth: [hosts.bobs, token],
        ua: 'BadRouter/1.2',
      });
      expect(blocked.body).to.equal('badagent\n');
    } finally {
      await env.stopServes();
      await env.writeConfig({});
      await env.startServe();
    }
  });

  it('refuses a key space that holds records (exit 1, nothing written); --merge adds to it', async () => {
    const config = await targetConfig('restored:');
    const before = await dumpRecords(restored, 'restored:');
    const refused = await cliOn(config, ['import-all', exportFile]);
    expect(refused.code).to.equal(1);
    expect(refused.stdout).to.equal('');
    expect(refused.stderr).to.match(/the keyspace holds records already \(.*\): import-all restores into an empty one/);
    expect(refused.stderr).to.include('--merge');
    expect(await dumpRecords(restored, 'restored:')).to.deep.equal(before);

    // The same records again: all unchanged, exit 0 (records changed since the restore stay as they are).
    const same = await cliOn(config, ['import-all', exportFile, '--merge']);
    expect(same.code, same.stderr).to.equal(0);
    expect(same.stdout).to.equal(
      'restored 0 accounts, 0 hosts, 0 tokens, 0 agent blocks; unchanged 2 accounts, 9 hosts, 1 token, 1 agent block; ' +
        '0 conflicts\n',
    );
    expect(await dumpRecords(restored, 'restored:')).to.deep.equal(before);

    // Into a key space with an account of its own and another 'ann': the rest comes in, ann's line is a conflict.
    const merged = await targetConfig('merged:');
    expectOk(await cliOn(merged, ['account', 'add', 'ann'], 'another-password\n'), 'account add');
    expectOk(await cliOn(merged, ['account', 'add', 'carol'], 'carol-password\n'), 'account add');
    const r = await cliOn(merged, ['import-all', exportFile, '--merge']);
    expect(r.code).to.equal(1);
    const annLine = (await readFile(exportFile, 'utf8')).split('\n').findIndex((l) => l.includes('"name":"ann"')) + 1;
    expect(r.stderr).to.equal(`line ${annLine}: account ann exists with another password; left as it is\n`);
    expect(r.stdout).to.equal(
      'restored 1 account, 9 hosts, 1 token, 1 agent block; unchanged 0 accounts, 0 hosts, 0 tokens, 0 agent blocks; ' +
        '1 conflict\n',
    );
    const names = JSON.parse(expectOk(await cliOn(merged, ['account', 'list', '--json']), 'list')) as {
      name: string;
    }[];
    expect(names.map((a) => a.name)).to.deep.equal(['ann', 'bob', 'carol']);
    const shown = JSON.parse(expectOk(await cliOn(merged, ['account', 'show', 'ann', '--json']), 'show')) as {
      hosts: string[];
    };
    expect(shown.hosts).to.have.length(6);
  });

  it('refuses a corrupt file naming the line, with nothing written', async () => {
    const config = await targetConfig('corrupt:');
    const lines = (await readFile(exportFile, 'utf8')).trimEnd().split('\n');
    const ann = lines.findIndex((l) => l.includes('"name":"ann"'));
    const cases: { edit: (l: string[]) => string[]; says: string | RegExp }[] = [
      { edit: (l) => l.map((s, i) => (i === 4 ? s.slice(0, 20) : s)), says: 'line 5: not a JSON object' },
      {
        edit: (l) => l.map((s, i) => (i === 5 ? s.replace(/"type":"[a-z]+"/, '"type":"bogus"') : s)),
        says: 'line 6: host: type "bogus" is not one of dynamic, static, webhop, subdomain',
      },
      {
        edit: (l) =>
          l.map((s, i) => (i === ann ? s.replace(/"passwordHash":"[^"]+"/, `"passwordHash":"${PASSWORDS.ann}"`) : s)),
        says: `line ${ann + 1}: account ann: passwordHash is not a password hash`,
      },
      { edit: (l) => l.slice(0, -1), says: `line ${lines.length - 1}: the file ends without its end line` },
      {
        edit: (l) => l.filter((_, i) => i !== ann),
        says: /line \d+: host [a-z.]+: account ann, which is not defined above/,
      },
    ];
    for (const { edit, says } of cases) {
      const file = path.join(targetDir, 'corrupt.jsonl');
      await writeFile(file, edit(lines).join('\n') + '\n');
      const r = await cliOn(config, ['import-all', file]);
      expect(r.code, r.stderr).to.equal(2);
      expect(r.stdout).to.equal('');
      expect(r.stderr).to.include('nothing written');
      if (typeof says === 'string') expect(r.stderr).to.include(says);
      else expect(r.stderr).to.match(says);
      // No secret of the line in the message.
      expect(r.stderr).not.to.include(PASSWORDS.ann);
      expect(await restored.keys('corrupt:*')).to.deep.equal([]);
    }
  });

  it('import-all - reads stdin', async () => {
    const config = await targetConfig('stdin:');
    const r = await cliOn(config, ['import-all', '-'], await readFile(exportFile, 'utf8'));
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stdout).to.match(/^restored 2 accounts, 9 hosts, 1 token, 1 agent block;/);
    expect(await dumpRecords(restored, 'stdin:')).to.deep.equal(await dumpRecords(source, SOURCE_PREFIX));
  });

  it('a file of many thousand lines round-trips line for line (import-all FILE, then export)', async () => {
    const lines = (await readFile(exportFile, 'utf8')).trimEnd().split('\n');
    const ann = lines.find((l) => l.includes('"name":"ann"'))!;
    const count = 20000;
    const bulk = Array.from({ length: count }, (_, i) =>
      JSON.stringify({
        kind: 'host',
        fqdn: `bulk-${i}.${ZONE}`,
        owner: 'ann',
        type: 'dynamic',
        state: 'active',
        ipv4: `10.0.${i >> 8}.${i & 255}`,
        ipv6: null,
        wildcard: i % 2 === 0,
        mx: null,
        backmx: false,
        updatedAt: 1_700_000_000_000 + i,
      }),
    );
    const end = JSON.stringify({ kind: 'end', accounts: 1, hosts: count, tokens: 0, agentBlocks: 0 });
    const file = path.join(targetDir, 'bulk.jsonl');
    await writeFile(file, [lines[0], ann, ...bulk, end].join('\n') + '\n');
    const config = await targetConfig('bulk:');
    const r = await cliOn(config, ['import-all', file]);
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stdout).to.match(new RegExp(`^restored 1 account, ${count} hosts, 0 tokens, 0 agent blocks;`));
    const again = expectOk(await cliOn(config, ['export']), 'export')
      .trimEnd()
      .split('\n');
    expect(again.slice(1).sort()).to.deep.equal([ann, ...bulk, end].sort());
  });
});
