/**
 * Bulk host registration (`host import`, the benchmark): many hosts per round trip, several
 * round trips in flight. Each batch is one Lua script, so it writes exactly what `host add`
 * writes (o, t, s=active and the owner's `n`), never overwrites an existing host, and is
 * atomic against `account remove` (which refuses while `n` > 0).
 */
import type { Redis } from 'ioredis';
import type { HostType } from '../core/types.js';
import { Keys } from './keys.js';
import { storeCall } from './redis.js';
import { runScript } from './script.js';
import { HOST_IMPORT, type ImportHostArgs, type ImportHostKeys, type ImportOutcome } from './scripts/hosts.js';

export type { ImportOutcome } from './scripts/hosts.js';

/** One host to register; `fqdn` already normalised and validated by the caller. */
export interface ImportEntry {
  fqdn: string;
  account: string;
  type: HostType;
  /** The names between it and its zone's apex (core namesBetween): none for a flat name. */
  between?: readonly string[];
}

export interface BulkImportOptions {
  /** Hosts per script call (default 500: ~1 ms of Redis time, short enough not to stall other clients). */
  batchSize?: number;
  /** Script calls in flight (default 8): keeps Redis busy while the next batch is built. */
  maxBatchesInFlight?: number;
}

/**
 * Writes hosts in batches with bounded pipelining. `push` resolves at once unless the
 * in-flight bound is reached (backpressure for a streaming reader); every entry's outcome
 * goes to `onOutcome` in push order per batch. `finish` flushes and waits for the rest.
 */
export class BulkHostImporter {
  private readonly batchSize: number;
  private readonly maxInFlight: number;
  private readonly accountCache = new Map<string, Promise<boolean>>();
  private batch: { entry: ImportEntry; tag: number }[] = [];
  private readonly inFlight = new Set<Promise<void>>();
  private failure: unknown;

  constructor(
    private readonly redis: Redis,
    private readonly keys: Keys,
    private readonly onOutcome: (entry: ImportEntry, outcome: ImportOutcome, tag: number) => void,
    opts: BulkImportOptions = {},
  ) {
    this.batchSize = Math.max(1, opts.batchSize ?? 500);
    this.maxInFlight = Math.max(1, opts.maxBatchesInFlight ?? 8);
  }

  /**
   * Whether an account exists, asked once per name per importer (an import names a few
   * accounts for many hosts). The batch script checks again atomically.
   */
  accountExists(name: string): Promise<boolean> {
    let known = this.accountCache.get(name);
    if (known === undefined) {
      known = storeCall('account exists', () => this.redis.exists(this.keys.account(name))).then((n) => n === 1);
      this.accountCache.set(name, known);
    }
    return known;
  }

  /** Queue one host; `tag` comes back with its outcome (e.g. the input line number). */
  async push(entry: ImportEntry, tag = 0): Promise<void> {
    this.throwIfFailed();
    this.batch.push({ entry, tag });
    if (this.batch.length >= this.batchSize) await this.flush();
  }

  /** Send what is queued and wait for every batch in flight. */
  async finish(): Promise<void> {
    await this.flush();
    await Promise.all([...this.inFlight]);
    this.throwIfFailed();
  }

  private async flush(): Promise<void> {
    if (this.batch.length === 0) return;
    const batch = this.batch;
    this.batch = [];
    while (this.inFlight.size >= this.maxInFlight) await Promise.race([...this.inFlight]);
    this.throwIfFailed();
    const sent = this.send(batch).catch((err: unknown) => {
      this.failure ??= err;
    });
    this.inFlight.add(sent);
    void sent.finally(() => this.inFlight.delete(sent));
  }

  private async send(batch: { entry: ImportEntry; tag: number }[]): Promise<void> {
    const accountIndex = new Map<string, number>();
    const accountKeys: string[] = [];
    const accountNames: string[] = [];
    const hostKeys: ImportHostKeys[] = [];
    const hosts: ImportHostArgs[] = [];
    for (const { entry } of batch) {
      let index = accountIndex.get(entry.account);
      if (index === undefined) {
        index = accountNames.length + 1;
        accountIndex.set(entry.account, index);
        accountNames.push(entry.account);
        accountKeys.push(this.keys.account(entry.account));
      }
      const between = entry.between ?? [];
      hostKeys.push({
        host: this.keys.host(entry.fqdn),
        nestIndex: this.keys.nestIndex(entry.fqdn),
        between: between.map((name) => ({ host: this.keys.host(name), nestIndex: this.keys.nestIndex(name) })),
      });
      hosts.push({ account: index, type: entry.type, fqdn: entry.fqdn, between });
    }
    const keys = { accounts: accountKeys, hosts: hostKeys };
    const outcomes = await runScript(this.redis, HOST_IMPORT, keys, { accounts: accountNames, hosts }, 'host import');
    if (outcomes.length !== batch.length) throw new Error('host import: unexpected script reply');
    batch.forEach(({ entry, tag }, i) => this.onOutcome(entry, outcomes[i]!, tag));
  }

  private throwIfFailed(): void {
    if (this.failure !== undefined) throw this.failure;
  }
}
