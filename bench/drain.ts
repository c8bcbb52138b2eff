/**
 * The drain figure: N registered hosts each get one new address, one request each, from many
 * concurrent clients (a mass renumbering that must end), timed until the last `good`.
 *
 * The Node generator (load.ts), not wrk: wrk runs for a fixed time and cannot stop after a
 * fixed set of requests, each sent once.
 */
import { JsonLogger } from '../src/cli/logger.js';
import type { LabKind } from '../src/lab/index.js';
import { checkSample, spread } from './dns-check.js';
import { runHttpLoad, updateRequest } from './load.js';
import { nextAddress } from './raw-dns.js';
import type { DrainResult } from './report-types.js';
import type { Measurement } from './stats.js';
import { importHosts, RssSampler, warmUp, withCpu } from './runs.js';
import { startBridgeTarget, type Target } from './targets.js';
import { STORM_FROM, type WrkContext } from './wrk-rounds.js';

/** The drain's hosts: above any other section's indexes (the large registry's too): nothing else touches them. */
export const DRAIN_FROM = 2_000_000;

/** The drain of each nameserver's zone in turn, on one fresh bridge. */
export async function measureDrains(ctx: WrkContext, kinds: readonly LabKind[]): Promise<Map<LabKind, DrainResult>> {
  const { lab, profile, mode } = ctx;
  await importHosts(lab, lab, kinds, DRAIN_FROM, DRAIN_FROM + profile.drainHosts);
  const target = await startBridgeTarget(mode, lab.config, lab.configPath, new JsonLogger('warn'));
  const out = new Map<LabKind, DrainResult>();
  try {
    for (const kind of kinds) out.set(kind, await drainOne(ctx, kind, target));
  } finally {
    await target.stop();
  }
  return out;
}

async function drainOne(ctx: WrkContext, kind: LabKind, target: Target): Promise<DrainResult> {
  const { lab, profile, mode, progress } = ctx;
  const n = profile.drainHosts;
  const hosts = Array.from({ length: n }, (_, i) => `h${DRAIN_FROM + i}.${lab.zoneOf(kind)}`);
  const addresses = hosts.map(() => nextAddress());
  const rss = new RssSampler(target);
  let m: Measurement;
  try {
    // A running service is warm: unmeasured changes to the storm's hosts first.
    await warmUp(lab, target, kind, { next: 0, from: STORM_FROM, count: profile.stormHosts }, profile);
    m = await withCpu(
      lab,
      target,
      () =>
        runHttpLoad({
          host: '127.0.0.1',
          port: target.port,
          concurrency: profile.drainConcurrency,
          requests: n,
          // Far more than it takes; a drain that runs out of it reports the unsent requests as errors.
          maxSeconds: 900,
          request: (i) => updateRequest(hosts[i]!, addresses[i]!, lab.authorization),
          expect: (i, _s, body) => body === `good ${addresses[i]}\n`,
          timeoutMs: 60_000,
        }),
      kind,
    );
  } catch (err) {
    rss.stop(false);
    throw err;
  }
  const sampled = rss.stop(false);
  const unsent = n - m.ok - m.errors;
  if (unsent > 0) {
    m.errors += unsent;
    m.firstError ??= `${unsent} requests not sent within the time limit`;
  }
  const sample = await checkSample(
    lab,
    kind,
    spread(0, n, 50).map((i) => hosts[i]!),
  );
  progress(
    `${kind} drain: ${n} hosts by ${profile.drainConcurrency} clients in ${m.seconds} s (${m.rps}/s, p50 ${m.p50Ms} ms, p99 ${m.p99Ms} ms, ${m.errors} errors${m.firstError ? `: ${m.firstError}` : ''}); ` +
      `sample ${sample.matched} of ${sample.checked} published as Redis says${sample.firstMismatch ? ` (${sample.firstMismatch})` : ''}`,
  );
  return { mode, hosts: n, concurrency: profile.drainConcurrency, measurement: m, sample, rss: sampled };
}
