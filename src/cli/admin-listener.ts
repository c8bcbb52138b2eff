/**
 * Starts the admin listener (src/admin) of `serve`: in the process that serves, or in a
 * cluster primary (one endpoint for all workers; the metrics are the workers', aggregated).
 */
import { readFileSync } from 'node:fs';
import { AdminListener } from '../admin/server.js';
import { ReadinessMonitor } from '../app/readiness.js';
import { PROPAGATION_TIMINGS, PropagationWatcher } from '../app/propagation.js';
import { NO_TELEMETRY } from '../core/telemetry.js';
import type { Config } from '../config/schema.js';
import type { Logger } from '../core/log.js';
import { DnsSerialProbe, probeZone, type DnsPublisher } from '../dns/index.js';
import type { MetricsSource } from '../metrics/index.js';
import type { Store } from '../store/index.js';
import { adminServiceOn } from './admin-service.js';

export interface RunningAdmin {
  bound: { host: string; port: number }[];
  close(): Promise<void>;
}

function packageVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as {
      version?: string;
    };
    return pkg.version ?? '0.0.0';
  } catch {
    return '0.0.0';
  }
}

/** Listen on every `admin.listen` address; undefined when the config has no admin section. */
export async function startAdmin(
  config: Config,
  logger: Logger,
  parts: { store: Store; publisher?: DnsPublisher; metrics: MetricsSource; currentConfig?: () => Config },
): Promise<RunningAdmin | undefined> {
  if (!config.admin) return undefined;
  const secondaryProbe = new DnsSerialProbe(config.zones, PROPAGATION_TIMINGS.queryTimeoutMs);
  const readiness = new ReadinessMonitor({
    pingStore: () => parts.store.ping(),
    zones: config.zones.map((z) => z.name),
    probeZone: (name) =>
      probeZone(
        config.zones.find((z) => z.name === name)!,
        config.dns,
      ),
    timeoutMs: config.dns.timeoutMs,
    logger,
    ...(secondaryProbe.watchedZones.length === 0
      ? {}
      : {
          secondaries: () =>
            new PropagationWatcher(secondaryProbe.watchedZones, secondaryProbe, NO_TELEMETRY).checkAll(),
        }),
  });
  const listener = new AdminListener({
    admin: adminServiceOn(parts.store, config, logger, parts.publisher, parts.currentConfig),
    token: config.admin.token,
    metrics: parts.metrics,
    readiness,
    version: packageVersion(),
    logger,
    limits: {
      maxConnections: config.admin.maxConnections,
      headersTimeoutMs: config.http.headersTimeoutMs,
      requestTimeoutMs: config.http.requestTimeoutMs,
      keepAliveTimeoutMs: config.http.keepAliveTimeoutMs,
      maxHeaderBytes: config.http.maxHeaderBytes,
    },
  });
  const bound: { host: string; port: number }[] = [];
  try {
    for (const l of config.admin.listen) {
      const port = await listener.listen(l.host, l.port);
      bound.push({ host: l.host, port });
      logger.info('admin listening', { host: l.host, port, pid: process.pid });
    }
  } catch (err) {
    await listener.close();
    throw err;
  }
  readiness.start();
  return {
    bound,
    async close() {
      await listener.close();
      await readiness.stop();
    },
  };
}
