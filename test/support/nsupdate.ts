/** nsupdate as a client of the primary, in tests: the TSIG key in a file (never in argv). */
import { execFile } from 'node:child_process';
import { requireBinary } from '../../src/lab/index.js';

/** Runs `nsupdate -k keyFile` with `script` on stdin; resolves with exit status and output. */
export function nsupdate(keyFile: string, script: string): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    const child = execFile(requireBinary('nsupdate'), ['-k', keyFile, '-t', '5'], (err, stdout, stderr) => {
      const code = err ? ((err as { code?: number }).code ?? 1) : 0;
      resolve({ code: typeof code === 'number' ? code : 1, output: stdout + stderr });
    });
    child.stdin!.end(script);
  });
}
