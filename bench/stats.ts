/** Latency samples → the figures the bench reports. */

export interface Measurement {
  /** Operations that succeeded (requests, or names for DNS updates). */
  ok: number;
  /** Operations that failed or got an unexpected answer. */
  errors: number;
  seconds: number;
  /** Successful operations per second. */
  rps: number;
  /** Latency of one request (or one UPDATE message), milliseconds. */
  p50Ms: number;
  p99Ms: number;
  /** The first unexpected answer, to explain errors. */
  firstError?: string;
  /** CPU time of the server's processes per request, ms (in-process: the bench process, load generator included). */
  cpuMsPerRequest?: number;
  /** CPU time of redis-server per request, ms. */
  redisCpuMsPerRequest?: number;
  /** Server in child processes: CPU time of the bench process (the load generator) per request, ms. */
  clientCpuMsPerRequest?: number;
  /** CPU time of the nameserver (knotd or named) per request, or per name for raw UPDATEs, ms. */
  nameserverCpuMsPerRequest?: number;
}

export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return 0;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}

export function summarize(
  latenciesMs: number[],
  ok: number,
  errors: number,
  seconds: number,
  firstError?: string,
): Measurement {
  const sorted = Float64Array.from(latenciesMs).sort();
  const m: Measurement = {
    ok,
    errors,
    seconds: round(seconds, 3),
    rps: round(seconds > 0 ? ok / seconds : 0, 1),
    p50Ms: round(percentile(sorted, 50), 3),
    p99Ms: round(percentile(sorted, 99), 3),
  };
  if (firstError !== undefined) m.firstError = firstError;
  return m;
}

export function round(x: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

/** Run `worker(slot)` in `concurrency` parallel loops until `count` operations or `maxSeconds`. */
export async function closedLoop(
  concurrency: number,
  count: number,
  maxSeconds: number,
  operation: (index: number, slot: number) => Promise<void>,
): Promise<{ issued: number; seconds: number }> {
  let issued = 0;
  const start = performance.now();
  const deadline = start + maxSeconds * 1000;
  const loop = async (slot: number): Promise<void> => {
    while (issued < count && performance.now() < deadline) {
      await operation(issued++, slot);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, (_, slot) => loop(slot)));
  return { issued, seconds: (performance.now() - start) / 1000 };
}
