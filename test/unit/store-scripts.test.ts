/**
 * Named script arguments (src/store/script.ts): every Lua script reads its keys and arguments
 * only through the prologue its definition generates from the declared names, no fragment of
 * src/store/lua.ts reads KEYS, ARGV or a local another fragment set, and every script exported
 * by src/store/scripts/ is in ALL_SCRIPTS (the list the integration test loads into Redis).
 */
import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { HOST_FIELDS as HF } from '../../src/store/keys.js';
import * as fragments from '../../src/store/lua.js';
import { defineScript } from '../../src/store/script.js';
import { ACCOUNT_REMOVE } from '../../src/store/scripts/accounts.js';
import { ALL_SCRIPTS, type AnyScript } from '../../src/store/scripts/index.js';
import { ADMIT_GUARDED, COMMIT } from '../../src/store/scripts/lease.js';
import { HOST_REMOVE } from '../../src/store/scripts/hosts.js';

/** The compiled scripts folder (this file runs as dist/test/unit/store-scripts.test.js). */
const SCRIPTS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src/store/scripts');

const isScript = (v: unknown): v is AnyScript =>
  typeof v === 'object' && v !== null && typeof (v as AnyScript).lua === 'string' && 'encode' in v;

/** A direct read of KEYS or ARGV (indexed, counted, unpacked or aliased). */
const RAW_ACCESS = /\b(KEYS|ARGV)\b/;

