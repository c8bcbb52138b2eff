/**
 * A mocha root-hook plugin the runner (run-tests.ts) requires for the integration and interop files: it appends
 * how long each file took, hooks included (`{"file":"integration/x.test.js","ms":1234}`), to the file named by
 * DDNS_BRIDGE_FILE_TIMES. Root hooks run once per file in mocha's parallel mode (each file in a root suite of its
 * own), so this is the file's wall time as it ran beside the others. The runner prints the slowest files from it:
 * the figures to order LONGEST_FIRST by.
 */
import { appendFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** dist/test: file names are written relative to it. */
const DIST = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

let started = 0;

export const mochaHooks = {
  beforeAll(): void {
    started = Date.now();
  },
  afterAll(this: Mocha.Context): void {
    const log = process.env.DDNS_BRIDGE_FILE_TIMES;
    const file = this.test?.parent?.suites.find((s) => s.file)?.file;
    if (!log || !file) return;
    const entry = { file: path.relative(DIST, file), ms: Date.now() - started };
    appendFileSync(log, JSON.stringify(entry) + '\n');
  },
};
