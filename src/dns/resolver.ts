/**
 * MxResolver over node:dns: an `mx` target counts when it has an A or AAAA record, asked of
 * every configured resolver at once within config.mx.timeoutMs; a target inside one of our
 * zones must also not be an alias (CNAME). Never throws.
 */
import { Resolver } from 'node:dns/promises';
import type { MxResolver } from '../app/ports.js';
import type { Config } from '../config/schema.js';

const MX_CACHE_MS = 30_000;
const MX_CACHE_SIZE = 10_000;
/** What a resolver answers for a name that is not there, or has no record of the type asked. */
const NO_SUCH_RECORD = new Set(['ENODATA', 'ENOTFOUND']);

export class DnsMxResolver implements MxResolver {
  private readonly timeoutMs: number;
  private readonly servers: readonly string[];
  private readonly zones: readonly string[];

  /** `zones`: the configured zones, where the primary itself would see an alias. */
  constructor(mx: Config['mx'], zones: readonly string[] = []) {
    this.timeoutMs = mx.timeoutMs;
    this.servers = mx.resolvers;
    this.zones = zones.map((z) => z.toLowerCase());
  }

  /**
   * Answers are remembered briefly so that clients repeating the same `mx` on every periodic
   * update do not cost a lookup each time: a yes, and a no every resolver gave outright; a
   * lookup that ran out of time is not remembered (one lost packet must not cost every host
   * with that target its MX for the whole period).
   */
  private readonly cache = new Map<string, { ok: boolean; until: number }>();

  async resolves(name: string): Promise<boolean> {
    const now = Date.now();
    const hit = this.cache.get(name);
    if (hit && hit.until > now) return hit.ok;
    const { ok, definite } = await this.lookup(name);
    if (definite) {
      if (this.cache.size >= MX_CACHE_SIZE) this.cache.delete(this.cache.keys().next().value as string);
      this.cache.delete(name);
      this.cache.set(name, { ok, until: now + MX_CACHE_MS });
    }
    return ok;
  }

  private async lookup(name: string): Promise<{ ok: boolean; definite: boolean }> {
    // One Resolver per configured server, all asked at once, any answer with an address
    // wins: a single c-ares Resolver asks the next server only after the first timed out,
    // which with the whole budget as its timeout is never. Fresh ones per lookup, so that
    // cancel() drops exactly this lookup's queries.
    const resolvers = (this.servers.length > 0 ? this.servers.map((s) => [s]) : [undefined]).map((servers) => {
      const r = new Resolver({ timeout: Math.max(1, Math.round(this.timeoutMs)), tries: 1 });
      if (servers) r.setServers(servers);
      return r;
    });
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), this.timeoutMs);
    });
    try {
      // An MX at an alias inside the zone makes BIND refuse the whole UPDATE (RFC 2181 §10.3:
      // the address with it, on every retry) and Knot publish a broken MX. Outside our zones
      // the primary cannot tell, and SPEC §2 asks only for an address. Asked beside the address.
      const alias = this.inOurZones(name) ? Promise.any(resolvers.map((r) => isAlias(r, name))).catch(() => false) : Promise.resolve(false);
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

  private inOurZones(name: string): boolean {
    const n = name.toLowerCase().replace(/\.$/, '');
    return this.zones.some((z) => n === z || n.endsWith(`.${z}`));
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
