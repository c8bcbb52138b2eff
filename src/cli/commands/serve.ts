/**
 * `ddns-bridge serve`: the HTTP frontend until SIGTERM/SIGINT, then a graceful stop.
 *
 * With `--workers N` (N > 1) the process becomes a node:cluster primary that forks N workers
 * running the same command; each builds its own bridge and listens on the same addresses
 * (they share the listening socket; see useKernelScheduling). All state is in Redis, so
 * workers share it exactly as separate frontends do, and each gets the config the primary
 * validated (workerContext). The primary logs `listening` once every worker listens,
 * restarts a worker that dies and on SIGTERM/SIGINT stops the workers gracefully (the
 * supervision is src/cli/supervisor.ts).
 *
 * SIGHUP reloads (see reload): the config file is read again and its live settings applied
 * (config/reload.ts; a change that needs a restart is logged and left), and every process that
 * serves reads its HTTPS listeners' certificates and keys again; the primary reads the file and
 * passes the result on to its workers.
 */
import { isIPv4, isIPv6 } from 'node:net';
import cluster from 'node:cluster';
import os from 'node:os';
import { DEFAULT_PARALLEL_HASHES } from '../../auth/index.js';
import { deepFreeze } from '../../config/load.js';
import { planReload } from '../../config/reload.js';
import type { Config } from '../../config/schema.js';
import { hostsAtStaticNames } from '../../core/static-names.js';
import { ConfigError } from '../../core/errors.js';
import { readTlsPair } from '../../http/tls.js';
import type { MetricsSource } from '../../metrics/index.js';
import type { RunningAdmin } from '../admin-listener.js';
import type { Bridge, BridgeOptions } from '../compose.js';
import { contextOf, UsageError, type CommandContext } from '../context.js';
import {
  WORKER_STOP_GRACE_MS,
  WorkerSupervisor,
  type Listener,
  type PrimaryMessage,
  type WorkerMessage,
} from '../supervisor.js';

export interface ServeOptions {
  /** Overrides the port of every listen address: a whole number 0–65535 (as yargs passes it, a string). */
  port?: number | string;
  /** Worker processes: a count, or 'auto' for one per CPU (default 1: no cluster, this process serves). */
  workers?: number | string;
}

export const MAX_WORKERS = 256;
/**
 * `--workers auto` stops here: past a few workers the one Redis (single-threaded, one Lua
 * script per request) is the limit, and every worker keeps its own UPDATE messages in flight
 * (BIND refuses UPDATEs past its update-quota, 100 by default).
 */
export const MAX_AUTO_WORKERS = 8;

/**
 * V8's young generation per worker, MiB per semi-space (V8's default on 64-bit: 16). Under
 * load the young generation grows to its maximum and stays there; at 8 a worker's resident
 * memory under the bench's heaviest load with cold logins beside it peaked ~9 MiB lower
 * (140 → 131 MiB, three alternating runs) for no measurable CPU per request (nochg and
 * change at c=64, eight alternating rounds each, within each other's spread).
 */
export const WORKER_SEMI_SPACE_MIB = 8;

/**
 * The Node options a worker starts with: the primary's own, plus the young-generation bound
 * unless the operator already chose one (on the command line or in NODE_OPTIONS).
 */
export function workerExecArgv(execArgv: readonly string[], nodeOptions: string | undefined): string[] {
  const chosen = [...execArgv, ...(nodeOptions ?? '').split(/\s+/)].some((a) =>
    /^--max[-_]semi[-_]space[-_]size(=|$)/.test(a),
  );
  return chosen ? [...execArgv] : [...execArgv, `--max-semi-space-size=${WORKER_SEMI_SPACE_MIB}`];
}

/**
 * `--workers`: a whole number from 1 to MAX_WORKERS, or 'auto' (one per CPU the process may use, at most
 * MAX_AUTO_WORKERS).
 */
export function workerCount(value: number | string | undefined, cpus: number): number {
  if (value === undefined) return 1;
  if (value === 'auto') return Math.max(1, Math.min(cpus, MAX_AUTO_WORKERS));
  const n = typeof value === 'number' ? value : /^\d{1,4}$/.test(value) ? Number(value) : NaN;
  if (!Number.isInteger(n) || n < 1 || n > MAX_WORKERS) {
    throw new UsageError(
      `--workers: expected 'auto' or a whole number from 1 to ${MAX_WORKERS}, got ${JSON.stringify(value)}`,
    );
  }
  return n;
}

