/**
 * One typed definition per Redis script, after node-redis's defineScript: the Lua text, the
 * names of its keys and arguments (encoded to KEYS and ARGV here and nowhere else, and bound to
 * Lua locals of the same names by a generated prologue), and its decoded reply. Sent as EVAL
 * the first time on a connection (which loads it), EVALSHA after, and EVAL again on NOSCRIPT
 * (SCRIPT FLUSH).
 *
 * Names: the Lua locals are the declared names as they are (camelCase); the definition refuses
 * one that is no Lua identifier, a Lua keyword or global, or a local of its preamble. Fragments
 * (lua.ts) are functions in the preamble, defined before the prologue: they see a key or an
 * argument only as a parameter. A variadic tail is one table; with every declared name one local,
 * no script comes near Lua's limit of 200 locals per function.
 */
import { createHash } from 'node:crypto';
import { Command, type Redis } from 'ioredis';
import { fieldsFromFlat, type HashFields } from './codec.js';
import { storeCall } from './redis.js';

/** What goes to Redis as one KEYS or ARGV element (numbers as their decimal text). */
export type Wire = string | number;

/** The named keys of a definition: one string per declared name, a list for its tail. */
export type KeyObject<N extends readonly string[], T extends string = never> = {
  readonly [P in N[number]]: string;
} & { readonly [P in T]: readonly string[] };

/** The named arguments of a definition: one value per declared name, a list for its tail. */
export type ArgObject<N extends readonly string[], T extends string = never> = {
  readonly [P in N[number]]: Wire;
} & { readonly [P in T]: readonly Wire[] };

/** An object type with every property not in `Allowed` made `never`: an extra name is a compile error. */
export type NoExtra<O, Allowed extends PropertyKey> = O & { readonly [P in Exclude<keyof O, Allowed>]: never };

/**
 * What a script file writes: the Lua, the names of its keys and arguments in KEYS / ARGV order
 * (the Lua reads them as locals of those names: the prologue), and how the caller's objects
 * become those names (encodeKeys / encodeArgs; without one, the caller passes the named object).
 */
export interface ScriptSpec<
  KN extends readonly string[],
  KT extends string,
  AN extends readonly string[],
  AT extends string,
  K,
  A,
  EK,
  EA,
  R,
> {
  /** A name for errors and metrics (unique). */
  readonly name: string;
  /** Helpers defined before the prologue (lua.ts): they see no key or argument but what they are passed. */
  readonly preamble?: string;
  /** The key names, in KEYS order; `keyTail`: the rest of KEYS, as a Lua table of that name. */
  readonly keys: KN;
  readonly keyTail?: KT;
  /** The argument names, in ARGV order; `argTail`: the rest of ARGV, as a Lua table of that name. */
  readonly args: AN;
  readonly argTail?: AT;
  encodeKeys?: (keys: K) => EK & KeyObject<NoInfer<KN>, NoInfer<KT>>;
  encodeArgs?: (args: A) => EA & ArgObject<NoInfer<AN>, NoInfer<AT>>;
  /** The script's own Lua, after the prologue: reads its keys and arguments by name only. */
  readonly lua: string;
  /** The raw reply, decoded (an unexpected shape throws). */
  reply(raw: unknown): R;
}

export interface ScriptDefinition<K, A, R> {
  readonly name: string;
  /** The whole script: preamble, prologue, body. */
  readonly lua: string;
  /** The generated `local host, pending = KEYS[1], KEYS[2]` … lines (the only reads of KEYS and ARGV). */
  readonly prologue: string;
  readonly preamble: string;
  /** The script's own Lua after the prologue. */
  readonly body: string;
  readonly keyNames: readonly string[];
  readonly argNames: readonly string[];
  readonly keyTail?: string;
  readonly argTail?: string;
  /** [placeholder for the script, numkeys, ...KEYS, ...ARGV] as EVALSHA takes them, every one a string. */
  encode(keys: K, args: A): string[];
  /** The raw reply, decoded (an unexpected shape throws). */
  reply(raw: unknown): R;
}

/** Lua's reserved words and the globals a script uses: no key or argument may take their name. */
const LUA_RESERVED = new Set(
  (
    'and break do else elseif end false for function goto if in local nil not or repeat return then true until while ' +
    'KEYS ARGV redis cjson cmsgpack bit struct string table math os type tonumber tostring pairs ipairs next select ' +
    'unpack error pcall assert rawget rawset rawequal setmetatable getmetatable print loadstring _G'
  ).split(' '),
);

