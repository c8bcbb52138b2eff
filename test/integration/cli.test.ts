/**
 * The operator CLI as a real process: `account`, `host`, `agent`, `check` and config lookup,
 * against a private redis-server and knotd/named, with a real `serve` process to prove that
 * what the CLI changed is what the update interface sees.
 */
import { expect } from 'chai';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Redis } from 'ioredis';
import { BridgeEnv, ZONE, deepMerge, expectedReply, runCli, type CliResult } from '../support/bridge.js';
import {
  freePort,
  generateTsigKey,
  LAB_KINDS,
  requireBinariesOrSkip,
  serverBinaries,
  startNameServer,
  type LabKind,
  type NameServer,
} from '../../src/lab/index.js';

const UA = 'ddns-bridge-cli-tests/1.0 tests@example.test';
const BADAUTH = expectedReply(401, 'Unauthorized', 'badauth\n', ['WWW-Authenticate: Basic realm="ddns-bridge"']);

const serversFor = (kind: LabKind) => ['redis-server', ...serverBinaries(kind)];

let seq = 0;
const uniq = (label: string) => `${label}-${process.pid}-${++seq}`;
const uniqHost = (label: string) => `${uniq(label)}.${ZONE}`;

/** Both output streams, for "this must never be printed" checks. */
const printed = (r: CliResult) => r.stdout + r.stderr;

function expectFailure(r: CliResult, code: number | null, ...mentions: (string | RegExp)[]): void {
  expect(r.code, `exit status; stderr: ${r.stderr}`).to.equal(code);
  expect(r.stdout, 'nothing on stdout for a failed command').to.equal('');
  for (const m of mentions) {
    if (typeof m === 'string') expect(r.stderr).to.include(m);
    else expect(r.stderr).to.match(m);
  }
}

/** Write a variant of the env's config next to it; returns its path. */
async function writeVariant(env: BridgeEnv, name: string, override: Record<string, unknown>): Promise<string> {
  const file = path.join(env.dir, name);
  const json = deepMerge(env.config, override);
  await writeFile(file, JSON.stringify(json, null, 2), { mode: 0o600 });
  return file;
}

/** A key file for a fresh random secret the primary does not know. */
async function writeWrongSecret(env: BridgeEnv): Promise<{ file: string; secret: string }> {
  const wrong = generateTsigKey();
  const file = path.join(env.dir, 'wrong-tsig.secret');
  await writeFile(file, wrong.secret + '\n', { mode: 0o600 });
  return { file, secret: wrong.secret };
}

const zoneWith = (env: BridgeEnv, key: Record<string, unknown>) => {
  const zone = (env.config.zones as Record<string, unknown>[])[0]!;
  return { ...zone, key: { ...(zone.key as Record<string, unknown>), ...key } };
};

