/**
 * MxResolver over node:dns: an `mx` target counts when it has an A or AAAA record and is
 * not an alias (CNAME), asked of every configured resolver at once within
 * config.mx.timeoutMs. Never throws.
 */
import { Resolver } from 'node:dns/promises';
import type { MxResolver } from '../app/ports.js';
import type { Config } from '../config/schema.js';

const MX_CACHE_MS = 30_000;
const MX_CACHE_SIZE = 10_000;

export class DnsMxResolver implements MxResolver {
  private readonly timeoutMs: number;
  private readonly servers: readonly string[];

  constructor(mx: Config['mx']) {
    this.timeoutMs = mx.timeoutMs;
    this.servers = mx.resolvers;
  }

  /**
   * Answers are remembered briefly (positive and negative) so that clients repeating the
   * same `mx` on every periodic update do not cost a lookup each time.
   */
  private readonly cache = new Map<string, { ok: boolean; until: number }>();

  async resolves(name: string): Promise<boolean> {
    const now = Date.now();
    const hit = this.cache.get(name);
    if (hit && hit.until > now) return hit.ok;
    const ok = await this.lookup(name);
    if (this.cache.size >= MX_CACHE_SIZE) this.cache.delete(this.cache.keys().next().value as string);
    this.cache.delete(name);
    this.cache.set(name, { ok, until: now + MX_CACHE_MS });
    return ok;
  }

  private async lookup(name: string): Promise<boolean> {
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
    const timeout = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), this.timeoutMs);
    });
    try {
      const usable = Promise.any(resolvers.map((r) => usableTarget(r, name))).catch(() => false as const);
      return await Promise.race([usable, timeout]);
    } finally {
      clearTimeout(timer);
      for (const r of resolvers) r.cancel();
    }
  }
}

/**
 * Resolves true when this resolver finds an A or AAAA at `name` and says `name` is not an
 * alias; rejects otherwise. An MX must not name an alias (RFC 2181 §10.3): BIND refuses
 * the whole UPDATE (the address with it, on every retry), Knot publishes a broken MX. An
 * alias's A query is answered through its CNAME, so the CNAME is asked for itself; a
 * resolver that cannot say (timeout, SERVFAIL) does not count.
 */
async function usableTarget(resolver: Resolver, name: string): Promise<true> {
  const hasRecords = (records: unknown[]): true => {
    if (records.length === 0) throw new Error('no records');
    return true;
  };
  const address = Promise.any([resolver.resolve4(name).then(hasRecords), resolver.resolve6(name).then(hasRecords)]);
  const alias = resolver.resolveCname(name).then(
    (targets) => targets.length > 0,
    (err: NodeJS.ErrnoException) => {
      if (err.code === 'ENODATA' || err.code === 'ENOTFOUND') return false; // no CNAME there
      throw err;
    },
  );
  const [, isAlias] = await Promise.all([address, alias]);
  if (isAlias) throw new Error(`${name} is an alias`);
  return true;
}
