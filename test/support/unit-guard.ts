/**
 * Required by the unit tier (run-tests.ts, `npm run test:unit`): test/unit is pure, so a child
 * process started there is a failure naming the rule, not a slow test in the wrong tier.
 */
import childProcess, { ChildProcess } from 'node:child_process';
import { syncBuiltinESMExports } from 'node:module';

const refuse = (): never => {
  throw new Error('test/unit is pure: no child process here (move the test to test/integration)');
};
// spawn, exec, execFile and fork all start their process through this (not in @types/node).
(ChildProcess.prototype as unknown as { spawn: () => never }).spawn = refuse;
// The synchronous ones do not: replaced on the module, and the ESM named exports synced to it.
const sync = childProcess as unknown as Record<'spawnSync' | 'execSync' | 'execFileSync', () => never>;
sync.spawnSync = sync.execSync = sync.execFileSync = refuse;
syncBuiltinESMExports();
