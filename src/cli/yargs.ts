/**
 * yargs, loaded through its CommonJS build, with help that never breaks a word.
 *
 * - Its ESM build lays out help with cliui's ESM build, whose `wrap` cuts a line every N
 *   characters, in the middle of words ("prove each zo / ne key"); the CommonJS build wraps at
 *   word boundaries (wrap-ansi).
 * - cliui asks wrap-ansi for `hard: true`, which still cuts a word longer than its column (a
 *   narrow terminal). Here wrap-ansi is handed to cliui with `hard: false`: such a word runs
 *   past the column instead.
 * - cliui puts a hint (`[boolean]`) on the line before it when the line's free space is at
 *   least as wide as the hint's indent, so a description that fills its column exactly was
 *   glued to it (`stored state[boolean]`). Here it needs one more column: a space between.
 */
import { createRequire } from 'node:module';
import type yargsType from 'yargs';

const require = createRequire(import.meta.url);

type WrapAnsi = (text: string, columns: number, options?: Record<string, unknown>) => string;
// Resolved as yargs resolves them: the cliui yargs loads, and the wrap-ansi that cliui loads.
const yargsRequire = createRequire(require.resolve('yargs'));
const cliuiPath = yargsRequire.resolve('cliui');
const cliuiRequire = createRequire(cliuiPath);
const wrapAnsiPath = cliuiRequire.resolve('wrap-ansi');
if (require.cache[cliuiPath]) throw new Error('src/cli/yargs.ts must load before cliui');
const wrapAnsi = cliuiRequire(wrapAnsiPath) as WrapAnsi;
const softWrap: WrapAnsi = (text, columns, options) => wrapAnsi(text, columns, { ...options, hard: false });
require.cache[wrapAnsiPath]!.exports = softWrap;

interface Line {
  text: string;
  span?: boolean;
  hidden?: boolean;
}
interface CliUi {
  wrap: boolean;
  renderInline(source: string, previousLine: Line): string;
}
const stringWidth = cliuiRequire('string-width') as (text: string) => number;
const cliuiProto = Object.getPrototypeOf((yargsRequire('cliui') as (opts: object) => CliUi)({ width: 80 })) as CliUi;
if (typeof cliuiProto.renderInline !== 'function') throw new Error('src/cli/yargs.ts: cliui has no renderInline');
cliuiProto.renderInline = function renderInline(this: CliUi, source: string, previousLine: Line): string {
  if (!previousLine.span) return source;
  if (!this.wrap) {
    previousLine.hidden = true;
    return previousLine.text + source;
  }
  const indent = /^ */.exec(source)![0].length;
  const used = stringWidth(previousLine.text.trimEnd());
  if (indent <= used) return source; // no room for the hint and a space before it: a line of its own
  previousLine.hidden = true;
  return previousLine.text.trimEnd() + ' '.repeat(indent - used) + source.trimStart();
};

export const yargs = require('yargs') as typeof yargsType;
// A cliui that took another wrap-ansi (a nested copy) would cut words again: say so at once.
if (cliuiRequire(wrapAnsiPath) !== softWrap) throw new Error('src/cli/yargs.ts: cliui did not take the soft wrap');
export const hideBin = (require('yargs/helpers') as { hideBin: (argv: string[]) => string[] }).hideBin;
export type { Argv } from 'yargs';

/**
 * The help's width: the terminal's, else COLUMNS (a pipe has no width), at most 80 (yargs's own
 * choice: longer lines read badly).
 */
export function helpWidth(columns = process.stdout.columns, env = process.env.COLUMNS): number {
  const width = columns ?? (Number(env) > 0 ? Number(env) : 80);
  return Math.min(80, width);
}
