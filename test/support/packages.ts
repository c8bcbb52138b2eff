/**
 * Around every mocha run (.mocharc.json requires this file): before the tests, the Debian
 * packages of every binary the tests may use are installed when running as root (the demo's
 * installer and tables, src/lab/binaries.ts), or the one `apt-get install` line is printed;
 * after them, every suite skipped for a missing binary is named.
 *
 * `node dist/test/support/packages.js` does the install alone (.ci/run, under sudo when not
 * root); it exits 1 when something is still missing.
 */
import { pathToFileURL } from 'node:url';
import {
  aptInstallCommand,
  ensureInstalled,
  EVERYTHING,
  isRoot,
  missingPackages,
  skippedForMissing,
} from '../../src/lab/index.js';

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

/** The end-of-run lines naming each suite skipped for something missing, or none. */
export function skipSummary(): string[] {
  const skipped = skippedForMissing();
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

export async function mochaGlobalSetup(): Promise<void> {
  await installTestPackages();
}

export function mochaGlobalTeardown(): void {
  for (const line of skipSummary()) console.log(line);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  void installTestPackages().then((ok) => (process.exitCode = ok ? 0 : 1));
}
