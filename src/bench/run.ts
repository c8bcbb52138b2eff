/**
 * `ddns-bridge bench`: one run that starts private Redis, knotd and named, registers hosts
 * through the bulk path, and measures side by side per nameserver: the raw UPDATE capacity
 * (one name per message and batched), one nsupdate process per update, the HTTP ceiling,
 * the bridge's change and nochg paths, its RSS, Redis memory per host, and the same at a
 * large host count. Every measurement is bounded by a request count and a time limit.
 */
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import type { LabKind } from '../lab/index.js';
import { findBinary } from '../lab/index.js';
import { JsonLogger } from '../cli/logger.js';
import { importLines, outcomeHandler, type ImportSummary, type Rejection } from '../cli/commands/import.js';
import { BulkHostImporter } from '../store/index.js';
import { CEILING_BODY } from './ceiling-server.js';
import { BENCH_ACCOUNT, redisCommandCalls, type BenchRegistry, redisCpuSeconds, redisUsedMemory, startLab, versionOf, type BenchLab } from './lab.js';
import { runHttpLoad, updateRequest } from './load.js';
import { runNsupdate } from './nsupdate.js';
import { FULL_PROFILE, QUICK_PROFILE, type BenchProfile } from './profile.js';
import { nextAddress, runRawUpdates } from './raw-dns.js';
import { round, summarize, type Measurement } from './stats.js';
import { procCpu, startBridgeTarget, startCeilingTarget, workersOf, type BridgeMode, type Target } from './targets.js';

export interface BenchOptions {
  quick?: boolean;
  nameservers?: LabKind[];
  modes?: BridgeMode[];
  /** Progress lines (stderr). */
  progress?: (line: string) => void;
}

/** Measurements keyed by concurrency. */
export type ByConcurrency = Record<string, Measurement>;

export interface BridgeResult {
  change: ByConcurrency;
  nochg: ByConcurrency;
  /** In-process only: hosts per UPDATE message the bridge sent during each change run. */
  hostsPerMessage?: Record<string, number>;
  /**
   * Redis commands per request at the highest concurrency (INFO commandstats delta / requests;
   * includes the commands the Lua scripts run, and the bench's own two INFO calls).
   */
  redisCommandsPerRequest?: { change: Record<string, number>; nochg: Record<string, number> };
}

export interface RssResult {
  /** Largest resident set of any one bridge process during the runs. */
  maxProcessBytes: number;
  /** Largest sum over the bridge's processes (primary + workers) at one moment. */
  maxTotalBytes: number;
  processes: number;
  /** In-process: the figure includes the bench's own load generator. */
  includesLoadGenerator: boolean;
}

export interface Ratios {
  /** Best change-path rps / best batched raw UPDATE rate (names/s). Target ≥ 0.8. */
  changeVsRawBatched: number;
  /** Best nochg rps / best bare node:http rps, same process layout. Target ≥ 0.8. */
  nochgVsHttpCeiling: number;
  /** Change-path p50 at concurrency 1 minus raw one-name UPDATE p50 at concurrency 1 (back to back), ms. Target ≤ 1. */
  p50C1MinusRawMs: number;
  /** Headline layout: the median over the paired rounds of nochg rps / the HTTP ceiling's rps measured beside it. */
  nochgVsHttpCeilingPaired: number;
  /** Headline layout: the median over the paired rounds of change p50 − raw UPDATE p50 at c=1, measured beside each other, ms. */
  p50C1MinusRawMsPaired: number;
  /**
   * Headline layout, from CPU alone: what nochg/ceiling could reach if the bridge cost the
   * machine no more than the ceiling plus redis-server's own work for the request: the
   * ceiling's CPU per request (load generator + server) / that plus redis-server's CPU per
   * nochg request (paired-round medians; both runs keep the two cores busy).
   */
  nochgVsHttpCeilingCpuBound: number;
  /**
   * Headline layout, from CPU alone: the change rate the machine's cores could carry if a
   * change cost no more than a ceiling request (load generator + server), redis-server's
   * work for a change and the nameserver's work for one name in a batched message, over the
   * batched raw capacity.
   */
  changeVsRawBatchedCpuBound: number;
  /**
   * What a change at c=1 adds to its UPDATE at least: the HTTP ceiling's p50 at c=1 plus two
   * Redis round trips after idle time (admit before the UPDATE, commit after it), ms. A
   * primary that answers at once (BIND) shows it whole; Knot's answer cycle hides it.
   */
  p50C1OverheadFloorMs: number;
  /**
   * The same against isolated raw UPDATEs (`isolatedPauseMs` idle before each, about the gap
   * the bridge leaves at c=1). BIND answers a woken-up request slower than a busy stream;
   * Knot answers on a fixed cycle (~11 ms here), so idle time before a request shortens it.
   */
  p50C1MinusIsolatedRawMs: number;
  /**
   * Change-path rps with the large registry / with the small one, highest concurrency: the
   * median over the registry rounds (each pair measured back to back). Target ≥ 0.9.
   */
  changeLargeVsSmall: number;
  /** The same for the nochg path. */
  nochgLargeVsSmall: number;
  /**
   * Best bare node:http rps / best batched raw UPDATE rate: the change path can never beat
   * the HTTP ceiling, so when this is below 0.8 the first target is out of reach by construction.
   */
  httpCeilingVsRawBatched: number;
}