describe('CLI (knot): accounts, hosts, agents', function () {
  this.timeout(60000);
  let env: BridgeEnv;

  before(async function () {
    requireBinariesOrSkip(this, serversFor('knot'));
    // Default frequency limits (60 s): the 4th quick update of one host blocks it.
    env = await BridgeEnv.start({ kind: 'knot', records: [`mail.${ZONE}. 60 IN A 192.0.2.25`] });
  });
  after(async () => env?.stop());

  const update = (query: string, creds: [string, string]) => env.get(`/nic/update?${query}`, { auth: creds, ua: UA });

  describe('account', () => {
    it('add (password from stdin) and add --donator; show --json carries no password or hash', async () => {
      const name = uniq('ann');
      const password = 'ann-Secret-pw-1';
      const don = uniq('don');
      // Two independent adds, then three reads: one CLI process each, side by side.
      const [added, addedDonator] = await Promise.all([
        env.cli(['account', 'add', name], password + '\n'),
        env.cli(['account', 'add', don, '--donator'], 'don-Secret-pw-2\n'),
      ]);
      expect(added.code, added.stderr).to.equal(0);
      expect(added.stdout).to.include(name);
      expect(addedDonator.code, addedDonator.stderr).to.equal(0);

      const [shown, shownDonator, plain] = await Promise.all([
        env.cli(['account', 'show', name, '--json']),
        env.cliOk(['account', 'show', don, '--json']),
        env.cli(['account', 'show', name]),
      ]);
      expect(shown.code, shown.stderr).to.equal(0);
      expect(shown.stdout.trimEnd().split('\n')).to.have.length(1);
      const view = JSON.parse(shown.stdout) as Record<string, unknown>;
      expect(view).to.include({ name, donator: false });
      expect(view.hosts).to.deep.equal([]);
      for (const key of Object.keys(view)) expect(key).to.not.match(/pass|hash|secret|salt/i);
      expect(shown.stdout).to.not.include(password);
      expect(shown.stdout).to.not.match(/scrypt/i);
      expect(JSON.parse(shownDonator)).to.include({ name: don, donator: true });

      // The plain-text show works too and is as discreet.
      expect(plain.code).to.equal(0);
      expect(plain.stdout).to.include(name);
      expect(plain.stdout).to.not.match(/scrypt/i);
      expect(printed(added) + printed(shown) + printed(plain)).to.not.include(password);
    });

    it('Redis holds a hash, never the password itself', async () => {
      const name = uniq('stored');
      const password = 'Stored-Plaintext-Never-7';
      await env.addAccount(name, password);
      const redis = new Redis(env.redis.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
      try {
        await redis.connect();
        const keys = await redis.keys('*');
        expect(
          keys.some((k) => k.includes(name)),
          `a key for ${name} among ${keys.join(' ')}`,
        ).to.equal(true);
        let dump = '';
        for (const key of keys) {
          const type = await redis.type(key);
          if (type === 'string') dump += await redis.get(key);
          else if (type === 'hash') dump += JSON.stringify(await redis.hgetall(key));
          else if (type === 'set') dump += (await redis.smembers(key)).join(' ');
          else if (type === 'zset') dump += (await redis.zrange(key, 0, -1)).join(' ');
          else if (type === 'list') dump += (await redis.lrange(key, 0, -1)).join(' ');
        }
        expect(dump).to.not.include(password);
        expect(dump).to.not.include(Buffer.from(password).toString('base64'));
      } finally {
        redis.disconnect();
      }
    });

    it('list shows every account, donators marked; list --json', async () => {
      const a = uniq('lista');
      const d = uniq('listd');
      await Promise.all([env.addAccount(a, 'list-pw-a'), env.addAccount(d, 'list-pw-d', true)]);
      const [list, listJson] = await Promise.all([
        env.cliOk(['account', 'list']),
        env.cliOk(['account', 'list', '--json']),
      ]);
      const lines = list.trimEnd().split('\n');
      expect(lines).to.include(a);
      expect(lines.find((l) => l.startsWith(d))).to.match(new RegExp(`^${d}\\s+donator$`));
      const json = JSON.parse(listJson) as { name: string; donator: boolean }[];
      expect(json.find((x) => x.name === a)).to.include({ donator: false });
      expect(json.find((x) => x.name === d)).to.include({ donator: true });
      expect(JSON.stringify(json)).to.not.match(/hash|password|scrypt/i);
    });

    it('only the first line of stdin is the password', async () => {
      const name = uniq('firstline');
      await env.cliOk(['account', 'add', name], 'first-line-pw\r\nsecond-line-pw\n');
      const h = uniqHost('fl');
      await env.addHost(h, name);
      expect((await update(`hostname=${h}&myip=192.0.2.60`, [name, 'first-line-pw'])).body).to.equal(
        'good 192.0.2.60\n',
      );
      expect(
        (await update(`hostname=${h}&myip=192.0.2.60`, [name, 'first-line-pw\r\nsecond-line-pw'])).status,
      ).to.equal(401);
    });

    it('passwd: the old password gets badauth at once, the new one works', async () => {
      const name = uniq('pat');
      const oldPw = 'pat-Old-password-1';
      const newPw = 'pat-New-password-2';
      await env.addAccount(name, oldPw);
      const h = uniqHost('pat');
      await env.addHost(h, name);
      // The serve process now has the old credentials verified (and possibly cached).
      expect((await update(`hostname=${h}&myip=192.0.2.61`, [name, oldPw])).body).to.equal('good 192.0.2.61\n');

      const changed = await env.cli(['account', 'passwd', name], newPw + '\n');
      expect(changed.code, changed.stderr).to.equal(0);
      expect(changed.stdout).to.include(name);
      expect(printed(changed)).to.not.include(newPw);
      expect(printed(changed)).to.not.include(oldPw);

      expect((await update(`hostname=${h}&myip=192.0.2.62`, [name, oldPw])).raw.toString()).to.equal(BADAUTH);
      expect(await env.ns.query(h, 'A')).to.deep.equal(['192.0.2.61']);
      expect((await update(`hostname=${h}&myip=192.0.2.62`, [name, newPw])).body).to.equal('good 192.0.2.62\n');
      expect(await env.ns.query(h, 'A')).to.deep.equal(['192.0.2.62']);
    });

    it('remove refuses while the account owns hosts, works after host remove', async () => {
      const name = uniq('rem');
      await env.addAccount(name, 'rem-pw');
      const h = uniqHost('rem');
      await env.addHost(h, name);

      const refused = await env.cli(['account', 'remove', name]);
      expectFailure(refused, 1, name, /host/);
      expect(JSON.parse(await env.cliOk(['account', 'show', name, '--json']))).to.deep.include({ name, hosts: [h] });

      await env.cliOk(['host', 'remove', h]);
      const removed = await env.cli(['account', 'remove', name]);
      expect(removed.code, removed.stderr).to.equal(0);
      expect(removed.stdout).to.include(name);
      expectFailure(await env.cli(['account', 'show', name, '--json']), 1, name);
      expect((await env.cliOk(['account', 'list'])).split('\n')).to.not.include(name);
      // Its credentials are gone with it.
      expect((await update(`hostname=${h}&myip=192.0.2.63`, [name, 'rem-pw'])).status).to.equal(401);
    });

    it('errors: duplicate add, unknown account, empty password, invalid name — non-zero exit and a message', async () => {
      const name = uniq('dup');
      await env.addAccount(name, 'dup-first-pw');
      const dup = await env.cli(['account', 'add', name], 'dup-second-pw\n');
      expectFailure(dup, 1, name, /exists/);
      expect(printed(dup)).to.not.include('dup-second-pw');
      // The first password still holds: the duplicate did not overwrite it.
      const h = uniqHost('dup');
      await env.addHost(h, name);
      expect((await update(`hostname=${h}&myip=192.0.2.64`, [name, 'dup-first-pw'])).body).to.equal(
        'good 192.0.2.64\n',
      );

      // The refusals below write nothing: one CLI process each, side by side.
      const ghost = uniq('ghost');
      const empty = uniq('empty');
      const [show, showJson, passwd, remove, noPassword, emptyLine, badName, noName] = await Promise.all([
        env.cli(['account', 'show', ghost]),
        env.cli(['account', 'show', ghost, '--json']),
        env.cli(['account', 'passwd', ghost], 'ghost-pw\n'),
        env.cli(['account', 'remove', ghost]),
        env.cli(['account', 'add', empty], ''),
        env.cli(['account', 'add', empty], '\n'),
        env.cli(['account', 'add', 'bad name'], 'x-pw\n'),
        env.cli(['account', 'add'], 'x-pw\n'),
      ]);
      expectFailure(show, 1, ghost);
      expectFailure(showJson, 1, ghost);
      expectFailure(passwd, 1, ghost);
      expect(printed(passwd)).to.not.include('ghost-pw');
      expectFailure(remove, 1, ghost);

      expectFailure(noPassword, 1, /password/);
      expectFailure(emptyLine, 1, /password/);
      expectFailure(await env.cli(['account', 'show', empty]), 1, empty);

      expect(badName.code).to.not.equal(0);
      expect(noName.code).to.equal(2);
    });
  });

  describe('host', () => {
    let owner: string;
    const ownerPw = 'host-owner-pw-1';
    before(async () => {
      owner = uniq('hostowner');
      await env.addAccount(owner, ownerPw);
    });

    it('add (dynamic by default, --type static); show --json has owner, type, state, addresses, wildcard, mx, backmx', async () => {
      const dyn = uniqHost('dyn');
      const added = await env.cli(['host', 'add', dyn, '--account', owner]);
      expect(added.code, added.stderr).to.equal(0);
      expect(added.stdout).to.include(dyn);
      const view = await env.hostJson(dyn);
      expect(view).to.include({
        owner,
        type: 'dynamic',
        state: 'active',
        wildcard: false,
        mx: null,
        backmx: false,
        repair: null,
      });
      expect(view.addresses).to.deep.equal([]);
      expect(await env.cliOk(['host', 'show', dyn])).to.include('\nrepair: none\n');

      const stat = uniqHost('stat');
      await env.cliOk(['host', 'add', stat, '--account', owner, '--type', 'static']);
      expect(await env.hostJson(stat)).to.include({ owner, type: 'static', state: 'active' });
      expect((await update(`hostname=${stat}&myip=192.0.2.70`, [owner, ownerPw])).body).to.equal('badsys\n');

      // After an update, show reflects what was published.
      const r = await update(`hostname=${dyn}&myip=192.0.2.71,2001:db8::71&wildcard=ON&mx=mail.${ZONE}&backmx=YES`, [
        owner,
        ownerPw,
      ]);
      expect(r.body).to.equal('good 192.0.2.71,2001:db8::71\n');
      const after = await env.hostJson(dyn);
      expect(after).to.include({
        owner,
        type: 'dynamic',
        state: 'active',
        wildcard: true,
        mx: `mail.${ZONE}`,
        backmx: true,
      });
      expect(after.addresses).to.have.members(['192.0.2.71', '2001:db8::71']);
    });

    it('names are normalised (case, trailing dot)', async () => {
      const label = uniq('Mixed');
      await env.cliOk(['host', 'add', `${label.toUpperCase()}.${ZONE.toUpperCase()}.`, '--account', owner]);
      expect(await env.hostJson(`${label.toLowerCase()}.${ZONE}`)).to.include({
        fqdn: `${label.toLowerCase()}.${ZONE}`,
        owner,
      });
    });

    it('refuses a name outside every zone, the zone apex, an unknown account, a duplicate, a bad type', async () => {
      // Each refused add, then the show that proves it wrote nothing; the independent cases side by side.
      const outside = `${uniq('out')}.example.org`;
      const orphan = uniqHost('orphan');
      const ghost = uniq('ghost');
      const h = uniqHost('twice');
      const other = uniq('other');
      const [outsideAdd, apexAdd, orphanAdd, badType, noAccount, badLabel] = await Promise.all([
        env.cli(['host', 'add', outside, '--account', owner]),
        env.cli(['host', 'add', ZONE, '--account', owner]),
        env.cli(['host', 'add', orphan, '--account', ghost]),
        env.cli(['host', 'add', uniqHost('badtype'), '--account', owner, '--type', 'bogus']),
        env.cli(['host', 'add', uniqHost('noacct')]),
        env.cli(['host', 'add', `bad_label.${ZONE}`, '--account', owner]),
        env.addHost(h, owner),
        env.addAccount(other, 'other-pw'),
      ]);
      expectFailure(outsideAdd, 2, outside, /zone/);
      expect(apexAdd.code).to.not.equal(0);
      expectFailure(orphanAdd, 1, ghost);
      expect(badType.code).to.equal(2);
      expect(badType.stderr).to.include('bogus');
      expect(noAccount.code).to.equal(2);
      expectFailure(badLabel, 2, 'bad_label');

      const [outsideShow, apexShow, orphanShow, twice] = await Promise.all([
        env.cli(['host', 'show', outside, '--json']),
        env.cli(['host', 'show', ZONE, '--json']),
        env.cli(['host', 'show', orphan, '--json']),
        env.cli(['host', 'add', h, '--account', other]),
      ]);
      expectFailure(outsideShow, 1, outside);
      expect(apexShow.code).to.not.equal(0);
      expectFailure(orphanShow, 1, orphan);
      expectFailure(twice, 1, h, /exists/);
      expect(await env.hostJson(h)).to.include({ owner });
    });

    it('list, and list --account', async () => {
      const a = uniq('la');
      const b = uniq('lb');
      // Independent adds, then the lists (read only): one CLI process each, side by side.
      await Promise.all([env.addAccount(a, 'la-pw'), env.addAccount(b, 'lb-pw')]);
      const ha1 = uniqHost('ha1');
      const ha2 = uniqHost('ha2');
      const hb = uniqHost('hb');
      await Promise.all([env.addHost(ha1, a), env.addHost(ha2, a, 'static'), env.addHost(hb, b)]);
      const fqdns = (out: string) =>
        out
          .trimEnd()
          .split('\n')
          .filter(Boolean)
          .map((l) => l.split('\t')[0]);

      const [listAll, listA, listB, listJson] = await Promise.all([
        env.cliOk(['host', 'list']),
        env.cliOk(['host', 'list', '--account', a]),
        env.cliOk(['host', 'list', '--account', b]),
        env.cliOk(['host', 'list', '--account', a, '--json']),
      ]);
      expect(fqdns(listAll)).to.include.members([ha1, ha2, hb]);
      expect(fqdns(listA)).to.have.members([ha1, ha2]);
      expect(fqdns(listB)).to.deep.equal([hb]);
      const line = listA.split('\n').find((l) => l.startsWith(ha2 + '\t'));
      expect(line).to.match(new RegExp(`^${ha2}\\t${a}\\tstatic\\tactive\\t`));
      const json = JSON.parse(listJson) as {
        fqdn: string;
        owner: string;
      }[];
      expect(json.map((h) => h.fqdn)).to.have.members([ha1, ha2]);
      expect(json.every((h) => h.owner === a)).to.equal(true);
    });

    it('close / reopen / unblock check the current state', async () => {
      const h = uniqHost('states');
      await env.addHost(h, owner);
      const state = async () => (await env.hostJson(h)).state;

      // active: nothing to unblock or reopen (the refusals of one state change nothing: side by side)
      const [unblockActive, reopenActive] = await Promise.all([
        env.cli(['host', 'unblock', h]),
        env.cli(['host', 'reopen', h]),
      ]);
      expectFailure(unblockActive, 1, h, /active/);
      expectFailure(reopenActive, 1, h, /active/);
      expect(await state()).to.equal('active');

      expect((await update(`hostname=${h}&myip=192.0.2.80`, [owner, ownerPw])).body).to.equal('good 192.0.2.80\n');
      const closed = await env.cli(['host', 'close', h]);
      expect(closed.code, closed.stderr).to.equal(0);
      expect(closed.stdout).to.include('closed');
      expect(await state()).to.equal('closed');
      expect((await update(`hostname=${h}&myip=192.0.2.81`, [owner, ownerPw])).body).to.equal('!active\n');
      expect(await env.ns.query(h, 'A')).to.deep.equal(['192.0.2.80']); // closed keeps its records
      const [closeClosed, unblockClosed] = await Promise.all([
        env.cli(['host', 'close', h]),
        env.cli(['host', 'unblock', h]),
      ]);
      expectFailure(closeClosed, 1, h, /closed/);
      expectFailure(unblockClosed, 1, h, /closed/);
      expect(await state()).to.equal('closed');

      await env.cliOk(['host', 'reopen', h]);
      expect(await state()).to.equal('active');
      expectFailure(await env.cli(['host', 'reopen', h]), 1, h);
      expect((await update(`hostname=${h}&myip=192.0.2.82`, [owner, ownerPw])).body).to.equal('good 192.0.2.82\n');

      // The 4th quick update blocks it (the 60 s default interval).
      const bodies: string[] = [];
      for (let i = 0; i < 4; i++)
        bodies.push((await update(`hostname=${h}&myip=192.0.2.${83 + i}`, [owner, ownerPw])).body);
      expect(bodies.at(-1)).to.equal('abuse\n');
      expect(await state()).to.equal('blocked');
      expectFailure(await env.cli(['host', 'reopen', h]), 1, h, /blocked/);
      expect(await state()).to.equal('blocked');

      const unblocked = await env.cli(['host', 'unblock', h]);
      expect(unblocked.code, unblocked.stderr).to.equal(0);
      expect(await state()).to.equal('active');
      expectFailure(await env.cli(['host', 'unblock', h]), 1, h, /active/);
      expect((await update(`hostname=${h}&myip=192.0.2.90`, [owner, ownerPw])).body).to.equal('good 192.0.2.90\n');

      // Unknown host: each command names it.
      const ghost = uniqHost('ghost');
      const refused = await Promise.all(['close', 'reopen', 'unblock'].map((cmd) => env.cli(['host', cmd, ghost])));
      for (const r of refused) expectFailure(r, 1, ghost);
    });

    it('remove deletes the records from DNS (address, wildcard, MX), then the host', async () => {
      const h = uniqHost('gone');
      await env.addHost(h, owner);
      const r = await update(`hostname=${h}&myip=192.0.2.91,2001:db8::91&wildcard=ON&mx=mail.${ZONE}`, [
        owner,
        ownerPw,
      ]);
      expect(r.body).to.equal('good 192.0.2.91,2001:db8::91\n');
      const below = `x${seq}.${h}`;
      expect(await env.ns.query(h, 'A')).to.deep.equal(['192.0.2.91']);
      expect(await env.ns.query(h, 'AAAA')).to.deep.equal(['2001:db8::91']);
      expect(await env.ns.query(below, 'A')).to.deep.equal(['192.0.2.91']);
      expect(await env.ns.query(h, 'MX')).to.deep.equal([`10 mail.${ZONE}.`]);

      const removed = await env.cli(['host', 'remove', h]);
      expect(removed.code, removed.stderr).to.equal(0);
      expect(removed.stdout).to.include(h);
      expect(await env.ns.query(h, 'A')).to.deep.equal([]);
      expect(await env.ns.query(h, 'AAAA')).to.deep.equal([]);
      expect(await env.ns.query(below, 'A')).to.deep.equal([]);
      expect(await env.ns.query(below, 'AAAA')).to.deep.equal([]);
      expect(await env.ns.query(h, 'MX')).to.deep.equal([]);
      expectFailure(await env.cli(['host', 'show', h, '--json']), 1, h);
      const listed = JSON.parse(await env.cliOk(['host', 'list', '--account', owner, '--json'])) as Array<{
        fqdn: string;
      }>;
      expect(listed.map((x) => x.fqdn)).to.not.include(h);
      expect((await update(`hostname=${h}&myip=192.0.2.92`, [owner, ownerPw])).body).to.equal('nohost\n');
      expect(await env.ns.query(h, 'A')).to.deep.equal([]);

      expectFailure(await env.cli(['host', 'remove', h]), 1, h);
    });

    it('remove fails and keeps the host when its records cannot be deleted from DNS', async () => {
      const h = uniqHost('stuck');
      await env.addHost(h, owner);
      expect((await update(`hostname=${h}&myip=192.0.2.93`, [owner, ownerPw])).body).to.equal('good 192.0.2.93\n');
      const { file, secret } = await writeWrongSecret(env);
      const wrongKey = await writeVariant(env, 'wrong-key-remove.json', {
        zones: [zoneWith(env, { secretFile: file })],
        dns: { timeout: 2 },
      });
      const r = await runCli(['host', 'remove', h, '--config', wrongKey]);
      expect(r.code).to.not.equal(0);
      expect(r.stderr).to.include(ZONE);
      expect(printed(r)).to.not.include(secret);
      expect(await env.ns.query(h, 'A')).to.deep.equal(['192.0.2.93']);
      expect(await env.hostJson(h)).to.include({ owner });
    });

    it('remove refuses when the host is in no configured zone (its records are out of reach), unless --keep-dns', async () => {
      const h = uniqHost('orphan');
      await env.addHost(h, owner);
      expect((await update(`hostname=${h}&myip=192.0.2.94`, [owner, ownerPw])).body).to.equal('good 192.0.2.94\n');
      const otherZone = await writeVariant(env, 'other-zone.json', {
        zones: [{ ...(env.config.zones as Record<string, unknown>[])[0]!, name: `other.${ZONE}` }],
      });
      const r = await runCli(['host', 'remove', h, '--config', otherZone]);
      expect(r.code).to.equal(1);
      expect(r.stderr).to.include('no configured zone').and.include('--keep-dns');
      expect(await env.hostJson(h)).to.include({ owner, ipv4: '192.0.2.94' });
      expect(await env.ns.query(h, 'A')).to.deep.equal(['192.0.2.94']);
      const kept = await runCli(['host', 'remove', h, '--keep-dns', '--config', otherZone]);
      expect(kept.code, kept.stderr).to.equal(0);
      expectFailure(await env.cli(['host', 'show', h, '--json']), 1, h);
    });
  });

  describe('agent', () => {
    it('block / list / unblock: config entries marked (config), CLI entries shared with serve', async () => {
      const before = (await env.cliOk(['agent', 'list'])).trimEnd().split('\n');
      expect(before).to.include('Company - Device - Version Number\t(config)');
      expect(before.every((l) => l.endsWith('\t(config)'))).to.equal(true);

      const pattern = `CliBlocked-${process.pid}/*`;
      const blocked = await env.cli(['agent', 'block', pattern]);
      expect(blocked.code, blocked.stderr).to.equal(0);
      expect(blocked.stdout).to.include(pattern);
      const listed = (await env.cliOk(['agent', 'list'])).trimEnd().split('\n');
      expect(listed).to.include(pattern);
      expect(listed).to.include.members(before);

      // The serve process refuses it (it refreshes the shared list every ~2 s).
      const acct = uniq('agentacct');
      await env.addAccount(acct, 'agent-pw');
      const h = uniqHost('agent');
      await env.addHost(h, acct);
      await env.untilAgentBlocked(`CliBlocked-${process.pid}/2.0`);
      const refused = await env.get(`/nic/update?hostname=${h}&myip=192.0.2.95`, {
        auth: [acct, 'agent-pw'],
        ua: `CliBlocked-${process.pid}/2.0`,
      });
      expect(refused.body).to.equal('badagent\n');

      const unblocked = await env.cli(['agent', 'unblock', pattern]);
      expect(unblocked.code, unblocked.stderr).to.equal(0);
      expect((await env.cliOk(['agent', 'list'])).trimEnd().split('\n')).to.deep.equal(before);
      await env.untilAgentBlocked(`CliBlocked-${process.pid}/2.0`, false);
      const served = await env.get(`/nic/update?hostname=${h}&myip=192.0.2.95`, {
        auth: [acct, 'agent-pw'],
        ua: `CliBlocked-${process.pid}/2.0`,
      });
      expect(served.body).to.equal('good 192.0.2.95\n');

      expect((await env.cli(['agent', 'block', '   '])).code).to.not.equal(0);
      expect((await env.cli(['agent', 'block'])).code).to.equal(2);
    });

    it("block / unblock the User-Agent '-' (bare, as for host import -) and one starting with '-' (after --)", async () => {
      const before = (await env.cliOk(['agent', 'list'])).trimEnd().split('\n');
      const dashed = `-x-${process.pid}/1.0`;
      // --config first: everything after -- is the pattern.
      const cfg = ['--config', env.configPath];
      const bare = await runCli(['agent', 'block', '-', ...cfg]);
      expect(bare.code, bare.stderr).to.equal(0);
      expect(bare.stdout).to.equal('blocked: -\n');
      const afterDashes = await runCli(['agent', 'block', ...cfg, '--', dashed]);
      expect(afterDashes.code, afterDashes.stderr).to.equal(0);
      expect(afterDashes.stdout).to.equal(`blocked: ${dashed}\n`);
      try {
        const listed = (await env.cliOk(['agent', 'list'])).trimEnd().split('\n');
        expect(listed).to.include.members(['-', dashed, ...before]);

        // The serve process refuses both (it refreshes the shared list every ~2 s).
        const acct = uniq('dashacct');
        await env.addAccount(acct, 'dash-pw');
        const h = uniqHost('dash');
        await env.addHost(h, acct);
        for (const ua of ['-', dashed]) await env.untilAgentBlocked(ua);
        for (const ua of ['-', dashed]) {
          const refused = await env.get(`/nic/update?hostname=${h}&myip=192.0.2.96`, { auth: [acct, 'dash-pw'], ua });
          expect(refused.body, ua).to.equal('badagent\n');
        }

        // More than one pattern, or none: a usage error.
        expect((await runCli(['agent', 'block', ...cfg, '--', 'a', 'b'])).code).to.equal(2);
        expect((await runCli(['agent', 'block', 'a', ...cfg, '--', 'b'])).code).to.equal(2);
      } finally {
        const un1 = await runCli(['agent', 'unblock', '-', ...cfg]);
        const un2 = await runCli(['agent', 'unblock', ...cfg, '--', dashed]);
        expect(un1.code, un1.stderr).to.equal(0);
        expect(un2.code, un2.stderr).to.equal(0);
      }
      expect((await env.cliOk(['agent', 'list'])).trimEnd().split('\n')).to.deep.equal(before);
    });

    it('a number-like pattern after -- is kept as typed (yargs would make -1.0 the number -1)', async () => {
      const cfg = ['--config', env.configPath];
      const typed = '-1.0';
      const r = await runCli(['agent', 'block', ...cfg, '--', typed]);
      expect(r.code, r.stderr).to.equal(0);
      expect(r.stdout).to.equal(`blocked: ${typed}\n`);
      try {
        expect((await env.cliOk(['agent', 'list'])).trimEnd().split('\n'))
          .to.include(typed)
          .and.not.include('-1');
      } finally {
        expect((await runCli(['agent', 'unblock', ...cfg, '--', typed])).code).to.equal(0);
      }
    });

    it('list shows the config list of the file in use, CLI entries unmarked', async () => {
      const own = await writeVariant(env, 'agents.json', { agents: { blocked: ['OnlyInConfig/1.0', 'Glob*'] } });
      const pattern = `Both-${process.pid}`;
      await runCli(['agent', 'block', pattern, '--config', own]);
      try {
        const lines = (await runCli(['agent', 'list', '--config', own])).stdout.trimEnd().split('\n');
        expect(lines).to.include.members(['OnlyInConfig/1.0\t(config)', 'Glob*\t(config)', pattern]);
        expect(lines).to.not.include('Company - Device - Version Number\t(config)');
      } finally {
        await env.cliOk(['agent', 'unblock', pattern]);
      }
    });
  });
});

describe('CLI config lookup: --config, DDNS_BRIDGE_CONFIG, none', function () {
  this.timeout(60000);
  let env: BridgeEnv;
  const account = uniq('cfg');

  before(async function () {
    requireBinariesOrSkip(this, serversFor('knot'));
    env = await BridgeEnv.start({ kind: 'knot', serves: 0 });
    await env.addAccount(account, 'cfg-pw');
  });
  after(async () => env?.stop());

  it('DDNS_BRIDGE_CONFIG is used when there is no --config', async () => {
    const r = await runCli(['account', 'list'], undefined, { DDNS_BRIDGE_CONFIG: env.configPath });
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stdout.split('\n')).to.include(account);
  });

  it('--config wins over DDNS_BRIDGE_CONFIG', async () => {
    const r = await runCli(['account', 'list', '--config', env.configPath], undefined, {
      DDNS_BRIDGE_CONFIG: path.join(env.dir, 'missing.json'),
    });
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stdout.split('\n')).to.include(account);
    // And the other way round: a broken --config is not rescued by a good variable.
    const bad = await runCli(['account', 'list', '--config', path.join(env.dir, 'missing.json')], undefined, {
      DDNS_BRIDGE_CONFIG: env.configPath,
    });
    expectFailure(bad, 2, 'missing.json');
  });

  it('no config at all: exit 2 and a message naming both ways', async () => {
    const runs = await Promise.all(
      [['account', 'list'], ['host', 'list'], ['agent', 'list'], ['check']].map((args) =>
        runCli(args, undefined, { DDNS_BRIDGE_CONFIG: '' }),
      ),
    );
    for (const r of runs) expectFailure(r, 2, '--config', 'DDNS_BRIDGE_CONFIG');
  });

  it('a config file that does not exist: exit 2 naming the file', async () => {
    const missing = path.join(env.dir, 'nowhere.json');
    expectFailure(await runCli(['check', '--config', missing]), 2, missing);
  });
});

