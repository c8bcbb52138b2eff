/**
 * Bytes allocated on the JavaScript heap per request (`--section alloc`, issue 32 item 2): the nochg load of the wrk
 * rounds against the bare ceiling, bare + Redis, the bridge's front (its 404) and the bridge, each in this process
 * (in-process targets: the heap measured is the server's), wrk outside it. Every garbage collection in the window is
 * read through v8.GCProfiler: what was allocated is the heap's growth between collections, summed. Unlike CPU time,
 * the figure does not move with other load on the machine, so a cut's effect shows in one run (BENCHMARKS.md,
 * "Where a nochg goes"). Not counted: memory outside the heap, such as a Buffer's bytes from node's pool (the
 * GCProfiler's external figure does not see those; a script call's buffer is about 0.6 KiB).
 */
import v8 from 'node:v8';
import { JsonLogger } from '../src/cli/logger.js';
import type { LabKind } from '../src/lab/index.js';
import { round } from './stats.js';
import { startBridgeTarget, startCeilingTarget, type Target } from './targets.js';
import { primeNochg, wrkLoads, type WrkContext } from './wrk-rounds.js';
import type { WrkMeasurement } from './wrk.js';

export const ALLOC_TARGETS = ['ceiling', 'ceilingRedis', 'front', 'bridge'] as const;
export type AllocTarget = (typeof ALLOC_TARGETS)[number];

export interface AllocRow {
  target: AllocTarget;
  requests: number;
  /** Heap bytes allocated per request (KiB in the markdown). */
  bytesPerRequest: number;
  /** Collections in the window: scavenges, and mark-compacts. */
  scavenges: number;
  markCompacts: number;
}

export interface AllocResult {
  nameserver: LabKind;
  seconds: number;
  concurrency: number;
  rows: AllocRow[];
}

interface GcStatistic {
  gcType: string;
  beforeGC: { heapStatistics: { usedHeapSize: number } };
  afterGC: { heapStatistics: { usedHeapSize: number } };
}

/** Run `load` while recording every collection: its measurement, and the heap bytes allocated meanwhile. */
async function allocatedDuring(
  load: () => Promise<WrkMeasurement>,
): Promise<{ m: WrkMeasurement; gcs: GcStatistic[]; bytes: number }> {
  const profiler = new v8.GCProfiler();
  const startUsed = v8.getHeapStatistics().used_heap_size;
  profiler.start();
  const m = await load();
  const endUsed = v8.getHeapStatistics().used_heap_size;
  const gcs = (profiler.stop()?.statistics ?? []) as GcStatistic[];
  let bytes = 0;
  let after = startUsed;
  for (const gc of gcs) {
    bytes += Math.max(0, gc.beforeGC.heapStatistics.usedHeapSize - after);
    after = gc.afterGC.heapStatistics.usedHeapSize;
  }
  bytes += Math.max(0, endUsed - after);
  return { m, gcs, bytes };
}

export async function measureAllocation(ctx: WrkContext, kind: LabKind): Promise<AllocResult> {
  const { lab, profile, progress } = ctx;
  const seconds = Math.max(2, profile.wrkSeconds);
  const targets: Partial<Record<AllocTarget, Target>> = {};
  try {
    const bridge = await startBridgeTarget('in-process', lab.config, lab.configPath, new JsonLogger('warn'));
    targets.bridge = bridge;
    targets.ceiling = await startCeilingTarget('in-process');
    targets.ceilingRedis = await startCeilingTarget('in-process', [], lab.config.redis.url);
    const loads = wrkLoads({ ...ctx, mode: 'in-process' }, kind, await primeNochg(ctx, kind, bridge));
    const run: Record<AllocTarget, (s: number) => Promise<WrkMeasurement>> = {
      ceiling: (s) => loads.nochg(targets.ceiling!, false, s),
      ceilingRedis: (s) => loads.nochg(targets.ceilingRedis!, false, s),
      front: (s) => loads.front(bridge, s),
      bridge: (s) => loads.nochg(bridge, true, s),
    };
    const rows: AllocRow[] = [];
    for (const target of ALLOC_TARGETS) {
      await run[target](1); // unmeasured: JIT
      const { m, gcs, bytes } = await allocatedDuring(() => run[target](seconds));
      const requests = m.ok + m.errors;
      const row: AllocRow = {
        target,
        requests,
        bytesPerRequest: requests > 0 ? Math.round(bytes / requests) : 0,
        scavenges: gcs.filter((g) => g.gcType === 'Scavenge' || g.gcType === 'MinorMarkSweep').length,
        markCompacts: gcs.filter((g) => g.gcType === 'MarkSweepCompact').length,
      };
      rows.push(row);
      progress(
        `${kind} allocation, ${target}: ${requests} requests, ${round(row.bytesPerRequest / 1024, 1)} KiB each ` +
          `(${row.scavenges} scavenges, ${row.markCompacts} mark-compacts)${m.errors > 0 ? `; ERRORS: ${m.errors} (${m.firstError})` : ''}`,
      );
    }
    return { nameserver: kind, seconds, concurrency: profile.nochgConcurrency, rows };
  } finally {
    for (const t of Object.values(targets)) await t.stop();
  }
}

const LABELS: Record<AllocTarget, string> = {
  ceiling: 'bare node:http',
  ceilingRedis: 'bare + Redis (one two-command script)',
  front: 'the bridge’s front (404, no use case)',
  bridge: 'the bridge, nochg',
};

/** The markdown of an allocation run. */
export function renderAllocation(x: AllocResult): string[] {
  return [
    `### Heap allocated per nochg request (${x.nameserver}, in-process, c=${x.concurrency}, ${x.seconds} s of wrk each)`,
    '',
    '| server | requests | KiB per request | scavenges | mark-compacts |',
    '|---|---:|---:|---:|---:|',
    ...x.rows.map(
      (r) =>
        `| ${LABELS[r.target]} | ${r.requests.toLocaleString('en')} | ${(r.bytesPerRequest / 1024).toFixed(1)} | ${r.scavenges} | ${r.markCompacts} |`,
    ),
    '',
  ];
}