/** BIND's default update-quota: UPDATEs in flight past it are dropped without an answer. */
const BIND_UPDATE_QUOTA = 100;

/**
 * One warning per primary that this service may send more UPDATEs at once than BIND accepts
 * by default (every zone's maxInFlight, per worker, summed over the zones it serves): past
 * the quota BIND drops them silently, and the updates time out (`dnserr`).
 */
export function updateQuotaWarnings(config: Pick<Config, 'zones' | 'dns'>, workers: number): string[] {
  const perPrimary = new Map<string, { inFlight: number; zones: string[] }>();
  for (const zone of config.zones) {
    const key = isIPv6(zone.primary.host)
      ? `[${zone.primary.host}]:${zone.primary.port}`
      : `${zone.primary.host}:${zone.primary.port}`;
    const entry = perPrimary.get(key) ?? { inFlight: 0, zones: [] };
    entry.inFlight += (zone.maxInFlight ?? config.dns.maxInFlight) * workers;
    entry.zones.push(zone.name);
    perPrimary.set(key, entry);
  }
  return [...perPrimary]
    .filter(([, e]) => e.inFlight > BIND_UPDATE_QUOTA)
    .map(
      ([primary, e]) =>
        `up to ${e.inFlight} UPDATE messages at once to ${primary} (${e.zones.join(', ')}: maxInFlight × ${workers} worker(s)): ` +
        `if it is BIND, raise its update-quota (default ${BIND_UPDATE_QUOTA}) above that, or lower maxInFlight`,
    );
}

/** `--port`: a whole number from 0 (any free port) to 65535; undefined keeps the config's ports. */
export function portOverride(value: number | string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = typeof value === 'number' ? value : /^\d{1,5}$/.test(value) ? Number(value) : NaN;
  if (!Number.isInteger(n) || n < 0 || n > 65535) {
    throw new UsageError(`--port: expected a whole number from 0 to 65535, got ${JSON.stringify(value)}`);
  }
  return n;
}

/**
 * Password checks each process runs at once: together about one per CPU (scrypt is CPU-bound,
 * more at once only holds more of its 32 MiB buffers), at least one, at most the default.
 */
export function hashesPerWorker(workers: number, cpus: number): number {
  return Math.max(1, Math.min(DEFAULT_PARALLEL_HASHES, Math.floor(cpus / workers)));
}

export async function serve(ctx: CommandContext, opts: ServeOptions): Promise<void> {
  const cpus = os.availableParallelism();
  const workers = workerCount(opts.workers, cpus);
  // Before anything connects: a bad value is a usage error (exit 2), not a failed listen.
  portOverride(opts.port);
  const bridgeOptions = { parallelHashes: hashesPerWorker(workers, cpus) };
  if (cluster.isWorker) return serveWorker(ctx, opts, bridgeOptions);
  // From here on SIGHUP reloads, never ends the process (node's default), also while it starts.
  const reloads = new Reloads((reason, err) => ctx.logger.error('reload failed', { reason, error: err.message }));
  process.on('SIGHUP', () => reloads.request('SIGHUP'));
  // Before anything starts: a certificate that cannot be used is a config error (exit 2), named
  // by its setting, not a worker that fails to start.
  for (const l of listenersOf(ctx, opts)) if (l.tls) await readTlsPair(l.tls);
  for (const w of updateQuotaWarnings(ctx.config, workers)) ctx.logger.warn(w);
  await refuseHostsAtStaticNames(ctx);
  if (workers === 1) return serveSingle(ctx, opts, bridgeOptions, reloads);
  return servePrimary(ctx, workers, reloads);
}

export type { Listener } from '../supervisor.js';

function listenersOf(ctx: CommandContext, opts: ServeOptions): Listener[] {
  const port = portOverride(opts.port);
  return ctx.config.listen.map((l, i) => ({
    host: l.host,
    port: port ?? l.port,
    ...(l.tls ? { tls: { ...l.tls, setting: `listen[${i}].tls` } } : {}),
  }));
}

/** Log fields that tell an HTTPS listener from a plain one. */
function transportOf(l: Listener): { tls?: true } {
  return l.tls ? { tls: true } : {};
}

/**
 * `[::]:P` also takes the IPv4 side of port P (dual stack): when an IPv4 address listens on
 * P as well (`0.0.0.0:P`, `192.0.2.1:P`), the IPv6 one must be IPv6-only, or one of the two
 * cannot bind.
 */