for (const kind of LAB_KINDS) {
  describe(`CLI check (${kind})`, function () {
    this.timeout(60000);
    let env: BridgeEnv;

    before(async function () {
      requireBinariesOrSkip(this, serversFor(kind));
      env = await BridgeEnv.start({ kind, serves: 0 });
    });
    after(async () => env?.stop());

    it('ok on a good config: exit 0, config, redis and the zone reported ok', async () => {
      const r = await env.cli(['check']);
      expect(r.code, r.stderr).to.equal(0);
      expect(r.stdout).to.match(new RegExp(`zone ${ZONE.replace(/\./g, '\\.')}\\b.*: ok`));
      expect(r.stdout).to.match(/redis .*: ok/);
      expect(r.stdout).to.include(env.configPath);
      expect(printed(r)).to.not.include(env.ns.key.secret);
    });

    it('a wrong zone secret: non-zero, stderr names the zone and the TSIG failure, no secret printed', async () => {
      const { file, secret } = await writeWrongSecret(env);
      const cfg = await writeVariant(env, 'wrong-key.json', { zones: [zoneWith(env, { secretFile: file })] });
      const r = await runCli(['check', '--config', cfg]);
      expect(r.code).to.not.equal(0);
      expect(r.stderr).to.include(`zone ${ZONE}`);
      expect(r.stderr).to.match(/FAIL/i);
      expect(r.stderr).to.match(/BADSIG|BADKEY|NOTAUTH|secret|key/);
      expect(r.stdout).to.not.match(new RegExp(`zone ${ZONE.replace(/\./g, '\\.')}.*: ok`));
      expect(printed(r)).to.not.include(secret);
      expect(printed(r)).to.not.include(env.ns.key.secret);
    });

    it('a wrong key name: non-zero, the zone named', async () => {
      const cfg = await writeVariant(env, 'wrong-key-name.json', { zones: [zoneWith(env, { name: 'not-the-key' })] });
      const r = await runCli(['check', '--config', cfg]);
      expect(r.code).to.not.equal(0);
      expect(r.stderr).to.include(`zone ${ZONE}`);
      expect(r.stderr).to.match(/FAIL/i);
    });

    it('a zone the primary does not serve fails alone; the good zone is still ok', async () => {
      const good = (env.config.zones as Record<string, unknown>[])[0]!;
      const cfg = await writeVariant(env, 'two-zones.json', {
        zones: [good, { ...good, name: 'not-served.example.test' }],
      });
      const r = await runCli(['check', '--config', cfg]);
      expect(r.code).to.not.equal(0);
      expect(r.stdout).to.match(new RegExp(`zone ${ZONE.replace(/\./g, '\\.')}\\b.*: ok`));
      expect(r.stderr).to.include('zone not-served.example.test');
      expect(r.stderr).to.match(/FAIL/i);
      expect(r.stderr).to.not.include(`zone ${ZONE} `);
    });
  });
}

