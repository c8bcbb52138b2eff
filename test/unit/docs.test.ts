/**
 * The documentation stays true and readable:
 * - docs/configuration.md has one table row for every key the config loader accepts, and
 *   names no key it does not. The accepted keys come from the loader itself: a probe key is
 *   put into each object of a full config and the loader's "unknown setting (known here: …)"
 *   error lists the keys that object accepts. Nothing is listed by hand, so a key added to
 *   the loader fails this test until it is documented.
 * - README.md and docs/*.md: no paragraph over 120 words, no table cell over 200 characters,
 *   README.md at most 150 lines; the links between them resolve, and so does every heading a
 *   code comment cites as `docs/….md, "Heading"`.
 */
import { expect } from 'chai';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseConfig, type ParseOptions } from '../../src/config/load.js';
import { ConfigError } from '../../src/core/errors.js';

/** The repository root (this file runs as dist/test/unit/docs.test.js). */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

const read = (rel: string): string => readFileSync(path.join(ROOT, rel), 'utf8');

/** README.md and every docs/*.md, repository-relative. */
function docFiles(): string[] {
  const docs = readdirSync(path.join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`);
  return ['README.md', ...docs];
}

// ---- the keys the loader accepts --------------------------------------------------------

type Json = Record<string, unknown>;
type Step = string | number;

const PROBE = 'zzNotASetting';
const SECRET = Buffer.alloc(32, 7).toString('base64');

const OPTIONS: ParseOptions = {
  env: {},
  baseDir: '/etc/ddns-bridge',
  // Every secret file holds a valid secret; the Redis password file a password.
  readFile: (file) => (file.endsWith('.password') ? 'a-redis-password\n' : `${SECRET}\n`),
};

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The shipped example config with every optional object and every key that is read only when
 * present added: an HTTPS listener, a zone's own maxInFlight, a Redis password file, the admin listener. A key the
 * loader reads only when present and that is missing here cannot be discovered.
 */
function fullConfig(): Json {
  const json = JSON.parse(read('config/ddns-bridge.example.json')) as Json;
  json.listen = [
    '127.0.0.1:8245',
    { host: '::', port: 443, tls: { certFile: 'tls/fullchain.pem', keyFile: 'tls/privkey.pem' } },
  ];
  const zones = json.zones as Json[];
  zones[0]!.maxInFlight = 1;
  zones[0]!.secondaries = ['127.0.0.1:5300', 'auto'];
  (json.redis as Json).passwordFile = 'redis.password';
  json.admin = { listen: ['127.0.0.1:9245'], tokenFile: 'admin.token' };
  json.addresses = { refuse: ['loopback', 'multicast'] };
  json.hosts = { quietSweepInterval: 600, closeQuietAfter: 2592000 };
  json.acme = { propagationTimeout: 60 };
  json.update = { waitForSecondaries: false };
  json.gateway = { listen: ['127.0.0.1:5353'], keyFile: 'gateway.key', ratePerSource: 20, maxConnections: 256 };
  (json.http as Json).queryCredentials = true;
  json.dialects = { duckdns: { zone: (zones[0] as { name: string }).name } };
  return json;
}

function at(root: unknown, steps: readonly Step[]): unknown {
  let value = root;
  for (const step of steps) value = (value as Record<Step, unknown> | undefined)?.[step];
  return value;
}

/** The path as ConfigError names it: `zones[0].key.secretFile`. */
function keyPath(steps: readonly Step[]): string {
  return steps.map((s, i) => (typeof s === 'number' ? `[${s}]` : i === 0 ? s : `.${s}`)).join('');
}

/** The path as the documentation names it: `zones[].key.secretFile`. */
function docPath(steps: readonly Step[]): string {
  return keyPath(steps).replace(/\[\d+\]/g, '[]');
}

/** The ConfigError that parsing `json` throws. */
function configError(json: unknown): ConfigError {
  try {
    parseConfig(json, OPTIONS);
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  return expect.fail(`expected a ConfigError for ${JSON.stringify(json)}`);
}

/** The keys the object at `steps` of `full` accepts, as the loader lists them. */
function acceptedAt(full: Json, steps: readonly Step[]): string[] {
  const json = structuredClone(full);
  const target = at(json, steps);
  if (!isObject(target)) expect.fail(`${keyPath(steps) || '(top level)'} is not an object in the full config`);
  target[PROBE] = true;
  const err = configError(json);
  const where = keyPath([...steps, PROBE]);
  expect(err.key, `a probe key at ${where} was not refused first: ${err.message}`).to.equal(where);
  const listed = /unknown setting \(known here: ([^)]*)\)/.exec(err.message);
  if (!listed) {
    expect.fail(
      `the loader no longer lists the keys it knows (${err.message}): derive them another way in test/unit/docs.test.ts`,
    );
  }
  return listed[1]!.split(', ').filter((k) => k !== '');
}

interface Accepted {
  /** Keys that hold a value (strings, numbers, arrays): each needs its row. */
  settings: Set<string>;
  /** Keys that hold an object of further keys (`http`, `zones[].key`): rows optional. */
  sections: Set<string>;
}

function discover(full: Json, steps: readonly Step[], into: Accepted): void {
  for (const name of acceptedAt(full, steps)) {
    const child = [...steps, name];
    const value = at(full, child);
    if (isObject(value)) {
      into.sections.add(docPath(child));
      discover(full, child, into);
      continue;
    }
    into.settings.add(docPath(child));
    if (Array.isArray(value)) {
      value.forEach((item, i) => {
        if (isObject(item)) discover(full, [...child, i], into);
      });
    } else if (value === undefined) {
      // Absent from the full config: if it takes an object, its keys would go unseen.
      const json = structuredClone(full);
      (at(json, steps) as Json)[name] = { [PROBE]: true };
      const where = keyPath([...child, PROBE]);
      expect(
        configError(json).key,
        `${docPath(child)} is an object: add it to fullConfig() in docs.test.ts`,
      ).not.to.equal(where);
    }
  }
}

function acceptedKeys(): Accepted {
  const full = fullConfig();
  expect(() => parseConfig(full, OPTIONS), 'the full config must load').not.to.throw();
  const accepted: Accepted = { settings: new Set(), sections: new Set() };
  discover(full, [], accepted);
  return accepted;
}

// ---- reading markdown -------------------------------------------------------------------

/** The lines of a markdown text outside fenced code blocks, with their numbers. */
function proseLines(text: string): { n: number; line: string }[] {
  const out: { n: number; line: string }[] = [];
  let fence: string | undefined;
  text.split('\n').forEach((line, i) => {
    const marker = /^\s*(```|~~~)/.exec(line)?.[1];
    if (marker !== undefined) {
      if (fence === undefined) fence = marker;
      else if (marker === fence) fence = undefined;
      return;
    }
    if (fence === undefined) out.push({ n: i + 1, line });
  });
  return out;
}

