/**
 * The wrk rounds, the bench's headline: per nameserver, a fresh `serve --workers N` bridge
 * and a bare node:http cluster of as many workers (the ceiling), under the same wrk load back
 * to back, the order flipped each round so that a shared machine's drift hits both alike:
 *
 *   nochg: requests cycling over hosts each set once before, so every reply is `nochg`;
 *   storm: every request a new address for the next host of a large pool (mass renumbering).
 *
 * The nochg load also runs, in the same rounds (the order rotated), against two more references
 * that split a nochg's cost: "bare + Redis" (the ceiling doing one two-command script per request on
 * the same Redis: what counting every request atomically costs at the least) and "front" (the same
 * bridge asked a path it does not serve: its whole HTTP front and a 404, no use case).
 *
 * Then a sample of the storm's hosts: the address Redis records must be the one DNS serves.
 */
import { JsonLogger } from '../src/cli/logger.js';
import type { LabKind } from '../src/lab/index.js';
import { checkSample, spread } from './dns-check.js';
import type { BenchLab } from './lab.js';
import { updatePath } from './load.js';
import type { BenchProfile } from './profile.js';
import { nextAddress } from './raw-dns.js';
import type { WrkRound, WrkRoundsResult } from './report-types.js';
import { importHosts, inOrder, primeHosts, RssSampler, withCpu } from './runs.js';
import { round } from './stats.js';
import { startBridgeTarget, startCeilingTarget, type BridgeMode, type Target } from './targets.js';
import { wrkChange, wrkCycle } from './wrk-loads.js';
import type { WrkMeasurement } from './wrk.js';

/**
 * Host indexes in each zone: the storm's pool from 0, the nochg hosts right after it (never
 * touched by a storm in flight).
 */
export const STORM_FROM = 0;
export const nochgFrom = (p: BenchProfile) => STORM_FROM + p.stormHosts;

export interface WrkContext {
  lab: BenchLab;
  profile: BenchProfile;
  mode: BridgeMode;
  progress: (line: string) => void;
}

/** Register the storm's and the nochg hosts in every zone (hosts below `registered` already are). */
export async function registerWrkHosts(ctx: WrkContext, kinds: readonly LabKind[], registered: number): Promise<void> {
  const to = nochgFrom(ctx.profile) + ctx.profile.nochgHosts;
  await importHosts(ctx.lab, ctx.lab, kinds, Math.min(registered, to), to);
}

/** The loads of one nameserver, against a bridge or the ceiling. */
export interface WrkLoads {
  nochg(target: Target, bridge: boolean, seconds: number): Promise<WrkMeasurement>;
  /** The nochg requests (authorization included) to a path the bridge does not serve: its 404s. */
  front(bridge: Target, seconds: number): Promise<WrkMeasurement>;
  storm(target: Target, bridge: boolean, seconds: number): Promise<WrkMeasurement>;
}

/**
 * Set a new address on each nochg host through `bridge` (once each, answered good): the
 * request targets that repeat it are nochg from then on, on any bridge of this registry.
 */
export async function primeNochg(ctx: WrkContext, kind: LabKind, bridge: Target): Promise<string[]> {
  const { lab, profile } = ctx;
  const hosts = spread(nochgFrom(profile), profile.nochgHosts, profile.nochgHosts).map(
    (i) => `h${i}.${lab.zoneOf(kind)}`,
  );
  const addresses = hosts.map(() => nextAddress());
  await primeHosts(lab, bridge, hosts, addresses);
  return hosts.map((h, i) => updatePath(h, addresses[i]!));
}

/** The front's reference asks this path, which no route serves: the bridge answers 404 (no use case runs). */
export const FRONT_PATH = '/bench-front-reference';

/**
 * The two loads of one nameserver (nochg over `targets` from primeNochg). The ceiling gets the
 * same request targets without authorization; it answers a fixed `nochg`.
 */