/** The locals a preamble defines at its top level (`local x`, `local function f`): a name must not hide one. */
function preambleLocals(preamble: string): Set<string> {
  const out = new Set<string>();
  for (const m of preamble.matchAll(/^local\s+(?:function\s+)?([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)/gm))
    for (const n of m[1]!.split(',')) out.add(n.trim());
  return out;
}

/**
 * The Lua that binds the declared names: `local a, b = KEYS[1], KEYS[2]`, the same for ARGV, and
 * a tail as a table (copied in a loop: unpack has a limit of its own).
 */
function prologueOf(
  name: string,
  keys: readonly string[],
  keyTail: string | undefined,
  args: readonly string[],
  argTail: string | undefined,
  preamble: string,
): string {
  const all = [...keys, ...(keyTail ? [keyTail] : []), ...args, ...(argTail ? [argTail] : [])];
  const hidden = preambleLocals(preamble);
  for (const n of all) {
    if (!/^[A-Za-z_]\w*$/.test(n) || LUA_RESERVED.has(n) || hidden.has(n))
      throw new Error(`script ${name}: ${JSON.stringify(n)} cannot name a Lua local`);
  }
  if (new Set(all).size !== all.length) throw new Error(`script ${name}: a key or argument name is used twice`);
  const bind = (names: readonly string[], tail: string | undefined, array: 'KEYS' | 'ARGV'): string => {
    let out = '';
    if (names.length > 0)
      out += `local ${names.join(', ')} = ${names.map((_, i) => `${array}[${i + 1}]`).join(', ')}\n`;
    if (tail !== undefined) {
      out +=
        names.length === 0
          ? `local ${tail} = ${array}\n`
          : `local ${tail} = {}\nfor i = ${names.length + 1}, #${array} do ${tail}[i - ${names.length}] = ${array}[i] end\n`;
    }
    return out;
  };
  return bind(keys, keyTail, 'KEYS') + bind(args, argTail, 'ARGV');
}

type Encoder = (keys: Record<string, unknown>, args: Record<string, unknown>) => string[];

/**
 * The encoder of one definition, compiled once from its names: one array literal with a plain
 * property read per name (`k.host`, `a.token`), as fast as the hand-written lists it replaces
 * (a loop over the names reading `k[name]` costs about ten times as much on the hot path). The
 * names are checked identifiers (prologueOf), so the generated text holds nothing else. A value
 * of the wrong type (a name missing at run time) throws instead of shifting ARGV.
 */
function compileEncoder(
  name: string,
  keys: readonly string[],
  keyTail: string | undefined,
  args: readonly string[],
  argTail: string | undefined,
): Encoder {
  const fail = (what: string, value: unknown): never => {
    throw new Error(`script ${name}: ${what} is ${typeof value}`);
  };
  const key = (v: unknown, n: string): string => (typeof v === 'string' ? v : fail(`key ${n}`, v));
  const arg = (v: unknown, n: string): string =>
    typeof v === 'string' ? v : typeof v === 'number' ? String(v) : fail(`argument ${n}`, v);
  const count = keyTail === undefined ? `'${keys.length}'` : `String(${keys.length} + k.${keyTail}.length)`;
  const body = [
    `const out = ['', ${count}, ${keys.map((n) => `key(k.${n}, '${n}')`).join(', ')}];`,
    keyTail === undefined ? '' : `for (const v of k.${keyTail}) out.push(key(v, '${keyTail}'));`,
    args.length === 0 ? '' : `out.push(${args.map((n) => `arg(a.${n}, '${n}')`).join(', ')});`,
    argTail === undefined ? '' : `for (const v of a.${argTail}) out.push(arg(v, '${argTail}'));`,
    'return out;',
  ].join('\n');
  return new Function('key', 'arg', `return function encode(k, a) {\n${body}\n};`)(key, arg) as Encoder;
}

/**
 * A script definition from its spec: the prologue generated from the names (once), and an encoder
 * that writes the named values in the declared order straight into the EVALSHA argument list.
 */
export function defineScript<
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
): ScriptDefinition<K, A, R> {
  const preamble = spec.preamble ?? '';
  const prologue = prologueOf(spec.name, spec.keys, spec.keyTail, spec.args, spec.argTail, preamble);
  const keyNames = spec.keys as readonly string[];
  const argNames = spec.args as readonly string[];
  const { keyTail, argTail, encodeKeys, encodeArgs } = spec;
  const compiled = compileEncoder(spec.name, keyNames, keyTail, argNames, argTail);
  const encode = (keys: K, args: A): string[] =>
    compiled(
      (encodeKeys ? encodeKeys(keys) : keys) as Record<string, unknown>,
      (encodeArgs ? encodeArgs(args) : args) as Record<string, unknown>,
    );
  return {
    name: spec.name,
    lua: preamble + prologue + spec.lua,
    prologue,
    preamble,
    body: spec.lua,
    keyNames,
    argNames,
    ...(keyTail === undefined ? {} : { keyTail }),
    ...(argTail === undefined ? {} : { argTail }),
    encode,
    reply: spec.reply,
  };
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
 * A script call written as one Buffer. ioredis builds a command's bytes by appending to a string, two pieces per
 * argument: for an admission's twenty arguments that allocated 4.7 KB per request (the largest single share of a
 * nochg's allocations, BENCHMARKS.md "Where a nochg goes") and left a string of many pieces to flatten and encode for
 * the socket. Here: the length counted first, then one allocation (from node's pool) written in place.
 */
export class ScriptCommand extends Command {
  override toWritable(): Buffer {
    const args = this.args as string[];
    let size = 1 + digits(args.length + 1) + 2 + 1 + digits(this.name.length) + 2 + this.name.length + 2;
    for (const arg of args) {
      const n = Buffer.byteLength(arg);
      size += 1 + digits(n) + 2 + n + 2;
    }
    const out = Buffer.allocUnsafe(size);
    let at = out.write(`*${args.length + 1}\r\n$${this.name.length}\r\n${this.name}\r\n`, 0, 'latin1');
    for (const arg of args) {
      // Arguments are text (script.ts encodes every one as a string): their UTF-8 length, then the bytes.
      const n = Buffer.byteLength(arg);
      out[at++] = 0x24; // $
      at += out.write(String(n), at, 'latin1');
      out[at++] = 0x0d;
      out[at++] = 0x0a;
      at += out.write(arg, at, 'utf8');
      out[at++] = 0x0d;
      out[at++] = 0x0a;
    }
    return out;
  }
}

/** Decimal digits of a non-negative integer. */
function digits(n: number): number {
  let d = 1;
  while (n >= 10) {
    n = Math.floor(n / 10);
    d++;
  }
  return d;
}

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
    const command = new ScriptCommand(name, [], { replyEncoding: 'utf8' });
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
  const call = script.encode(keys, args);
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
