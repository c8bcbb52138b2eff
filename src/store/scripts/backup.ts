/**
 * The restore scripts of `import-all` (docs/operators.md, "Backups"): a host and an update token
 * written whole, as a backup holds them, with the indexes `host add` and `token add` keep.
 */
import { ACCOUNT_FIELDS as AF, HOST_FIELDS as HF, TOKEN_FIELDS as TF } from '../keys.js';
import { NESTING } from '../lua.js';
import type { HashFields } from '../codec.js';
import { defineScript, replyFields, replyKind, replyString } from '../script.js';
import type { BetweenKeys } from './hosts.js';

export interface HostRestoreKeys {
  host: string;
  account: string;
  /** The host's own nest index. */
  nestIndex: string;
  /** Those of each name between it and its zone's apex, in the order of `HostRestoreArgs.between`. */
  between: readonly BetweenKeys[];
}

export interface HostRestoreArgs {
  owner: string;
  fqdn: string;
  /** Refuse a host below or above one of another account (NESTING), as `host add` does. */
  checkNesting: boolean;
  /** The host hash's fields as stored (owner, type and state among them). */
  fields: HashFields;
  between: readonly string[];
}

export type HostRestoreReply =
  | { kind: 'ok' | 'noaccount' }
  /** A host of that name is registered: its fields. */
  | { kind: 'exists'; fields: HashFields }
  | { kind: 'below' | 'above'; name: string; owner: string };

/**
 * hostRestore(KEYS: host, account, its nest index, then per name between it and its zone's apex:
 * that name's host key and nest index; ARGV: owner, fqdn, check nesting ('1'/''), number of
 * field pairs, field, value…, then the names between) → {'ok'} | {'noaccount'} | {'exists',
 * fields…} | {'below'|'above', name, owner}. Written as `host add` writes a host (the owner's
 * `n`, the nest indexes), with every field of the record.
 */
export const HOST_RESTORE = defineScript({
  name: 'ddnsHostRestore',
  lua: `${NESTING}
if redis.call('EXISTS', KEYS[2]) == 0 then return {'noaccount'} end
if redis.call('EXISTS', KEYS[1]) == 1 then return {'exists', redis.call('HGETALL', KEYS[1])} end
local fields = tonumber(ARGV[4])
local names = {unpack(ARGV, 5 + 2 * fields)}
if ARGV[3] == '1' then
  local conflict = nestingConflict(ARGV[1], 3, 4, names)
  if conflict then return conflict end
end
redis.call('HSET', KEYS[1], unpack(ARGV, 5, 4 + 2 * fields))
redis.call('HINCRBY', KEYS[2], '${AF.hostCount}', 1)
nest(ARGV[2], ARGV[1], 4, #names)
return {'ok'}
`,
  keys: (k: HostRestoreKeys) => [k.host, k.account, k.nestIndex, ...k.between.flatMap((b) => [b.host, b.nestIndex])],
  args: (a: HostRestoreArgs) => {
    const pairs = Object.entries(a.fields);
    return [a.owner, a.fqdn, a.checkNesting ? '1' : '', pairs.length, ...pairs.flat(), ...a.between];
  },
  reply: (raw): HostRestoreReply => {
    const kinds = ['ok', 'noaccount', 'exists', 'below', 'above'] as const;
    const { kind, rest } = replyKind(raw, kinds, 'host restore');
    if (kind === 'exists') return { kind, fields: replyFields(rest[0], 'host restore') };
    if (kind !== 'below' && kind !== 'above') return { kind };
    return { kind, name: replyString(rest[0], 'host restore'), owner: replyString(rest[1], 'host restore') };
  },
});

export interface TokenRestoreKeys {
  host: string;
  account: string;
  token: string;
  index: string;
  hostTokens: string;
}

export interface TokenRestoreArgs {
  /** The owner the token belongs to: restored only while the host is still that account's. */
  owner: string;
  id: string;
  /** The token record's fields as stored (its hash among them). */
  fields: HashFields;
  hash: string;
}

export type TokenRestoreReply =
  | { kind: 'ok' | 'nohost' | 'hash-taken' }
  /** The host has another owner. */
  | { kind: 'not-owner'; owner: string }
  /** A token of that id exists: its hash. */
  | { kind: 'exists'; hash: string };

/**
 * tokenRestore(KEYS: host, account, token, token index, host's token set; ARGV: owner, id,
 * hash, field, value…) → {'ok'} | {'nohost'} | {'not-owner', owner} | {'exists', hash of the
 * token of that id} | {'hash-taken'} (another id has that hash). Written as `token add` writes a token (the
 * index, the host's set, the account's `k`), with its times as recorded.
 */
export const TOKEN_RESTORE = defineScript({
  name: 'ddnsTokenRestore',
  lua: `
local owner = redis.call('HGET', KEYS[1], '${HF.owner}')
if not owner then return {'nohost'} end
if owner ~= ARGV[1] then return {'not-owner', owner} end
if redis.call('EXISTS', KEYS[3]) == 1 then return {'exists', redis.call('HGET', KEYS[3], '${TF.hash}') or ''} end
if redis.call('EXISTS', KEYS[4]) == 1 then return {'hash-taken'} end
redis.call('HSET', KEYS[3], unpack(ARGV, 4))
redis.call('SET', KEYS[4], ARGV[2])
redis.call('SADD', KEYS[5], ARGV[2])
redis.call('HINCRBY', KEYS[2], '${AF.tokenCount}', 1)
return {'ok'}
`,
  numberOfKeys: 5,
  keys: (k: TokenRestoreKeys) => [k.host, k.account, k.token, k.index, k.hostTokens],
  args: (a: TokenRestoreArgs) => [a.owner, a.id, a.hash, ...Object.entries(a.fields).flat()],
  reply: (raw): TokenRestoreReply => {
    const { kind, rest } = replyKind(
      raw,
      ['ok', 'nohost', 'hash-taken', 'not-owner', 'exists'] as const,
      'token restore',
    );
    if (kind === 'not-owner') return { kind, owner: replyString(rest[0], 'token restore') };
    if (kind === 'exists') return { kind, hash: replyString(rest[0], 'token restore') };
    return { kind };
  },
});