export function needsIpv6Only(l: Listener, all: readonly Listener[]): boolean {
  return isIPv6(l.host) && l.port !== 0 && all.some((o) => isIPv4(o.host) && o.port === l.port);
}

/**
 * Build the bridge and listen everywhere; undefined (exit status 1 set) when an address cannot
 * be bound. `admin`: this process also holds the admin listener (a single process; it listens
 * first, so that its address is logged before `listening`).
 */
async function startBridge(
  ctx: CommandContext,
  opts: ServeOptions,
  bridgeOptions: BridgeOptions,
  listeningMsg: string,
  admin?: { metrics: MetricsSource },
) {
  const { config, logger } = ctx;
  // Loaded here, not at the top: a cluster primary never builds a bridge (see main.ts).
  const { buildBridge } = await import('../compose.js');
  const { firstOutcome } = await import('../../store/redis.js');
  const bridge = buildBridge(config, logger, bridgeOptions);
  // A Redis that is down is waited for (911 meanwhile); one whose database cannot be used never works.
  const fatal = await firstOutcome(bridge.store.redis, config.redis.commandTimeoutMs);
  if (fatal) {
    logger.error('cannot use redis', { error: fatal.message });
    await bridge.close();
    process.exitCode = 1;
    return undefined;
  }
  let adminListener: RunningAdmin | undefined;
  const bound: Listener[] = [];
  try {
    if (admin) {
      const { startAdmin } = await import('../admin-listener.js');
      adminListener = await startAdmin(config, logger, {
        store: bridge.store,
        publisher: bridge.publisher,
        metrics: admin.metrics,
        currentConfig: () => ctx.config,
      });
    }
    const listeners = listenersOf(ctx, opts);
    for (const l of listeners) {
      // One server object can listen once: extra addresses get their own frontend.
      const port = await bridge.http.listen(l.host, l.port, { ipv6Only: needsIpv6Only(l, listeners), tls: l.tls });
      bound.push({ ...l, port });
      logger.info(listeningMsg, {
        host: l.host,
        port,
        ...transportOf(l),
        zones: config.zones.map((z) => z.name),
        pid: process.pid,
        parallelHashes: bridgeOptions.parallelHashes,
      });
    }
    if (bridge.gateway !== undefined) {
      await bridge.gateway.listen();
      for (const a of bridge.gateway.addresses)
        logger.info('RFC 2136 gateway listening', {
          host: a.host,
          port: a.port,
          transport: 'udp+tcp',
          pid: process.pid,
        });
    }
  } catch (err) {
    logger.error('cannot listen', { error: (err as Error).message });
    await adminListener?.close();
    await bridge.close();
    process.exitCode = 1;
    return undefined;
  }
  return { bridge, bound, admin: adminListener };
}

/**
 * Resolves with the signal name on the first SIGTERM or SIGINT. The handlers stay: a later
 * signal must not end the process while requests are answered (systemd signals every
 * process of the unit, and the primary its workers too; Ctrl-C reaches them all).
 */
function stopSignal(): Promise<string> {
  return new Promise((resolve) => {
    process.on('SIGTERM', () => resolve('SIGTERM'));
    process.on('SIGINT', () => resolve('SIGINT'));
  });
}

/**
 * SIGHUP: the reloads asked for, one after another. One asked for while the process still
 * starts is done once it listens (its listeners may have read the files before it came).
 */
class Reloads {
  constructor(private readonly onError: (why: string, err: Error) => void) {}

  private run: ((why: string) => Promise<void>) | undefined;
  private pending: string | undefined;
  private chain: Promise<void> = Promise.resolve();

  request(why: string): void {
    if (this.run === undefined) this.pending = why;
    else this.enqueue(this.run, why);
  }

  /** From now on a request runs `run`; one that came earlier runs now. */
  attach(run: (why: string) => Promise<void>): void {
    this.run = run;
    if (this.pending !== undefined) this.enqueue(run, this.pending);
    this.pending = undefined;
  }

  private enqueue(run: (why: string) => Promise<void>, why: string): void {
    // A reload that throws must not end the process (an unhandled rejection) nor stop the next.
    this.chain = this.chain.then(() => run(why)).catch((err: unknown) => this.onError(why, err as Error));
  }
}

