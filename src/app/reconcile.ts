/**
 * Repairs changes interrupted between DNS and Redis. A frontend that dies after sending an
 * UPDATE but before recording it leaves an expired lease, and so does a request whose
 * UPDATE got no trustworthy answer (timeout, lost connection): the primary may hold a change
 * nobody acknowledged. Redis is the record of what was acknowledged, so its state is
 * published again (every family that change wrote, and all the rest the store knows) and the
 * host is back to "fully old". Runs on every
 * frontend; reclaiming a lease is atomic, so one of them repairs each host. A republish the
 * primary refuses is tried again after a lease's time, then twice as long after each further
 * refusal (at most MAX_REPUBLISH_DELAY_MS): a primary that keeps refusing a host is not asked
 * every few seconds for ever, and the log says so once per attempt. A primary that does not
 * answer is not counted against the host: it is looked at again after a lease's time, so the
 * repair follows soon after the primary is back.
 */
import { DnsUpdateError } from '../core/errors.js';
import type { Logger } from '../core/log.js';
import { NO_TELEMETRY, type Telemetry } from '../core/telemetry.js';
import { storedTxt } from '../core/txt.js';
import { familiesToLeave, pickDns } from '../core/types.js';
import type { HostGate, Publisher, Reclaimed } from './ports.js';

const BATCH = 100;

/** The longest wait between two republish attempts of one host. */
export const MAX_REPUBLISH_DELAY_MS = 60 * 60 * 1000;

/** The wait after a republish failed, given how many had failed before it. */
export function republishDelayMs(leaseMs: number, failedBefore: number): number {
  return Math.min(MAX_REPUBLISH_DELAY_MS, leaseMs * 2 ** Math.min(Math.max(0, failedBefore), 32));
}

/** No answer came (timeout, lost connection): the primary is away, the host did nothing wrong. */
function unanswered(err: unknown): boolean {
  return err instanceof DnsUpdateError && (err.code === 'ERR_DNS_TIMEOUT' || err.code === 'ERR_DNS_CONNECTION');
}

export class Reconciler {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  /** The last sweep found a whole batch due: more may be waiting, so the next one starts at once. */
  private moreDue = false;
  /** First and last host of the last whole batch: the same batch again means no progress. */
  private lastBatchKey: string | undefined;

  constructor(
    private readonly deps: {
      hosts: HostGate;
      publisher: Publisher;
      leaseMs: number;
      logger: Logger;
      /** Repairs done and failed. */
      telemetry?: Telemetry;
    },
  ) {}

  /** Repair what has expired now; resolves with the number of hosts republished. */
  async sweep(): Promise<number> {
    const { hosts, publisher, leaseMs } = this.deps;
    const repairs: Promise<boolean>[] = [];
    const postponed: string[] = [];
    const due = await hosts.staleLeases(BATCH);
    // A whole batch: more may be due. Every host of it leaves the due range (republished,
    // postponed, backed off, held by another frontend until its lease ends, found clean), so
    // the next sweep starts at once — unless it finds the very same batch (no progress).
    const batchKey = due.length >= BATCH ? `${due[0]}\0${due[due.length - 1]}` : undefined;
    this.moreDue = batchKey !== undefined && batchKey !== this.lastBatchKey;
    this.lastBatchKey = batchKey;
    let republished = 0;
    try {
      for (const fqdn of due) {
        // A primary that just timed out would hold the host's lease through another timeout,
        // and a client's request for it would wait that long: look again later. Requests for
        // such a host republish it anyway (an expired lease is never nochg).
        const zone = publisher.zoneFor(fqdn);
        if (zone !== undefined && publisher.recentlyUnreachable(zone, leaseMs)) {
          postponed.push(fqdn);
          continue;
        }
        const claimed = await hosts.reclaim(fqdn, leaseMs);
        if (!claimed) continue;
        if (zone === undefined) {
          await hosts.release(claimed.lease); // its zone is no longer configured
          continue;
        }
        // In parallel: the zone's sender puts what queues into few UPDATE messages.
        repairs.push(this.republish(fqdn, zone, claimed));
      }
      await hosts.postpone(postponed, leaseMs);
    } finally {
      // Also when a reclaim or the postpone failed: the repairs under way finish first.
      const done = await Promise.all(repairs);
      republished = done.filter(Boolean).length;
    }
    return republished;
  }

  /** Publish a reclaimed host's recorded state and record the outcome; never rejects. */
  private async republish(
    fqdn: string,
    zone: string,
    { host, lease, failedRepublishes, families }: Reclaimed,
  ): Promise<boolean> {
    const { hosts, publisher, leaseMs, logger } = this.deps;
    const telemetry = this.deps.telemetry ?? NO_TELEMETRY;
    const target = { ...pickDns(host), offline: host.state === 'offline' };
    try {
      try {
        // What the interrupted change wrote is rewritten to the stored state; a family it did
        // not write and the store does not know stays as the primary has it (docs/protocol.md, "The update request").
        // Its ACME TXT set too, when it has one: the interrupted change may have been one of it.
        const leave = familiesToLeave(host, families);
        await publisher.publish({ fqdn, zone, previous: host, target, leave, ...storedTxt(host) });
      } catch (err) {
        // Due again later; until then a request may take the host over (and republishes it
        // with its own change), so requests never wait for a primary that is down.
        const refused = !unanswered(err);
        telemetry.repair('failed');
        const retryInMs = refused ? republishDelayMs(leaseMs, failedRepublishes) : leaseMs;
        logger.warn('could not republish an interrupted change yet', {
          host: fqdn,
          error: (err as Error).message,
          refusals: failedRepublishes + (refused ? 1 : 0),
          retryInMs,
        });
        await hosts.release(lease, { republishInMs: retryInMs, failedRepublish: refused });
        return false;
      }
      // The recorded state, published again: not a client's update (its time stays).
      // 'lost': a request took the host over meanwhile; it publishes what it records.
      if ((await hosts.commit(lease, target, { republish: true })) === 'lost') return false;
      telemetry.repair('done');
      logger.warn('republished a host whose change was interrupted', { host: fqdn });
      return true;
    } catch (err) {
      // Redis failed under the commit or release: the lease runs out and the host is due
      // again. Caught here: a sweep that fails meanwhile must not leave a rejection unhandled.
      logger.warn('could not record a repair', { host: fqdn, error: (err as Error).message });
      return false;
    }
  }

  /**
   * Sweep now and then every `intervalMs` until stop(), at once again while whole batches are
   * due (after an outage, repairs are not held to a batch a second). Failures are logged, never thrown.
   */
  start(intervalMs: number): void {
    const tick = () => {
      this.running = this.sweep()
        .then(() => undefined)
        .catch((err: unknown) => {
          this.moreDue = false; // Redis may be down: wait the interval
          this.deps.logger.debug('reconcile sweep failed', { error: (err as Error).message });
        })
        .finally(() => {
          this.running = undefined;
          if (this.timer) this.timer = setTimeout(tick, this.moreDue ? 0 : intervalMs).unref();
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