describe('store scripts: named keys and arguments', () => {
  const scripts = Object.entries(ALL_SCRIPTS);

  it('every script exported by src/store/scripts/ is in ALL_SCRIPTS, under its own name', async () => {
    const files = readdirSync(SCRIPTS_DIR).filter((f) => f.endsWith('.js') && f !== 'index.js');
    expect(files, 'script modules found').to.include('lease.js');
    const exported: [string, AnyScript][] = [];
    for (const f of files) {
      const mod = (await import(path.join(SCRIPTS_DIR, f))) as Record<string, unknown>;
      for (const [name, value] of Object.entries(mod)) if (isScript(value)) exported.push([name, value]);
    }
    expect(exported.length, 'script definitions found').to.be.at.least(30);
    const missing = exported.filter(([name, s]) => ALL_SCRIPTS[name] !== s).map(([name]) => name);
    expect(missing, 'exported scripts missing from ALL_SCRIPTS').to.deep.equal([]);
    expect(scripts.length).to.equal(exported.length);
    expect(new Set(scripts.map(([, s]) => s.name)).size, 'script names are unique').to.equal(scripts.length);
  });

  it('no script reads KEYS or ARGV but in its generated prologue', () => {
    const offenders = scripts
      .filter(([, s]) => RAW_ACCESS.test(s.preamble) || RAW_ACCESS.test(s.body))
      .map(([name]) => name);
    expect(offenders).to.deep.equal([]);
    for (const [name, s] of scripts) expect(s.lua, name).to.equal(s.preamble + s.prologue + s.body);
  });

  it('each prologue binds exactly the declared names, in order', () => {
    for (const [name, s] of scripts) {
      const expected: string[] = [];
      if (s.keyNames.length > 0)
        expected.push(`local ${s.keyNames.join(', ')} = ${s.keyNames.map((_, i) => `KEYS[${i + 1}]`).join(', ')}`);
      if (s.keyTail) expected.push(...tail(s.keyTail, s.keyNames.length, 'KEYS'));
      if (s.argNames.length > 0)
        expected.push(`local ${s.argNames.join(', ')} = ${s.argNames.map((_, i) => `ARGV[${i + 1}]`).join(', ')}`);
      if (s.argTail) expected.push(...tail(s.argTail, s.argNames.length, 'ARGV'));
      expect(s.prologue, name).to.equal(expected.map((l) => l + '\n').join(''));
    }
  });

  it('no fragment of lua.ts reads KEYS, ARGV or the admission arguments `A`', () => {
    const texts = Object.entries(fragments).filter((e): e is [string, string] => typeof e[1] === 'string');
    expect(texts.map(([n]) => n)).to.include.members(['GUARD', 'TAKE_LEASE', 'LEASE_PREAMBLE', 'HOST_ADMISSION']);
    const offenders = texts.filter(([, t]) => RAW_ACCESS.test(t) || /\bA\[/.test(t)).map(([n]) => n);
    expect(offenders).to.deep.equal([]);
  });

  it('the encoder writes the named values in the declared order, tails last', () => {
    const call = COMMIT.encode(
      { host: 'h', pending: 'p' },
      {
        token: 'tok',
        target: { ipv4: '192.0.2.1', ipv6: null, wildcard: true, mx: null, backmx: true, offline: false },
        republish: false,
        undo: { previousLastRequest: '5', previousFrequentCount: '', sequence: '3', countedAt: '7' },
        families: '4',
      },
    );
    expect(call).to.deep.equal([
      '',
      '2',
      'h',
      'p',
      'tok',
      '192.0.2.1',
      '',
      '1',
      '',
      '',
      '0',
      '0',
      '5',
      '',
      '3',
      '7',
      '4',
      '',
      '0',
    ]);
    const argv = call.slice(2 + 2);
    expect(COMMIT.argNames.map((n, i) => [n, argv[i]]).slice(0, 2)).to.deep.equal([
      ['token', 'tok'],
      ['ipv4', '192.0.2.1'],
    ]);

    const removal = HOST_REMOVE.encode(
      {
        host: 'h',
        account: 'a',
        pending: 'p',
        hostTokens: 'ht',
        nestIndexes: ['d1', 'd2'],
        tokens: [{ record: 't1', index: 'i1' }],
      },
      { owner: 'alice', leaseToken: 'L', fqdn: 'x.example', ancestors: 2, tokenIds: ['t1'] },
    );
    expect(removal).to.deep.equal([
      '',
      '8',
      'h',
      'a',
      'p',
      'ht',
      'd1',
      'd2',
      't1',
      'i1',
      'alice',
      'L',
      'x.example',
      '2',
      't1',
    ]);

    const guarded = ADMIT_GUARDED.encode(
      { host: 'h', pending: 'p', junkBlock: 'j', sourceCooldown: 's', accountCooldown: 'c', account: 'a' },
      {
        hashDigest: '',
        donator: true,
        passwordOnly: false,
        account: 'alice',
        minIntervalMs: 60_000.7,
        maxFrequent: 3,
        leaseMs: 5000,
        leaseToken: 'L',
        expect: { ipv4: '192.0.2.1' },
        requestLog: { reply: 'nochg', source: '192.0.2.9', userAgent: 'ua/1' },
      },
    );
    expect(guarded.slice(0, 8)).to.deep.equal(['', '6', 'h', 'p', 'j', 's', 'c', 'a']);
    expect(guarded[8], 'the digest goes blinded').to.match(/^[0-9a-f]{72}$/);
    expect(guarded.slice(9)).to.deep.equal([
      '1',
      '',
      'alice',
      '60000',
      '3',
      '5000',
      'L',
      'expect',
      '4',
      'nochg',
      '192.0.2.9',
      'ua/1',
      HF.ipv4,
      '192.0.2.1',
    ]);
  });

  it('refuses a name that is no Lua local of its own: a keyword, a global, a preamble local, twice', () => {
    const spec =
      (keys: readonly string[], args: readonly string[], preamble = '') =>
      () =>
        defineScript({ name: 't', preamble, keys, args, lua: 'return 1', reply: (r) => r });
    expect(spec(['end'], [])).to.throw(/cannot name a Lua local/);
    expect(spec(['host'], ['type'])).to.throw(/cannot name a Lua local/);
    expect(spec(['host'], ['my-arg'])).to.throw(/cannot name a Lua local/);
    expect(spec(['host'], ['now'], fragments.NOW)).to.throw(/cannot name a Lua local/);
    expect(spec(['host'], ['takeLease'], fragments.LEASE_PREAMBLE)).to.throw(/cannot name a Lua local/);
    expect(spec(['host'], ['host'])).to.throw(/used twice/);
    expect(spec(['host'], ['token'], fragments.LEASE_PREAMBLE)).not.to.throw();
  });

  it('a missing named value fails loudly instead of sending a shifted ARGV', () => {
    const keys = { account: 'a', accounts: 's' };
    expect(ACCOUNT_REMOVE.encode(keys, { name: 'alice' })).to.deep.equal(['', '2', 'a', 's', 'alice']);
    expect(() => ACCOUNT_REMOVE.encode(keys, {} as never)).to.throw(/argument name/);
    expect(() => ACCOUNT_REMOVE.encode({ account: 'a' } as never, { name: 'alice' })).to.throw(/key accounts/);
  });
});

describe('store scripts: the blinded password digest (lua.ts blindDigest)', () => {
  const sha1 = (text: string) => createHash('sha1').update(text).digest('hex');
  /** What guardRefusal checks: the proof is the SHA-1 of the nonce and the SHA-1 of the stored hash. */
  const scriptAccepts = (blinded: string, storedHash: string) =>
    blinded.slice(32) === sha1(blinded.slice(0, 32) + sha1(storedHash));

  it('a verified digest: a fresh nonce each time, and a proof the script accepts for that hash only', () => {
    const stored = '$scrypt$N=16384,r=8,p=1$c2FsdA$aGFzaA';
    const blinded = Array.from({ length: 1000 }, () => fragments.blindDigest(sha1(stored)));
    for (const b of blinded) expect(b).to.match(/^[0-9a-f]{72}$/);
    expect(new Set(blinded.map((b) => b.slice(0, 32))).size).to.equal(1000);
    expect(blinded.every((b) => scriptAccepts(b, stored))).to.equal(true);
    expect(blinded.some((b) => scriptAccepts(b, stored + 'x'))).to.equal(false);
  });

  it("'' (nobody verified the credentials): the same shape, accepted for no stored hash", () => {
    const blinded = Array.from({ length: 1000 }, () => fragments.blindDigest(''));
    for (const b of blinded) expect(b).to.match(/^[0-9a-f]{72}$/);
    expect(new Set(blinded.map((b) => b.slice(0, 32))).size).to.equal(1000);
    for (const stored of ['', '$scrypt$x', 'x'.repeat(40)]) {
      expect(blinded.some((b) => scriptAccepts(b, stored))).to.equal(false);
    }
    // Nor the SHA-1 of the bare nonce, which a digest of '' would give.
    expect(blinded.some((b) => b.slice(32) === sha1(b.slice(0, 32)))).to.equal(false);
  });
});

function tail(name: string, after: number, array: string): string[] {
  if (after === 0) return [`local ${name} = ${array}`];
  return [`local ${name} = {}`, `for i = ${after + 1}, #${array} do ${name}[i - ${after}] = ${array}[i] end`];
}