export function wrkLoads(ctx: WrkContext, kind: LabKind, targets: readonly string[]): WrkLoads {
  const { lab, profile } = ctx;
  const zone = lab.zoneOf(kind);
  const pool = { zone, from: STORM_FROM, count: profile.stormHosts };
  const auth = (isBridge: boolean) => (isBridge ? lab.authorization : undefined);
  const frontTargets = targets.map((t) => FRONT_PATH + t.slice(t.indexOf('?')));
  return {
    front: (target, seconds) =>
      withCpu(lab, target, () =>
        wrkCycle(
          { port: target.port, dir: lab.dir },
          {
            targets: frontTargets,
            concurrency: profile.nochgConcurrency,
            seconds,
            authorization: lab.authorization,
            expect: 'not-found',
          },
        ),
      ),
    nochg: (target, isBridge, seconds) =>
      withCpu(lab, target, () =>
        wrkCycle(
          { port: target.port, dir: lab.dir },
          {
            targets,
            concurrency: profile.nochgConcurrency,
            seconds,
            authorization: auth(isBridge),
            expect: 'nochg',
          },
        ),
      ),
    storm: (target, isBridge, seconds) =>
      withCpu(
        lab,
        target,
        () =>
          wrkChange(
            { port: target.port, dir: lab.dir },
            {
              pool,
              concurrency: profile.stormConcurrency,
              seconds,
              authorization: auth(isBridge),
              expect: isBridge ? 'good' : 'nochg',
            },
          ),
        // The nameserver's CPU: a storm's changes reach it (the ceiling's requests do not).
        isBridge ? kind : undefined,
      ),
  };
}

/**
 * The rounds for one nameserver, with their own bridge and ceiling. Resolves with the result
 * and the loads (their nochg hosts set), for the profiled runs after them.
 */
