/**
 * `npm run bench`: one run that starts private Redis, knotd and named (pdns_server on request), registers hosts
 * through the bulk path, and measures side by side per nameserver: the raw UPDATE capacity
 * (one name per message and batched), one nsupdate process per update, the wrk rounds (nochg
 * and change storm against a bare HTTP ceiling: the headline), the HTTP ceiling, the bridge's
 * change and nochg paths, its RSS, Redis memory per host, the same at a large host count, and
 * the drain. Every measurement is bounded by a time limit (and, with the Node generator, a
 * request count), except the drain, which ends when every host is changed.
 *
 * This file runs the sections in order (runBench reads as the list of them); runs.ts holds the
 * measurement procedures, wrk-rounds.ts, drain.ts and cpu-prof-runs.ts the newer sections,
 * verdict.ts turns the measurements into ratios and targets, report-types.ts is the JSON's
 * shape and report.ts (report-wrk.ts) the markdown.
 */
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import type { LabKind } from '../src/lab/index.js';
import { findBinary } from '../src/lab/index.js';
import { JsonLogger } from '../src/cli/logger.js';
import { redisCommandCalls, redisUsedMemory, startLab, versionOf, type BenchLab, type BenchRegistry } from './lab.js';
import { runNsupdate } from './nsupdate.js';
import { FULL_PROFILE, QUICK_PROFILE, type BenchProfile } from './profile.js';
import { runRawUpdates } from './raw-dns.js';
import type {
  BenchReport,
  GatewayBenchReport,
  BridgeResult,
  ByConcurrency,
  NameserverResult,
  RedisRoundTrips,
  RegistryRound,
  RssResult,
  BaselineBenchReport,
  AllocBenchReport,
  ScaleOutBenchReport,
  SectionFrame,
  WrkBenchReport,
} from './report-types.js';
import { measureScaleOut } from './scale-out.js';
import { measureAllocation } from './alloc.js';
import {
  ceilingRun,
  changeRun,
  importHosts,
  inOrder,
  measureRedisRoundTrips,
  nochgRun,
  pairedRounds,
  perRequestDelta,
  RssSampler,
  senderStats,
  withColdLogins,
  withCpu,
  warmUp,
  type BridgeRun,
  type HostCursor,
} from './runs.js';
import { round, type Measurement } from './stats.js';
import { startBridgeTarget, startCeilingTarget, workersOf, type BridgeMode, type Target } from './targets.js';
import { mib, ratiosOf, targetsOf, wrkTargetsOf, wrkVerdict, wrkVerdictOf } from './verdict.js';
import { profilePaths } from './cpu-prof-runs.js';
import { measureDrains } from './drain.js';
import { GATEWAY_CHANGE_FROM, GATEWAY_NOCHG_FROM, measureGateway } from './gateway-rounds.js';
import { measureWrkRounds, registerWrkHosts, type WrkContext, type WrkLoads } from './wrk-rounds.js';
import { measureBaseline } from './baseline-rounds.js';

export interface BenchOptions {
  quick?: boolean;
  nameservers?: LabKind[];
  modes?: BridgeMode[];
  /** Profile each path (nochg, storm) into this directory, after the wrk rounds. */
  cpuProf?: string;
  /** Progress lines (stderr). */
  progress?: (line: string) => void;
  /** `--section baseline`: the earlier build to measure against (a checkout built with `npx tsc -p .`). */
  baselineDir?: string;
}

/** What the run does, decided from the options before anything starts. */
interface Plan {
  quick: boolean;
  profile: BenchProfile;
  kinds: LabKind[];
  modes: BridgeMode[];
  progress: (line: string) => void;
  /** The highest concurrency: the registry-size runs, the paired rounds, command counts, cold logins. */
  top: number;
  /** Hosts per zone in the small registry, and in the large one. */
  perZoneSmall: number;
  perZoneLarge: number;
  /** The large runs change as many hosts as the small ones, spread over the whole large range. */
  largeStride: number;
  /** The layout the targets are judged on, and why. */
  headline: { mode: BridgeMode; reason: string };
  /** The wrk rounds, the drain and the profiles: the headline layout when it is `workers-N`, else workers-2. */
  wrkMode: BridgeMode;
  cpuProf: string | undefined;
}

/** A plan and the lab it runs in: what every section below takes. */
interface Bench extends Plan {
  lab: BenchLab;
}

type SmallRegistry = BenchReport['redisMemory']['small'];
type LargeRegistry = BenchReport['redisMemory']['large'];
type Cursors = Map<LabKind, HostCursor>;

