/**
 * The install step of `npm test` and .ci/run: the Debian packages of every binary the tests
 * may use are installed when running as root (the demo's installer and tables,
 * src/lab/binaries.ts), or the one `apt-get install` line is printed. Never a side effect of
 * loading mocha: `npx mocha FILE` installs nothing. After a run, run-tests.ts names every suite
 * skipped for a missing binary (skipSummary).
 */
import { pathToFileURL } from 'node:url';
import { aptInstallCommand, ensureInstalled, EVERYTHING, isRoot, missingPackages } from '../../src/lab/index.js';

const log = (line: string): void => console.error(`packages: ${line}`);

/** Install what the tests need (root), else print how to; true when nothing is missing after. */
export async function installTestPackages(): Promise<boolean> {
  const missing = missingPackages(EVERYTHING);
  if (missing.names.length === 0) return true;
  if (!isRoot()) {
    const outcome = process.env.CI === 'true' ? 'fail (CI=true)' : 'are skipped';
    log(`missing ${missing.names.join(', ')}: the tests that need them ${outcome}. As root, run:`);
    console.error(`  ${aptInstallCommand(missing.packages)}`);
    return false;
  }
  try {
    await ensureInstalled(EVERYTHING, log);
    return true;
  } catch (e) {
    log(`${(e as Error).message}`);
    return false;
  }
}

/** A suite or test skipped for something missing, as requireBinariesOrSkip records it (DDNS_BRIDGE_SKIP_LOG). */
export interface RecordedSkip {
  title: string;
  tests: number;
  names: string[];
  packages: string[];
}

/** The end-of-run lines naming each suite skipped for something missing, or none. */
export function skipSummary(recorded: readonly RecordedSkip[]): string[] {
  const byTitle = new Map<string, RecordedSkip>();
  for (const r of recorded) {
    const seen = byTitle.get(r.title);
    if (seen) seen.tests = Math.max(seen.tests, r.tests);
    else byTitle.set(r.title, { ...r });
  }
  const skipped = [...byTitle.values()];
  if (skipped.length === 0) return [];
  const tests = skipped.reduce((n, s) => n + s.tests, 0);
  const packages = [...new Set(skipped.flatMap((s) => s.packages))].sort();
  return [
    `  ${count(skipped.length, 'suite')} (${count(tests, 'test')}) skipped for missing binaries:`,
    ...skipped.map((s) => `    - ${s.title} (${count(s.tests, 'test')}): missing ${s.names.join(', ')}`),
    `  To run them, as root: ${aptInstallCommand(packages)}`,
    '',
  ];
}

const count = (n: number, noun: string): string => `${n} ${noun}${n === 1 ? '' : 's'}`;

// `node dist/test/support/packages.js`: the install step of `npm test` and .ci/run. It exits 1 when
// something is still missing, unless `--keep-going` (npm test: the tests then skip, or fail under CI).
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const keepGoing = process.argv.includes('--keep-going');
  void installTestPackages().then((ok) => (process.exitCode = ok || keepGoing ? 0 : 1));
}
