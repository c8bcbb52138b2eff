/**
 * The alert rules docs/operators.md gives ("Secondaries": docs/alerts/secondaries.rules.yml) load in Prometheus
 * (`promtool check rules`) and fire on what they are for, and only then (`promtool test rules` with
 * test/fixtures/secondaries.rules.test.yml: a secondary down, stuck behind, slow).
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { findBinary, requireBinariesOrSkip } from '../../src/lab/index.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const RULES = 'docs/alerts/secondaries.rules.yml';

function promtool(args: string[]): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(findBinary('promtool') ?? 'promtool', args, { cwd: root }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, output: stdout + stderr }),
    );
  });
}

describe('alert rules for the secondaries (promtool)', function () {
  this.timeout(30000);
  before(function () {
    requireBinariesOrSkip(this, ['promtool']);
  });

  it('promtool check rules: the three rules load', async () => {
    const r = await promtool(['check', 'rules', RULES]);
    expect(r.output).to.include('SUCCESS: 3 rules found');
    expect(r.code).to.equal(0);
  });

  it('promtool test rules: down, stuck and slow fire on their series, not before', async () => {
    const r = await promtool(['test', 'rules', 'test/fixtures/secondaries.rules.test.yml']);
    expect(r.output).to.include('SUCCESS');
    expect(r.code, r.output).to.equal(0);
  });

  it('docs/operators.md names each rule of the file', async () => {
    const [rules, doc] = await Promise.all([
      readFile(root + RULES, 'utf8'),
      readFile(root + 'docs/operators.md', 'utf8'),
    ]);
    const names = [...rules.matchAll(/alert: (\w+)/g)].map((m) => m[1]!);
    expect(names).to.deep.equal(['DdnsBridgeSecondaryDown', 'DdnsBridgeSecondaryStuck', 'DdnsBridgeSecondarySlow']);
    for (const n of names) expect(doc).to.include(n);
  });
});