export async function runBench(opts: BenchOptions = {}): Promise<BenchReport> {
  const plan = planOf(opts);
  const startedAt = new Date();
  const t0 = performance.now();
  const loadAverageAtStart = os.loadavg();
  plan.progress(
    `profile ${plan.profile.name}; nameservers ${plan.kinds.join(', ')}; bridge modes ${plan.modes.join(', ')}`,
  );
  const lab = await startLab(plan.kinds);
  try {
    const b: Bench = { ...plan, lab };
    const machine = await machineInfo(loadAverageAtStart, plan.kinds);
    const small = await registerSmall(b);
    const nameservers: Partial<Record<LabKind, NameserverResult>> = {};
    for (const kind of b.kinds) nameservers[kind] = await measureReferences(b, kind);
    b.progress(`headline mode: ${b.headline.mode} (${b.headline.reason})`);
    const redisRoundTrips = await measureRedisLatency(b);
    // The headline first, on zones no other section has grown yet.
    const wrk: WrkContext = { lab, profile: b.profile, mode: b.wrkMode, progress: b.progress };
    const cpuProfiles = await measureWrkRoundsAll(b, wrk, nameservers);
    // The RFC 2136 gateway beside HTTP, on the first nameserver: before the sections that grow the zones.
    const gateway = await measureGateway(wrk, b.kinds[0]!);
    const cursors: Cursors = new Map(b.kinds.map((k) => [k, { next: 0, from: 0, count: b.perZoneSmall }]));
    const httpCeiling: Record<string, ByConcurrency> = {};
    const bridgeRss: Record<string, RssResult> = {};
    for (const mode of b.modes) await measureMode(b, mode, { httpCeiling, bridgeRss, nameservers, cursors });
    const { registry: largeRegistry, large } = await registerLarge(b);
    await measureRegistrySize(b, largeRegistry, { small, large }, { bridgeRss, nameservers, cursors });
    // Last: it adds the most names to the zones.
    for (const [kind, drain] of await measureDrains(wrk, b.kinds)) nameservers[kind]!.drain = drain;
    const loadAverageAtEnd = os.loadavg();
    const report: BenchReport = {
      version: 1,
      profile: b.profile.name,
      startedAt: startedAt.toISOString(),
      durationSeconds: round((performance.now() - t0) / 1000, 1),
      command: b.quick ? 'npm run bench -- --quick' : 'npm run bench',
      machine: { ...machine, loadAverageAtEnd: loadAverageAtEnd.map((x) => round(x, 2)) },
      settings: settingsOf(b),
      httpCeiling,
      redisRoundTrips,
      nameservers,
      redisMemory: { small, large },
      bridgeRss,
      ...(cpuProfiles ? { cpuProfiles } : {}),
      gateway,
      targets: [],
    };
    for (const kind of b.kinds) {
      nameservers[kind]!.ratios = ratiosOf(report, kind);
      wrkVerdictOf(report, kind);
    }
    report.targets = targetsOf(report, b.kinds);
    return report;
  } finally {
    await lab.stop();
  }
}

/**
 * One `--section` run: a lab of `kinds`, the machine, and the report's frame around what `measure` returns (the
 * wrk rounds' hosts registered first: every section measures on them).
 */
async function runSection<S extends string, R extends object>(
  opts: BenchOptions,
  section: S,
  label: { what: string; kinds: LabKind[]; command: string },
  measure: (wrk: WrkContext, plan: Plan) => Promise<R>,
): Promise<SectionFrame<S> & R> {
  const plan = planOf(opts);
  const startedAt = new Date();
  const t0 = performance.now();
  const loadAverageAtStart = os.loadavg();
  plan.progress(
    `profile ${plan.profile.name}; section ${label.what}; nameserver ${label.kinds.join(', ')}; ${plan.wrkMode}`,
  );
  const lab = await startLab(label.kinds);
  try {
    const machine = await machineInfo(loadAverageAtStart, label.kinds);
    const wrk: WrkContext = { lab, profile: plan.profile, mode: plan.wrkMode, progress: plan.progress };
    await registerWrkHosts(wrk, label.kinds, 0);
    const measured = await measure(wrk, plan);
    const frame: SectionFrame<S> = {
      version: 1,
      section,
      profile: plan.profile.name,
      startedAt: startedAt.toISOString(),
      durationSeconds: round((performance.now() - t0) / 1000, 1),
      command: `npm run bench -- --section ${label.command}${plan.quick ? ' --quick' : ''}`,
      machine: { ...machine, loadAverageAtEnd: os.loadavg().map((x) => round(x, 2)) },
    };
    return { ...frame, ...measured };
  } finally {
    await lab.stop();
  }
}

/** `--section gateway`: the gateway rounds alone (the first nameserver, the wrk rounds' HTTP hosts registered). */
export function runGatewayBench(opts: BenchOptions = {}): Promise<GatewayBenchReport> {
  const kind = planOf(opts).kinds[0]!;
  return runSection(opts, 'gateway', { what: 'gateway', kinds: [kind], command: 'gateway' }, async (wrk, plan) => ({
    notes: [gatewayNoteOf(plan)],
    gateway: await measureGateway(wrk, kind),
  }));
}

/** `--section baseline`: this build's nochg path against an earlier build's, with the ceiling (baseline-rounds.ts). */
export function runBaselineBench(opts: BenchOptions & { baselineDir: string }): Promise<BaselineBenchReport> {
  const kind = planOf(opts).kinds[0]!;
  const label = {
    what: `baseline (${opts.baselineDir})`,
    kinds: [kind],
    command: `baseline --baseline ${opts.baselineDir}`,
  };
  return runSection(opts, 'baseline', label, async (wrk) => ({
    baseline: await measureBaseline(wrk, kind, opts.baselineDir),
  }));
}

/** `--section alloc`: heap bytes allocated per nochg request, the bridge beside its references (alloc.ts). */
export function runAllocBench(opts: BenchOptions = {}): Promise<AllocBenchReport> {
  const kind = planOf(opts).kinds[0]!;
  return runSection(opts, 'alloc', { what: 'alloc', kinds: [kind], command: 'alloc' }, async (wrk) => ({
    allocation: await measureAllocation(wrk, kind),
  }));
}

