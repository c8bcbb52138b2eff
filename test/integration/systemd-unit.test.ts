/** The shipped unit file: `systemd-analyze verify` accepts it, and `systemctl reload` sends SIGHUP. */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { copyFile, readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { makeTempDir, packageRoot, removeDir, requireBinariesOrSkip } from '../../src/lab/index.js';

const run = promisify(execFile);
const UNIT = path.join(packageRoot(), 'systemd', 'ddns-bridge.service');

describe('systemd unit', () => {
  it('systemd-analyze verify: no error, no warning', async function () {
    requireBinariesOrSkip(this, ['systemd-analyze']);
    const dir = await makeTempDir('unit-');
    try {
      // Verified under its own name in a directory of its own: nothing else of the machine's is read.
      const copy = path.join(dir, 'ddns-bridge.service');
      await copyFile(UNIT, copy);
      const { stdout, stderr } = await run('systemd-analyze', ['verify', copy]);
      expect(stderr.trim()).to.equal('');
      expect(stdout.trim()).to.equal('');
    } finally {
      await removeDir(dir);
    }
  });

  it('systemctl reload sends SIGHUP to the main process (the config is re-read, not restarted)', async () => {
    const text = await readFile(UNIT, 'utf8');
    expect(text).to.match(/^ExecReload=\/bin\/kill -HUP \$MAINPID$/m);
  });
});