const isTableLine = (line: string): boolean => /^\s*\|/.test(line);
const isSeparatorRow = (line: string): boolean => /^\s*\|?(\s*:?-{3,}:?\s*\|)+\s*:?-*:?\s*$/.test(line);

/** The cells of a table row: split at pipes that are not escaped. */
function cells(row: string): string[] {
  return row
    .trim()
    .replace(/^\|/, '')
    .replace(/(?<!\\)\|$/, '')
    .split(/(?<!\\)\|/)
    .map((c) => c.trim());
}

/** Paragraphs and list items (a list item is one paragraph), outside code and tables. */
function paragraphs(text: string): { n: number; words: number; start: string }[] {
  const out: { n: number; words: number; start: string }[] = [];
  let current: { n: number; text: string } | undefined;
  const flush = () => {
    if (current) {
      const words = current.text.split(/\s+/).filter((w) => w !== '').length;
      out.push({ n: current.n, words, start: current.text.trim().slice(0, 60) });
    }
    current = undefined;
  };
  let previous = 0;
  for (const { n, line } of proseLines(text)) {
    // A code fence in between ends the paragraph before it.
    if (n !== previous + 1) flush();
    previous = n;
    if (line.trim() === '' || isTableLine(line) || /^\s*#{1,6}\s/.test(line) || /^\s*<!--/.test(line)) {
      flush();
      continue;
    }
    if (/^\s*([-*+]|\d+[.)])\s/.test(line)) flush();
    if (current) current.text += ` ${line}`;
    else current = { n, text: line };
  }
  flush();
  return out;
}

