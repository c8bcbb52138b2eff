/**
 * Scripts run for many hosts in one call. Admissions and commits issued in the same turn of the
 * event loop (requests that arrived together; the hosts of one UPDATE message, answered by one
 * reply) go to Redis as one script call that runs the script's body once per host, in order:
 * one command for the client and for Redis instead of one each (docs/operators.md, "Performance").
 *
 * A batchable script is written as a preamble (helpers, the Redis clock) and a body that reads
 * its host's keys and arguments (the prologue binds them by name). The batch form runs the
 * preamble once and the prologue and body as a function per item, with KEYS and ARGV bound to the
 * item's own: the same Lua text, so the same semantics.
 * One call is one atomic step for every item: none sees another's writes half done, exactly as if
 * they had run one after another. An item whose body raises an error fails alone (what it wrote
 * before stays, as with the script alone).
 */
import type { Redis } from 'ioredis';
import {
  defineScript,
  evalScript,
  type ArgObject,
  type KeyObject,
  type NoExtra,
  type ScriptDefinition,
  type ScriptSpec,
} from './script.js';
import { storeCallDone, storeCallStart } from './observe.js';
import { asStoreError } from './redis.js';

export interface BatchableScript<K, A, R> extends ScriptDefinition<K, A, R> {
  /** The batch form of the script (batchLua): the preamble once, the prologue and body per item. */
  readonly batch: { readonly lua: string };
}

/**
 * defineScript for a script runnable alone (runScript) or many at once (ScriptBatcher): its
 * preamble holds only helpers and the clock; the prologue (its named keys and arguments) and its
 * body, ending with a `return` of its reply (never nil), run per item.
 */
export function defineBatchableScript<
  const KN extends readonly string[],
  const AN extends readonly string[],
  R,
  KT extends string = never,
  AT extends string = never,
  K = KeyObject<KN, KT>,
  A = ArgObject<AN, AT>,
  EK = K,
  EA = A,
>(
  spec: ScriptSpec<KN, KT, AN, AT, K, A, NoExtra<EK, KN[number] | KT>, NoExtra<EA, AN[number] | AT>, R>,
): BatchableScript<K, A, R> {
  const definition = defineScript(spec);
  return { ...definition, batch: { lua: batchLua(definition.preamble, definition.prologue + definition.body) } };
}

/**
 * ARGV: n, then for each item its key and argument counts, then every item's arguments; KEYS:
 * every item's keys. Replies: one per item, in order (false when the body returned none; an error
 * reply for an item whose body raised one).
 */
export function batchLua(preamble: string, body: string): string {
  const bound = (text: string) => text.replace(/\bKEYS\b/g, 'KB').replace(/\bARGV\b/g, 'AB');
  return `local KB, AB = {}, {}
${bound(preamble)}
local function one()
${bound(body)}
end
local n = tonumber(ARGV[1])
local out = {}
local ki, ai = 0, 1 + 2 * n
for i = 1, n do
  local nk, na = tonumber(ARGV[2 * i]), tonumber(ARGV[2 * i + 1])
  KB = {unpack(KEYS, ki + 1, ki + nk)}
  AB = {unpack(ARGV, ai + 1, ai + na)}
  ki, ai = ki + nk, ai + na
  -- An item that fails fails alone, as the script alone would: its error is its reply. Except a
  -- demoted primary's (READONLY) or a lost master's (MASTERDOWN): the whole call answers it, at the
  -- top, where the client sees it and asks the Sentinels again (docs/operators.md, "Redis failover").
  local ok, reply = pcall(one)
  if ok then out[i] = reply or false
  else
    local e = reply
    if type(e) ~= 'table' or not e.err then e = {err = tostring(e)} end
    if e.err:find('READONLY', 1, true) or e.err:find('MASTERDOWN', 1, true) then return e end
    out[i] = e
  end
end
return out
`;
}

interface Pending<R> {
  /** The item's call as encode() gives it: [placeholder, numkeys, ...keys, ...args]. */
  call: string[];
  resolve(value: R): void;
  reject(error: unknown): void;
}

/** The most items one batch call carries: bounds how long Redis runs one script. */
export const MAX_BATCH_ITEMS = 64;

/**
 * Queues calls of one script and sends what a turn of the event loop queued as one call (a lone
 * call as the plain script). Each caller gets its own item's reply, decoded, or its own error; a
 * failed call (connection lost, timeout) fails every item of it (StoreUnavailableError, named
 * after `operation`).
 */
export class ScriptBatcher<K, A, R> {
  private queue: Pending<R>[] = [];

  constructor(
    private readonly redis: Redis,
    private readonly script: BatchableScript<K, A, R>,
    private readonly operation: string = script.name,
  ) {}

  run(keys: K, args: A): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      const item = { call: this.script.encode(keys, args), resolve, reject };
      if (this.queue.push(item) === 1) setImmediate(() => this.flush());
    });
  }

  private flush(): void {
    const queued = this.queue;
    this.queue = [];
    for (let i = 0; i < queued.length; i += MAX_BATCH_ITEMS) void this.send(queued.slice(i, i + MAX_BATCH_ITEMS));
  }

  private async send(items: Pending<R>[]): Promise<void> {
    const { script, operation } = this;
    const started = storeCallStart();
    let replies: unknown[];
    try {
      // storeCall's work written out (timed, a failure as StoreUnavailableError): no closure and frame per call.
      let raw: unknown;
      try {
        raw = await evalScript(this.redis, items.length === 1 ? script : script.batch, callOf(items));
      } catch (err) {
        storeCallDone(operation, started, true);
        throw asStoreError(operation, err);
      }
      storeCallDone(operation, started, false);
      if (items.length === 1) replies = [raw];
      else if (!Array.isArray(raw) || raw.length !== items.length)
        throw new Error(`${script.name}: expected ${items.length} replies, got ${JSON.stringify(raw)}`);
      else replies = raw;
    } catch (err) {
      for (const item of items) item.reject(err);
      return;
    }
    items.forEach((item, i) => {
      try {
        const reply = replies[i];
        if (reply instanceof Error) {
          // The call succeeded, this item did not: counted as a failed store call of its own (the metrics).
          storeCallDone(operation, started, true);
          throw asStoreError(operation, reply);
        }
        item.resolve(script.reply(reply));
      } catch (err) {
        item.reject(err);
      }
    });
  }
}

/** A lone item's own call (the plain script), or the batch's. */
function callOf(items: readonly Pending<unknown>[]): string[] {
  return items.length === 1 ? items[0]!.call : encodeBatch(items);
}

function encodeBatch(items: readonly Pending<unknown>[]): string[] {
  // [placeholder, numkeys, every item's keys, n, each item's key and argument counts, every item's arguments].
  const n = items.length;
  let keyCount = 0;
  let argCount = 0;
  for (const { call } of items) {
    const nk = Number(call[1]);
    keyCount += nk;
    argCount += call.length - 2 - nk;
  }
  const out = new Array<string>(2 + keyCount + 1 + 2 * n + argCount);
  out[0] = '';
  out[1] = String(keyCount);
  let k = 2;
  let h = 2 + keyCount;
  out[h++] = String(n);
  let a = h + 2 * n;
  for (const { call } of items) {
    const nk = Number(call[1]);
    out[h++] = call[1]!;
    out[h++] = String(call.length - 2 - nk);
    for (let i = 2; i < 2 + nk; i++) out[k++] = call[i]!;
    for (let i = 2 + nk; i < call.length; i++) out[a++] = call[i]!;
  }
  return out;
}
