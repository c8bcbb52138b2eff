/**
 * One typed definition per Redis script, after node-redis's defineScript: the Lua text, its
 * keys and named arguments (encoded to KEYS and ARGV here and nowhere else), and its decoded
 * reply. Sent as EVAL the first time on a connection (which loads it), EVALSHA after, and EVAL
 * again on NOSCRIPT (SCRIPT FLUSH).
 */
import { createHash } from 'node:crypto';
import { Command, type Redis } from 'ioredis';
import { fieldsFromFlat, type HashFields } from './codec.js';
import { storeCall } from './redis.js';

export interface ScriptDefinition<K, A, R> {
  /** A name for errors and metrics (unique). */
  readonly name: string;
  readonly lua: string;
  /** How many keys the Lua reads (undefined: it varies); what is sent is keys()'s length. */
  readonly numberOfKeys?: number;
  /** The keys in the order the Lua reads them as KEYS. */
  keys(keys: K): readonly string[];
  /** The arguments in the order the Lua reads them as ARGV. */
  args(args: A): readonly (string | number)[];
  /** The raw reply, decoded (an unexpected shape throws). */
  reply(raw: unknown): R;
}

export function defineScript<K, A, R>(definition: ScriptDefinition<K, A, R>): ScriptDefinition<K, A, R> {
  return definition;
}

const shas = new WeakMap<object, string>();

/** The SHA-1 EVALSHA names a script by, computed once per definition. */
function shaOf(script: { readonly lua: string }): string {
  let sha = shas.get(script);
  if (sha === undefined) shas.set(script, (sha = createHash('sha1').update(script.lua).digest('hex')));
  return sha;
}

/**
 * The scripts each connection has been sent with EVAL: the first call of a script on a connection
 * is an EVAL (which loads it), later ones EVALSHA, as ioredis does. A new connection (a restart of
 * Redis) starts empty; a NOSCRIPT (SCRIPT FLUSH) sends the EVAL again.
 */
const loaded = new WeakMap<object, Set<string>>();

/**
 * EVALSHA (EVAL when the connection has not loaded the script) of an encoded KEYS + ARGV list,
 * replies as strings. One ioredis Command per call, built with its arguments already flat:
 * ioredis's own script commands cost a closure, a promise chain and an array flattening on every
 * call (docs/operators.md, "Performance").
 */
export async function evalScript(
  redis: Redis,
  script: { readonly lua: string },
  keysAndArgs: string[],
): Promise<unknown> {
  const sha = shaOf(script);
  const send = (name: 'evalsha' | 'eval'): Promise<unknown> => {
    const command = new Command(name, [], { replyEncoding: 'utf8' });
    keysAndArgs[0] = name === 'eval' ? script.lua : sha;
    command.args = keysAndArgs;
    void redis.sendCommand(command);
    return command.promise;
  };
  const stream = redis.stream as object | undefined;
  let scripts = stream && loaded.get(stream);
  if (stream && !scripts) loaded.set(stream, (scripts = new Set()));
  if (!scripts?.has(sha)) {
    scripts?.add(sha);
    return send('eval');
  }
  try {
    return await send('evalsha');
  } catch (err) {
    if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
    return send('eval');
  }
}

/** [placeholder for the script, numkeys, ...keys, ...args] as EVALSHA takes them, every one a string. */
export function encodeCall(keyList: readonly string[], argList: readonly (string | number)[]): string[] {
  const out = new Array<string>(2 + keyList.length + argList.length);
  out[0] = '';
  out[1] = String(keyList.length);
  let i = 2;
  for (const k of keyList) out[i++] = k;
  for (const a of argList) out[i++] = typeof a === 'string' ? a : String(a);
  return out;
}

/**
 * Run a script on a client; a Redis failure is StoreUnavailableError, named after `operation`
 * (default: the script's name). A reply of another shape than the definition decodes throws a
 * plain Error (a bug, never an outage).
 */
export async function runScript<K, A, R>(
  redis: Redis,
  script: ScriptDefinition<K, A, R>,
  keys: K,
  args: A,
  operation: string = script.name,
): Promise<R> {
  const call = encodeCall(script.keys(keys), script.args(args));
  const raw = await storeCall(operation, () => evalScript(redis, script, call));
  return script.reply(raw);
}

/** Reply decoding helpers: a shape other than expected is a bug, never a silent default. */
export function replyArray(raw: unknown, script: string): unknown[] {
  if (!Array.isArray(raw)) throw new Error(`${script}: expected an array reply, got ${JSON.stringify(raw)}`);
  return raw;
}

export function replyOneOf<T extends string>(raw: unknown, values: readonly T[], script: string): T {
  if (typeof raw !== 'string' || !(values as readonly string[]).includes(raw)) {
    throw new Error(`${script}: unexpected reply ${JSON.stringify(raw)}`);
  }
  return raw as T;
}

export function replyString(raw: unknown, script: string): string {
  if (typeof raw !== 'string') throw new Error(`${script}: expected a string reply, got ${JSON.stringify(raw)}`);
  return raw;
}

export function replyInteger(raw: unknown, script: string): number {
  if (typeof raw !== 'number' || !Number.isInteger(raw))
    throw new Error(`${script}: expected an integer reply, got ${JSON.stringify(raw)}`);
  return raw;
}

/** A flat [field, value, …] array (Lua HGETALL) as an object. */
export function replyFields(raw: unknown, script: string): HashFields {
  return fieldsFromFlat(replyArray(raw, script));
}

/** The first element of an array reply, which names the kind of the rest (`{'change', …}`). */
export function replyKind<T extends string>(
  raw: unknown,
  kinds: readonly T[],
  script: string,
): { kind: T; rest: unknown[] } {
  const [kind, ...rest] = replyArray(raw, script);
  return { kind: replyOneOf(kind, kinds, script), rest };
}

/** Stored text of a flag that is left out when false ('1' | ''). */
export const presentFlag = (b: boolean): '1' | '' => (b ? '1' : '');