/**
 * One paired round: a reference and the bridge measured right after each other (the order
 * alternates from round to round), so that a shared machine's drift hits both alike.
 */
export interface PairedRound {
  /** The bare node:http ceiling and the bridge's nochg path, the highest concurrency. */
  ceiling: Measurement;
  nochg: Measurement;
  /** Raw one-name UPDATEs back to back and the bridge's change path, concurrency 1. */
  rawC1: Measurement;
  changeC1: Measurement;
}

/** One registry round: the same load against the small and the large registry, back to back (odd rounds: large first). */
export interface RegistryRound {
  smallChange: Measurement;
  largeChange: Measurement;
  smallNochg: Measurement;
  largeNochg: Measurement;
}

/** Round trips of the bench's own Redis client (PING), one at a time: back to back, and after idle time. */
export interface RedisRoundTrips {
  backToBack: Measurement;
  /** `isolatedPauseMs` idle before each: about what a bridge at c=1 sees. */
  isolated: Measurement;
}

export interface NameserverResult {
  zone: string;
  rawSingle: ByConcurrency;
  rawBatched: ByConcurrency;
  /** One client, one name per message, `isolatedPauseMs` idle after each: the p50 reference. */
  rawIsolated: Measurement;
  nsupdate: Measurement;
  bridge: Record<string, BridgeResult>;
  /**
   * Registry size (headline layout, highest concurrency): two bridges, one on the small
   * registry and one on the large (another database of the same redis-server), measured in
   * alternation so that drift over the bench's lifetime (the primary's journal grows with
   * every run, a shared machine's load moves) hits both alike.
   */
  large: {
    /** Hosts in the large registry, and in the small one. */
    hosts: number;
    smallHosts: number;
    concurrency: number;
    rounds: RegistryRound[];
  };
  /** Headline layout: paired rounds (the targets for nochg/ceiling and p50 at c=1 use their medians). */
  paired: { mode: BridgeMode; concurrency: number; rounds: PairedRound[] };
  /** Ratios per bridge mode (the large-scale and paired ones only for the headline mode). */
  ratios: Record<string, Partial<Ratios>>;
}

export interface BenchReport {
  version: 1;
  profile: BenchProfile['name'];
  startedAt: string;
  durationSeconds: number;
  command: string;
  machine: {
    nproc: number;
    cpu: string;
    node: string;
    knot: string;
    bind: string;
    redis: string;
    loadAverageAtStart: number[];
    loadAverageAtEnd: number[];
    /** True when the 1-minute load average before the bench showed other work on the machine. */
    otherLoad: boolean;
  };
  settings: {
    concurrencies: number[];
    namesPerMessage: number;
    /** Idle time between the isolated raw UPDATEs (the p50 reference). */
    isolatedPauseMs: number;
    httpRequestsMax: number;
    httpSecondsMax: number;
    rawMessagesMax: number;
    rawSecondsMax: number;
    pairedRounds: number;
    pairedSecondsMax: number;
    modes: BridgeMode[];
    headlineMode: BridgeMode;
    headlineReason: string;
    notes: string[];
  };
  httpCeiling: Record<string, ByConcurrency>;
  redisRoundTrips: RedisRoundTrips;
  nameservers: Partial<Record<LabKind, NameserverResult>>;
  redisMemory: {
    small: { hosts: number; bytesPerHost: number };
    large: { hosts: number; bytesPerHost: number; importSeconds: number; importRate: number };
  };
  bridgeRss: Record<string, RssResult>;
  targets: { name: string; nameserver?: LabKind; value: number; target: string; met: boolean }[];
}

