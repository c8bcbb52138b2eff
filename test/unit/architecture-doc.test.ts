/**
 * docs/architecture.md stays a map of what exists:
 * - every folder of src/ (at any depth) has a row of the module table ("Modules and what each
 *   may import"), its first cell naming it as `src/<name>/`;
 * - every use case file src/app/*.ts but ports.ts is named (`src/app/<file>`);
 * - every Lua script definition file of src/store/scripts/ is named (`scripts/<file>`), and so
 *   is each script it exports.
 * The lists come from the tree itself: a folder, use case or script added fails this test
 * until the document says what it is.
 */
import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root (this file runs as dist/test/unit/architecture-doc.test.js). */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

const DOC = 'docs/architecture.md';
const MODULE_HEADING = 'Modules and what each may import';

const read = (rel: string): string => readFileSync(path.join(ROOT, rel), 'utf8');

/** Every folder below src/, repository-relative with a trailing slash: `src/store/scripts/`. */
function srcFolders(dir = 'src'): string[] {
  return readdirSync(path.join(ROOT, dir), { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .flatMap((e) => [`${dir}/${e.name}/`, ...srcFolders(`${dir}/${e.name}`)])
    .sort();
}

/** The TypeScript files directly in `dir`, by name. */
function tsFiles(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir), { withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => e.name)
    .sort();
}

/** The lines of the section under `## heading`, up to the next heading of that level or above. */
function section(text: string, heading: string): string[] {
  const lines = text.split('\n');
  const start = lines.findIndex((l) => l.trim() === `## ${heading}`);
  if (start < 0) return expect.fail(`${DOC}: no section "## ${heading}"`);
  const end = lines.findIndex((l, i) => i > start && /^#{1,2}\s/.test(l));
  return lines.slice(start + 1, end < 0 ? undefined : end);
}

/** The first cell of each table row of `lines` (separator rows and header rows included). */
function firstCells(lines: readonly string[]): string[] {
  return lines.filter((l) => /^\s*\|/.test(l)).map((l) => l.trim().replace(/^\|/, '').split('|')[0]!.trim());
}

describe('docs/architecture.md', () => {
  const text = read(DOC);

  it('has a module table row for every folder of src/', () => {
    const folders = srcFolders();
    expect(folders, 'src/ folders found').to.include.members(['src/core/', 'src/app/', 'src/cli/']);
    const cells = firstCells(section(text, MODULE_HEADING));
    const missing = folders.filter((f) => !cells.some((c) => c.includes(`\`${f}\``)));
    expect(missing, `folders of src/ without a row in the table of ${DOC}, "${MODULE_HEADING}"`).to.deep.equal([]);
  });

  it('names every use case of src/app', () => {
    const files = tsFiles('src/app').filter((f) => f !== 'ports.ts');
    expect(files, 'use case files found').to.include('update.ts');
    const missing = files.filter((f) => !text.includes(`src/app/${f}`));
    expect(missing, `files of src/app that ${DOC} does not name as src/app/<file>`).to.deep.equal([]);
  });

  it('names every Lua script definition file of src/store/scripts, and every script in it', () => {
    const files = tsFiles('src/store/scripts');
    expect(files, 'script files found').to.include('lease.ts');
    const missingFiles = files.filter((f) => !text.includes(`scripts/${f}`));
    expect(missingFiles, `files of src/store/scripts that ${DOC} does not name`).to.deep.equal([]);

    const scripts = files.flatMap((f) =>
      [...read(`src/store/scripts/${f}`).matchAll(/^export const ([A-Z][A-Z0-9_]*)\s*=\s*define\w*Script\(/gm)].map(
        (m) => m[1]!,
      ),
    );
    expect(scripts.length, 'script definitions found (has the way scripts are defined changed?)').to.be.at.least(20);
    const missing = scripts.filter((s) => !text.includes(`\`${s}\``));
    expect(missing, `scripts of src/store/scripts that ${DOC} does not name`).to.deep.equal([]);
  });
});