/** `--section scale-out`: one `serve --workers 2` against two `serve --workers 1` on one Redis (scale-out.ts). */
export function runScaleOutBench(opts: BenchOptions = {}): Promise<ScaleOutBenchReport> {
  const kind = planOf(opts).kinds[0]!;
  return runSection(opts, 'scale-out', { what: 'scale-out', kinds: [kind], command: 'scale-out' }, async (wrk) => ({
    scaleOut: await measureScaleOut(wrk, kind),
  }));
}

/**
 * `--section wrk`: the wrk rounds alone, with their references and targets, for each nameserver (a fresh bridge
 * each); with `--cpu-prof DIR` the first one's profiled runs after them.
 */
export function runWrkBench(opts: BenchOptions = {}): Promise<WrkBenchReport> {
  const kinds = planOf(opts).kinds;
  return runSection(opts, 'wrk', { what: 'wrk', kinds, command: 'wrk' }, async (wrk, plan) => {
    const nameservers: WrkBenchReport['nameservers'] = {};
    const targets: WrkBenchReport['targets'] = [];
    let first: WrkLoads | undefined;
    for (const kind of kinds) {
      const { result, loads } = await measureWrkRounds(wrk, kind);
      wrkVerdict(result, os.availableParallelism());
      nameservers[kind] = { wrk: result };
      targets.push(...wrkTargetsOf(result, kind));
      first ??= loads;
    }
    const cpuProfiles = plan.cpuProf && first ? await profilePaths(wrk, kinds[0]!, first, plan.cpuProf) : undefined;
    return { nameservers, targets, ...(cpuProfiles ? { cpuProfiles } : {}) };
  });
}

function planOf(opts: BenchOptions): Plan {
  const profile = opts.quick ? QUICK_PROFILE : FULL_PROFILE;
  const kinds = opts.nameservers ?? (['knot', 'bind'] as LabKind[]);
  const modes = opts.modes ?? (['in-process', 'workers-2'] as BridgeMode[]);
  const perZoneSmall = Math.floor(profile.smallHosts / kinds.length);
  const perZoneLarge = Math.floor(profile.largeHosts / kinds.length);
  return {
    quick: opts.quick ?? false,
    profile,
    kinds,
    modes,
    progress: opts.progress ?? (() => undefined),
    top: Math.max(...profile.concurrencies),
    perZoneSmall,
    perZoneLarge,
    largeStride: Math.floor((perZoneLarge - perZoneSmall) / perZoneSmall),
    headline: headlineOf(modes),
    wrkMode: modes.filter((m) => m !== 'in-process').sort((a, b) => workersOf(b) - workersOf(a))[0] ?? 'workers-2',
    cpuProf: opts.cpuProf,
  };
}

/**
 * The headline layout is the one operators deploy: `serve --workers N` (the most workers
 * measured). In-process shares one event loop with the load generator: a diagnostic.
 */
function headlineOf(modes: BridgeMode[]): Plan['headline'] {
  const workerModes = modes.filter((m) => m !== 'in-process').sort((a, b) => workersOf(b) - workersOf(a));
  const mode = workerModes[0] ?? modes[0]!;
  const reason =
    mode === 'in-process'
      ? 'the only layout measured'
      : `the deployable layout (\`serve --workers ${workersOf(mode)}\`); in-process shares its event loop with the load generator`;
  return { mode, reason };
}

// ---- The wrk rounds (wrk-rounds.ts) -----------------------------------------------------------

/** The wrk rounds of every nameserver; then, with --cpu-prof, the first one's profiled runs. */
async function measureWrkRoundsAll(
  b: Bench,
  wrk: WrkContext,
  nameservers: Partial<Record<LabKind, NameserverResult>>,
): Promise<BenchReport['cpuProfiles']> {
  await registerWrkHosts(wrk, b.kinds, b.perZoneSmall);
  let first: WrkLoads | undefined;
  for (const kind of b.kinds) {
    const { result, loads } = await measureWrkRounds(wrk, kind);
    nameservers[kind]!.wrk = result;
    first ??= loads;
  }
  return b.cpuProf && first ? profilePaths(wrk, b.kinds[0]!, first, b.cpuProf) : undefined;
}

// ---- Registration ---------------------------------------------------------------------------

/** The small registry (database 0): hosts through the bulk path; memory per host from the delta. */
async function registerSmall(b: Bench): Promise<SmallRegistry> {
  const base = await redisUsedMemory(b.lab.store);
  await importHosts(b.lab, b.lab, b.kinds, 0, b.perZoneSmall);
  const bytes = (await redisUsedMemory(b.lab.store)) - base;
  const hosts = b.perZoneSmall * b.kinds.length;
  const small = { hosts, bytesPerHost: round(bytes / hosts, 1) };
  b.progress(`redis: ${small.bytesPerHost} bytes per host at ${small.hosts} hosts`);
  return small;
}

/**
 * The large registry: a second registry (database 1 of the same redis-server, its own
 * keyspace) with the large host count, through the same bulk path.
 */