describe('CLI check: several zones, Redis down, invalid config', function () {
  this.timeout(60000);
  let env: BridgeEnv;
  let second: NameServer | undefined;
  const secondZone = 'second.example.test';

  before(async function () {
    requireBinariesOrSkip(this, serversFor('knot'));
    env = await BridgeEnv.start({ kind: 'knot', serves: 0 });
    const dir = path.join(env.dir, 'second');
    await mkdir(dir);
    second = await startNameServer('knot', { dir, zone: secondZone, key: generateTsigKey('second-key') });
  });
  after(async () => {
    await second?.stop().catch(() => undefined);
    await env?.stop();
  });

  it('every zone is proved and reported ok', async () => {
    const secretFile = path.join(env.dir, 'second.secret');
    await writeFile(secretFile, second!.key.secret + '\n', { mode: 0o600 });
    const zones = [
      ...(env.config.zones as unknown[]),
      {
        name: secondZone,
        primary: `127.0.0.1:${second!.port}`,
        key: { name: second!.key.name, algorithm: second!.key.algorithm, secretFile },
      },
    ];
    const cfg = await writeVariant(env, 'two-good-zones.json', { zones });
    const r = await runCli(['check', '--config', cfg]);
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stdout).to.match(new RegExp(`zone ${ZONE.replace(/\./g, '\\.')}\\b.*: ok`));
    expect(r.stdout).to.match(new RegExp(`zone ${secondZone.replace(/\./g, '\\.')}\\b.*: ok`));
  });

  it('Redis unreachable: non-zero exit, redis named; account commands fail too (no hang)', async () => {
    const closed = await freePort();
    const cfg = await writeVariant(env, 'no-redis.json', { redis: { url: `redis://127.0.0.1:${closed}/0` } });
    const started = Date.now();
    const r = await runCli(['check', '--config', cfg]);
    expect(r.code).to.not.equal(0);
    expect(r.stderr).to.match(new RegExp(`redis.*127\\.0\\.0\\.1:${closed}.*FAIL`, 'i'));
    const list = await runCli(['account', 'list', '--config', cfg]);
    expect(list.code).to.not.equal(0);
    expect(list.stderr).to.match(/redis/i);
    expect(Date.now() - started).to.be.below(20000);
  });

  it('invalid config: exit 2, the message names the key (unknown key, bad primary, bad algorithm)', async () => {
    const unknown = await writeVariant(env, 'unknown-key.json', { bogusSetting: true });
    const r1 = await runCli(['check', '--config', unknown]);
    expectFailure(r1, 2, 'bogusSetting');

    const nested = await writeVariant(env, 'unknown-nested.json', { redis: { urll: 'redis://x' } });
    expectFailure(await runCli(['check', '--config', nested]), 2, 'redis.urll');

    const badPrimary = await writeVariant(env, 'bad-primary.json', {
      zones: [{ ...(env.config.zones as Record<string, unknown>[])[0]!, primary: 'nowhere:notaport' }],
    });
    expectFailure(await runCli(['check', '--config', badPrimary]), 2, 'zones[0].primary');

    const badAlg = await writeVariant(env, 'bad-alg.json', { zones: [zoneWith(env, { algorithm: 'hmac-md4' })] });
    expectFailure(await runCli(['check', '--config', badAlg]), 2, 'zones[0].key.algorithm');

    const notJson = path.join(env.dir, 'not-json.json');
    await writeFile(notJson, '{ "listen": [ "127.0.0.1:1" ], oops }');
    expectFailure(await runCli(['check', '--config', notJson]), 2, /JSON/);

    // Other commands validate the same way.
    expectFailure(await runCli(['account', 'list', '--config', unknown]), 2, 'bogusSetting');
  });
});
