/**
 * MxResolver over node:dns: an `mx` target counts when it has an A or AAAA record, asked of
 * every configured resolver at once within config.mx.timeoutMs; a target inside one of our
 * zones must also not be an alias (CNAME), and is asked of that zone's primary too, whose
 * answer wins. Never throws.
 */
import { isIP } from 'node:net';
import { Resolver } from 'node:dns/promises';
import type { MxResolver } from '../app/ports.js';
import type { Config } from '../config/schema.js';
import { zoneOf } from '../core/names.js';
import { askPrimary } from './authoritative.js';

const MX_CACHE_MS = 30_000;
const MX_CACHE_SIZE = 10_000;
/**
 * A primary that answered none of our queries (or refused them) is not asked again for this
 * long: one that drops queries (a firewall that lets the bridge's UPDATEs through over TCP
 * only) would otherwise cost every request with such an mx the whole timeout. One lost
 * answer of two does not count.
 */
const PRIMARY_QUIET_MS = 60_000;
/** What a resolver answers for a name that is not there, or has no record of the type asked. */
const NO_SUCH_RECORD = new Set(['ENODATA', 'ENOTFOUND']);

/** A configured zone, and its primary (asked only when given by address). */
export interface MxZone {
  name: string;
  primary?: { host: string; port: number };
}

type Answer = { ok: boolean; definite: boolean };
type Primary = { host: string; port: number };

export class DnsMxResolver implements MxResolver {
  private readonly timeoutMs: number;
  private readonly servers: readonly string[];
  private readonly zones: readonly { name: string; primary: Primary | undefined }[];
  private readonly zoneNames: readonly string[];

  /** `zones`: the configured zones, where the primary itself would see an alias or a missing address. */
  constructor(mx: Config['mx'], zones: readonly MxZone[] = []) {
    this.timeoutMs = mx.timeoutMs;
    this.servers = mx.resolvers;
    this.zones = zones.map((z) => ({
      name: z.name.toLowerCase(),
      primary: z.primary && isIP(z.primary.host) ? z.primary : undefined,
    }));
    this.zoneNames = this.zones.map((z) => z.name);
  }

  /**
   * Answers are remembered briefly so that clients repeating the same `mx` on every periodic
   * update do not cost a lookup each time: a yes, and a no every resolver gave outright; a
   * lookup that ran out of time is not remembered (one lost packet must not cost every host
   * with that target its MX for the whole period). A target inside our zones is not
   * remembered: it is often another dynamic host, and an MX at a name that has just lost its
   * address makes BIND refuse the whole UPDATE (docs/operators.md, "Nameserver facts"), the host's new address with it.
   */
  private readonly cache = new Map<string, { ok: boolean; until: number }>();
  /** Until when a primary (host:port) is not asked. */
  private readonly quietUntil = new Map<string, number>();

  async resolves(name: string): Promise<boolean> {
    const zone = this.zoneAt(name);
    if (zone) return (await this.lookupInZone(name, zone.primary)).ok;
    const now = Date.now();
    const hit = this.cache.get(name);
    if (hit && hit.until > now) return hit.ok;
    const { ok, definite } = await this.ask(this.servers, name, false);
    if (definite) {
      if (this.cache.size >= MX_CACHE_SIZE) this.cache.delete(this.cache.keys().next().value as string);
      this.cache.delete(name);
      this.cache.set(name, { ok, until: now + MX_CACHE_MS });
    }
    return ok;
  }

  /**
   * Inside our zones the primary is asked beside the resolvers: it holds the records as they
   * are now (a resolver may hold a deleted address for its TTL), and it is what BIND checks
   * the MX against. Its authoritative answer wins; without one (a name below a delegation,
   * a primary that refuses queries or is slow) the resolvers' answer counts.
   */
  private async lookupInZone(name: string, primary: Primary | undefined): Promise<Answer> {
    // Never rejects (see ask); caught anyway, as it may go unawaited when the primary decides.
    const fromResolvers = this.ask(this.servers, name, true).catch((): Answer => ({ ok: false, definite: false }));
    const key = primary && `[${primary.host}]:${primary.port}`;
    if (!primary || !key || (this.quietUntil.get(key) ?? 0) > Date.now()) return fromResolvers;
    const view = await askPrimary(primary, name, this.timeoutMs);
    if (view === 'address' || view === 'alias' || view === 'none') return { ok: view === 'address', definite: true };
    if (view === 'unreachable') this.quietUntil.set(key, Date.now() + PRIMARY_QUIET_MS);
    return fromResolvers;
  }