/**
 * The config file read again for a reload: the config to run with (config/reload.ts), or
 * undefined when there is no file (a worker) or it is not valid (then nothing of it applies).
 * A change that needs a restart is logged, once per reload, and left as it was.
 */
async function rereadConfig(ctx: CommandContext, why: string): Promise<Config | undefined> {
  if (!ctx.reread) return undefined;
  try {
    const plan = planReload(ctx.config, await ctx.reread());
    if (plan.needsRestart.length > 0) {
      ctx.logger.warn('reload: these settings need a restart; left as they were', {
        reason: why,
        settings: plan.needsRestart,
      });
    }
    return plan.config;
  } catch (err) {
    ctx.logger.error('reload: the config file is not valid; none of it applied', {
      reason: why,
      error: (err as Error).message,
    });
    return undefined;
  }
}

/** From the next request on: the limits and lists of `config`, and its log level. */
function applyConfig(ctx: CommandContext, bridge: Bridge | undefined, config: Config): string[] {
  const changed = planReload(ctx.config, config).changed;
  bridge?.reconfigure(config);
  ctx.logger.setLevel(config.log.level);
  ctx.config = config;
  return changed;
}

/**
 * What a reload does in a process that serves: the live settings of `config` applied (when
 * there is one), then every HTTPS listener's certificate and key read again (the ones that fail
 * keep the pair they had). Never throws: a failed reload leaves the process serving as before.
 */
async function reload(ctx: CommandContext, bridge: Bridge, why: string, config: Config | undefined): Promise<void> {
  const { logger } = ctx;
  try {
    const changed = config ? applyConfig(ctx, bridge, config) : [];
    const outcomes = await bridge.http.reloadTls();
    const kept = outcomes.filter((o) => !o.ok).map((o) => o.setting);
    const certificates = outcomes.length - kept.length;
    logger.info('reloaded', {
      reason: why,
      settings: changed,
      certificates,
      ...(kept.length ? { kept } : {}),
      pid: process.pid,
    });
  } catch (err) {
    logger.error('reload failed', { reason: why, error: (err as Error).message, pid: process.pid });
  }
}

async function serveSingle(
  ctx: CommandContext,
  opts: ServeOptions,
  bridgeOptions: BridgeOptions,
  reloads: Reloads,
): Promise<void> {
  const { logger } = ctx;
  // Counted only where the admin listener can show it.
  const metrics = ctx.config.admin ? (await import('../../metrics/index.js')).processMetrics() : undefined;
  const started = await startBridge(
    ctx,
    opts,
    { ...bridgeOptions, telemetry: metrics },
    'listening',
    metrics ? { metrics } : undefined,
  );
  if (!started) return;
  reloads.attach(async (why) => reload(ctx, started.bridge, why, await rereadConfig(ctx, why)));
  const { whenFatal } = await import('../../store/redis.js');
  // Redis refusing the database later (restarted with fewer databases) ends the service too.
  const why = await Promise.race([
    stopSignal().then((signal) => ({ signal })),
    whenFatal(started.bridge.store.redis).then((error) => ({ error })),
  ]);
  if ('error' in why) {
    logger.error('cannot use redis; stopping', { error: why.error.message });
    process.exitCode = 1;
  } else logger.info('stopping', { signal: why.signal });
  await started.admin?.close();
  await started.bridge
    .close()
    .catch((err: unknown) => logger.error('error while stopping', { error: (err as Error).message }));
  logger.info('stopped');
}

/**
 * A static name that is also a registered host refuses the config at load (issue 30; docs/operators.md, "Drift"):
 * `serve` does not start while a host sits at a name of zones[].staticNames, and says which hosts (exit 2), as
 * `check` does. One read of every host, only when static names are configured; a Redis that does not answer now
 * leaves it to the first request (a warning), as serve starts without Redis otherwise.
 */
async function refuseHostsAtStaticNames(ctx: CommandContext): Promise<void> {
  const { config, logger } = ctx;
  if (config.zones.every((z) => z.staticNames.length === 0)) return;
  const { openStore } = await import('../../store/index.js');
  const store = openStore(config, logger);
  let found;
  try {
    found = hostsAtStaticNames(await store.hosts.list(), config.zones);
  } catch (err) {
    logger.warn('hosts at static names not checked', { error: (err as Error).message });
    return;
  } finally {
    await store.close().catch(() => undefined);
  }
  if (found.length === 0) return;
  throw new ConfigError(
    'zones[].staticNames',
    found.map(({ host, problem }) => `host ${host.fqdn} (account ${host.account}): ${problem}`).join('; ') +
      ': remove the host (host remove) or the name',
  );
}