export async function runBench(opts: BenchOptions = {}): Promise<BenchReport> {
  const profile = opts.quick ? QUICK_PROFILE : FULL_PROFILE;
  const kinds = opts.nameservers ?? (['knot', 'bind'] as LabKind[]);
  const modes = opts.modes ?? (['in-process', 'workers-2'] as BridgeMode[]);
  const progress = opts.progress ?? (() => undefined);
  const startedAt = new Date();
  const t0 = performance.now();
  const loadAverageAtStart = os.loadavg();
  const conc = profile.concurrencies;
  const top = String(Math.max(...conc));

  progress(`profile ${profile.name}; nameservers ${kinds.join(', ')}; bridge modes ${modes.join(', ')}`);
  const lab = await startLab(kinds);
  try {
    const machine = await machineInfo(loadAverageAtStart);
    const perZoneSmall = Math.floor(profile.smallHosts / kinds.length);
    const perZoneLarge = Math.floor(profile.largeHosts / kinds.length);
    // The large runs change as many hosts as the small ones, spread over the whole large range.
    const largeStride = Math.floor((perZoneLarge - perZoneSmall) / perZoneSmall);

    // Registration, small: memory per host from the delta.
    const base = await redisUsedMemory(lab.store);
    await importHosts(lab, lab, kinds, 0, perZoneSmall);
    const smallBytes = (await redisUsedMemory(lab.store)) - base;
    const small = { hosts: perZoneSmall * kinds.length, bytesPerHost: round(smallBytes / (perZoneSmall * kinds.length), 1) };
    progress(`redis: ${small.bytesPerHost} bytes per host at ${small.hosts} hosts`);

    const nameservers: Partial<Record<LabKind, NameserverResult>> = {};
    for (const kind of kinds) {
      const ns = lab.nameservers.get(kind)!;
      const zone = lab.config.zones.find((z) => z.name === lab.zoneOf(kind))!;
      const rawSingle: ByConcurrency = {};
      const rawBatched: ByConcurrency = {};
      for (const [names, into, label] of [
        [1, rawSingle, '1 name/msg'],
        [profile.namesPerMessage, rawBatched, `${profile.namesPerMessage} names/msg`],
      ] as const) {
        for (const c of conc) {
          const load = () =>
            runRawUpdates({
              zone,
              concurrency: c,
              namesPerMessage: names,
              messages: profile.rawMessages,
              maxSeconds: profile.rawSeconds,
              prefix: 'raw-',
              namePool: profile.rawNamePool,
            });
          // CPU per name: the nameserver's, and the sender's (the bench process).
          const m = await withCpu(lab, undefined, load, kind);
          into[String(c)] = m;
          progress(`${kind} raw UPDATE ${label} c=${c}: ${line(m)} (${m.messages} messages)`);
        }
      }
      const rawIsolated = await runRawUpdates({
        zone,
        concurrency: 1,
        namesPerMessage: 1,
        messages: profile.isolatedMessages,
        maxSeconds: profile.rawSeconds * 2,
        prefix: 'raw-',
        namePool: profile.rawNamePool,
        pauseMs: profile.isolatedPauseMs,
      });
      progress(`${kind} raw UPDATE isolated (${profile.isolatedPauseMs} ms apart): ${line(rawIsolated)}`);
      const nsupdate = await runNsupdate({
        keyFile: lab.keyFile,
        server: { host: ns.host, port: ns.port },
        zone: zone.name,
        count: profile.nsupdateCount,
        maxSeconds: profile.nsupdateSeconds,
        prefix: 'nsupdate-',
      });
      progress(`${kind} nsupdate process per update: ${line(nsupdate)}`);
      nameservers[kind] = {
        zone: zone.name,
        rawSingle,
        rawBatched,
        rawIsolated,
        nsupdate,
        bridge: {},
        large: undefined as unknown as NameserverResult['large'],
        paired: undefined as unknown as NameserverResult['paired'],
        ratios: {},
      };
    }

    // The headline layout is the one operators deploy: `serve --workers N` (the most workers
    // measured). In-process shares one event loop with the load generator: a diagnostic.
    const workerModes = modes.filter((m) => m !== 'in-process').sort((a, b) => workersOf(b) - workersOf(a));
    const headlineMode = workerModes[0] ?? modes[0]!;
    const headlineReason =
      headlineMode === 'in-process'
        ? 'the only layout measured'
        : `the deployable layout (\`serve --workers ${workersOf(headlineMode)}\`); in-process shares its event loop with the load generator`;
    progress(`headline mode: ${headlineMode} (${headlineReason})`);

    const redisRoundTrips: RedisRoundTrips = {
      backToBack: await measureRedisRoundTrips(lab, profile.isolatedMessages, 0),
      isolated: await measureRedisRoundTrips(lab, profile.isolatedMessages, profile.isolatedPauseMs),
    };
    progress(`redis round trip (PING) p50: back to back ${redisRoundTrips.backToBack.p50Ms} ms, after ${profile.isolatedPauseMs} ms idle ${redisRoundTrips.isolated.p50Ms} ms`);

    const httpCeiling: Record<string, ByConcurrency> = {};
    const bridgeRss: Record<string, RssResult> = {};
    const cursors = new Map<LabKind, HostCursor>(kinds.map((k) => [k, { next: 0, from: 0, count: perZoneSmall }]));
    for (const mode of modes) {
      const ceiling = await startCeilingTarget(mode);
      // The headline layout's ceiling stays up for the paired rounds after the bridge's runs.
      const pairing = mode === headlineMode;
      let ceilingUp = true;
      const stopCeiling = async () => {
        if (ceilingUp) await ceiling.stop();
        ceilingUp = false;
      };
      httpCeiling[mode] = {};
      try {
        try {
          const request = updateRequest(`ceiling.${lab.zoneOf(kinds[0]!)}`, '192.0.2.1', lab.authorization);
          await runHttpLoad({ host: '127.0.0.1', port: ceiling.port, concurrency: 16, requests: profile.warmupRequests, maxSeconds: 5, request: () => request, expect: () => true });
          for (const c of conc) {
            const m = await withCpu(lab, ceiling, () =>
              runHttpLoad({
                host: '127.0.0.1',
                port: ceiling.port,
                concurrency: c,
                requests: profile.httpRequests,
                maxSeconds: profile.httpSeconds,
                request: () => request,
                expect: (_i, _s, body) => body === CEILING_BODY,
              }),
            );
            httpCeiling[mode][String(c)] = m;
            progress(`http ceiling (${mode}) c=${c}: ${line(m)}`);
          }
        } finally {
          if (!pairing) await stopCeiling();
        }

        const target = await startBridgeTarget(mode, lab.config, lab.configPath, new JsonLogger('warn'));
        const rss = new RssSampler(target);
        try {
          for (const kind of kinds) {
            const result: BridgeResult = { change: {}, nochg: {} };
            const cursor = cursors.get(kind)!;
            await changeRun(lab, target, kind, 16, profile.warmupRequests, 30, cursor);
            const perRequest: Partial<NonNullable<BridgeResult['redisCommandsPerRequest']>> = {};
            for (const c of conc) {
              const before = senderStats(target, lab.zoneOf(kind));
              const calls = String(c) === top ? await redisCommandCalls(lab.store) : undefined;
              const m = await changeRun(lab, target, kind, c, profile.httpRequests, profile.httpSeconds, cursor);
              if (calls) perRequest.change = perRequestDelta(calls, await redisCommandCalls(lab.store), m.ok + m.errors);
              result.change[String(c)] = m;
              const after = senderStats(target, lab.zoneOf(kind));
              if (before && after && after.messagesSent > before.messagesSent) {
                (result.hostsPerMessage ??= {})[String(c)] = round((after.hostsSent - before.hostsSent) / (after.messagesSent - before.messagesSent), 2);
              }
              progress(`${kind} bridge change (${mode}) c=${c}: ${line(m)}${result.hostsPerMessage?.[String(c)] ? `, ${result.hostsPerMessage[String(c)]} hosts/msg` : ''}`);
            }
            for (const c of conc) {
              const m = await nochgRun(lab, target, kind, c, profile.httpRequests, profile.httpSeconds, cursor, (calls, requests) => {
                if (String(c) === top) perRequest.nochg = perRequestDelta(calls.before, calls.after, requests);
              });
              result.nochg[String(c)] = m;
              progress(`${kind} bridge nochg (${mode}) c=${c}: ${line(m)}`);
            }
            if (perRequest.change && perRequest.nochg) {
              result.redisCommandsPerRequest = perRequest as NonNullable<BridgeResult['redisCommandsPerRequest']>;
              progress(`${kind} redis commands per request (${mode}): change ${JSON.stringify(perRequest.change)}, nochg ${JSON.stringify(perRequest.nochg)}`);
            }
            nameservers[kind]!.bridge[mode] = result;
          }
          if (pairing) {
            for (const kind of kinds) {
              const rounds = await pairedRounds(lab, ceiling, target, kind, profile, Number(top), cursors.get(kind)!, progress);
              nameservers[kind]!.paired = { mode, concurrency: Number(top), rounds };
            }
          }
        } finally {
          await target.stop();
          bridgeRss[mode] = rss.stop(mode === 'in-process');
          progress(`bridge RSS (${mode}): max process ${mib(bridgeRss[mode].maxProcessBytes)} MiB, max total ${mib(bridgeRss[mode].maxTotalBytes)} MiB`);
        }
      } finally {
        await stopCeiling();
      }
    }


    // Registration, large: a second registry (database 1 of the same redis-server, its own
    // keyspace) with the large host count, through the same bulk path.
    const largeRegistry = await lab.openRegistry(1);
    const beforeLarge = await redisUsedMemory(lab.store);
    const tImport = performance.now();
    await importHosts(largeRegistry, lab, kinds, 0, perZoneLarge);
    const importSeconds = (performance.now() - tImport) / 1000;
    const imported = perZoneLarge * kinds.length;
    const large = {
      hosts: imported,
      bytesPerHost: round(((await redisUsedMemory(lab.store)) - beforeLarge) / imported, 1),
      importSeconds: round(importSeconds, 2),
      importRate: round(imported / importSeconds, 0),
    };
    progress(`redis: ${large.bytesPerHost} bytes per host at ${large.hosts} hosts (imported ${imported} in ${large.importSeconds} s)`);

    // Registry size: a bridge per registry, measured in alternation.
    const targets = {
      small: await startBridgeTarget(headlineMode, lab.config, lab.configPath, new JsonLogger('warn')),
      large: await startBridgeTarget(headlineMode, largeRegistry.config, largeRegistry.configPath, new JsonLogger('warn')),
    };
    const samplers = [new RssSampler(targets.small), new RssSampler(targets.large)];
    try {
      for (const kind of kinds) {
        const c = Number(top);
        const smallCursor = cursors.get(kind)!;
        // As many hosts as the small registry's pool, spread over the whole large range. One
        // pass first (its names enter the zone), so both bridges change the address of
        // existing names and only the number of registered hosts differs.
        const largeCursor: HostCursor = { next: 0, from: perZoneSmall, count: perZoneSmall, stride: largeStride };
        await changeRun(lab, targets.large, kind, 16, perZoneSmall, 60, largeCursor);
        // A freshly started bridge runs its first load ~25 % slower than later ones (JIT,
        // both workers warming): one unmeasured run each.
        await changeRun(lab, targets.small, kind, c, profile.httpRequests, profile.httpSeconds, smallCursor);
        await changeRun(lab, targets.large, kind, c, profile.httpRequests, profile.httpSeconds, largeCursor);
        const rounds: RegistryRound[] = [];
        for (let i = 0; i < profile.pairedRounds; i++) {
          const largeFirst = i % 2 === 1;
          const [smallChange, largeChange] = await inOrder(
            () => changeRun(lab, targets.small, kind, c, profile.httpRequests, profile.httpSeconds, smallCursor),
            () => changeRun(lab, targets.large, kind, c, profile.httpRequests, profile.httpSeconds, largeCursor),
            largeFirst,
          );
          const [smallNochg, largeNochg] = await inOrder(
            () => nochgRun(lab, targets.small, kind, c, profile.httpRequests, profile.httpSeconds, smallCursor),
            () => nochgRun(lab, targets.large, kind, c, profile.httpRequests, profile.httpSeconds, largeCursor),
            largeFirst,
          );
          rounds.push({ smallChange, largeChange, smallNochg, largeNochg });
          progress(
            `${kind} registry round ${i + 1}${largeFirst ? ' (large first)' : ''} (${headlineMode}) c=${top}, ${small.hosts} / ${large.hosts} hosts: ` +
              `change ${smallChange.rps} / ${largeChange.rps}/s → ${round(largeChange.rps / smallChange.rps, 2)}; ` +
              `nochg ${smallNochg.rps} / ${largeNochg.rps}/s → ${round(largeNochg.rps / smallNochg.rps, 2)}`,
          );
        }
        nameservers[kind]!.large = { hosts: large.hosts, smallHosts: small.hosts, concurrency: c, rounds };
      }
    } finally {
      await Promise.all([targets.small.stop(), targets.large.stop()]);
      const prev = bridgeRss[headlineMode]!;
      for (const sampler of samplers) {
        const r = sampler.stop(headlineMode === 'in-process');
        prev.maxProcessBytes = Math.max(prev.maxProcessBytes, r.maxProcessBytes);
        prev.maxTotalBytes = Math.max(prev.maxTotalBytes, r.maxTotalBytes);
      }
    }

    for (const kind of kinds) {
      const ns = nameservers[kind]!;
      for (const mode of modes) {
        const b = ns.bridge[mode]!;
        const r: Partial<Ratios> = {
          changeVsRawBatched: round(best(b.change) / best(ns.rawBatched), 3),
          nochgVsHttpCeiling: round(best(b.nochg) / best(httpCeiling[mode]!), 3),
          p50C1MinusRawMs: round(b.change['1']!.p50Ms - ns.rawSingle['1']!.p50Ms, 3),
          p50C1MinusIsolatedRawMs: round(b.change['1']!.p50Ms - ns.rawIsolated.p50Ms, 3),
          httpCeilingVsRawBatched: round(best(httpCeiling[mode]!) / best(ns.rawBatched), 3),
        };
        if (mode === headlineMode) {
          const rounds = ns.paired.rounds;
          r.nochgVsHttpCeilingPaired = round(median(rounds.map((x) => x.nochg.rps / x.ceiling.rps)), 3);
          r.p50C1MinusRawMsPaired = round(median(rounds.map((x) => x.changeC1.p50Ms - x.rawC1.p50Ms)), 3);
          r.nochgVsHttpCeilingCpuBound = round(
            median(
              rounds.map((x) => {
                const ceilingCpu = (x.ceiling.clientCpuMsPerRequest ?? NaN) + (x.ceiling.cpuMsPerRequest ?? NaN);
                return ceilingCpu / (ceilingCpu + (x.nochg.redisCpuMsPerRequest ?? NaN));
              }),
            ),
            3,
          );
          const ceilingCpu = median(rounds.map((x) => (x.ceiling.clientCpuMsPerRequest ?? NaN) + (x.ceiling.cpuMsPerRequest ?? NaN)));
          const batched = bestOf(ns.rawBatched);
          const perChangeMs = ceilingCpu + (b.change[top]!.redisCpuMsPerRequest ?? NaN) + (batched.nameserverCpuMsPerRequest ?? NaN);
          r.changeVsRawBatchedCpuBound = round((machine.nproc * 1000) / perChangeMs / batched.rps, 3);
          r.p50C1OverheadFloorMs = round(httpCeiling[mode]!['1']!.p50Ms + 2 * redisRoundTrips.isolated.p50Ms, 3);
          r.changeLargeVsSmall = round(median(ns.large.rounds.map((x) => x.largeChange.rps / x.smallChange.rps)), 3);
          r.nochgLargeVsSmall = round(median(ns.large.rounds.map((x) => x.largeNochg.rps / x.smallNochg.rps)), 3);
        }
        ns.ratios[mode] = r;
      }
    }

    const loadAverageAtEnd = os.loadavg();
    const report: BenchReport = {
      version: 1,
      profile: profile.name,
      startedAt: startedAt.toISOString(),
      durationSeconds: round((performance.now() - t0) / 1000, 1),
      command: opts.quick ? 'ddns-bridge bench --quick' : 'npm run bench',
      machine: { ...machine, loadAverageAtEnd: loadAverageAtEnd.map((x) => round(x, 2)) },
      settings: {
        concurrencies: conc,
        namesPerMessage: profile.namesPerMessage,
        isolatedPauseMs: profile.isolatedPauseMs,
        httpRequestsMax: profile.httpRequests,
        httpSecondsMax: profile.httpSeconds,
        rawMessagesMax: profile.rawMessages,
        rawSecondsMax: profile.rawSeconds,
        pairedRounds: profile.pairedRounds,
        pairedSecondsMax: profile.pairedSeconds,
        modes,
        headlineMode,
        headlineReason,
        notes: [
          'frequency.minInterval is 1 µs for the bench (the frequency rule would block hosts updated this often); the admit script does the same work',
          'raw UPDATEs carry exactly the records the bridge sends for an address change (CNAME prerequisite, typed deletes, the new A)',
          `the isolated raw UPDATE row: one client, ${profile.isolatedPauseMs} ms idle before each message (about the gap the bridge leaves the primary at c=1); the p50 target uses the back-to-back row, the JSON also has the difference to the isolated one (p50C1MinusIsolatedRawMs): BIND answers a woken-up request slower than a busy stream, Knot answers on a fixed cycle, so idle time before a request shortens its wait`,
          `change path: each request sets a new address on a host no other request in flight touches; the requests cycle through ${perZoneSmall} hosts per zone: with the small registry all of them, with the large one hosts spread over its whole range (every ${largeStride}th), each updated once before the measurement so that the primary changes existing names in both`,
          `registry size: the large registry is database 1 of the same redis-server (its own keyspace); a bridge per registry, measured in alternation, ${profile.pairedRounds} round(s) of ${profile.httpSeconds} s`,
          'nochg path: each client repeats one host and address (set once before the run), one of the last hosts of the change runs\' pool (with either registry)',
          'the bridge sends at most 1 UPDATE message at a time to BIND (zones[].maxInFlight, as README recommends) and 4 to Knot (dns.maxInFlight default); the raw sender keeps c messages in flight',
          'every HTTP request is a new TCP connection with Connection: close; load generator and servers share the machine',
          'in-process: the bridge runs in the bench process, beside the load generator (one event loop); workers-N: `serve --workers N` child processes',
        ],
      },
      httpCeiling,
      redisRoundTrips,
      nameservers,
      redisMemory: { small, large },
      bridgeRss,
      targets: [],
    };
    report.targets = targetsOf(report, kinds);
    return report;
  } finally {
    await lab.stop();
  }
}

