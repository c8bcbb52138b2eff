/**
 * A parent's update that carries an IPv6 prefix (docs/protocol.md, "IPv6 prefixes"): the hosts linked to it get
 * AAAA = prefix + their interface identifier, each under its own lease (not counted by the frequency rule), in the
 * parent's UPDATE message (one per zone), and each is recorded on its own. A linked host that is not active, busy with
 * a change of its own, or of another account now, is left alone.
 */
import type { Logger } from '../core/log.js';
import { addressInPrefix, type Ipv6Prefix } from '../core/prefix.js';
import { familiesToLeave, pickDns, type TargetState } from '../core/types.js';
import { storedTxt } from '../core/txt.js';
import { releaseAfterFailure } from './operator-lease.js';
import type { HostChange, HostGate, HostLinks, Lease, Publisher } from './ports.js';

export interface PrefixFollowersDeps {
  links: HostLinks;
  hosts: Pick<HostGate, 'commit' | 'release'>;
  publisher: Publisher;
  leaseMs: number;
  logger: Logger;
}

interface Follower {
  change: HostChange & { target: TargetState };
  lease: Lease;
  repairDue: boolean;
}

/** The linked hosts of one parent's prefix change, admitted, until they are published and recorded. */
export class PrefixFollowers {
  /** False once a linked host could not follow (busy, or its change failed): the prefix is not recorded then. */
  private followedAll: boolean;

  private constructor(
    private readonly deps: PrefixFollowersDeps,
    readonly prefix: Ipv6Prefix,
    private readonly followers: Follower[],
    followedAll: boolean,
  ) {
    this.followedAll = followedAll;
  }

  /**
   * Admit the hosts linked to `parent` (whose lease the caller holds) for `prefix`. A store failure gives back every
   * lease taken and throws.
   */
  static async admit(
    deps: PrefixFollowersDeps,
    parent: string,
    account: string,
    prefix: Ipv6Prefix,
  ): Promise<PrefixFollowers> {
    const linked = await deps.links.linkedTo(parent);
    const settled = await Promise.allSettled(
      linked.map(async ({ fqdn, iid }) => {
        const zone = deps.publisher.zoneFor(fqdn);
        if (zone === undefined) return { fqdn, skipped: 'no zone' };
        const ipv6 = addressInPrefix(prefix, iid);
        const admission = await deps.links.admitLinked({ fqdn, parent, account, iid, ipv6, leaseMs: deps.leaseMs });
        if (admission.kind === 'nochg') return undefined;
        if (admission.kind === 'skipped') return { fqdn, skipped: admission.reason };
        const { host, lease, repairDue, families } = admission;
        const target: TargetState = { ...pickDns(host), ipv6, offline: false };
        const change = {
          fqdn,
          zone,
          previous: host,
          target,
          leave: familiesToLeave(host, families),
          // Taking over a due repair (an interrupted change, maybe of TXT): the stored TXT set goes out too.
          ...(repairDue ? storedTxt(host) : {}),
        };
        const follower: Follower = { change, lease, repairDue };
        return follower;
      }),
    );
    const followers: Follower[] = [];
    let followedAll = true;
    for (const r of settled) {
      if (r.status !== 'fulfilled' || r.value === undefined) continue;
      if ('lease' in r.value) followers.push(r.value);
      else {
        deps.logger.info('linked host left out of its parent’s prefix change', {
          host: r.value.fqdn,
          parent,
          reason: r.value.skipped,
        });
        // One busy with its own change may follow at the parent's next update: not recorded as followed.
        if (r.value.skipped === 'busy') followedAll = false;
      }
    }
    const failed = settled.find((r) => r.status === 'rejected');
    if (failed !== undefined) {
      // Nothing was sent: a repair that was due stays due.
      await Promise.allSettled(followers.map((f) => deps.hosts.release(f.lease, dueAgain(f))));
      throw failed.reason;
    }
    return new PrefixFollowers(deps, prefix, followers, followedAll);
  }

  /**
   * Publish the parent's change with the followers' (one message per zone), record each follower that the primary
   * applied and give back the others' leases; then settle as `publish(parent)` does.
   */
  async publishWith(parent: HostChange): Promise<void> {
    const { publisher } = this.deps;
    const changes = [parent, ...this.followers.map((f) => f.change)];
    const sent = publisher.publishTogether?.(changes) ?? changes.map((c) => publisher.publish(c));
    const [own, ...theirs] = await Promise.allSettled(sent);
    await Promise.all(theirs.map((r, i) => this.settle(this.followers[i]!, r)));
    if (own!.status === 'rejected') throw own!.reason;
  }

  /** The prefix to record with the parent's commit: once every linked host that could follow did, else none. */
  get recorded(): string | undefined {
    return this.followedAll ? this.prefix.text : undefined;
  }

  private async settle(f: Follower, published: PromiseSettledResult<void>): Promise<void> {
    const { hosts, logger, leaseMs } = this.deps;
    const host = f.change.fqdn;
    try {
      if (published.status === 'rejected') {
        this.followedAll = false;
        logger.warn('linked host could not follow its parent’s prefix', {
          host,
          error: (published.reason as Error).message,
        });
        await releaseAfterFailure(hosts, f.lease, published.reason, f.repairDue, leaseMs);
        return;
      }
      const committed = await hosts.commit(f.lease, f.change.target);
      if (committed !== 'committed') this.followedAll = false;
    } catch (err) {
      // The parent's reply does not depend on it: the store republishes what it holds once the lease ends.
      this.followedAll = false;
      logger.warn('could not record a linked host’s new address', { host, error: (err as Error).message });
    }
  }
}

/** A follower's lease given back unsent: a repair that was due when it was taken stays due. */
function dueAgain(f: Follower): { republishInMs?: number } {
  return f.repairDue ? { republishInMs: 0 } : {};
}
