/**
 * Required by the unit tier (run-tests.ts, `npm run test:unit`): test/unit is pure, so a child
 * process started there is a failure naming the rule, not a slow test in the wrong tier.
 */
import { ChildProcess } from 'node:child_process';

// spawn, exec, execFile and fork all start their process through this (not in @types/node).
(ChildProcess.prototype as unknown as { spawn: () => never }).spawn = () => {
  throw new Error('test/unit is pure: no child process here (move the test to test/integration)');
};
