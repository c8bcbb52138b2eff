/** The bench report (its JSON): what was measured, the ratios derived from it, the targets. */
import type { BaselineResult } from './baseline-rounds.js';
import type { ScaleOutResult } from './scale-out.js';
import type { AllocResult } from './alloc.js';
import type { LabKind } from '../src/lab/index.js';
import type { BenchProfile } from './profile.js';
import type { Measurement } from './stats.js';
import type { BridgeMode } from './targets.js';
import type { WrkMeasurement } from './wrk.js';

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
  /** Password checks (scrypt) of accounts not seen before, made during the heaviest loads. */
  coldLogins: number;
}

export interface Ratios {
  /** Best change-path rps / best batched raw UPDATE rate (names/s). No longer a target (the storm ratio is). */
  changeVsRawBatched: number;
  /** Best nochg rps / best bare node:http rps, same process layout. No longer a target (the wrk rounds decide). */
  nochgVsHttpCeiling: number;
  /** Change-path p50 at concurrency 1 minus raw one-name UPDATE p50 at concurrency 1 (back to back), ms. Target ≤ 1. */
  p50C1MinusRawMs: number;
  /** Headline layout: the median over the paired rounds of nochg rps / the HTTP ceiling's rps measured beside it. */
  nochgVsHttpCeilingPaired: number;
  /**
   * Headline layout: the median over the paired rounds of change p50 − raw UPDATE p50 at c=1, measured beside each
   * other, ms.
   */
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

/**
 * One registry round: the same load against the small and the large registry, back to back (odd rounds: large first).
 */
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

/**
 * One wrk round (wrk-rounds.ts): the bare ceiling and the bridge under the same load, back to
 * back (odd rounds: the bridge first), nochg at one concurrency, the change storm at another.
 */
export interface WrkRound {
  /** The storm pair's order (the bridge first in rounds 2, 4, …). */
  bridgeFirst: boolean;
  /** The nochg measurements' order this round (wrk-rounds.ts NOCHG_TARGETS, rotated). */
  nochgOrder: readonly string[];
  ceilingNochg: WrkMeasurement;
  /** "bare + Redis": the ceiling with one two-command script per request (ceiling-server.ts). */
  ceilingRedisNochg: WrkMeasurement;
  /** The bridge's front: the nochg requests to a path it does not serve (404, no use case). */
  frontNochg: WrkMeasurement;
  nochg: WrkMeasurement;
  ceilingStorm: WrkMeasurement;
  storm: WrkMeasurement;
}

/** Hosts whose address Redis records, checked against the A record the primary serves. */
export interface SampleCheck {
  checked: number;
  matched: number;
  /** The first host that still disagreed after the settling time. */
  firstMismatch?: string;
}

/**
 * CPU per request of each party (ms, medians over the rounds) and the ratio it allows: with
 * every core busy, requests/s = cores × 1000 / total ms per request.
 */
export interface CpuAccount {
  ceiling: { server: number; wrk: number; total: number };
  /** `nameserver` for the storm only: a nochg never reaches it. */
  bridge: { server: number; redis: number; nameserver?: number; wrk: number; total: number };
  /** Requests/s the machine's cores could carry at these costs. */
  ceilingCapacity: number;
  bridgeCapacity: number;
  /** ceiling total / bridge total: the bridge/ceiling ratio CPU alone allows. */
  ratio: number;
}

/** The wrk rounds of one nameserver: a fresh bridge and ceiling cluster (`serve --workers N` layout). */
export interface WrkRoundsResult {
  mode: BridgeMode;
  /** Each measurement's length. */
  seconds: number;
  nochg: { concurrency: number; hosts: number };
  storm: { concurrency: number; hosts: number };
  rounds: WrkRound[];
  /** Storm hosts after the rounds. */
  sample: SampleCheck;
  /** The bridge's resident memory during the rounds. */
  rss: RssResult;
  /** Medians over the rounds of bridge rps / ceiling rps (verdict.ts). */
  nochgVsCeiling?: number;
  stormVsCeiling?: number;
  /** What bounds those ratios (verdict.ts). */
  cpu?: { nochg: CpuAccount; storm: CpuAccount };
  /** Medians over the rounds: nochg / bare + Redis, bare + Redis / ceiling, front / ceiling (verdict.ts). */
  nochgVsCeilingRedis?: number;
  ceilingRedisVsCeiling?: number;
  frontVsCeiling?: number;
  /** Where a nochg's CPU goes, from the four nochg measurements (verdict.ts nochgSplitOf). */
  nochgSplit?: NochgSplit;
}

/**
 * A nochg request's CPU split, ms per request, medians over the rounds: the serving processes' CPU of each reference
 * and of the bridge, and redis-server's; the differences name the parts.
 */
export interface NochgSplit {
  server: { ceiling: number; ceilingRedis: number; front: number; bridge: number };
  redis: { ceilingRedis: number; bridge: number };
  /** front − ceiling: the bridge's HTTP front beyond a bare server (routing, limits, its reply writer, telemetry). */
  front: number;
  /**
   * bridge − front: the nochg use case in JavaScript, its Redis client included, and the request's own parsing (the
   * front answers its 404 before it reads parameters, credentials or the client address).
   */
  useCase: number;
  /** bare + Redis − ceiling: what one script call costs a bare server's process (ioredis, the socket). */
  redisClient: number;
  /** redis-server per nochg, less its cost for bare + Redis's two-command script. */
  scriptBeyondTwoCalls: number;
}

/**
 * A gateway load's figures: `ok` = NOERROR answers, `errors` = any other RCODE and the messages never answered;
 * `seconds` is the time bound and `rps` the NOERROR answers within it over it (as wrk counts: messages still in flight
 * at the end, and the timeouts of dropped ones, do not stretch the run).
 */
export interface GatewayMeasurement extends Measurement {
  /** Answers by RCODE name. */
  rcodes: Record<string, number>;
  /** Messages without an answer within the generator's timeout. */
  timeouts: number;
  /** Hosts of the load's pool that had a message answered NOERROR. */
  hostsAnswered: number;
  /**
   * UDP datagrams the kernel dropped meanwhile because a receive buffer was full (RcvbufErrors, machine-wide): what
   * explains timeouts when the gateway's socket cannot hold the messages in flight.
   */
  udpReceiveBufferErrors: number;
  /** Of those, the ones at the gateway's own socket (/proc/net/udp `drops`). */
  gatewaySocketDrops: number;
}

/** One round: HTTP and gateway nochg, then the HTTP storm and gateway changes, the order flipped each round. */
export interface GatewayRound {
  gatewayFirst: boolean;
  httpNochg: WrkMeasurement;
  nochg: GatewayMeasurement;
  httpStorm: WrkMeasurement;
  change: GatewayMeasurement;
}

/** CPU per request of each party (ms, medians over the rounds); `client`: wrk or the gateway's generator. */
export interface PartyCpu {
  server: number;
  redis: number;
  nameserver?: number;
  client: number;
  total: number;
}

/**
 * The RFC 2136 gateway beside HTTP (gateway-rounds.ts): one `serve --workers N` bridge with the gateway on, loaded
 * in turn over HTTP (wrk) and over UDP (gateway-load.ts), for one nameserver.
 */
export interface GatewayResult {
  mode: BridgeMode;
  nameserver: LabKind;
  seconds: number;
  /** Gateway keys made (one per host, `token add H --tsig`'s use case) and how long that took. */
  keys: number;
  keySeconds: number;
  nochg: { concurrency: number; hosts: number };
  change: { concurrency: number; hosts: number };
  httpNochg: { concurrency: number; hosts: number };
  httpStorm: { concurrency: number; hosts: number };
  rounds: GatewayRound[];
  /** The zone's SOA serial on the primary before and after the gateway nochg loads: equal when none sent an UPDATE. */
  nochgSerial: { before: number; after: number };
  /** Gateway change hosts after the rounds: Redis's address = the primary's A record. */
  sample: SampleCheck;
  rss: RssResult;
  /** Medians over the rounds of gateway updates/s / HTTP requests/s. */
  nochgVsHttp: number;
  changeVsStorm: number;
  cpu: {
    nochg: { gateway: PartyCpu; http: PartyCpu };
    change: { gateway: PartyCpu; http: PartyCpu };
  };
}

/**
 * The drain: `hosts` registered hosts, each changed once (one request each, `concurrency`
 * clients, the Node generator: wrk cannot send a fixed set of requests), until the last `good`.
 */
export interface DrainResult {
  mode: BridgeMode;
  hosts: number;
  concurrency: number;
  /** `seconds`: until the last reply; `rps`: good replies per second over it. */
  measurement: Measurement;
  sample: SampleCheck;
  rss: RssResult;
}

/** `--cpu-prof`: one fresh bridge per path, profiled; the top self-time entries of its workers. */
export interface CpuProfiles {
  nameserver: LabKind;
  mode: BridgeMode;
  seconds: number;
  paths: {
    path: 'nochg' | 'storm';
    concurrency: number;
    dir: string;
    /** Profile files written, and those of the workers (the primary's left out). */
    files: number;
    workerFiles: number;
    /** The load while profiled (slower than unprofiled). */
    measurement: WrkMeasurement;
    top: { frame: string; ms: number; share: number }[];
    /** What went wrong, when no worker profile appeared. */
    problem?: string;
  }[];
}

export interface NameserverResult {
  zone: string;
  /** The wrk rounds: the nochg and storm ratio targets. */
  wrk: WrkRoundsResult;
  /** The drain figure. */
  drain: DrainResult;
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
    /** pdns_server's version, when PowerDNS was measured. */
    pdns?: string;
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
    /** The wrk rounds (the nochg and storm ratio targets). */
    wrkRounds: number;
    gatewayRounds: number;
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
  /** With `--cpu-prof DIR`. */
  cpuProfiles?: CpuProfiles;
  /** The RFC 2136 gateway beside HTTP (first nameserver). */
  gateway?: GatewayResult;
  targets: { name: string; nameserver?: LabKind; value: number; target: string; met: boolean }[];
}

/** What every `--section` report opens with (run.ts runSection). */
export interface SectionFrame<S extends string> {
  version: 1;
  section: S;
  profile: BenchProfile['name'];
  startedAt: string;
  durationSeconds: number;
  command: string;
  machine: BenchReport['machine'];
}

/** `--section baseline` (baseline-rounds.ts). */
export interface BaselineBenchReport extends SectionFrame<'baseline'> {
  baseline: BaselineResult;
}

/** `npm run bench -- --section gateway`: the gateway rounds alone. */
export interface GatewayBenchReport extends SectionFrame<'gateway'> {
  notes: string[];
  gateway: GatewayResult;
}

/** `--section wrk`: the wrk rounds alone (the headline, with its references), per nameserver; `--cpu-prof` too. */
export interface WrkBenchReport extends SectionFrame<'wrk'> {
  nameservers: Partial<Record<LabKind, { wrk: WrkRoundsResult }>>;
  cpuProfiles?: CpuProfiles;
  targets: BenchReport['targets'];
}

/** `--section alloc` (alloc.ts). */
export interface AllocBenchReport extends SectionFrame<'alloc'> {
  allocation: AllocResult;
}

/** `--section scale-out` (scale-out.ts). */
export interface ScaleOutBenchReport extends SectionFrame<'scale-out'> {
  scaleOut: ScaleOutResult;
}

/** What the wrk part of the markdown reads (report-wrk.ts): a whole run's report or `--section wrk`'s. */
export interface WrkView {
  nameservers: Partial<Record<LabKind, { wrk: WrkRoundsResult; drain?: DrainResult }>>;
  machine: { nproc: number };
  cpuProfiles?: CpuProfiles;
}