async function registerLarge(b: Bench): Promise<{ registry: BenchRegistry; large: LargeRegistry }> {
  const registry = await b.lab.openRegistry(1);
  const before = await redisUsedMemory(b.lab.store);
  const t = performance.now();
  await importHosts(registry, b.lab, b.kinds, 0, b.perZoneLarge);
  const importSeconds = (performance.now() - t) / 1000;
  const imported = b.perZoneLarge * b.kinds.length;
  const large = {
    hosts: imported,
    bytesPerHost: round(((await redisUsedMemory(b.lab.store)) - before) / imported, 1),
    importSeconds: round(importSeconds, 2),
    importRate: round(imported / importSeconds, 0),
  };
  b.progress(
    `redis: ${large.bytesPerHost} bytes per host at ${large.hosts} hosts (imported ${imported} in ${large.importSeconds} s)`,
  );
  return { registry, large };
}

// ---- References: the nameserver without the bridge, Redis ----------------------------------

/** One nameserver's references: raw UPDATEs (single, batched, isolated) and nsupdate. */
async function measureReferences(b: Bench, kind: LabKind): Promise<NameserverResult> {
  const zone = b.lab.zoneOf(kind);
  const rawSingle = await measureRawSeries(b, kind, 1, '1 name/msg');
  const rawBatched = await measureRawSeries(
    b,
    kind,
    b.profile.namesPerMessage,
    `${b.profile.namesPerMessage} names/msg`,
  );
  const rawIsolated = await measureRawIsolated(b, kind);
  const nsupdate = await measureNsupdate(b, kind);
  return {
    zone,
    rawSingle,
    rawBatched,
    rawIsolated,
    nsupdate,
    bridge: {},
    wrk: undefined as unknown as NameserverResult['wrk'],
    drain: undefined as unknown as NameserverResult['drain'],
    large: undefined as unknown as NameserverResult['large'],
    paired: undefined as unknown as NameserverResult['paired'],
    ratios: {},
  };
}

function zoneConfigOf(b: Bench, kind: LabKind) {
  return b.lab.config.zones.find((z) => z.name === b.lab.zoneOf(kind))!;
}

/** Raw UPDATEs of `names` names per message at each concurrency, with the CPU per name. */
async function measureRawSeries(b: Bench, kind: LabKind, names: number, label: string): Promise<ByConcurrency> {
  const zone = zoneConfigOf(b, kind);
  const series: ByConcurrency = {};
  for (const c of b.profile.concurrencies) {
    const load = () =>
      runRawUpdates({
        zone,
        concurrency: c,
        namesPerMessage: names,
        messages: b.profile.rawMessages,
        maxSeconds: b.profile.rawSeconds,
        prefix: 'raw-',
        namePool: b.profile.rawNamePool,
      });
    // CPU per name: the nameserver's, and the sender's (the bench process).
    const m = await withCpu(b.lab, undefined, load, kind);
    series[String(c)] = m;
    b.progress(`${kind} raw UPDATE ${label} c=${c}: ${line(m)} (${m.messages} messages)`);
  }
  return series;
}

/** One client, one name per message, idle time before each: the p50 reference. */
async function measureRawIsolated(b: Bench, kind: LabKind): Promise<Measurement> {
  const m = await runRawUpdates({
    zone: zoneConfigOf(b, kind),
    concurrency: 1,
    namesPerMessage: 1,
    messages: b.profile.isolatedMessages,
    maxSeconds: b.profile.rawSeconds * 2,
    prefix: 'raw-',
    namePool: b.profile.rawNamePool,
    pauseMs: b.profile.isolatedPauseMs,
  });
  b.progress(`${kind} raw UPDATE isolated (${b.profile.isolatedPauseMs} ms apart): ${line(m)}`);
  return m;
}

/** One nsupdate process per update. */
async function measureNsupdate(b: Bench, kind: LabKind): Promise<Measurement> {
  const ns = b.lab.nameservers.get(kind)!;
  const m = await runNsupdate({
    keyFile: b.lab.keyFile,
    server: { host: ns.host, port: ns.port },
    zone: b.lab.zoneOf(kind),
    count: b.profile.nsupdateCount,
    maxSeconds: b.profile.nsupdateSeconds,
    prefix: 'nsupdate-',
  });
  b.progress(`${kind} nsupdate process per update: ${line(m)}`);
  return m;
}

/** The bench's own Redis round trips (PING): back to back, and after idle time. */
async function measureRedisLatency(b: Bench): Promise<RedisRoundTrips> {
  const trips: RedisRoundTrips = {
    backToBack: await measureRedisRoundTrips(b.lab, b.profile.isolatedMessages, 0),
    isolated: await measureRedisRoundTrips(b.lab, b.profile.isolatedMessages, b.profile.isolatedPauseMs),
  };
  b.progress(
    `redis round trip (PING) p50: back to back ${trips.backToBack.p50Ms} ms, after ${b.profile.isolatedPauseMs} ms idle ${trips.isolated.p50Ms} ms`,
  );
  return trips;
}

// ---- One bridge layout: the HTTP ceiling, the bridge, the paired rounds ----------------------

/** The results the layouts fill in, each under its own mode. */
interface ModeResults {
  httpCeiling: Record<string, ByConcurrency>;
  bridgeRss: Record<string, RssResult>;
  nameservers: Partial<Record<LabKind, NameserverResult>>;
  cursors: Cursors;
}

