/**
 * The benchmark is not part of the product: src/ never imports bench/, the CLI has no `bench`
 * command, and the package ships neither bench/ nor the tests.
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { ROOT, runCli } from '../support/bridge.js';

async function sourcesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries.filter((e) => e.isFile() && e.name.endsWith('.ts')).map((e) => path.join(e.parentPath, e.name));
}

describe('bench: outside the product', function () {
  this.timeout(60000);

  it('no file under src/ imports bench/', async () => {
    const bench = path.join(ROOT, 'bench') + path.sep;
    const offenders: string[] = [];
    for (const file of await sourcesUnder(path.join(ROOT, 'src'))) {
      const text = await readFile(file, 'utf8');
      for (const m of text.matchAll(/(?:from\s+|import\s*\(\s*)['"](\.{1,2}\/[^'"]+)['"]/g)) {
        if (path.resolve(path.dirname(file), m[1]!).startsWith(bench))
          offenders.push(`${path.relative(ROOT, file)}: ${m[1]}`);
      }
    }
    expect(offenders).to.deep.equal([]);
  });

  it('the CLI has no bench command', async () => {
    const r = await runCli(['bench', '--quick']);
    expect(r.code).to.equal(2);
    expect(r.stderr).to.match(/Unknown arguments?: .*bench/);
  });

  it('npm pack ships dist/src, config/, docs/, systemd/, README and package.json, nothing of bench/ or test/', async () => {
    const { stdout } = await promisify(execFile)('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
      cwd: ROOT,
    });
    const files: string[] = (JSON.parse(stdout) as { files: { path: string }[] }[])[0]!.files.map((f) => f.path);
    expect(files).to.include.members(['package.json', 'README.md', 'dist/src/cli/main.js']);
    expect(files.some((f) => f.startsWith('config/'))).to.equal(true);
    // README links into docs/: the pages ship with it.
    expect(files).to.include('docs/protocol.md');
    expect(files.some((f) => f.startsWith('systemd/'))).to.equal(true);
    // A dist/src/bench/ left by a build from before the move would be shipped: rebuild from a clean dist/.
    const unwanted = files.filter(
      (f) => !/^(dist\/src|config|docs|systemd)\//.test(f) && !['package.json', 'README.md', 'LICENSE'].includes(f),
    );
    expect(unwanted, 'outside dist/src, config/, docs/, systemd/').to.deep.equal([]);
    expect(
      files.filter((f) => /(^|\/)bench(\/|$)/.test(f)),
      'bench files',
    ).to.deep.equal([]);
  });
});
