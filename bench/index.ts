/** The benchmark as a command (bench/main.ts parses its options): run it, write JSON and a markdown table. */
import { writeFile } from 'node:fs/promises';
import type { LabKind } from '../src/lab/index.js';
import { renderGatewayMarkdown, renderMarkdown, renderWrkMarkdown } from './report.js';
import { renderBaseline } from './baseline-rounds.js';
import type {
  BaselineBenchReport,
  BenchReport,
  GatewayBenchReport,
  AllocBenchReport,
  ScaleOutBenchReport,
  WrkBenchReport,
} from './report-types.js';
import { runAllocBench, runBaselineBench, runBench, runGatewayBench, runScaleOutBench, runWrkBench } from './run.js';
import { renderAllocation } from './alloc.js';
import { renderScaleOut } from './scale-out.js';
import type { BridgeMode } from './targets.js';

export { runBench, runGatewayBench, type BenchOptions } from './run.js';
export type { BenchReport, GatewayBenchReport } from './report-types.js';
export { renderGatewayMarkdown, renderMarkdown } from './report.js';
export type { BridgeMode } from './targets.js';

export const SECTIONS = ['all', 'gateway', 'baseline', 'wrk', 'scale-out', 'alloc'] as const;
export type Section = (typeof SECTIONS)[number];
type AnyReport =
  BenchReport | GatewayBenchReport | BaselineBenchReport | WrkBenchReport | ScaleOutBenchReport | AllocBenchReport;

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
  /**
   * `gateway`: the RFC 2136 gateway rounds alone (`--section gateway`); `baseline`: against `baselineDir`; `wrk`: the
   * wrk rounds and their references alone; `scale-out`: one serve process against two on one Redis; `alloc`: heap
   * bytes allocated per nochg request.
   */
  section?: Section;
  /** `--baseline DIR`: an earlier build (`--section baseline`). */
  baselineDir?: string;
}

export async function benchCommand(
  opts: BenchCommandOptions,
  out: (s: string) => void,
  err: (s: string) => void,
): Promise<AnyReport> {
  const modes = opts.modes?.map(parseMode);
  // Ctrl-C: exit through process.exit so the exit hooks stop the servers and remove the directory.
  const interrupt = () => process.exit(130);
  process.once('SIGINT', interrupt);
  process.once('SIGTERM', interrupt);
  const options = {
    quick: opts.quick,
    nameservers: opts.nameservers,
    modes,
    cpuProf: opts.cpuProf,
    progress: (l: string) => err(`bench: ${l}`),
  };
  let report: AnyReport;
  let markdown: string;
  if (opts.section === 'baseline') {
    if (opts.baselineDir === undefined) throw new Error('--section baseline needs --baseline DIR');
    const b = await runBaselineBench({ ...options, baselineDir: opts.baselineDir });
    report = b;
    markdown = renderBaseline(b.baseline).join('\n');
  } else if (opts.section === 'alloc') {
    const x = await runAllocBench(options);
    report = x;
    markdown = renderAllocation(x.allocation).join('\n');
  } else if (opts.section === 'scale-out') {
    const x = await runScaleOutBench(options);
    report = x;
    markdown = renderScaleOut(x.scaleOut).join('\n');
  } else if (opts.section === 'wrk') {
    const w = await runWrkBench(options);
    report = w;
    markdown = renderWrkMarkdown(w);
  } else if (opts.section === 'gateway') {
    const g = await runGatewayBench(options);
    report = g;
    markdown = renderGatewayMarkdown(g);
  } else {
    const full = await runBench(options);
    report = full;
    markdown = renderMarkdown(full);
  }
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