/**
 * A worker's reloads, asked for from its start (workerContext): by the primary (a message: a
 * signal would end a worker that has no handler yet) or by a SIGHUP of its own (a closed
 * terminal reaches every process of the group).
 */
const workerReloads = new Reloads((reason, err) =>
  workerLogger?.error('reload failed', { reason, error: err.message, pid: process.pid }),
);
/** The worker's logger, once serveWorker runs (its reloads are asked for before). */
let workerLogger: CommandContext['logger'] | undefined;
/** The config of the primary's last reload message, applied by the reload it asked for. */
let reloadedConfig: Config | undefined;

/** Whether this process is a worker of `serve --workers N`. */
export function isClusterWorker(): boolean {
  return cluster.isWorker;
}

/**
 * A worker's context: the config the primary validated at start, asked for over IPC, not the
 * file read again. A worker started later (the replacement of one that died) then serves
 * exactly what its siblings serve, even when the file has been edited or broken since: an
 * edit takes effect when the service restarts, as for a single process.
 */
export function workerContext(): Promise<CommandContext> {
  // node's cluster code, listening before us, exits a worker at once with code 0 when its
  // channel to the primary closes: the requests in flight were cut off, and the reason and exit
  // code a failing worker set were lost. The worker ends itself instead (serveWorker: 'primary
  // gone' stops it gracefully; a failure exits 1 after saying why), within the primary's own
  // grace: a worker still starting waits for a listen handle only the primary could give, and
  // its Redis client would keep it alive for good.
  cluster.worker!.exitedAfterDisconnect = true;
  process.on('SIGHUP', () => workerReloads.request('SIGHUP'));
  process.on('message', (m: PrimaryMessage) => {
    if (m?.kind !== 'reload') return;
    if (m.config) reloadedConfig = deepFreeze(m.config);
    workerReloads.request('SIGHUP to the primary');
  });
  process.once('disconnect', () => setTimeout(() => process.exit(process.exitCode ?? 1), WORKER_STOP_GRACE_MS).unref());
  return new Promise((resolve, reject) => {
    // A primary that never answers (one of an older version, still running after the code
    // was replaced): end, so that it sees a worker die instead of one that never listens.
    const timer = setTimeout(() => {
      reject(
        new Error(
          `no config from the primary within ${CONFIG_WAIT_MS / 1000} s (is it of another version? restart the service)`,
        ),
      );
      if (process.connected) process.disconnect();
    }, CONFIG_WAIT_MS);
    const onMessage = (m: PrimaryMessage): void => {
      if (m?.kind !== 'config') return;
      clearTimeout(timer);
      process.off('message', onMessage);
      resolve(contextOf(deepFreeze(m.config)));
    };
    // Asked, not awaited: a message that arrived before this listener would be lost.
    process.on('message', onMessage);
    process.once('disconnect', () => {
      clearTimeout(timer);
      reject(new Error('the primary stopped before it sent the config'));
    });
    process.send?.({ kind: 'config?' } satisfies WorkerMessage);
  });
}

/** How long a new worker waits for its config. */
const CONFIG_WAIT_MS = 10_000;

async function serveWorker(ctx: CommandContext, opts: ServeOptions, bridgeOptions: BridgeOptions): Promise<void> {
  const { logger } = ctx;
  workerLogger = logger;
  // The primary stops us with SIGTERM (a terminal's Ctrl-C reaches us directly as SIGINT);
  // if the primary dies, the IPC channel closes and we stop too (workerContext bounds how long).
  const stop = new Promise<string>((resolve) => {
    void stopSignal().then(resolve);
    if (!process.connected) resolve('primary gone');
    else process.once('disconnect', () => resolve('primary gone'));
  });
  // The primary's admin listener asks every worker for its metrics and adds them up.
  const telemetry = ctx.config.admin ? (await import('../../metrics/index.js')).workerMetrics() : undefined;
  const started = await startBridge(ctx, opts, { ...bridgeOptions, telemetry }, 'worker listening');
  if (!started) {
    if (process.connected) process.disconnect();
    return;
  }
  workerReloads.attach((why) => {
    // Applied once: a worker's own SIGHUP (a hung-up terminal) re-reads only the certificates.
    const config = reloadedConfig;
    reloadedConfig = undefined;
    return reload(ctx, started.bridge, why, config);
  });
  process.send?.({ kind: 'ready', bound: started.bound } satisfies WorkerMessage);
  const { whenFatal } = await import('../../store/redis.js');
  // As in serveSingle: the primary restarts the worker (each start fails the same way) and gives up.
  const fatal = whenFatal(started.bridge.store.redis).then((error) => {
    logger.error('cannot use redis; stopping', { error: error.message });
    process.exitCode = 1;
    return 'redis unusable';
  });
  const why = await Promise.race([stop, fatal]);
  logger.info('worker stopping', { reason: why, pid: process.pid });
  await started.bridge
    .close()
    .catch((err: unknown) => logger.error('error while stopping', { error: (err as Error).message }));
  logger.info('worker stopped', { pid: process.pid });
  // The IPC channel would keep the process alive.
  if (process.connected) process.disconnect();
}

