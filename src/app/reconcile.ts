/**
 * Repairs changes interrupted between DNS and Redis. A frontend that dies after sending an
 * UPDATE but before recording it leaves an expired lease: the primary may hold a change
 * nobody acknowledged. Redis is the record of what was acknowledged, so its state is
 * published again (full rewrite) and the host is back to "fully old". Runs on every
 * frontend; reclaiming a lease is atomic, so one of them repairs each host.
 */
import type { Logger } from '../core/log.js';
import { pickDns } from '../core/types.js';
import type { HostGate, Publisher } from './ports.js';

const BATCH = 100;

export class Reconciler {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly deps: { hosts: HostGate; publisher: Publisher; leaseMs: number; logger: Logger },
  ) {}

  /** Repair what has expired now; resolves with the number of hosts republished. */
  async sweep(): Promise<number> {
    const { hosts, publisher, leaseMs, logger } = this.deps;
    let repaired = 0;
    for (const fqdn of await hosts.staleLeases(BATCH)) {
      const claimed = await hosts.reclaim(fqdn, leaseMs);
      if (!claimed) continue;
      const { host, lease } = claimed;
      const zone = publisher.zoneFor(fqdn);
      if (zone === undefined) {
        await hosts.release(lease); // its zone is no longer configured: nothing to publish to
        continue;
      }
      const target = { ...pickDns(host), offline: host.state === 'offline' };
      try {
        await publisher.publish({ fqdn, zone, previous: host, target });
        await hosts.commit(lease, target);
        repaired++;
        logger.warn('republished a host whose change was interrupted', { host: fqdn });
      } catch (err) {
        // Keep the lease: it expires and a later sweep tries again.
        logger.warn('could not republish an interrupted change yet', { host: fqdn, error: (err as Error).message });
      }
    }
    return repaired;
  }

  /** Sweep now and then every `intervalMs` until stop(). Failures are logged, never thrown. */
  start(intervalMs: number): void {
    const tick = () => {
      this.running = this.sweep()
        .then(() => undefined)
        .catch((err: unknown) => this.deps.logger.debug('reconcile sweep failed', { error: (err as Error).message }))
        .finally(() => {
          this.running = undefined;
          if (this.timer) this.timer = setTimeout(tick, intervalMs).unref();
        });
    };
    this.timer = setTimeout(tick, 0).unref();
  }

  async stop(): Promise<void> {
    const timer = this.timer;
    this.timer = undefined;
    clearTimeout(timer);
    await this.running;
  }
}
