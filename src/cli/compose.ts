/**
 * The composition of a serving process: builds the update path's adapters from the validated
 * config and wires its use cases. It is not the only module that wires adapters:
 * admin-service.ts and admin-listener.ts compose the admin side, and the check, drift and
 * backup commands open stores and DNS themselves (docs/architecture.md, "Composition").
 */
import type { Config } from '../config/schema.js';
import type { Logger } from '../core/log.js';
import { NO_TELEMETRY, type Telemetry } from '../core/telemetry.js';
import { MAX_BUSY_WAIT_MS, UpdateService } from '../app/update.js';
import { EchoService } from '../app/echo.js';
import { Reconciler } from '../app/reconcile.js';
import { TxtService } from '../app/txt.js';
import { openStore, type Store } from '../store/index.js';
import { observeStoreCalls } from '../store/observe.js';
import { repairsDue } from '../store/repairs-due.js';
import { RedisQuietSweep } from '../store/quiet-sweep.js';
import { QuietHosts } from '../app/quiet.js';
import { QUIET_BUCKETS } from '../core/quiet.js';
import { GatewayService } from '../app/gateway.js';
import {
  CachedTokenAuthenticator,
  PasswordAuthenticator,
  TsigKeyring,
  tsigKeyHash,
  tsigKeyId,
  tsigKeyName,
} from '../auth/index.js';
import { DnsMxResolver, DnsPublisher, DnsSerialProbe } from '../dns/index.js';
import { PROPAGATION_TIMINGS, PropagationWatcher } from '../app/propagation.js';
import { HttpFrontend } from '../http/server.js';
import { DnsGateway } from '../gateway/server.js';

export interface Bridge {
  store: Store;
  publisher: DnsPublisher;
  http: HttpFrontend;
  /** The RFC 2136 gateway, when the config has one; not listening until `listen()`. */
  gateway?: DnsGateway;
  /**
   * A reloaded config's live settings (config/reload.ts: block list, frequency, junk and
   * credential limits) from the next request on; a request in flight finishes with the old.
   */
  reconfigure(next: Config): void;
  close(): Promise<void>;
}

function frequencyOf(config: Config) {
  return {
    minIntervalMs: config.frequency.minIntervalMs,
    donatorMinIntervalMs: config.frequency.donatorMinIntervalMs,
    maxFrequent: config.frequency.maxFrequent,
  };
}

/** The ACME TXT rate rule (docs/protocol.md, "ACME TXT records"). */
function txtSettingsOf(config: Config) {
  return {
    txtLimit: config.frequency.txtLimit,
    txtWindowMs: config.frequency.txtWindowMs,
    propagationTimeoutMs: config.acme.propagationTimeoutMs,
  };
}

function waitForSecondariesOf(config: Config) {
  return { enabled: config.update.waitForSecondaries, timeoutMs: config.acme.propagationTimeoutMs };
}

function echoSettingsOf(config: Config) {
  return {
    ...frequencyOf(config),
    echoMinIntervalMs: config.frequency.echoMinIntervalMs,
    echoCooldownMs: config.frequency.echoCooldownMs,
  };
}

const RECONCILE_INTERVAL_MS = 1000;

/** Lease on a host while its change is in DNS: the whole DNS budget plus a margin. */
export function leaseMs(config: Config): number {
  return config.dns.timeoutMs + 2000;
}

export interface BridgeOptions {
  /** Password checks (scrypt) one process runs at once; see serve's hashesPerWorker. */
  parallelHashes?: number;
  /** What the adapters count and time, for GET /metrics (src/metrics); nothing by default. */
  telemetry?: Telemetry;
}