/**
 * One layout: its HTTP ceiling, then the bridge per nameserver. The headline layout's
 * ceiling stays up for the paired rounds after the bridge's runs.
 */
async function measureMode(b: Bench, mode: BridgeMode, results: ModeResults): Promise<void> {
  const ceiling = await startCeilingTarget(mode);
  const pairing = mode === b.headline.mode;
  let ceilingUp = true;
  const stopCeiling = async () => {
    if (ceilingUp) await ceiling.stop();
    ceilingUp = false;
  };
  results.httpCeiling[mode] = {};
  try {
    try {
      await measureCeiling(b, mode, ceiling, results.httpCeiling[mode]);
    } finally {
      if (!pairing) await stopCeiling();
    }
    results.bridgeRss[mode] = await measureBridge(b, mode, pairing ? ceiling : undefined, results);
  } finally {
    await stopCeiling();
  }
}

/** The HTTP ceiling (a server that answers without doing anything) at each concurrency, into `into`. */
async function measureCeiling(b: Bench, mode: BridgeMode, ceiling: Target, into: ByConcurrency): Promise<void> {
  const hostname = `ceiling.${b.lab.zoneOf(b.kinds[0]!)}`;
  // Unmeasured (JIT, connections): warmUpSeconds of wrk, or the warm-up count in-process.
  if (ceiling.inProcess || b.profile.warmUpSeconds > 0) {
    const seconds = ceiling.inProcess ? 5 : b.profile.warmUpSeconds;
    await ceilingRun(b.lab, ceiling, { concurrency: 16, requests: b.profile.warmupRequests, seconds, hostname });
  }
  for (const c of b.profile.concurrencies) {
    const m = await ceilingRun(b.lab, ceiling, {
      concurrency: c,
      requests: b.profile.httpRequests,
      seconds: b.profile.httpSeconds,
      hostname,
    });
    into[String(c)] = m;
    b.progress(`http ceiling (${mode}) c=${c}: ${line(m)}`);
  }
}

/**
 * The bridge in one layout: change and nochg per nameserver, then (headline layout, given
 * the ceiling still up) the paired rounds. Resolves with its resident memory.
 */
async function measureBridge(
  b: Bench,
  mode: BridgeMode,
  pairedCeiling: Target | undefined,
  results: ModeResults,
): Promise<RssResult> {
  const target = await startBridgeTarget(mode, b.lab.config, b.lab.configPath, new JsonLogger('warn'));
  const rss = new RssSampler(target);
  let result: RssResult;
  try {
    for (const kind of b.kinds) {
      const bridge = await measureBridgeOn(b, {
        mode,
        target,
        rss,
        kind,
        pairing: pairedCeiling !== undefined,
        cursor: results.cursors.get(kind)!,
      });
      results.nameservers[kind]!.bridge[mode] = bridge;
    }
    if (pairedCeiling) {
      for (const kind of b.kinds) {
        const rounds = await pairedRounds(
          b.lab,
          pairedCeiling,
          target,
          kind,
          b.profile,
          b.top,
          results.cursors.get(kind)!,
          b.progress,
        );
        results.nameservers[kind]!.paired = { mode, concurrency: b.top, rounds };
      }
    }
  } finally {
    await target.stop();
    result = rss.stop(mode === 'in-process');
    b.progress(
      `bridge RSS (${mode}): max process ${mib(result.maxProcessBytes)} MiB, max total ${mib(result.maxTotalBytes)} MiB`,
    );
  }
  return result;
}

/** One bridge layout against one nameserver's zone. */
interface BridgeOn {
  mode: BridgeMode;
  target: Target;
  rss: RssSampler;
  kind: LabKind;
  /** The headline layout: its heaviest loads carry cold logins. */
  pairing: boolean;
  cursor: HostCursor;
}

/** Change and nochg at each concurrency, hosts per UPDATE message, Redis commands per request. */
async function measureBridgeOn(b: Bench, on: BridgeOn): Promise<BridgeResult> {
  const result: BridgeResult = { change: {}, nochg: {} };
  await warmUp(b.lab, on.target, on.kind, on.cursor, b.profile);
  const perRequest: Partial<NonNullable<BridgeResult['redisCommandsPerRequest']>> = {};
  for (const c of b.profile.concurrencies) await measureChangeAt(b, on, c, result, perRequest);
  for (const c of b.profile.concurrencies) await measureNochgAt(b, on, c, result, perRequest);
  if (perRequest.change && perRequest.nochg) {
    result.redisCommandsPerRequest = perRequest as NonNullable<BridgeResult['redisCommandsPerRequest']>;
    b.progress(
      `${on.kind} redis commands per request (${on.mode}): change ${JSON.stringify(perRequest.change)}, nochg ${JSON.stringify(perRequest.nochg)}`,
    );
  }
  return result;
}

type PerRequest = Partial<NonNullable<BridgeResult['redisCommandsPerRequest']>>;

