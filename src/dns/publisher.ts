/**
 * The Publisher port over DNS: one ZoneSender per configured zone. Logs one line per
 * failed host change (zone, rcode and an operator hint; never key material).
 */
import type { HostChange, Publisher } from '../app/ports.js';
import type { Config, ZoneConfig } from '../config/schema.js';
import { DnsUpdateError } from '../core/errors.js';
import type { Logger } from '../core/log.js';
import { zoneOf } from '../core/names.js';
import { planChange } from './plan.js';
import { protocolFailure } from './rcode.js';
import { ZoneSender, type ZoneSenderOptions } from './zone-sender.js';

export class DnsPublisher implements Publisher {
  private readonly senders = new Map<string, ZoneSender>();
  private readonly zoneNames: string[];

  constructor(
    zones: readonly ZoneConfig[],
    private readonly dns: Config['dns'],
    private readonly logger: Logger,
    senderOptions: ZoneSenderOptions = {},
  ) {
    for (const zone of zones) this.senders.set(zone.name, new ZoneSender(zone, dns, senderOptions));
    this.zoneNames = zones.map((z) => z.name);
  }

  zoneFor(fqdn: string): string | undefined {
    return zoneOf(fqdn, this.zoneNames);
  }

  async publish(change: HostChange): Promise<void> {
    const sender = this.senders.get(change.zone);
    if (!sender || this.zoneFor(change.fqdn) !== change.zone) {
      throw protocolFailure(change.zone, `${change.fqdn} is not a name under a configured zone ${change.zone}`);
    }
    await this.logFailure(change, sender.send(planChange(change, this.dns.ttl)));
  }

  /** Those of one zone in one message (ZoneSender.sendGroup), each settling as publish does. */
  publishTogether(changes: readonly HostChange[]): Promise<void>[] {
    const out: Promise<void>[] = new Array<Promise<void>>(changes.length);
    const byZone = new Map<ZoneSender, number[]>();
    changes.forEach((change, i) => {
      const sender = this.senders.get(change.zone);
      if (!sender || this.zoneFor(change.fqdn) !== change.zone) out[i] = this.publish(change);
      else byZone.set(sender, [...(byZone.get(sender) ?? []), i]);
    });
    for (const [sender, indexes] of byZone) {
      const sent = sender.sendGroup(indexes.map((i) => planChange(changes[i]!, this.dns.ttl)));
      indexes.forEach((i, k) => {
        out[i] = this.logFailure(changes[i]!, sent[k]!);
      });
    }
    return out;
  }

  private async logFailure(change: HostChange, sent: Promise<void>): Promise<void> {
    try {
      await sent;
    } catch (err) {
      if (err instanceof DnsUpdateError) {
        // The message ends with the operator hint (see rcode.ts); it never holds key material.
        const fields = { zone: err.zone, host: change.fqdn, code: err.code, rcode: err.rcode };
        if (err.retryable) this.logger.warn(`dns update failed after one retry: ${err.message}`, fields);
        else this.logger.error(`dns update failed: ${err.message}`, fields);
      }
      throw err;
    }
  }

  recentlyUnreachable(zone: string, ms: number): boolean {
    return this.senders.get(zone)?.unreachableWithin(ms) ?? false;
  }

  /** Senders for tests and the benchmark (statistics). */
  senderFor(zone: string): ZoneSender | undefined {
    return this.senders.get(zone);
  }

  /** Let outstanding updates finish, then close every connection. */
  async close(): Promise<void> {
    await Promise.all([...this.senders.values()].map((s) => s.close()));
  }
}