  /**
   * Ask `servers` at once whether `name` has an address (and, with `checkAlias`, is not an
   * alias), within the timeout. One Resolver per server, any answer with an address wins: a
   * single c-ares Resolver asks the next server only after the first timed out, which with
   * the whole budget as its timeout is never. Fresh ones per lookup, so that cancel() drops
   * exactly this lookup's queries.
   */
  private async ask(servers: readonly string[], name: string, checkAlias: boolean): Promise<Answer> {
    const resolvers = (servers.length > 0 ? servers.map((s) => [s]) : [undefined]).map((list) => {
      const r = new Resolver({ timeout: Math.max(1, Math.round(this.timeoutMs)), tries: 1 });
      if (list) r.setServers(list);
      return r;
    });
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), this.timeoutMs);
    });
    try {
      // An MX at an alias inside the zone makes BIND refuse the whole UPDATE (RFC 2181 §10.3: the address with it, on
      // every retry) and Knot publish a broken MX. Outside our zones the primary cannot tell, and docs/protocol.md,
      // "The update request" asks only for an address. Asked beside the address.
      const alias = checkAlias
        ? Promise.any(resolvers.map((r) => isAlias(r, name))).catch(() => false)
        : Promise.resolve(false);
      const address = Promise.any(resolvers.map((r) => hasAddress(r, name))).then(
        () => ({ found: true, definite: true }),
        (err: AggregateError) => ({ found: false, definite: err.errors.every(saysNoRecord) }),
      );
      const found = await Promise.race([address, deadline]);
      if (found === 'timeout') return { ok: false, definite: false };
      if (!found.found) return { ok: false, definite: found.definite };
      // An alias check still out at the deadline (a resolver that drops CNAME queries) does
      // not count against an address already found.
      const aliased = await Promise.race([alias, deadline.then(() => false)]);
      return { ok: !aliased, definite: true };
    } finally {
      clearTimeout(timer);
      for (const r of resolvers) r.cancel();
    }
  }

  /** The longest configured zone `name` is in: the zone at its apex, else the one core zoneOf names. */
  private zoneAt(name: string): { name: string; primary: Primary | undefined } | undefined {
    const n = name.toLowerCase().replace(/\.$/, '');
    const zone = this.zoneNames.includes(n) ? n : zoneOf(n, this.zoneNames);
    return this.zones.find((z) => z.name === zone);
  }
}

/** Resolves when this resolver finds an A or AAAA at `name`; rejects (with why) otherwise. */
function hasAddress(resolver: Resolver, name: string): Promise<true> {
  const hasRecords = (records: unknown[]): true => {
    if (records.length === 0) throw Object.assign(new Error('no records'), { code: 'ENODATA' });
    return true;
  };
  return Promise.any([resolver.resolve4(name).then(hasRecords), resolver.resolve6(name).then(hasRecords)]);
}

/** Resolves true when this resolver returns a CNAME at `name`; rejects otherwise (no CNAME, or no answer). */
async function isAlias(resolver: Resolver, name: string): Promise<true> {
  const targets = await resolver.resolveCname(name);
  if (targets.length === 0) throw new Error('no CNAME');
  return true;
}

/** Every query of the resolver was answered "no such name / no such record" (not a timeout or failure). */
function saysNoRecord(err: unknown): boolean {
  if (err instanceof AggregateError) return err.errors.every(saysNoRecord);
  return NO_SUCH_RECORD.has((err as NodeJS.ErrnoException).code ?? '');
}