/** The change path at concurrency `c`; at the highest, Redis commands per request too. */
async function measureChangeAt(
  b: Bench,
  on: BridgeOn,
  c: number,
  result: BridgeResult,
  perRequest: PerRequest,
): Promise<void> {
  const zone = b.lab.zoneOf(on.kind);
  const before = senderStats(on.target, zone);
  const calls = c === b.top ? await redisCommandCalls(b.lab.store) : undefined;
  const m = await underLoad(b, on, c, () =>
    changeRun(b.lab, {
      target: on.target,
      kind: on.kind,
      concurrency: c,
      requests: b.profile.httpRequests,
      maxSeconds: b.profile.httpSeconds,
      hosts: on.cursor,
    }),
  );
  if (calls) perRequest.change = perRequestDelta(calls, await redisCommandCalls(b.lab.store), m.ok + m.errors);
  result.change[String(c)] = m;
  const after = senderStats(on.target, zone);
  if (before && after && after.messagesSent > before.messagesSent) {
    (result.hostsPerMessage ??= {})[String(c)] = round(
      (after.hostsSent - before.hostsSent) / (after.messagesSent - before.messagesSent),
      2,
    );
  }
  const perMessage = result.hostsPerMessage?.[String(c)];
  b.progress(
    `${on.kind} bridge change (${on.mode}) c=${c}: ${line(m)}${perMessage ? `, ${perMessage} hosts/msg` : ''}`,
  );
}

/** The nochg path at concurrency `c`; at the highest, Redis commands per request too. */
async function measureNochgAt(
  b: Bench,
  on: BridgeOn,
  c: number,
  result: BridgeResult,
  perRequest: PerRequest,
): Promise<void> {
  const run: BridgeRun = {
    target: on.target,
    kind: on.kind,
    concurrency: c,
    requests: b.profile.httpRequests,
    maxSeconds: b.profile.httpSeconds,
    hosts: on.cursor,
  };
  const m = await underLoad(b, on, c, () =>
    nochgRun(b.lab, run, (calls, requests) => {
      if (c === b.top) perRequest.nochg = perRequestDelta(calls.before, calls.after, requests);
    }),
  );
  result.nochg[String(c)] = m;
  b.progress(`${on.kind} bridge nochg (${on.mode}) c=${c}: ${line(m)}`);
}

/**
 * The headline layout's heaviest loads carry password checks of new accounts: the RSS figure
 * includes a worker's scrypt on top of its loaded heap. Other loads run as they are.
 */
async function underLoad(b: Bench, on: BridgeOn, c: number, run: () => Promise<Measurement>): Promise<Measurement> {
  if (!on.pairing || c !== b.top) return run();
  const { result, coldLogins } = await withColdLogins(
    b.lab,
    on.target,
    on.kind,
    { logins: b.profile.coldLogins, spacingMs: b.profile.coldLoginSpacingMs },
    run,
  );
  on.rss.coldLogins += coldLogins;
  return result;
}

// ---- Registry size: the small registry's bridge beside the large one's ----------------------

/**
 * A bridge per registry (headline layout), measured in alternation per nameserver. Their
 * resident memory raises the headline layout's maxima.
 */
async function measureRegistrySize(
  b: Bench,
  largeRegistry: BenchRegistry,
  sizes: { small: SmallRegistry; large: LargeRegistry },
  results: Omit<ModeResults, 'httpCeiling'>,
): Promise<void> {
  const mode = b.headline.mode;
  const targets = {
    small: await startBridgeTarget(mode, b.lab.config, b.lab.configPath, new JsonLogger('warn')),
    large: await startBridgeTarget(mode, largeRegistry.config, largeRegistry.configPath, new JsonLogger('warn')),
  };
  const samplers = [new RssSampler(targets.small), new RssSampler(targets.large)];
  try {
    for (const kind of b.kinds) {
      const rounds = await registryRounds(b, kind, targets, sizes, results.cursors.get(kind)!);
      results.nameservers[kind]!.large = {
        hosts: sizes.large.hosts,
        smallHosts: sizes.small.hosts,
        concurrency: b.top,
        rounds,
      };
    }
  } finally {
    await Promise.all([targets.small.stop(), targets.large.stop()]);
    const prev = results.bridgeRss[mode]!;
    for (const sampler of samplers) {
      const r = sampler.stop(mode === 'in-process');
      prev.maxProcessBytes = Math.max(prev.maxProcessBytes, r.maxProcessBytes);
      prev.maxTotalBytes = Math.max(prev.maxTotalBytes, r.maxTotalBytes);
    }
  }
}