async function servePrimary(ctx: CommandContext, count: number, reloads: Reloads): Promise<void> {
  const { logger } = ctx;
  const workers = new WorkerSupervisor({
    count,
    logger,
    config: () => ctx.config,
    execArgv: workerExecArgv(process.execArgv, process.env.NODE_OPTIONS),
  });
  void stopSignal().then((signal) => workers.stop(signal, 0));
  // The workers hold the listeners: each reads its certificates again. (One that starts later
  // reads them when it listens.)
  reloads.attach(async (why) => {
    if (workers.stopping) return;
    const config = await rereadConfig(ctx, why);
    // A worker started from now on gets the reloaded config, as its siblings run it.
    const changed = config ? applyConfig(ctx, undefined, config) : [];
    logger.info('reloading', { reason: why, workers: workers.workers, settings: changed });
    workers.reload(config);
  });
  useKernelScheduling();

  const bound = await workers.start();
  if (bound === undefined) {
    process.exitCode = await workers.done;
    return;
  }
  const admin = await startPrimaryAdmin(ctx).catch((err: unknown) => {
    logger.error('cannot listen', { error: (err as Error).message });
    workers.stop('admin listener failed', 1);
    return undefined;
  });
  if (workers.stopping) {
    await admin?.close();
    process.exitCode = await workers.done;
    return;
  }
  for (const l of bound) {
    logger.info('listening', {
      host: l.host,
      port: l.port,
      ...transportOf(l),
      zones: ctx.config.zones.map((z) => z.name),
      workers: count,
      pid: process.pid,
    });
  }
  const code = await workers.done;
  await admin?.close();
  if (code !== 0) process.exitCode = code;
  logger.info('stopped');
}

/**
 * The one admin listener of a cluster: the primary's own Redis client and DNS connections
 * (for the provisioning API and readiness), and the workers' metrics added up.
 */
async function startPrimaryAdmin(ctx: CommandContext): Promise<RunningAdmin | undefined> {
  const { config, logger } = ctx;
  if (!config.admin) return undefined;
  const [{ openStore }, { DnsPublisher }, { primaryMetrics }, { startAdmin }] = await Promise.all([
    import('../../store/index.js'),
    import('../../dns/index.js'),
    import('../../metrics/index.js'),
    import('../admin-listener.js'),
  ]);
  const store = openStore(config, logger);
  const publisher = new DnsPublisher(config.zones, config.dns, logger);
  const release = async () => {
    await publisher.close();
    await store.close();
  };
  try {
    const admin = await startAdmin(config, logger, {
      store,
      publisher,
      metrics: primaryMetrics(),
      currentConfig: () => ctx.config,
    });
    return {
      bound: admin?.bound ?? [],
      async close() {
        await admin?.close();
        await release();
      },
    };
  } catch (err) {
    await release();
    throw err;
  }
}

/**
 * Let the workers accept from the shared socket themselves (the kernel spreads the
 * connections) instead of node's default round-robin, where the primary accepts every
 * connection and passes it to a worker over IPC. Measured on 2 cores (`npm run bench`): the
 * round-robin hand-off cost ~0.4 ms of CPU per connection, more than a bare HTTP reply, and
 * halved the requests/s. An operator's NODE_CLUSTER_SCHED_POLICY (`rr` / `none`) wins.
 */
export function useKernelScheduling(): void {
  if (process.env.NODE_CLUSTER_SCHED_POLICY === undefined) cluster.schedulingPolicy = cluster.SCHED_NONE;
}
