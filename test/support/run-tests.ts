/**
 * The test runner behind `npm test` and the tier scripts (CONTRIBUTING.md, "Tests"):
 *
 *   node dist/test/support/run-tests.js [unit] [integration] [interop]   (none: all three)
 *
 * The unit tier runs in one mocha with the purity guard (unit-guard.ts). The integration and
 * interop files run in mocha's parallel mode (two files at a time: most of their time is spent
 * waiting on the servers they start; the longest start first, LONGEST_FIRST), except the files in
 * EXCLUSIVE, which measure time or load and run alone afterwards. Each mocha is a child process;
 * its output is passed through and its counts added up into one closing line `N passed, N failed`
 * (.ci/run reads it).
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { skipSummary, type RecordedSkip } from './packages.js';

/** dist/test: the compiled tests. */
const DIST = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const ROOT = path.resolve(DIST, '..', '..');
const MOCHA = path.join(ROOT, 'node_modules', 'mocha', 'bin', 'mocha.js');

export const TIERS = ['unit', 'integration', 'interop'] as const;
export type Tier = (typeof TIERS)[number];

/**
 * Files that must not share the machine with another test file: they measure throughput or
 * latency, hold a server under load, or wait on timers that a loaded machine stretches. Paths
 * relative to test/, without the extension.
 */
export const EXCLUSIVE: readonly string[] = [
  'integration/bench-smoke.test',
  'integration/redis-failover.test',
  'integration/reload.test',
  'integration/slow-clients.test',
  'integration/password-oracle.test',
  'integration/admin-limits.test',
];

/**
 * The longest of the files that share the machine, longest first (the per-file times the runner prints, measured
 * on 2 cores): they start first, so that the last files to finish are short ones and the parallel tail is short.
 * Mocha hands out files in the order given; the files not named here follow, sorted. Paths as in EXCLUSIVE.
 */
export const LONGEST_FIRST: readonly string[] = [
  'integration/faults.test',
  'integration/update-e2e.test',
  'integration/cli.test',
  'interop/acme.test',
  'integration/workers.test',
  'interop/acme-secondaries.test',
  'integration/ipv6-prefix.test',
  'integration/drift.test',
  'interop/gateway-acme.test',
  'integration/hostile-input.test',
  'integration/fuzz.test',
  'integration/tokens.test',
  'interop/gateway-clients.test',
  'integration/secondaries.test',
  'integration/acme-txt.test',
  'integration/gateway.test',
  'interop/dynv6.test',
  'integration/fast-path.test',
  'integration/backup.test',
  'interop/duckdns.test',
];

/** `files` (relative to dist/test) in the order they are started: LONGEST_FIRST first, then the rest as given. */
export function startOrder(files: readonly string[]): string[] {
  const rank = new Map(LONGEST_FIRST.map((f, i) => [`${f}.js`, i]));
  const ranked = files.filter((f) => rank.has(f)).sort((a, b) => rank.get(a)! - rank.get(b)!);
  return [...ranked, ...files.filter((f) => !rank.has(f))];
}

/** Files of one tier, relative to dist/test, sorted. */
export function filesOf(tier: Tier): string[] {
  const dir = path.join(DIST, tier);
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.test.js'))
    .map((f) => path.join(tier, f))
    .sort();
}

/** Every test the spec reporter gave a time (those over half of mocha's `slow`), for the slowest list. */
const timings: { title: string; ms: number }[] = [];

interface Counts {
  passing: number;
  failing: number;
  pending: number;
  code: number;
}