/** One nameserver: change and nochg on either registry, in alternating order, `pairedRounds` times. */
async function registryRounds(
  b: Bench,
  kind: LabKind,
  targets: { small: Target; large: Target },
  sizes: { small: SmallRegistry; large: LargeRegistry },
  smallCursor: HostCursor,
): Promise<RegistryRound[]> {
  // As many hosts as the small registry's pool, spread over the whole large range. One
  // pass first (its names enter the zone), so both bridges change the address of
  // existing names and only the number of registered hosts differs.
  const largeCursor: HostCursor = { next: 0, from: b.perZoneSmall, count: b.perZoneSmall, stride: b.largeStride };
  await changeRun(b.lab, {
    target: targets.large,
    kind,
    concurrency: 16,
    requests: b.perZoneSmall,
    maxSeconds: 60,
    hosts: largeCursor,
    fixed: true,
  });
  // The measured load, the same on either registry.
  const onSmall: BridgeRun = {
    target: targets.small,
    kind,
    concurrency: b.top,
    requests: b.profile.httpRequests,
    maxSeconds: b.profile.httpSeconds,
    hosts: smallCursor,
  };
  const onLarge = { ...onSmall, target: targets.large, hosts: largeCursor };
  // A freshly started bridge runs its first load ~25 % slower than later ones (JIT,
  // both workers warming): one unmeasured run each (wrk: unless warmUpSeconds is 0).
  if (targets.small.inProcess || b.profile.warmUpSeconds > 0) {
    await changeRun(b.lab, onSmall);
    await changeRun(b.lab, onLarge);
  }
  const rounds: RegistryRound[] = [];
  for (let i = 0; i < b.profile.pairedRounds; i++) {
    const largeFirst = i % 2 === 1;
    const [smallChange, largeChange] = await inOrder(
      () => changeRun(b.lab, onSmall),
      () => changeRun(b.lab, onLarge),
      largeFirst,
    );
    const [smallNochg, largeNochg] = await inOrder(
      () => nochgRun(b.lab, onSmall),
      () => nochgRun(b.lab, onLarge),
      largeFirst,
    );
    rounds.push({ smallChange, largeChange, smallNochg, largeNochg });
    b.progress(
      `${kind} registry round ${i + 1}${largeFirst ? ' (large first)' : ''} (${b.headline.mode}) c=${b.top}, ${sizes.small.hosts} / ${sizes.large.hosts} hosts: ` +
        `change ${smallChange.rps} / ${largeChange.rps}/s → ${round(largeChange.rps / smallChange.rps, 2)}; ` +
        `nochg ${smallNochg.rps} / ${largeNochg.rps}/s → ${round(largeNochg.rps / smallNochg.rps, 2)}`,
    );
  }
  return rounds;
}

// ---- The report ------------------------------------------------------------------------------

function settingsOf(b: Bench): BenchReport['settings'] {
  const p = b.profile;
  return {
    concurrencies: p.concurrencies,
    namesPerMessage: p.namesPerMessage,
    isolatedPauseMs: p.isolatedPauseMs,
    httpRequestsMax: p.httpRequests,
    httpSecondsMax: p.httpSeconds,
    rawMessagesMax: p.rawMessages,
    rawSecondsMax: p.rawSeconds,
    pairedRounds: p.pairedRounds,
    pairedSecondsMax: p.pairedSeconds,
    wrkRounds: p.wrkRounds,
    gatewayRounds: p.gatewayRounds,
    modes: b.modes,
    headlineMode: b.headline.mode,
    headlineReason: b.headline.reason,
    notes: notesOf(b),
  };
}

/** How to read the figures: what each load does and what the measured parties are. */
/** How the gateway section measures (its own function: `--section gateway` reports it alone). */
function gatewayNoteOf(b: Plan): string {
  const p = b.profile;
  return `RFC 2136 gateway (${b.wrkMode}, ${b.kinds[0]}): one bridge with the gateway on, ${p.gatewayRounds} round(s) of ${p.gatewaySeconds} s per measurement, HTTP (wrk) and gateway loads in alternation (rounds 2, 4, …: the gateway first)${p.warmUpSeconds > 0 ? `, after ${p.warmUpSeconds} unmeasured second(s) of each load` : ''}. Gateway load generator: bench/gateway-load.ts (Node, UDP, a child process: its CPU is its own), each message signed with its host's own hmac-sha256 key (src/core/tsig.ts signMessage), delete the A RRset + add one A; dnsperf -u cannot, since it signs every message with one key. nochg: ${p.gatewayNochgHosts} hosts (h${GATEWAY_NOCHG_FROM}…) with ${p.gatewayNochgConcurrency} messages in flight, each host's address set once before; change: ${p.gatewayChangeHosts} hosts (h${GATEWAY_CHANGE_FROM}…), ${p.gatewayChangeConcurrency} in flight, a new address in every message. Beside them the same HTTP nochg and storm loads as the wrk rounds, on the same bridge; the ratios are medians of gateway updates/s / HTTP requests/s`;
}