// ---- the runs -------------------------------------------------------------------------

/** Which hosts a change run uses: `count` of them, indexes from, from + stride, from + 2·stride, … */
interface HostCursor {
  next: number;
  from: number;
  count: number;
  /** Distance between the pool's host indexes (default 1). */
  stride?: number;
}

const hostName = (lab: BenchLab, kind: LabKind, index: number) => `h${index}.${lab.zoneOf(kind)}`;

/** Every request changes the address of a host no other request in flight touches. */
async function changeRun(
  lab: BenchLab,
  target: Target,
  kind: LabKind,
  concurrency: number,
  requests: number,
  maxSeconds: number,
  cursor: HostCursor,
): Promise<Measurement> {
  const addresses: string[] = [];
  const first = cursor.next;
  const load = () =>
    runHttpLoad({
      host: '127.0.0.1',
      port: target.port,
      concurrency,
      requests,
      maxSeconds,
      request: (i) => {
        addresses[i] = nextAddress();
        const host = cursor.from + ((first + i) % cursor.count) * (cursor.stride ?? 1);
        return updateRequest(hostName(lab, kind, host), addresses[i]!, lab.authorization);
      },
      expect: (i, _s, body) => body === `good ${addresses[i]}\n`,
    });
  const m = await withCpu(lab, target, load, kind);
  cursor.next = first + m.ok + m.errors;
  return m;
}

