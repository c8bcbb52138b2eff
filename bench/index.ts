/** The benchmark as a command (bench/main.ts parses its options): run it, write JSON and a markdown table. */
import { writeFile } from 'node:fs/promises';
import type { LabKind } from '../src/lab/index.js';
import { renderMarkdown } from './report.js';
import type { BenchReport } from './report-types.js';
import { runBench } from './run.js';
import type { BridgeMode } from './targets.js';

export { runBench, type BenchOptions } from './run.js';
export type { BenchReport } from './report-types.js';
export { renderMarkdown } from './report.js';
export type { BridgeMode } from './targets.js';

export interface BenchCommandOptions {
  quick: boolean;
  /** JSON to this file ('-' = stdout). */
  json?: string;
  /** Markdown to this file; without it the table goes to stdout (to stderr when the JSON does). */
  markdown?: string;
  nameservers?: LabKind[];
  modes?: string[];
  /** Profile the nochg and storm paths into this directory (`--cpu-prof DIR`). */
  cpuProf?: string;
}

export async function benchCommand(
  opts: BenchCommandOptions,
  out: (s: string) => void,
  err: (s: string) => void,
): Promise<BenchReport> {
  const modes = opts.modes?.map(parseMode);
  // Ctrl-C: exit through process.exit so the exit hooks stop the servers and remove the directory.
  const interrupt = () => process.exit(130);
  process.once('SIGINT', interrupt);
  process.once('SIGTERM', interrupt);
  const report = await runBench({
    quick: opts.quick,
    nameservers: opts.nameservers,
    modes,
    cpuProf: opts.cpuProf,
    progress: (l) => err(`bench: ${l}`),
  });
  const markdown = renderMarkdown(report);
  const json = JSON.stringify(report, null, 2);
  if (opts.json === '-') out(json);
  else if (opts.json) await writeFile(opts.json, json + '\n');
  if (opts.markdown) await writeFile(opts.markdown, markdown);
  else if (opts.json === '-') err(markdown);
  else out(markdown);
  return report;
}

function parseMode(text: string): BridgeMode {
  if (text === 'in-process') return text;
  const m = /^workers-([1-9]\d?)$/.exec(text);
  if (m) return `workers-${Number(m[1])}`;
  throw new Error(`unknown bench mode ${JSON.stringify(text)}: in-process or workers-N`);
}