/** GitHub's anchor for a heading: lowercase, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');
}

function headings(text: string): string[] {
  return proseLines(text).flatMap(({ line }) => {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    return m ? [m[1]!] : [];
  });
}

/** The code spans of the prose, table cells included. */
function codeSpans(text: string): { n: number; span: string }[] {
  return proseLines(text).flatMap(({ n, line }) => [...line.matchAll(/`([^`]+)`/g)].map((m) => ({ n, span: m[1]! })));
}

// ---- the tests ---------------------------------------------------------------------------

describe('docs', () => {
  describe('docs/configuration.md and the config loader', () => {
    let accepted: Accepted;
    let documented: Map<string, number>;
    const text = read('docs/configuration.md');

    before(() => {
      accepted = acceptedKeys();
      // The first cell of every row of a table whose first column is "key".
      documented = new Map();
      let inKeyTable = false;
      for (const { n, line } of proseLines(text)) {
        if (!isTableLine(line)) {
          inKeyTable = false;
          continue;
        }
        const first = cells(line)[0]!;
        if (!inKeyTable) {
          inKeyTable = first.toLowerCase() === 'key';
          continue;
        }
        if (isSeparatorRow(line)) continue;
        const key = /^`([^`]+)`$/.exec(first)?.[1];
        if (key === undefined)
          expect.fail(`docs/configuration.md:${n}: the key cell must be one key in backticks, got ${first}`);
        if (documented.has(key))
          expect.fail(`docs/configuration.md:${n}: ${key} has a row already (line ${documented.get(key)})`);
        documented.set(key, n);
      }
    });

    it('finds the keys through the loader (a sanity check of the probe)', () => {
      // Too few keys found would mean the probe stopped working, not that the loader shrank.
      expect(accepted.settings.size).to.be.greaterThan(40);
      for (const key of ['redis.url', 'listen[].tls.certFile', 'zones[].key.secretFile', 'credentials.cacheTtl']) {
        expect(accepted.settings, key).to.include(key);
      }
    });

    it('has a row for every key the loader accepts', () => {
      const missing = [...accepted.settings].filter((k) => !documented.has(k)).sort();
      expect(missing, 'keys the loader accepts that docs/configuration.md does not document').to.deep.equal([]);
    });

    it('documents no key the loader does not accept', () => {
      const known = new Set([...accepted.settings, ...accepted.sections]);
      const unknown = [...documented].filter(([k]) => !known.has(k)).map(([k, n]) => `${k} (line ${n})`);
      expect(unknown, 'rows of docs/configuration.md naming keys the loader does not accept').to.deep.equal([]);
    });

    it('names only existing keys wherever a dotted key appears in the docs', () => {
      const known = new Set([...accepted.settings, ...accepted.sections]);
      const tops = new Set([...known].map((k) => k.split(/[.[]/)[0]!));
      const bad: string[] = [];
      for (const file of docFiles()) {
        for (const { n, span } of codeSpans(read(file))) {
          const m = /^([A-Za-z]+)((?:\[\d*\])?\.[A-Za-z]+)+(\[\d*\])?$/.exec(span);
          if (!m || !tops.has(m[1]!)) continue;
          const key = span.replace(/\[\d+\]/g, '[]').replace(/\[\]$/, '');
          if (!known.has(key)) bad.push(`${file}:${n}: ${span}`);
        }
      }
      expect(bad, 'config keys named in the docs that the loader does not accept').to.deep.equal([]);
    });
  });

  describe('readable', () => {
    it('README.md has at most 150 lines and names the two commands', () => {
      const text = read('README.md');
      const lines = text.endsWith('\n') ? text.split('\n').length - 1 : text.split('\n').length;
      expect(lines, 'README.md lines').to.be.at.most(150);
      expect(text).to.include('npm run demo');
      expect(text).to.include('npm test');
    });

    it('has no paragraph over 120 words', () => {
      const long = docFiles().flatMap((file) =>
        paragraphs(read(file))
          .filter((p) => p.words > 120)
          .map((p) => `${file}:${p.n}: ${p.words} words ("${p.start}…")`),
      );
      expect(long).to.deep.equal([]);
    });

    it('has no table cell over 200 characters', () => {
      const long = docFiles().flatMap((file) =>
        proseLines(read(file))
          .filter(({ line }) => isTableLine(line))
          .flatMap(({ n, line }) =>
            cells(line)
              .filter((c) => c.length > 200)
              .map((c) => `${file}:${n}: ${c.length} characters ("${c.slice(0, 60)}…")`),
          ),
      );
      expect(long).to.deep.equal([]);
    });
  });

  describe('links', () => {
    it('every relative link and anchor in README.md and docs/ resolves', () => {
      const broken: string[] = [];
      for (const file of docFiles()) {
        for (const { n, line } of proseLines(read(file))) {
          for (const m of line.matchAll(/\]\(([^)\s]+)\)/g)) {
            const target = m[1]!;
            if (/^[a-z]+:/i.test(target)) continue;
            const [rel, anchor] = target.split('#') as [string, string | undefined];
            const resolved =
              rel === '' ? path.join(ROOT, file) : path.resolve(path.dirname(path.join(ROOT, file)), rel);
            if (!existsSync(resolved)) {
              broken.push(`${file}:${n}: ${target} (no such file)`);
              continue;
            }
            if (anchor === undefined || !resolved.endsWith('.md') || statSync(resolved).isDirectory()) continue;
            if (!headings(readFileSync(resolved, 'utf8')).some((h) => slug(h) === anchor))
              broken.push(`${file}:${n}: ${target} (no such heading)`);
          }
        }
      }
      expect(broken).to.deep.equal([]);
    });

    it('docs/protocol.md keeps the headings code comments link to', () => {
      const found = headings(read('docs/protocol.md'));
      for (const h of [
        'The update request',
        'The reply',
        'Order of checks',
        'States and limits',
        'Clients that misbehave',
        'The address echo',
        'What goes into DNS',
      ]) {
        expect(found, `docs/protocol.md: ## ${h}`).to.include(h);
      }
    });

    it('every `docs/….md, "Heading"` a source comment cites exists', () => {
      const cited = /docs\/([\w-]+\.md),? "([^"]+)"/g;
      const broken: string[] = [];
      const walk = (dir: string): string[] =>
        existsSync(path.join(ROOT, dir))
          ? readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((e) =>
              e.isDirectory() ? walk(`${dir}/${e.name}`) : e.name.endsWith('.ts') ? [`${dir}/${e.name}`] : [],
            )
          : [];
      for (const file of [...walk('src'), ...walk('test'), ...walk('bench')]) {
        for (const m of read(file).matchAll(cited)) {
          const doc = `docs/${m[1]}`;
          const wanted = m[2]!.toLowerCase().replace(/[.,]$/, '');
          const ok =
            existsSync(path.join(ROOT, doc)) && headings(read(doc)).some((h) => h.toLowerCase().startsWith(wanted));
          if (!ok) broken.push(`${file}: ${doc}, "${m[2]}"`);
        }
      }
      expect(broken).to.deep.equal([]);
    });
  });
});