/** Each client repeats one host and address: set once (good), then nochg every time. */
async function nochgRun(
  lab: BenchLab,
  target: Target,
  kind: LabKind,
  concurrency: number,
  requests: number,
  maxSeconds: number,
  pool: HostCursor,
  onCommandCalls?: (calls: { before: Map<string, number>; after: Map<string, number> }, requests: number) => void,
): Promise<Measurement> {
  const requestOf: string[] = [];
  const addressOf: string[] = [];
  for (let s = 0; s < concurrency; s++) {
    addressOf[s] = nextAddress();
    // The last hosts of the change runs' pool: with either registry, hosts the change runs touch too.
    const host = pool.from + (pool.count - 1 - s) * (pool.stride ?? 1);
    requestOf[s] = updateRequest(hostName(lab, kind, host), addressOf[s]!, lab.authorization);
  }
  const primed = await runHttpLoad({
    host: '127.0.0.1',
    port: target.port,
    concurrency,
    requests: concurrency,
    maxSeconds: 30,
    request: (_i, s) => requestOf[s]!,
    expect: (_i, s, body) => body === `good ${addressOf[s]}\n`,
  });
  if (primed.errors > 0) throw new Error(`bench: setting up the nochg hosts failed: ${primed.firstError}`);
  const before = onCommandCalls ? await redisCommandCalls(lab.store) : undefined;
  const m = await withCpu(lab, target, () =>
    runHttpLoad({
      host: '127.0.0.1',
      port: target.port,
      concurrency,
      requests,
      maxSeconds,
      request: (_i, s) => requestOf[s]!,
      expect: (_i, s, body) => body === `nochg ${addressOf[s]}\n`,
    }),
  );
  if (onCommandCalls && before) onCommandCalls({ before, after: await redisCommandCalls(lab.store) }, m.ok + m.errors);
  return m;
}