export async function measureWrkRounds(
  ctx: WrkContext,
  kind: LabKind,
): Promise<{ result: WrkRoundsResult; loads: WrkLoads }> {
  const { lab, profile, mode, progress } = ctx;
  const seconds = profile.wrkSeconds;
  const ceiling = await startCeilingTarget(mode);
  let ceilingRedis: Target | undefined;
  let bridge: Target | undefined;
  let rss: RssSampler | undefined;
  let result: WrkRoundsResult | undefined;
  let loads: WrkLoads | undefined;
  try {
    ceilingRedis = await startCeilingTarget(mode, [], lab.config.redis.url);
    bridge = await startBridgeTarget(mode, lab.config, lab.configPath, new JsonLogger('warn'));
    rss = new RssSampler(bridge);
    loads = wrkLoads(ctx, kind, await primeNochg(ctx, kind, bridge));
    const l = loads;
    const b = bridge;
    const cr = ceilingRedis;
    const nochgOf: Record<NochgTarget, (s: number) => Promise<WrkMeasurement>> = {
      ceiling: (s) => l.nochg(ceiling, false, s),
      ceilingRedis: (s) => l.nochg(cr, false, s),
      front: (s) => l.front(b, s),
      bridge: (s) => l.nochg(b, true, s),
    };
    // Unmeasured: a fresh server's first second runs well below its pace (JIT).
    let stormRequests = 0;
    if (profile.warmUpSeconds > 0) {
      stormRequests = (await loads.storm(bridge, true, profile.warmUpSeconds)).ok;
      for (const name of NOCHG_TARGETS) await nochgOf[name](profile.warmUpSeconds);
    }
    const rounds: WrkRound[] = [];
    for (let i = 0; i < profile.wrkRounds; i++) {
      const bridgeFirst = i % 2 === 1;
      // The four nochg measurements rotated (round 1: ceiling first, round 2: bare + Redis first, …).
      const order = NOCHG_TARGETS.map((_, j) => NOCHG_TARGETS[(i + j) % NOCHG_TARGETS.length]!);
      const got: Partial<Record<NochgTarget, WrkMeasurement>> = {};
      for (const name of order) got[name] = await nochgOf[name](seconds);
      const ceilingNochg = got.ceiling!;
      const nochg = got.bridge!;
      const ceilingRedisNochg = got.ceilingRedis!;
      const frontNochg = got.front!;
      const [ceilingStorm, storm] = await inOrder(
        () => loads!.storm(ceiling, false, seconds),
        () => loads!.storm(bridge!, true, seconds),
        bridgeFirst,
      );
      stormRequests = Math.max(stormRequests, storm.ok);
      rounds.push({
        bridgeFirst,
        nochgOrder: order,
        ceilingNochg,
        ceilingRedisNochg,
        frontNochg,
        nochg,
        ceilingStorm,
        storm,
      });
      progress(
        `${kind} wrk round ${i + 1}${bridgeFirst ? ' (bridge first)' : ''}: ` +
          `nochg c=${profile.nochgConcurrency} (${order.join(', ')}) ceiling ${ceilingNochg.rps}/s, bare + Redis ${ceilingRedisNochg.rps}/s, ` +
          `front ${frontNochg.rps}/s, bridge ${nochg.rps}/s → ${round(nochg.rps / ceilingNochg.rps, 2)} · ${round(nochg.rps / ceilingRedisNochg.rps, 2)}; ` +
          `storm c=${profile.stormConcurrency} ceiling ${ceilingStorm.rps}/s, bridge ${storm.rps}/s → ${round(storm.rps / ceilingStorm.rps, 2)}` +
          errorsOf([ceilingNochg, ceilingRedisNochg, frontNochg, nochg, ceilingStorm, storm]),
      );
    }
    // A storm too short or too slow to answer more than its concurrency (the quick profile's 1 s on a busy machine)
    // leaves no host certainly touched: unmeasured storms until the sample has its hosts (at most three).
    for (let extra = 0; extra < 3 && stormRequests - profile.stormConcurrency < SAMPLE_HOSTS; extra++)
      stormRequests = Math.max(stormRequests, (await loads.storm(bridge, true, Math.max(1, seconds))).ok);
    // Every storm starts again at the pool's second host (wrk calls request() once to check
    // the script before it connects, and drops that request): the hosts below the busiest
    // run's count, less what it may have left in flight, have had a `good` at least once.
    const touched = Math.min(profile.stormHosts - 1, stormRequests - profile.stormConcurrency);
    const sample = await checkSample(
      lab,
      kind,
      spread(STORM_FROM + 1, Math.max(0, touched), SAMPLE_HOSTS).map((i) => `h${i}.${lab.zoneOf(kind)}`),
    );
    progress(
      `${kind} storm sample: ${sample.matched} of ${sample.checked} published as Redis says${sample.firstMismatch ? ` (${sample.firstMismatch})` : ''}`,
    );
    result = {
      mode,
      seconds,
      nochg: { concurrency: profile.nochgConcurrency, hosts: profile.nochgHosts },
      storm: { concurrency: profile.stormConcurrency, hosts: profile.stormHosts },
      rounds,
      sample,
      rss: { maxProcessBytes: 0, maxTotalBytes: 0, processes: 0, includesLoadGenerator: false, coldLogins: 0 },
    };
  } finally {
    await bridge?.stop();
    await ceilingRedis?.stop();
    await ceiling.stop();
    const sampled = rss?.stop(false);
    if (result && sampled) result.rss = sampled;
  }
  return { result: result, loads: loads };
}

/** Storm hosts checked against DNS after the rounds. */
const SAMPLE_HOSTS = 50;

/** The nochg load's targets: the bare ceiling, bare + Redis, the bridge's front (its 404), the bridge. */
export const NOCHG_TARGETS = ['ceiling', 'ceilingRedis', 'front', 'bridge'] as const;
export type NochgTarget = (typeof NOCHG_TARGETS)[number];

/** ", errors: …" when a measurement had any. */
export function errorsOf(ms: readonly WrkMeasurement[]): string {
  const bad = ms.filter((m) => m.errors > 0);
  return bad.length === 0 ? '' : `; ERRORS: ${bad.map((m) => `${m.errors} (${m.firstError ?? 'socket'})`).join(', ')}`;
}
