/**
 * Bulk host registration (`host import`, the benchmark): many hosts per round trip, several
 * round trips in flight. Each batch is one Lua script, so it writes exactly what `host add`
 * writes (o, t, s=active and the owner's `n`), never overwrites an existing host, and is
 * atomic against `account remove` (which refuses while `n` > 0).
 */
import type { Redis } from 'ioredis';
import type { HostType } from '../core/types.js';
import { Keys } from './keys.js';
import { NESTING } from './lua.js';
import { storeCall } from './redis.js';

/** One host to register; `fqdn` already normalised and validated by the caller. */
export interface ImportEntry {
  fqdn: string;
  account: string;
  type: HostType;
  /** The names between it and its zone's apex (core namesBetween): none for a flat name. */
  between?: readonly string[];
}

/**
 * 'ok' = registered; 'same' = registered already with this owner and type (a re-run of an
 * import); 'exists' = a host of that name with another owner or type (left as is); 'noaccount'.
 */
export type ImportOutcome =
  | { kind: 'ok' }
  | { kind: 'same' }
  | { kind: 'exists'; owner: string; type: string }
  | { kind: 'noaccount' }
  /** It would lie below or above `other`, a host of another account (NESTING in lua.ts). */
  | { kind: 'shadowing'; relation: 'below' | 'above'; other: string; owner: string };

export interface BulkImportOptions {
  /** Hosts per script call (default 500: ~1 ms of Redis time, short enough not to stall other clients). */
  batchSize?: number;
  /** Script calls in flight (default 8): keeps Redis busy while the next batch is built. */
  maxBatchesInFlight?: number;
}

/**
 * KEYS: the batch's distinct account keys, then per host: its host key, its nest index, and
 * the host key and nest index of each name between it and its zone's apex.
 * ARGV: accountCount, account names…, then per host: account index (1-based), type, fqdn,
 * the number of names between, those names.
 * → per host: 'ok' | 'noaccount' | 'same' | '=' .. existing type .. ':' .. existing owner |
 * '<' (below) or '>' (above) .. other name .. ' ' .. its owner.
 */
const HOST_IMPORT = `${NESTING}
local k = tonumber(ARGV[1])
local live = {}
local added = {}
for i = 1, k do
  live[i] = redis.call('EXISTS', KEYS[i]) == 1
  added[i] = 0
end
local out = {}
local arg = k + 2
local key = k + 1
while arg <= #ARGV do
  local a = tonumber(ARGV[arg])
  local t = ARGV[arg + 1]
  local fqdn = ARGV[arg + 2]
  local nb = tonumber(ARGV[arg + 3])
  local names = {unpack(ARGV, arg + 4, arg + 3 + nb)}
  local hostKey = KEYS[key]
  arg = arg + 4 + nb
  if not live[a] then
    out[#out + 1] = 'noaccount'
  elseif redis.call('EXISTS', hostKey) == 1 then
    local o = redis.call('HGET', hostKey, 'o') or ''
    local ht = redis.call('HGET', hostKey, 't') or ''
    if o == ARGV[1 + a] and ht == t then out[#out + 1] = 'same'
    else out[#out + 1] = '=' .. ht .. ':' .. o end
  else
    local conflict = nestingConflict(ARGV[1 + a], key + 1, key + 2, names)
    if conflict then
      out[#out + 1] = (conflict[1] == 'below' and '<' or '>') .. conflict[2] .. ' ' .. conflict[3]
    else
      redis.call('HSET', hostKey, 'o', ARGV[1 + a], 't', t, 's', 'active')
      nest(fqdn, ARGV[1 + a], key + 2, nb)
      added[a] = added[a] + 1
      out[#out + 1] = 'ok'
    end
  end
  key = key + 2 + 2 * nb
end
for i = 1, k do
  if added[i] > 0 then redis.call('HINCRBY', KEYS[i], 'n', added[i]) end
end
return out
`;

const SCRIPT_NAME = 'ddnsHostImport';

type ImportCommand = (numKeys: number, ...args: (string | number)[]) => Promise<unknown>;

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
    if (!(SCRIPT_NAME in redis)) redis.defineCommand(SCRIPT_NAME, { lua: HOST_IMPORT });
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
    const hostKeys: string[] = [];
    const perHost: (string | number)[] = [];
    for (const { entry } of batch) {
      let index = accountIndex.get(entry.account);
      if (index === undefined) {
        index = accountNames.length + 1;
        accountIndex.set(entry.account, index);
        accountNames.push(entry.account);
        accountKeys.push(this.keys.account(entry.account));
      }
      const between = entry.between ?? [];
      hostKeys.push(this.keys.host(entry.fqdn), this.keys.nestIndex(entry.fqdn));
      for (const name of between) hostKeys.push(this.keys.host(name), this.keys.nestIndex(name));
      perHost.push(index, entry.type, entry.fqdn, between.length, ...between);
    }
    const command = (this.redis as unknown as Record<string, ImportCommand>)[SCRIPT_NAME]!.bind(this.redis);
    const reply = await storeCall('host import', () =>
      command(accountKeys.length + hostKeys.length, ...accountKeys, ...hostKeys, accountNames.length, ...accountNames, ...perHost),
    );
    if (!Array.isArray(reply) || reply.length !== batch.length) throw new Error('host import: unexpected script reply');
    batch.forEach(({ entry, tag }, i) => this.onOutcome(entry, outcomeOf(String(reply[i])), tag));
  }

  private throwIfFailed(): void {
    if (this.failure !== undefined) throw this.failure;
  }
}

function outcomeOf(reply: string): ImportOutcome {
  if (reply === 'ok') return { kind: 'ok' };
  if (reply === 'noaccount') return { kind: 'noaccount' };
  if (reply === 'same') return { kind: 'same' };
  if (reply.startsWith('<') || reply.startsWith('>')) {
    const space = reply.indexOf(' ');
    return { kind: 'shadowing', relation: reply[0] === '<' ? 'below' : 'above', other: reply.slice(1, space), owner: reply.slice(space + 1) };
  }
  if (reply.startsWith('=')) {
    const colon = reply.indexOf(':');
    return { kind: 'exists', type: reply.slice(1, colon), owner: reply.slice(colon + 1) };
  }
  throw new Error(`host import: unexpected outcome ${JSON.stringify(reply)}`);
}