/** Run one mocha over `files`, passing its output through; resolve with its counts. */
function mocha(label: string, args: string[], files: string[], env: NodeJS.ProcessEnv): Promise<Counts> {
  if (files.length === 0) return Promise.resolve({ passing: 0, failing: 0, pending: 0, code: 0 });
  console.log(`\n=== ${label}: ${files.length} file${files.length === 1 ? '' : 's'}`);
  const child = spawn(process.execPath, [MOCHA, ...args, ...files.map((f) => path.join(DIST, f))], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  // The counts as mocha prints them ("  12 passing (3s)"), before any failure's details: read
  // line by line as they stream past, the last of each kind kept.
  const counts = { passing: 0, failing: 0, pending: 0 };
  let partial = '';
  const read = (line: string): void => {
    const count = /^ {2}(\d+) (passing|failing|pending)\b/.exec(line);
    if (count) counts[count[2] as keyof typeof counts] = Number(count[1]);
    // The spec reporter ends a slow test's line with its time: kept for the slowest list.
    const timed = /^\s*✔ (.*) \((\d+)ms\)$/.exec(line);
    if (timed) timings.push({ title: timed[1]!, ms: Number(timed[2]) });
  };
  child.stdout.on('data', (chunk: Buffer) => {
    process.stdout.write(chunk);
    const lines = (partial + chunk.toString('utf8')).split('\n');
    partial = lines.pop() ?? '';
    lines.forEach(read);
  });
  return new Promise((resolve) => {
    child.on('close', (code) => {
      read(partial);
      resolve({ ...counts, code: code ?? 1 });
    });
  });
}

/** The hooks file-times.ts timed, each (file, hook) added up over its runs, `count` longest first; log removed. */
function slowestHooks(log: string, count: number): { file: string; hook: string; ms: number; runs: number }[] {
  let lines: string[] = [];
  try {
    lines = readFileSync(log, 'utf8').split('\n').filter(Boolean);
    rmSync(log, { force: true });
  } catch {
    return []; // no integration or interop file ran
  }
  const sums = new Map<string, { file: string; hook: string; ms: number; runs: number }>();
  for (const line of lines) {
    const { file, hook, ms } = JSON.parse(line) as { file: string; hook: string; ms: number };
    const key = `${file}\u0000${hook}`;
    const sum = sums.get(key) ?? { file, hook, ms: 0, runs: 0 };
    sum.ms += ms;
    sum.runs += 1;
    sums.set(key, sum);
  }
  return [...sums.values()].sort((a, b) => b.ms - a.ms).slice(0, count);
}

export async function runTiers(tiers: readonly Tier[]): Promise<number> {
  const skipLog = path.join(os.tmpdir(), `ddns-bridge-skips-${process.pid}.jsonl`);
  const timesLog = path.join(os.tmpdir(), `ddns-bridge-file-times-${process.pid}.jsonl`);
  const hooksLog = path.join(os.tmpdir(), `ddns-bridge-hook-times-${process.pid}.jsonl`);
  // Without NODE_EXTRA_CA_CERTS: with it, every Node process parses the whole CA bundle as it starts (about 95 ms
  // of CPU on this machine, for each of the ~2,000 serve, CLI and bench processes a run starts), and no test
  // reaches a server those CAs sign: the test servers' CAs are handed to their clients by the tests.
  const { NODE_EXTRA_CA_CERTS: _caBundle, ...inherited } = process.env;
  const env = {
    ...inherited,
    DDNS_BRIDGE_SKIP_LOG: skipLog,
    DDNS_BRIDGE_FILE_TIMES: timesLog,
    DDNS_BRIDGE_HOOK_TIMES: hooksLog,
  };
  const fileTimes = ['--require', path.join(DIST, 'support', 'file-times.js')];
  const runs: Counts[] = [];
  if (tiers.includes('unit')) {
    const guard = path.join(DIST, 'support', 'unit-guard.js');
    runs.push(await mocha('unit', ['--require', guard], filesOf('unit'), env));
  }
  const others = tiers.filter((t) => t !== 'unit').flatMap(filesOf);
  const exclusive = new Set(EXCLUSIVE.map((f) => `${f}.js`));
  const shared = startOrder(others.filter((f) => !exclusive.has(f)));
  const alone = others.filter((f) => exclusive.has(f));
  const jobs = process.env.TEST_JOBS ?? '2';
  runs.push(
    await mocha(
      `${tiers.filter((t) => t !== 'unit').join(' + ')}, ${jobs} at a time`,
      ['--parallel', '--jobs', jobs, ...fileTimes],
      shared,
      env,
    ),
  );
  runs.push(await mocha('one at a time (EXCLUSIVE in test/support/run-tests.ts)', fileTimes, alone, env));

  const total = runs.reduce(
    (a, r) => ({ passing: a.passing + r.passing, failing: a.failing + r.failing, pending: a.pending + r.pending }),
    { passing: 0, failing: 0, pending: 0 },
  );
  let skips: RecordedSkip[] = [];
  try {
    skips = readFileSync(skipLog, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as RecordedSkip);
    rmSync(skipLog, { force: true });
  } catch {
    // no skips recorded
  }
  for (const line of skipSummary(skips)) console.log(line);
  let files: { file: string; ms: number }[] = [];
  try {
    files = readFileSync(timesLog, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { file: string; ms: number });
    rmSync(timesLog, { force: true });
  } catch {
    // no integration or interop file ran
  }
  if (files.length > 0) {
    console.log('\nThe 15 slowest files (hooks included; LONGEST_FIRST in test/support/run-tests.ts):');
    for (const f of [...files].sort((a, b) => b.ms - a.ms).slice(0, 15))
      console.log(`  ${(f.ms / 1000).toFixed(1).padStart(6)} s  ${f.file.replace(/\.js$/, '')}`);
  }
  const hooks = slowestHooks(hooksLog, 20);
  if (hooks.length > 0) {
    console.log('\nThe 20 slowest hooks, all their runs added up (servers started per describe, mostly):');
    for (const h of hooks)
      console.log(
        `  ${(h.ms / 1000).toFixed(1).padStart(6)} s  ${h.file.replace(/\.js$/, '')}: ${h.hook}${h.runs > 1 ? ` (${h.runs} runs)` : ''}`,
      );
  }
  if (timings.length > 0) {
    console.log('\nThe 30 slowest tests:');
    for (const t of [...timings].sort((a, b) => b.ms - a.ms).slice(0, 30))
      console.log(`  ${(t.ms / 1000).toFixed(1).padStart(6)} s  ${t.title}`);
  }
  // A mocha that ended without its counts (a crash, a file that does not load) counts as a failure.
  const broken = runs.filter((r) => r.code !== 0 && r.failing === 0).length;
  if (broken > 0)
    console.log(`\n${broken} mocha run${broken === 1 ? '' : 's'} ended with an error before counting a failure`);
  const failedRun = broken > 0 || runs.some((r) => r.code !== 0);
  console.log(`\n${total.passing} passing, ${total.failing} failing, ${total.pending} pending`);
  console.log(`${total.passing} passed, ${total.failing + broken} failed`);
  return failedRun || total.failing > 0 ? 1 : 0;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const asked = process.argv.slice(2);
  const unknown = asked.filter((a) => !(TIERS as readonly string[]).includes(a));
  if (unknown.length > 0) {
    console.error(`run-tests: unknown tier ${unknown.join(', ')}; tiers: ${TIERS.join(', ')}`);
    process.exit(2);
  }
  const tiers = asked.length === 0 ? TIERS : (asked as Tier[]);
  void runTiers(tiers).then((code) => (process.exitCode = code));
}
