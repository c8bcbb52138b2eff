/**
 * Host links in Redis (docs/protocol.md, "IPv6 prefixes"): the HostLinks port over the scripts of scripts/links.ts.
 * A linked host's admission hands out a HostLease, so HostGate.commit and release end it like an update's.
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { HostLinks, LinkedAdmission, LinkedAdmitRequest, LinkedHost } from '../app/ports.js';
import { ConflictError, InvalidInputError, NotFoundError } from '../core/errors.js';
import { normalizeHostname } from '../core/names.js';
import { decodeFamilies, decodeHost } from './codec.js';
import { HostLease } from './host-store.js';
import { HOST_FIELDS, Keys } from './keys.js';
import { execPipeline, storeCall } from './redis.js';
import { runScript } from './script.js';
import { abandonerOf, takingLease } from './abandon.js';
import { NO_COUNT_UNDO } from './scripts/lease.js';
import { ADMIT_LINKED, FORGET, LINK, UNLINK } from './scripts/links.js';

/** How often link and unlink read again when the link changed between their read and their script. */
const ATTEMPTS = 5;

export class RedisLinkStore implements HostLinks {
  constructor(
    private readonly redis: Redis,
    private readonly keys: Keys,
    /** The connection of the host writes (HostGate's, redis.waitReplicas): leases are taken there. */
    private readonly writes: Redis = redis,
  ) {}

  async linkedTo(parent: string): Promise<LinkedHost[]> {
    const members = await storeCall('host links', () => this.redis.smembers(this.keys.hostLinks(parent)));
    if (members.length === 0) return [];
    const pipeline = this.redis.pipeline();
    for (const m of members) pipeline.hmget(this.keys.host(m), HOST_FIELDS.linkParent, HOST_FIELDS.linkIid);
    const replies = (await execPipeline('host links', pipeline)) as (string | null)[][];
    return members
      .flatMap((fqdn, i) => {
        const [pp, iid] = replies[i] ?? [];
        return pp === parent && iid ? [{ fqdn, iid }] : [];
      })
      .sort((a, b) => (a.fqdn < b.fqdn ? -1 : a.fqdn > b.fqdn ? 1 : 0));
  }

  async admitLinked(req: LinkedAdmitRequest): Promise<LinkedAdmission> {
    const token = randomUUID();
    const keys = { host: this.keys.host(req.fqdn), pending: this.keys.pendingChanges() };
    const args = {
      token,
      leaseMs: req.leaseMs,
      parent: req.parent,
      account: req.account,
      iid: req.iid,
      ipv6: req.ipv6,
    };
    // A failure ends the lease it may still take once Redis answers (abandon.ts).
    const reply = await takingLease(abandonerOf(this.writes), keys, token, () =>
      runScript(this.writes, ADMIT_LINKED, keys, args, 'admit linked'),
    );
    if (reply.kind !== 'change') return reply;
    return {
      kind: 'change',
      host: decodeHost(req.fqdn, reply.host),
      // Not counted: releasing it leaves the host's frequency fields as they are.
      lease: new HostLease(req.fqdn, token, NO_COUNT_UNDO, reply.families, reply.takenOver),
      repairDue: reply.repairDue,
      families: decodeFamilies(reply.families),
    };
  }

  async link(fqdn: string, parent: string, iid: string, maxLinks: number): Promise<void> {
    const host = lookupName(fqdn);
    const to = lookupName(parent);
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const former = await this.parentOf(host);
      const reply = await runScript(
        this.redis,
        LINK,
        {
          host: this.keys.host(host),
          parent: this.keys.host(to),
          parentLinks: this.keys.hostLinks(to),
          formerParentLinks: this.keys.hostLinks(former || to),
          hostLinks: this.keys.hostLinks(host),
        },
        { fqdn: host, parent: to, iid, formerParent: former, maxLinks },
        'host link',
      );
      switch (reply.kind) {
        case 'ok':
          return;
        case 'moved':
          continue;
        case 'self':
          throw new InvalidInputError(`host ${host} cannot follow itself`, 'to');
        case 'nohost':
          throw new NotFoundError(`no host ${reply.name}`);
        case 'owner':
          throw new ConflictError(
            `host ${host} belongs to ${reply.hostOwner}, ${to} to ${reply.parentOwner}: only hosts of one account link`,
          );
        case 'type':
          throw new ConflictError(`host ${reply.name} is ${reply.type || 'static'}: only dynamic hosts link`);
        case 'chain-up':
          throw new ConflictError(`host ${to} follows ${reply.name} itself: links do not chain, link to ${reply.name}`);
        case 'chain-down':
          throw new ConflictError(
            `host ${host} has ${reply.count} host${reply.count === 1 ? '' : 's'} linked to it: links do not chain`,
          );
        case 'full':
          throw new ConflictError(`host ${to} has ${maxLinks} linked hosts already, the most one host may have`);
      }
    }
    throw new ConflictError(`host ${host}: its link changed while being set; try again`);
  }

  async unlink(fqdn: string): Promise<string> {
    const host = lookupName(fqdn);
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const parent = await this.parentOf(host);
      const reply = await runScript(
        this.redis,
        UNLINK,
        { host: this.keys.host(host), parentLinks: this.keys.hostLinks(parent || host) },
        { fqdn: host, parent },
        'host unlink',
      );
      if (reply === 'ok') return parent;
      if (reply === 'nohost') throw new NotFoundError(`no host ${host}`);
      if (reply === 'notlinked') throw new NotFoundError(`host ${host} is not linked to another host`);
    }
    throw new ConflictError(`host ${host}: its link changed while being removed; try again`);
  }

  async forget(fqdn: string, parent: string | undefined): Promise<void> {
    const followers = await storeCall('host links', () => this.redis.smembers(this.keys.hostLinks(fqdn)));
    await runScript(
      this.redis,
      FORGET,
      {
        hostLinks: this.keys.hostLinks(fqdn),
        parentLinks: this.keys.hostLinks(parent || fqdn),
        followers: followers.map((f) => this.keys.host(f)),
      },
      { fqdn },
      'host links forget',
    );
  }

  /** The parent the host follows now ('' none). */
  private async parentOf(fqdn: string): Promise<string> {
    return (await storeCall('host link', () => this.redis.hget(this.keys.host(fqdn), HOST_FIELDS.linkParent))) ?? '';
  }
}

/** Operator input: normalised when it is a valid name, else taken as given (→ not found). */
function lookupName(fqdn: string): string {
  return normalizeHostname(fqdn) ?? fqdn.trim().toLowerCase();
}
