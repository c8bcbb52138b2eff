/** How much the bench does: the full run, and `--quick` (CI smoke: the same sections, small counts). */

export interface BenchProfile {
  name: 'full' | 'quick';
  /** Concurrencies for every measured path. */
  concurrencies: number[];
  /** Each HTTP measurement: at most this many requests and this many seconds. */
  httpRequests: number;
  httpSeconds: number;
  /** Each raw UPDATE measurement: at most this many messages and this many seconds. */
  rawMessages: number;
  rawSeconds: number;
  /** Names per message in the batched raw measurement (the bridge's own cap per message). */
  namesPerMessage: number;
  /** Distinct owner names the raw sender cycles through (more than it ever has in flight). */
  rawNamePool: number;
  /** One nsupdate process per update: this many, within this many seconds. */
  nsupdateCount: number;
  nsupdateSeconds: number;
  /** Registered hosts (all zones together) for the first runs, then for the scale runs. */
  smallHosts: number;
  largeHosts: number;
  /**
   * The isolated raw UPDATE (the p50 reference): one client, this much idle time between
   * messages — about what the bridge leaves the primary between its UPDATEs at c=1.
   */
  isolatedPauseMs: number;
  isolatedMessages: number;
  /** Unrecorded requests per nameserver when a bridge starts (JIT, connections): the Node generator's… */
  warmupRequests: number;
  /**
   * …and wrk's, in seconds (0: none — the quick profile, whose smoke test asserts no speed,
   * saves wrk's whole-second minimum on each).
   */
  warmUpSeconds: number;
  /**
   * Paired rounds (headline layout): each round measures a reference and the bridge right
   * after each other — HTTP ceiling then nochg at the top concurrency, raw UPDATE then change
   * at c=1 — so that drift of a shared machine hits both sides of a ratio alike.
   */
  pairedRounds: number;
  /** Each measurement of a paired round: at most this long (the request caps above apply). */
  pairedSeconds: number;
  /**
   * Password checks under the heaviest load (headline layout, top concurrency, change and
   * nochg): this many logins of accounts not seen before, this far apart (see withColdLogins).
   */
  coldLogins: number;
  coldLoginSpacingMs: number;
  /**
   * The wrk rounds (wrk-rounds.ts, the ratio targets): this many rounds, each measurement this
   * long (whole seconds: wrk's -d takes no fraction).
   */
  wrkRounds: number;
  wrkSeconds: number;
  /** nochg: the requests cycle over this many hosts, each set once before, at this concurrency. */
  nochgHosts: number;
  nochgConcurrency: number;
  /** Change storm: every request a new address for the next of this many hosts, at this concurrency. */
  stormHosts: number;
  stormConcurrency: number;
  /** The drain: this many hosts, each changed once, by this many concurrent clients. */
  drainHosts: number;
  drainConcurrency: number;
  /** `--cpu-prof`: each profiled path runs this long. */
  cpuProfSeconds: number;
  /**
   * The RFC 2136 gateway rounds (gateway-rounds.ts): this many rounds of gateway and HTTP loads in alternation,
   * each measurement this long; nochg over this many hosts (each with its own key, set once before) with this many
   * messages in flight, changes over this many (a key each) with this many in flight.
   */
  gatewayRounds: number;
  gatewaySeconds: number;
  gatewayNochgHosts: number;
  gatewayNochgConcurrency: number;
  gatewayChangeHosts: number;
  gatewayChangeConcurrency: number;
}

export const FULL_PROFILE: BenchProfile = {
  name: 'full',
  concurrencies: [1, 16, 64],
  httpRequests: 20_000,
  httpSeconds: 4,
  rawMessages: 20_000,
  rawSeconds: 4,
  namesPerMessage: 50,
  rawNamePool: 5_000,
  nsupdateCount: 50,
  nsupdateSeconds: 30,
  smallHosts: 1_000,
  largeHosts: 1_000_000,
  isolatedPauseMs: 2,
  isolatedMessages: 1_000,
  warmupRequests: 500,
  warmUpSeconds: 1,
  pairedRounds: 3,
  pairedSeconds: 2,
  coldLogins: 4,
  coldLoginSpacingMs: 500,
  wrkRounds: 3,
  wrkSeconds: 3,
  nochgHosts: 512,
  nochgConcurrency: 64,
  stormHosts: 20_000,
  stormConcurrency: 256,
  drainHosts: 100_000,
  drainConcurrency: 1_024,
  cpuProfSeconds: 8,
  gatewayRounds: 3,
  gatewaySeconds: 3,
  gatewayNochgHosts: 512,
  gatewayNochgConcurrency: 64,
  gatewayChangeHosts: 1_024,
  gatewayChangeConcurrency: 256,
};

export const QUICK_PROFILE: BenchProfile = {
  name: 'quick',
  concurrencies: [1, 16, 64],
  httpRequests: 300,
  httpSeconds: 0.4,
  rawMessages: 200,
  rawSeconds: 0.4,
  namesPerMessage: 50,
  rawNamePool: 4_000,
  nsupdateCount: 5,
  nsupdateSeconds: 5,
  smallHosts: 1_000,
  largeHosts: 10_000,
  isolatedPauseMs: 2,
  isolatedMessages: 50,
  warmupRequests: 64,
  warmUpSeconds: 0,
  pairedRounds: 1,
  pairedSeconds: 0.3,
  coldLogins: 1,
  coldLoginSpacingMs: 10,
  wrkRounds: 1,
  wrkSeconds: 1,
  nochgHosts: 512,
  nochgConcurrency: 64,
  stormHosts: 20_000,
  stormConcurrency: 256,
  drainHosts: 1_000,
  drainConcurrency: 64,
  cpuProfSeconds: 8,
  gatewayRounds: 1,
  gatewaySeconds: 1,
  gatewayNochgHosts: 64,
  gatewayNochgConcurrency: 64,
  gatewayChangeHosts: 256,
  gatewayChangeConcurrency: 64,
};