export function buildBridge(config: Config, logger: Logger, options: BridgeOptions = {}): Bridge {
  const telemetry = options.telemetry ?? NO_TELEMETRY;
  const store = openStore(config, logger);
  // Every store call of the process (storeCall is module-level): one bridge per process.
  const unobserve =
    telemetry === NO_TELEMETRY
      ? () => undefined
      : observeStoreCalls((operation, seconds, failed) => telemetry.redisCommand(operation, seconds, failed));
  telemetry.sample('repairs_due', {}, () => repairsDue(store.redis, store.keys));
  // Secondaries followed after each applied UPDATE (docs/operators.md, "Secondaries"); none configured: no watcher.
  const secondaryProbe = new DnsSerialProbe(config.zones, PROPAGATION_TIMINGS.queryTimeoutMs);
  const secondaries = secondaryProbe.watchedZones.length === 0 ? undefined : secondaryProbe;
  const watcher =
    secondaries === undefined ? undefined : new PropagationWatcher(secondaries.watchedZones, secondaries, telemetry);
  const publisher = new DnsPublisher(config.zones, config.dns, logger, {
    telemetry,
    ...(watcher === undefined ? {} : { onApplied: (zone: string) => watcher.published(zone) }),
  });
  watcher?.start();
  const mxResolver = new DnsMxResolver(config.mx, config.zones);
  const authenticator = new PasswordAuthenticator(store.accounts, store.failures, config.credentials, {
    parallelHashes: options.parallelHashes,
    telemetry,
  });
  const tokens = new CachedTokenAuthenticator(store.tokens, {
    ttlMs: config.credentials.cacheTtlMs,
    maxEntries: config.credentials.cacheSize,
  });
  // Read on every request: a reload (reconfigure) changes them in place.
  const frequency = frequencyOf(config);
  const echoSettings = echoSettingsOf(config);
  const txtSettings = txtSettingsOf(config);
  const waitForSecondaries = waitForSecondariesOf(config);
  const addresses = { refuse: [...config.addresses.refuse] };
  const txt = new TxtService({
    txt: store.txt,
    hosts: store.hosts,
    publisher,
    settings: txtSettings,
    leaseMs: leaseMs(config),
    maxBusyWaitMs: MAX_BUSY_WAIT_MS,
    logger,
    ...(secondaries === undefined ? {} : { secondaries, telemetry }),
  });
  const update = new UpdateService({
    authenticator,
    tokens,
    clientPolicy: store.clientPolicy,
    hosts: store.hosts,
    registry: store.hosts,
    links: store.links,
    publisher,
    mxResolver,
    txt,
    frequency,
    addresses,
    telemetry,
    leaseMs: leaseMs(config),
    logger,
    waitForSecondaries,
    ...(secondaries === undefined ? {} : { secondaries }),
  });
  const echo = new EchoService({
    echoGate: store.echoGate,
    authenticator,
    tokens,
    hosts: store.hosts,
    settings: echoSettings,
    leaseMs: leaseMs(config),
    logger,
  });
  // Repairs changes a dead frontend left between DNS and Redis (see app/reconcile.ts).
  const reconciler = new Reconciler({ hosts: store.hosts, publisher, leaseMs: leaseMs(config), logger, telemetry });
  reconciler.start(RECONCILE_INTERVAL_MS);
  // Hosts that went quiet: counted for the gauge, closed past hosts.closeQuietAfter (one process per interval).
  const quietStore = new RedisQuietSweep(store.redis, store.keys);
  const quiet = new QuietHosts({
    store: quietStore,
    hosts: store.hosts,
    settings: {
      intervalMs: config.hosts.quietSweepIntervalMs,
      ...(config.hosts.closeQuietAfterMs === undefined ? {} : { closeAfterMs: config.hosts.closeQuietAfterMs }),
    },
    logger,
  });
  quiet.start();
  for (const [label] of QUIET_BUCKETS)
    telemetry.sample('quiet_hosts', { quiet_for: label }, async () => (await quietStore.counts())[label] ?? NaN);
  const http = new HttpFrontend(
    {
      basePath: config.basePath,
      trustedProxies: config.trustedProxies,
      ...config.http,
      ...(config.dialects?.duckdns?.zone === undefined ? {} : { duckdnsZone: config.dialects.duckdns.zone }),
    },
    { update, echo },
    logger,
    telemetry,
  );
  const gateway =
    config.gateway === undefined ? undefined : gatewayOf(config, config.gateway, { store, update, telemetry, logger });
  return {
    store,
    publisher,
    http,
    ...(gateway === undefined ? {} : { gateway }),
    reconfigure(next) {
      Object.assign(frequency, frequencyOf(next));
      Object.assign(echoSettings, echoSettingsOf(next));
      Object.assign(txtSettings, txtSettingsOf(next));
      Object.assign(waitForSecondaries, waitForSecondariesOf(next));
      addresses.refuse = [...next.addresses.refuse];
      store.reconfigure(next);
    },
    async close() {
      // Answers waiting for the secondaries go out now: a stopping process must not hold them to the bound.
      secondaries?.stop();
      await http.close();
      await gateway?.close();
      await reconciler.stop();
      await quiet.stop();
      watcher?.stop();
      await publisher.close();
      await store.close();
      unobserve();
    },
  };
}

/** The RFC 2136 gateway over the same store and update path (docs/protocol.md, "RFC 2136 gateway"). */
function gatewayOf(
  config: Config,
  settings: NonNullable<Config['gateway']>,
  parts: { store: Store; update: UpdateService; telemetry: Telemetry; logger: Logger },
): DnsGateway {
  const { store, update, telemetry, logger } = parts;
  const keyring = new TsigKeyring(settings.masterSecret);
  const service = new GatewayService({
    keys: store.tokens,
    keyHash: tsigKeyHash,
    failures: store.failures,
    updates: update,
    registry: store.hosts,
  });
  return new DnsGateway({
    listen: settings.listen,
    zones: config.zones.map((z) => z.name),
    ratePerSource: settings.ratePerSource,
    maxConnections: settings.maxConnections,
    service,
    keys: { idOf: tsigKeyId, nameOf: tsigKeyName, secretOf: (id, algorithm) => keyring.secret(id, algorithm) },
    telemetry,
    logger,
  });
}
