/**
 * Hosts that went quiet (docs/operators.md, "Quiet hosts"): a periodic sweep, by one process at a time, counts the
 * hosts quiet for at least each age (the `ddns_bridge_quiet_hosts` gauge) and, with `hosts.closeQuietAfter`, closes
 * those quiet that long (`!active`; `host reopen` makes them active again), one log line each.
 */
import { QUIET_BUCKETS } from '../core/quiet.js';
import type { Logger } from '../core/log.js';
import type { HostState } from '../core/types.js';
import type { HostAdmin } from './ports.js';

/** A host's state and since when it is quiet (ms). */
export interface HostActivity {
  fqdn: string;
  state: HostState;
  since: number;
}

export interface QuietSweepStore {
  /** Take the sweep's lock for `lockMs`: false when another process holds it. */
  take(lockMs: number): Promise<boolean>;
  /** Every host's activity (a host never seen before is stamped quiet from `nowMs`). */
  activity(nowMs: number): Promise<HostActivity[]>;
  saveCounts(counts: Readonly<Record<string, number>>): Promise<void>;
  counts(): Promise<Record<string, number>>;
}

export interface QuietHostsSettings {
  intervalMs: number;
  /** Close hosts quiet this long; undefined: never. */
  closeAfterMs?: number;
}

export class QuietHosts {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly deps: {
      store: QuietSweepStore;
      hosts: Pick<HostAdmin, 'setState'>;
      settings: QuietHostsSettings;
      logger: Logger;
      now?: () => number;
    },
  ) {}

  start(): void {
    this.timer = setInterval(() => {
      this.running ??= this.sweep()
        .catch((err: unknown) => this.deps.logger.warn('quiet-host sweep failed', { error: (err as Error).message }))
        .finally(() => (this.running = undefined));
    }, this.deps.settings.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  /** One sweep, if this process takes the lock: the counts saved, quiet hosts closed. */
  async sweep(): Promise<void> {
    const { store, hosts, settings, logger } = this.deps;
    // A little less than the interval: the next sweep, in whichever process, is never locked out by this one.
    if (!(await store.take(Math.max(1, Math.floor(settings.intervalMs * 0.9))))) return;
    const now = (this.deps.now ?? Date.now)();
    const activity = await store.activity(now);
    const counts = Object.fromEntries(QUIET_BUCKETS.map(([label]) => [label, 0]));
    for (const host of activity) for (const [label, ms] of QUIET_BUCKETS) if (now - host.since >= ms) counts[label]!++;
    await store.saveCounts(counts);
    const closeAfter = settings.closeAfterMs;
    if (closeAfter === undefined) return;
    for (const host of activity) {
      if ((host.state !== 'active' && host.state !== 'offline') || now - host.since < closeAfter) continue;
      try {
        await hosts.setState(host.fqdn, 'closed', ['active', 'offline']);
        logger.info('closed a quiet host', { fqdn: host.fqdn, quietSince: new Date(host.since).toISOString() });
      } catch (err) {
        // Changed meanwhile (removed, blocked, a request came): the next sweep looks again.
        logger.debug('a quiet host was not closed', { fqdn: host.fqdn, error: (err as Error).message });
      }
    }
  }
}