/** Run one measurement and add the CPU time per request of the target and of redis-server. */
/**
 * Run a measurement and add CPU time per operation: of the target's processes and of
 * redis-server (when there is a target: the raw UPDATE sender is the bench itself), of the
 * load generator (target in child processes), of the nameserver (when given).
 */
async function withCpu<M extends Measurement>(lab: BenchLab, target: Target | undefined, run: () => Promise<M>, nameserver?: LabKind): Promise<M> {
  const nsPid = nameserver === undefined ? undefined : lab.nameservers.get(nameserver)?.pid;
  const sample = () =>
    Promise.all([target?.cpuSeconds() ?? 0, target ? redisCpuSeconds(lab.store) : 0, nsPid === undefined ? 0 : procCpu([nsPid])]);
  const [cpu0, redis0, ns0] = await sample();
  const client0 = process.cpuUsage();
  const m = await run();
  const client = process.cpuUsage(client0);
  const [cpu1, redis1, ns1] = await sample();
  const n = m.ok + m.errors;
  if (n > 0) {
    if (target) {
      m.cpuMsPerRequest = round(((cpu1 - cpu0) * 1000) / n, 3);
      m.redisCpuMsPerRequest = round(((redis1 - redis0) * 1000) / n, 3);
    }
    if (!target?.inProcess) m.clientCpuMsPerRequest = round((client.user + client.system) / 1000 / n, 3);
    if (nsPid !== undefined) m.nameserverCpuMsPerRequest = round(((ns1 - ns0) * 1000) / n, 3);
  }
  return m;
}

