/**
 * A mocha root-hook plugin the runner (run-tests.ts) requires for the integration and interop files: it appends
 * how long each file took, hooks included (`{"file":"integration/x.test.js","ms":1234}`), to the file named by
 * DDNS_BRIDGE_FILE_TIMES. Root hooks run once per file in mocha's parallel mode (each file in a root suite of its
 * own), so this is the file's wall time as it ran beside the others. The runner prints the slowest files from it:
 * the figures to order LONGEST_FIRST by. With DDNS_BRIDGE_HOOK_TIMES it also times each hook (timeHooks): the
 * runner prints the slowest of those too.
 */
import { appendFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** dist/test: file names are written relative to it. */
const DIST = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

let started = 0;

/** A suite's own before/after hooks (mocha keeps them in these fields; `Mocha.Suite` does not type them). */
interface SuiteHooks {
  _beforeAll: Mocha.Hook[];
  _afterAll: Mocha.Hook[];
  _beforeEach: Mocha.Hook[];
  _afterEach: Mocha.Hook[];
}

/**
 * Time every promise-returning hook of `suite` and the suites in it, each run appended to DDNS_BRIDGE_HOOK_TIMES
 * (`{"file":…,"hook":"\"before all\" hook in suite title","ms":1234}`): where a file's time goes when it is not in
 * its tests (servers started per describe). A hook taking a `done` callback is left as it is.
 */
function timeHooks(suite: Mocha.Suite, file: string, log: string): void {
  const own = suite as unknown as SuiteHooks;
  for (const hook of [...own._beforeAll, ...own._afterAll, ...own._beforeEach, ...own._afterEach]) {
    const fn = hook.fn as ((this: Mocha.Context) => unknown) | undefined;
    if (!fn || fn.length > 0) continue;
    const title = `${hook.title.replace(/:.*$/, '')} in ${suite.fullTitle() || '(root)'}`;
    hook.fn = async function (this: Mocha.Context) {
      const t0 = Date.now();
      try {
        return await fn.call(this);
      } finally {
        appendFileSync(log, JSON.stringify({ file, hook: title, ms: Date.now() - t0 }) + '\n');
      }
    } as Mocha.Func;
  }
  for (const child of suite.suites) timeHooks(child, file, log);
}

export const mochaHooks = {
  beforeAll(this: Mocha.Context): void {
    started = Date.now();
    const log = process.env.DDNS_BRIDGE_HOOK_TIMES;
    const root = this.test?.parent;
    // Serially (the exclusive files) one root holds every file's suites: each is named by its own file.
    if (!log || !root) return;
    for (const suite of root.suites) if (suite.file) timeHooks(suite, path.relative(DIST, suite.file), log);
  },
  afterAll(this: Mocha.Context): void {
    const log = process.env.DDNS_BRIDGE_FILE_TIMES;
    const files = new Set((this.test?.parent?.suites ?? []).flatMap((s) => (s.file ? [s.file] : [])));
    if (!log || files.size === 0) return;
    // Serially (the exclusive files) root hooks run once for all files: the figure is theirs together.
    const file = files.size === 1 ? path.relative(DIST, [...files][0]!) : `${files.size} files in one mocha`;
    const entry = { file, ms: Date.now() - started };
    appendFileSync(log, JSON.stringify(entry) + '\n');
  },
};
