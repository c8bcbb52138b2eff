/**
 * MxResolver over node:dns: an `mx` target counts when it has an A or AAAA record,
 * asked of the configured resolvers within config.mx.timeoutMs. Never throws.
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
    // A fresh Resolver per lookup: cancel() then drops exactly this lookup's queries.
    const resolver = new Resolver({ timeout: Math.max(1, Math.round(this.timeoutMs)), tries: 1 });
    if (this.servers.length > 0) resolver.setServers([...this.servers]);
    const hasRecords = (records: unknown[]): true => {
      if (records.length === 0) throw new Error('no records');
      return true;
    };
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), this.timeoutMs);
    });
    try {
      const found = Promise.any([resolver.resolve4(name).then(hasRecords), resolver.resolve6(name).then(hasRecords)]).catch(
        () => false as const,
      );
      return await Promise.race([found, timeout]);
    } finally {
      clearTimeout(timer);
      resolver.cancel();
    }
  }
}