function perRequestDelta(before: Map<string, number>, after: Map<string, number>, requests: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [cmd, n] of after) {
    const d = n - (before.get(cmd) ?? 0);
    if (d > 0 && requests > 0 && cmd !== 'info') out[cmd] = round(d / requests, 2);
  }
  return out;
}

/** Register hosts h{from}…h{to-1} in every zone through the bulk import path. */
async function importHosts(registry: BenchRegistry, lab: BenchLab, kinds: readonly LabKind[], from: number, to: number): Promise<void> {
  if (to <= from) return;
  const rejections: Rejection[] = [];
  const summary: ImportSummary = { imported: 0, rejected: 0 };
  const onReject = (r: Rejection) => rejections.length < 5 && rejections.push(r);
  const importer = new BulkHostImporter(registry.store.redis, registry.store.keys, outcomeHandler(summary, onReject));
  function* lines(): Generator<string> {
    for (const kind of kinds) for (let i = from; i < to; i++) yield `${hostName(lab, kind, i)} ${BENCH_ACCOUNT}`;
  }
  await importLines(lines(), { importer, zones: registry.config.zones.map((z) => z.name) }, onReject, summary);
  if (summary.rejected > 0) throw new Error(`bench: import rejected ${summary.rejected} lines, e.g. ${JSON.stringify(rejections)}`);
}

function senderStats(target: Target, zone: string) {
  const stats = target.bridge?.publisher.senderFor(zone)?.stats;
  return stats ? { ...stats } : undefined;
}

/** Samples the target's resident memory every 100 ms; keeps the maxima. */
class RssSampler {
  private maxProcess = 0;
  private maxTotal = 0;
  private readonly pids = new Set<number>();
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly target: Target) {
    this.timer = setInterval(() => void this.sample(), 100);
    void this.sample();
  }

  private async sample(): Promise<void> {
    const rss = await this.target.rss();
    let total = 0;
    for (const [pid, bytes] of rss) {
      this.pids.add(pid);
      total += bytes;
      this.maxProcess = Math.max(this.maxProcess, bytes);
    }
    this.maxTotal = Math.max(this.maxTotal, total);
  }

  stop(inProcess: boolean): RssResult {
    clearInterval(this.timer);
    return { maxProcessBytes: this.maxProcess, maxTotalBytes: this.maxTotal, processes: this.pids.size, includesLoadGenerator: inProcess };
  }
}

// ---- summaries ------------------------------------------------------------------------

/**
 * Paired rounds for one nameserver: HTTP ceiling and nochg at the highest concurrency, raw
 * UPDATE and change at c=1, each pair back to back; odd rounds measure the bridge first.
 */
async function pairedRounds(
  lab: BenchLab,
  ceiling: Target,
  target: Target,
  kind: LabKind,
  profile: BenchProfile,
  concurrency: number,
  cursor: HostCursor,
  progress: (line: string) => void,
): Promise<PairedRound[]> {
  const zone = lab.config.zones.find((z) => z.name === lab.zoneOf(kind))!;
  const ceilingRequest = updateRequest(`ceiling.${lab.zoneOf(kind)}`, '192.0.2.1', lab.authorization);
  const seconds = profile.pairedSeconds;
  const rounds: PairedRound[] = [];
  for (let i = 0; i < profile.pairedRounds; i++) {
    const measureCeiling = () =>
      withCpu(lab, ceiling, () =>
        runHttpLoad({
          host: '127.0.0.1',
          port: ceiling.port,
          concurrency,
          requests: profile.httpRequests,
          maxSeconds: seconds,
          request: () => ceilingRequest,
          expect: (_i, _s, body) => body === CEILING_BODY,
        }),
      );
    const measureNochg = () => nochgRun(lab, target, kind, concurrency, profile.httpRequests, seconds, cursor);
    const measureRaw = () =>
      runRawUpdates({ zone, concurrency: 1, namesPerMessage: 1, messages: profile.rawMessages, maxSeconds: seconds, prefix: 'raw-', namePool: profile.rawNamePool });
    const measureChange = () => changeRun(lab, target, kind, 1, profile.httpRequests, seconds, cursor);
    const bridgeFirst = i % 2 === 1;
    const [ceilingM, nochg] = await inOrder(measureCeiling, measureNochg, bridgeFirst);
    const [rawC1, changeC1] = await inOrder(measureRaw, measureChange, bridgeFirst);
    rounds.push({ ceiling: ceilingM, nochg, rawC1, changeC1 });
    progress(
      `${kind} paired round ${i + 1}${bridgeFirst ? ' (bridge first)' : ''}: ceiling ${ceilingM.rps}/s, nochg ${nochg.rps}/s (c=${concurrency}) → ${round(nochg.rps / ceilingM.rps, 2)}; ` +
        `p50 c=1 raw ${rawC1.p50Ms} ms, change ${changeC1.p50Ms} ms → ${round(changeC1.p50Ms - rawC1.p50Ms, 2)} ms`,
    );
  }
  return rounds;
}