function notesOf(b: Bench): string[] {
  const p = b.profile;
  return [
    `wrk rounds (${b.wrkMode}): per nameserver a fresh bridge and a bare node:http cluster of as many workers (SCHED_NONE, as serve), ${p.wrkRounds} round(s), each measurement ${p.wrkSeconds} s of wrk (one thread), the order flipped each round (rounds 2, 4, …: the bridge first)${p.warmUpSeconds > 0 ? `, after ${p.warmUpSeconds} unmeasured second(s) of each` : ''}; the verdict is the median over the rounds of bridge rps / ceiling rps. nochg: c=${p.nochgConcurrency}, requests cycling over ${p.nochgHosts} hosts (h${p.stormHosts}…), each set once before, so every reply is nochg. Storm: c=${p.stormConcurrency}, every request a new address (never one the host had) for the next of ${p.stormHosts.toLocaleString('en')} registered hosts (h0…; each run starts again at h0, so later runs change names earlier ones created). The ceiling gets the same request targets without Authorization and answers a fixed nochg`,
    "load generator: wrk for every time-bound load against servers in child processes; its CPU per request is its own (bash `times`). The Node generator (load.ts) stays where wrk cannot do the job: the drain (a fixed set of requests, each sent once: wrk runs for a time), setting the nochg hosts before a nochg load and the large registry's first pass over its pool (fixed sets too), the cold logins (single requests spaced in time beside the wrk load), and the in-process layout (a diagnostic whose server is the bench process, its load generator included by definition)",
    `wrk runs whole seconds (its -d takes no fraction): a bound below 1 s (the quick profile's) runs 1 s; wrk's latency runs from a request's first byte on its new connection, the Node generator's from the connect`,
    gatewayNoteOf(b),
    `drain: ${p.drainHosts.toLocaleString('en')} registered hosts (h2000000…) each get one new address, one request each, from ${p.drainConcurrency.toLocaleString('en')} concurrent clients (the Node generator), on a fresh bridge${p.warmUpSeconds > 0 ? ` after ${p.warmUpSeconds} unmeasured second(s) of storm changes` : ''}; seconds until the last reply (every one good when errors = 0)`,
    "published as Redis says: after the storm rounds, 50 storm hosts that had a good reply; after the drain, 50 drain hosts: the address Redis records must be the A record the primary serves (dig), rechecked for up to 10 s while changes left in flight by wrk's stop settle",
    'frequency.minInterval is 1 µs for the bench (the frequency rule would block hosts updated this often); the admit script does the same work',
    'raw UPDATEs carry exactly the records the bridge sends for an address change (CNAME prerequisite, typed deletes, the new A)',
    `the isolated raw UPDATE row: one client, ${p.isolatedPauseMs} ms idle before each message (about the gap the bridge leaves the primary at c=1); the p50 target uses the back-to-back row, the JSON also has the difference to the isolated one (p50C1MinusIsolatedRawMs): BIND answers a woken-up request slower than a busy stream, Knot answers on a fixed cycle, so idle time before a request shortens its wait`,
    `change path: each request sets a new address on a host no other request in flight touches; the requests cycle through ${b.perZoneSmall} hosts per zone: with the small registry all of them, with the large one hosts spread over its whole range (every ${b.largeStride}th), each updated once before the measurement so that the primary changes existing names in both`,
    `registry size: the large registry is database 1 of the same redis-server (its own keyspace); a bridge per registry, measured in alternation, ${p.pairedRounds} round(s) of ${wrkSecondsOf(p.httpSeconds)} s of wrk each`,
    "nochg path: c hosts and addresses (set once before the run), the last hosts of the change runs' pool (with either registry): the Node generator's client k repeats host k, wrk's requests cycle over them",
    'the bridge sends at most 1 UPDATE message at a time to BIND (zones[].maxInFlight, as README recommends) and 4 to Knot (dns.maxInFlight default); the raw sender keeps c messages in flight',
    'every HTTP request is a new TCP connection with Connection: close; load generator and servers share the machine',
    'in-process: the bridge runs in the bench process, beside the load generator (one event loop); workers-N: `serve --workers N` child processes',
    `password checks under load: the headline layout's change and nochg runs at c=${b.top} each carry ${p.coldLogins} login(s) of accounts not seen before, the first at once, then ${p.coldLoginSpacingMs} ms apart, each setting its own host's address (a worker runs scrypt, 32 MiB, on its loaded heap, as whenever a client's cached login has run out); the RSS figure includes them`,
  ];
}

/** What wrk runs for a time bound (whole seconds, at least 1). */
const wrkSecondsOf = (seconds: number) => Math.max(1, Math.ceil(seconds));

function line(m: Measurement): string {
  const cpu =
    (m.cpuMsPerRequest === undefined
      ? ''
      : `, cpu ${m.cpuMsPerRequest} ms/req, redis cpu ${m.redisCpuMsPerRequest} ms/req`) +
    (m.nameserverCpuMsPerRequest === undefined ? '' : `, nameserver cpu ${m.nameserverCpuMsPerRequest} ms/req`) +
    (m.clientCpuMsPerRequest === undefined ? '' : `, load generator cpu ${m.clientCpuMsPerRequest} ms/req`);
  return `${m.rps}/s p50 ${m.p50Ms} ms p99 ${m.p99Ms} ms (${m.ok} ok, ${m.errors} errors${m.firstError ? `: ${m.firstError}` : ''})${cpu}`;
}

async function machineInfo(
  loadAverageAtStart: number[],
  kinds: readonly LabKind[],
): Promise<Omit<BenchReport['machine'], 'loadAverageAtEnd'>> {
  const cpuinfo = await readFile('/proc/cpuinfo', 'utf8').catch(() => '');
  const cpu = /^model name\s*:\s*(.+)$/m.exec(cpuinfo)?.[1]?.trim() ?? os.cpus()[0]?.model ?? 'unknown';
  const version = (binary: string, args: string[]) => {
    const path = findBinary(binary);
    return path ? versionOf(path, args) : Promise.resolve('not installed');
  };
  const nproc = os.availableParallelism();
  return {
    nproc,
    cpu,
    node: process.version,
    knot: await version('knotd', ['--version']),
    bind: await version('named', ['-v']),
    // pdns_server prints a date before its name (and exits 99 after --version).
    ...(kinds.includes('pdns')
      ? { pdns: (await version('pdns_server', ['--version'])).replace(/^.*?(?=PowerDNS)/, '') }
      : {}),
    redis: await version('redis-server', ['--version']),
    loadAverageAtStart: loadAverageAtStart.map((x) => round(x, 2)),
    // A machine at rest sits well below 0.5 runnable processes.
    otherLoad: loadAverageAtStart[0]! > 0.5,
  };
}
