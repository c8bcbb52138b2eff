/**
 * `npm run bench`: one run that starts private Redis, knotd and named, registers hosts
 * through the bulk path, and measures side by side per nameserver: the raw UPDATE capacity
 * (one name per message and batched), one nsupdate process per update, the HTTP ceiling,
 * the bridge's change and nochg paths, its RSS, Redis memory per host, and the same at a
 * large host count. Every measurement is bounded by a request count and a time limit.
 *
 * This file runs the sections in order; runs.ts holds the measurement procedures, verdict.ts
 * turns the measurements into ratios and targets, report-types.ts is the JSON's shape and
 * report.ts the markdown.
 */
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import type { LabKind } from '../src/lab/index.js';
import { findBinary } from '../src/lab/index.js';
import { JsonLogger } from '../src/cli/logger.js';
import { CEILING_BODY } from './ceiling-server.js';
import { redisCommandCalls, redisUsedMemory, startLab, versionOf } from './lab.js';
import { runHttpLoad, updateRequest } from './load.js';
import { runNsupdate } from './nsupdate.js';
import { FULL_PROFILE, QUICK_PROFILE } from './profile.js';
import { runRawUpdates } from './raw-dns.js';
import type { BenchReport, BridgeResult, ByConcurrency, NameserverResult, RedisRoundTrips, RegistryRound, RssResult } from './report-types.js';
import {
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
  type BridgeRun,
  type HostCursor,
} from './runs.js';
import { round, type Measurement } from './stats.js';
import { startBridgeTarget, startCeilingTarget, workersOf, type BridgeMode } from './targets.js';
import { mib, ratiosOf, targetsOf } from './verdict.js';

export interface BenchOptions {
  quick?: boolean;
  nameservers?: LabKind[];
  modes?: BridgeMode[];
  /** Progress lines (stderr). */
  progress?: (line: string) => void;
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
            // The headline layout's heaviest loads carry password checks of new accounts: the
            // RSS figure includes a worker's scrypt on top of its loaded heap.
            const underLoad = async (c: number, run: () => Promise<Measurement>): Promise<Measurement> => {
              if (!pairing || String(c) !== top) return run();
              const { result: m, coldLogins } = await withColdLogins(lab, target, kind, { logins: profile.coldLogins, spacingMs: profile.coldLoginSpacingMs }, run);
              rss.coldLogins += coldLogins;
              return m;
            };
            await changeRun(lab, { target, kind, concurrency: 16, requests: profile.warmupRequests, maxSeconds: 30, hosts: cursor });
            const perRequest: Partial<NonNullable<BridgeResult['redisCommandsPerRequest']>> = {};
            for (const c of conc) {
              const before = senderStats(target, lab.zoneOf(kind));
              const calls = String(c) === top ? await redisCommandCalls(lab.store) : undefined;
              const m = await underLoad(c, () => changeRun(lab, { target, kind, concurrency: c, requests: profile.httpRequests, maxSeconds: profile.httpSeconds, hosts: cursor }));
              if (calls) perRequest.change = perRequestDelta(calls, await redisCommandCalls(lab.store), m.ok + m.errors);
              result.change[String(c)] = m;
              const after = senderStats(target, lab.zoneOf(kind));
              if (before && after && after.messagesSent > before.messagesSent) {
                (result.hostsPerMessage ??= {})[String(c)] = round((after.hostsSent - before.hostsSent) / (after.messagesSent - before.messagesSent), 2);
              }
              progress(`${kind} bridge change (${mode}) c=${c}: ${line(m)}${result.hostsPerMessage?.[String(c)] ? `, ${result.hostsPerMessage[String(c)]} hosts/msg` : ''}`);
            }
            for (const c of conc) {
              const m = await underLoad(c, () =>
                nochgRun(lab, { target, kind, concurrency: c, requests: profile.httpRequests, maxSeconds: profile.httpSeconds, hosts: cursor }, (calls, requests) => {
                  if (String(c) === top) perRequest.nochg = perRequestDelta(calls.before, calls.after, requests);
                }),
              );
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
        await changeRun(lab, { target: targets.large, kind, concurrency: 16, requests: perZoneSmall, maxSeconds: 60, hosts: largeCursor });
        // The measured load, the same on either registry.
        const onSmall: BridgeRun = { target: targets.small, kind, concurrency: c, requests: profile.httpRequests, maxSeconds: profile.httpSeconds, hosts: smallCursor };
        const onLarge = { ...onSmall, target: targets.large, hosts: largeCursor };
        // A freshly started bridge runs its first load ~25 % slower than later ones (JIT,
        // both workers warming): one unmeasured run each.
        await changeRun(lab, onSmall);
        await changeRun(lab, onLarge);
        const rounds: RegistryRound[] = [];
        for (let i = 0; i < profile.pairedRounds; i++) {
          const largeFirst = i % 2 === 1;
          const [smallChange, largeChange] = await inOrder(
            () => changeRun(lab, onSmall),
            () => changeRun(lab, onLarge),
            largeFirst,
          );
          const [smallNochg, largeNochg] = await inOrder(
            () => nochgRun(lab, onSmall),
            () => nochgRun(lab, onLarge),
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

    const loadAverageAtEnd = os.loadavg();
    const report: BenchReport = {
      version: 1,
      profile: profile.name,
      startedAt: startedAt.toISOString(),
      durationSeconds: round((performance.now() - t0) / 1000, 1),
      command: opts.quick ? 'npm run bench -- --quick' : 'npm run bench',
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
          `password checks under load: the headline layout's change and nochg runs at c=${top} each carry ${profile.coldLogins} login(s) of accounts not seen before, the first at once, then ${profile.coldLoginSpacingMs} ms apart, each setting its own host's address (a worker runs scrypt, 32 MiB, on its loaded heap, as whenever a client's cached login has run out); the RSS figure includes them`,
        ],
      },
      httpCeiling,
      redisRoundTrips,
      nameservers,
      redisMemory: { small, large },
      bridgeRss,
      targets: [],
    };
    for (const kind of kinds) nameservers[kind]!.ratios = ratiosOf(report, kind);
    report.targets = targetsOf(report, kinds);
    return report;
  } finally {
    await lab.stop();
  }
}

function line(m: Measurement): string {
  const cpu =
    (m.cpuMsPerRequest === undefined ? '' : `, cpu ${m.cpuMsPerRequest} ms/req, redis cpu ${m.redisCpuMsPerRequest} ms/req`) +
    (m.nameserverCpuMsPerRequest === undefined ? '' : `, nameserver cpu ${m.nameserverCpuMsPerRequest} ms/req`) +
    (m.clientCpuMsPerRequest === undefined ? '' : `, load generator cpu ${m.clientCpuMsPerRequest} ms/req`);
  return `${m.rps}/s p50 ${m.p50Ms} ms p99 ${m.p99Ms} ms (${m.ok} ok, ${m.errors} errors${m.firstError ? `: ${m.firstError}` : ''})${cpu}`;
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