async function inOrder<A, B>(a: () => Promise<A>, b: () => Promise<B>, bFirst: boolean): Promise<[A, B]> {
  if (!bFirst) {
    const x = await a();
    return [x, await b()];
  }
  const y = await b();
  return [await a(), y];
}

async function measureRedisRoundTrips(lab: BenchLab, count: number, pauseMs: number): Promise<Measurement> {
  const latencies: number[] = [];
  const started = performance.now();
  for (let i = 0; i < count; i++) {
    if (pauseMs > 0) await new Promise((resolve) => setTimeout(resolve, pauseMs));
    const t = performance.now();
    await lab.store.redis.ping();
    latencies.push(performance.now() - t);
  }
  return summarize(latencies, count, 0, (performance.now() - started) / 1000);
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((x, y) => x - y);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** The measurement with the highest rate. */
function bestOf(by: ByConcurrency): Measurement {
  return Object.values(by).reduce((a, b) => (b.rps > a.rps ? b : a));
}

function best(by: ByConcurrency): number {
  return Math.max(0, ...Object.values(by).map((m) => m.rps));
}

function line(m: Measurement): string {
  const cpu =
    (m.cpuMsPerRequest === undefined ? '' : `, cpu ${m.cpuMsPerRequest} ms/req, redis cpu ${m.redisCpuMsPerRequest} ms/req`) +
    (m.nameserverCpuMsPerRequest === undefined ? '' : `, nameserver cpu ${m.nameserverCpuMsPerRequest} ms/req`) +
    (m.clientCpuMsPerRequest === undefined ? '' : `, load generator cpu ${m.clientCpuMsPerRequest} ms/req`);
  return `${m.rps}/s p50 ${m.p50Ms} ms p99 ${m.p99Ms} ms (${m.ok} ok, ${m.errors} errors${m.firstError ? `: ${m.firstError}` : ''})${cpu}`;
}

const mib = (bytes: number) => round(bytes / (1024 * 1024), 1);

function targetsOf(report: BenchReport, kinds: readonly LabKind[]): BenchReport['targets'] {
  const mode = report.settings.headlineMode;
  const out: BenchReport['targets'] = [];
  for (const kind of kinds) {
    const r = report.nameservers[kind]!.ratios[mode]!;
    out.push({ name: 'change path / batched raw capacity', nameserver: kind, value: r.changeVsRawBatched!, target: '≥ 0.8', met: r.changeVsRawBatched! >= 0.8 });
    // These two compare against a reference measured minutes apart in the single pass: the
    // paired rounds' medians (each bridge run beside its reference) decide.
    const rounds = report.nameservers[kind]!.paired.rounds.length;
    const paired = `median of ${rounds} paired round${rounds === 1 ? '' : 's'}`;
    out.push({ name: `nochg path / HTTP ceiling, ${paired}`, nameserver: kind, value: r.nochgVsHttpCeilingPaired!, target: '≥ 0.8', met: r.nochgVsHttpCeilingPaired! >= 0.8 });
    out.push({ name: `p50 at c=1 minus raw UPDATE p50 (ms), ${paired}`, nameserver: kind, value: r.p50C1MinusRawMsPaired!, target: '≤ 1', met: r.p50C1MinusRawMsPaired! <= 1 });
    out.push({ name: `change rps at ${report.redisMemory.large.hosts} / ${report.redisMemory.small.hosts} hosts`, nameserver: kind, value: r.changeLargeVsSmall!, target: '≥ 0.9', met: r.changeLargeVsSmall! >= 0.9 });
    out.push({ name: `nochg rps at ${report.redisMemory.large.hosts} / ${report.redisMemory.small.hosts} hosts`, nameserver: kind, value: r.nochgLargeVsSmall!, target: '≥ 0.9', met: r.nochgLargeVsSmall! >= 0.9 });
  }
  const rss = report.bridgeRss[mode]!;
  out.push({ name: `bridge RSS, largest process (${mode}), MiB (as systemd and top show it)`, value: mib(rss.maxProcessBytes), target: '≤ 150', met: mib(rss.maxProcessBytes) <= 150 });
  const perHost = report.redisMemory.large.bytesPerHost;
  out.push({ name: `Redis bytes per host at ${report.redisMemory.large.hosts} hosts`, value: perHost, target: '≤ 300', met: perHost <= 300 });
  return out;
}

async function machineInfo(loadAverageAtStart: number[]): Promise<Omit<BenchReport['machine'], 'loadAverageAtEnd'>> {
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
    redis: await version('redis-server', ['--version']),
    loadAverageAtStart: loadAverageAtStart.map((x) => round(x, 2)),
    // A machine at rest sits well below 0.5 runnable processes.
    otherLoad: loadAverageAtStart[0]! > 0.5,
  };
}
