/**
 * This build against an earlier one (`--section baseline --baseline DIR`): the nochg load of the wrk rounds
 * (wrk-rounds.ts) against a `serve --workers N` of each build and the bare node:http ceiling, on the same Redis, the
 * same hosts and the same config, the order rotated each round so that a shared machine's drift hits all three alike.
 * It answers "did this change slow the nochg path?" with ratios measured in one run (issue 31: the last request of a
 * host is written by the admission script; BENCHMARKS.md, "The last request of a host").
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { JsonLogger } from '../src/cli/logger.js';
import type { LabKind } from '../src/lab/index.js';
import type { WrkContext } from './wrk-rounds.js';
import { errorsOf, primeNochg, wrkLoads } from './wrk-rounds.js';
import { round } from './stats.js';
import { startBridgeTarget, startCeilingTarget, type BridgeMode, type Target } from './targets.js';
import { median } from './verdict.js';
import type { WrkMeasurement } from './wrk.js';

export interface BaselineRound {
  order: ('ceiling' | 'current' | 'baseline')[];
  ceiling: WrkMeasurement;
  current: WrkMeasurement;
  baseline: WrkMeasurement;
}

export interface BaselineResult {
  nameserver: LabKind;
  mode: BridgeMode;
  seconds: number;
  concurrency: number;
  hosts: number;
  /** The earlier build: its directory and commit. */
  baseline: { dir: string; commit: string };
  current: { commit: string };
  rounds: BaselineRound[];
  /** Medians over the rounds. */
  medians: {
    currentOverCeiling: number;
    baselineOverCeiling: number;
    currentOverBaseline: number;
    cpuMsPerRequest: { current: number; baseline: number };
    redisCpuMsPerRequest: { current: number; baseline: number };
  };
}

/** The CLI of an earlier build: DIR/dist/src/cli/main.js (a checkout built with `npx tsc -p .`). */
export function baselineCli(dir: string): string {
  const cli = path.join(path.resolve(dir), 'dist', 'src', 'cli', 'main.js');
  if (!existsSync(cli)) throw new Error(`no build at ${dir}: expected ${cli} (run npx tsc -p . there)`);
  return cli;
}

/** The short commit of a checkout, `+` when its tree has changes not committed. */
const commitOf = (dir: string) => {
  try {
    const git = (...args: string[]) => execFileSync('git', ['-C', dir, ...args], { encoding: 'utf8' }).trim();
    return (
      git('rev-parse', '--short', 'HEAD') + (git('status', '--porcelain', '--untracked-files=no') === '' ? '' : '+')
    );
  } catch {
    return 'unknown';
  }
};

/** Rounds and seconds of a run: more than the wrk rounds, as the two builds differ by little (quick: its own). */
const BASELINE_ROUNDS = 6;
const BASELINE_SECONDS = 5;

export async function measureBaseline(ctx: WrkContext, kind: LabKind, baselineDir: string): Promise<BaselineResult> {
  const { lab, profile, mode, progress } = ctx;
  const full = profile.name !== 'quick';
  const seconds = full ? Math.max(profile.wrkSeconds, BASELINE_SECONDS) : profile.wrkSeconds;
  const roundCount = full ? Math.max(profile.wrkRounds, BASELINE_ROUNDS) : profile.wrkRounds;
  const cli = baselineCli(baselineDir);
  const ceiling = await startCeilingTarget(mode);
  const logger = new JsonLogger('warn');
  let current: Target | undefined;
  let baseline: Target | undefined;
  try {
    current = await startBridgeTarget(mode, lab.config, lab.configPath, logger);
    baseline = await startBridgeTarget(mode, lab.config, lab.configPath, logger, [], cli);
    const loads = wrkLoads(ctx, kind, await primeNochg(ctx, kind, current));
    const targets = { ceiling, current, baseline };
    const run = (name: keyof typeof targets, s: number) => loads.nochg(targets[name], name !== 'ceiling', s);
    // Unmeasured: a fresh server's first seconds run below its pace (JIT).
    for (const name of ['ceiling', 'current', 'baseline'] as const) await run(name, Math.max(1, profile.warmUpSeconds));
    const rounds: BaselineRound[] = [];
    const names = ['ceiling', 'current', 'baseline'] as const;
    for (let i = 0; i < roundCount; i++) {
      const order = names.map((_, j) => names[(i + j) % names.length]!);
      const got: Partial<Record<(typeof names)[number], WrkMeasurement>> = {};
      for (const name of order) got[name] = await run(name, seconds);
      const r = { order, ceiling: got.ceiling!, current: got.current!, baseline: got.baseline! };
      rounds.push(r);
      progress(
        `${kind} baseline round ${i + 1} (${order.join(', ')}): ceiling ${r.ceiling.rps}/s, ` +
          `this build ${r.current.rps}/s, baseline ${r.baseline.rps}/s → ${round(r.current.rps / r.baseline.rps, 2)}` +
          errorsOf([r.ceiling, r.current, r.baseline]),
      );
    }
    const med = (f: (r: BaselineRound) => number) => round(median(rounds.map(f)), 3);
    return {
      nameserver: kind,
      mode,
      seconds,
      concurrency: profile.nochgConcurrency,
      hosts: profile.nochgHosts,
      baseline: { dir: path.resolve(baselineDir), commit: commitOf(baselineDir) },
      current: { commit: commitOf(process.cwd()) },
      rounds,
      medians: {
        currentOverCeiling: med((r) => r.current.rps / r.ceiling.rps),
        baselineOverCeiling: med((r) => r.baseline.rps / r.ceiling.rps),
        currentOverBaseline: med((r) => r.current.rps / r.baseline.rps),
        cpuMsPerRequest: {
          current: med((r) => r.current.cpuMsPerRequest ?? 0),
          baseline: med((r) => r.baseline.cpuMsPerRequest ?? 0),
        },
        redisCpuMsPerRequest: {
          current: med((r) => r.current.redisCpuMsPerRequest ?? 0),
          baseline: med((r) => r.baseline.redisCpuMsPerRequest ?? 0),
        },
      },
    };
  } finally {
    await current?.stop();
    await baseline?.stop();
    await ceiling.stop();
  }
}

/** The markdown of a baseline run. */
export function renderBaseline(b: BaselineResult): string[] {
  const rows = b.rounds.map(
    (r, i) =>
      `| ${i + 1} | ${r.order.join(', ')} | ${r.ceiling.rps} | ${r.current.rps} | ${r.baseline.rps} | ${round(r.current.rps / r.baseline.rps, 2)} |`,
  );
  const m = b.medians;
  return [
    `### nochg: this build (${b.current.commit}) against ${b.baseline.commit} (${b.nameserver}, ${b.mode}, c=${b.concurrency}, ${b.seconds} s of wrk a run)`,
    '',
    '| round | order | ceiling req/s | this build req/s | baseline req/s | this / baseline |',
    '|---|---|---|---|---|---|',
    ...rows,
    '',
    `Medians: this build ${m.currentOverCeiling} of the ceiling, the baseline ${m.baselineOverCeiling}; this / baseline ` +
      `**${m.currentOverBaseline}**. Serving CPU per request ${m.cpuMsPerRequest.current} ms (baseline ` +
      `${m.cpuMsPerRequest.baseline} ms); redis-server CPU per request ${m.redisCpuMsPerRequest.current} ms (baseline ` +
      `${m.redisCpuMsPerRequest.baseline} ms).`,
    '',
  ];
}
