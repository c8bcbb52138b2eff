/**
 * One typed definition per Redis script, after node-redis's defineScript: the Lua text, its
 * keys and named arguments (encoded to KEYS and ARGV here and nowhere else), and its decoded
 * reply. Loaded on a client with ioredis defineCommand: EVALSHA, falling back to EVAL after a
 * restart of Redis.
 */
import type { Redis } from 'ioredis';
import { fieldsFromFlat, type HashFields } from './codec.js';
import { storeCall } from './redis.js';

export interface ScriptDefinition<K, A, R> {
  /** The command name on the client (unique). */
  readonly name: string;
  readonly lua: string;
  /** Undefined: the number varies; it is sent first. */
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

type Command = (...args: (string | number)[]) => Promise<unknown>;

const defined = new WeakMap<Redis, Set<string>>();

/**
 * Run a script on a client (defining it there first); a Redis failure is StoreUnavailableError,
 * named after `operation` (default: the script's name). A reply of another shape than the
 * definition decodes throws a plain Error (a bug, never an outage).
 */
export async function runScript<K, A, R>(
  redis: Redis,
  script: ScriptDefinition<K, A, R>,
  keys: K,
  args: A,
  operation: string = script.name,
): Promise<R> {
  let names = defined.get(redis);
  if (names === undefined) defined.set(redis, (names = new Set()));
  if (!names.has(script.name)) {
    redis.defineCommand(script.name, {
      lua: script.lua,
      ...(script.numberOfKeys === undefined ? {} : { numberOfKeys: script.numberOfKeys }),
    });
    names.add(script.name);
  }
  const command = (redis as unknown as Record<string, Command>)[script.name]!;
  const keyList = script.keys(keys);
  const argList = script.args(args);
  const raw = await storeCall(operation, () =>
    script.numberOfKeys === undefined
      ? command.call(redis, keyList.length, ...keyList, ...argList)
      : command.call(redis, ...keyList, ...argList),
  );
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
