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
  preamble: NESTING,
  keys: ['host', 'account', 'nestIndex'],
  keyTail: 'betweenKeys',
  args: ['owner', 'fqdn', 'checkNesting', 'fieldCount'],
  argTail: 'fieldsAndNames',
  lua: `
if redis.call('EXISTS', account) == 0 then return {'noaccount'} end
if redis.call('EXISTS', host) == 1 then return {'exists', redis.call('HGETALL', host)} end
-- fieldsAndNames: fieldCount field/value pairs, then the names between.
local nf = tonumber(fieldCount)
local names = {}
for i = 2 * nf + 1, #fieldsAndNames do names[#names + 1] = fieldsAndNames[i] end
if checkNesting == '1' then
  local conflict = nestingConflict(owner, nestIndex, betweenKeys, 1, names)
  if conflict then return conflict end
end
redis.call('HSET', host, unpack(fieldsAndNames, 1, 2 * nf))
redis.call('HINCRBY', account, '${AF.hostCount}', 1)
nest(fqdn, owner, betweenKeys, 1, #names)
return {'ok'}
`,
  encodeKeys: (k: HostRestoreKeys) => ({
    host: k.host,
    account: k.account,
    nestIndex: k.nestIndex,
    betweenKeys: k.between.flatMap((b) => [b.host, b.nestIndex]),
  }),
  encodeArgs: (a: HostRestoreArgs) => {
    const pairs = Object.entries(a.fields);
    return {
      owner: a.owner,
      fqdn: a.fqdn,
      checkNesting: a.checkNesting ? '1' : '',
      fieldCount: pairs.length,
      fieldsAndNames: [...pairs.flat(), ...a.between],
    };
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
  keys: ['host', 'account', 'token', 'index', 'hostTokens'],
  args: ['owner', 'id', 'hash'],
  argTail: 'fields',
  lua: `
local stored = redis.call('HGET', host, '${HF.owner}')
if not stored then return {'nohost'} end
if stored ~= owner then return {'not-owner', stored} end
if redis.call('EXISTS', token) == 1 then return {'exists', redis.call('HGET', token, '${TF.hash}') or ''} end
if redis.call('EXISTS', index) == 1 then return {'hash-taken'} end
redis.call('HSET', token, unpack(fields))
redis.call('SET', index, id)
redis.call('SADD', hostTokens, id)
redis.call('HINCRBY', account, '${AF.tokenCount}', 1)
return {'ok'}
`,
  encodeKeys: (k: TokenRestoreKeys) => k,
  encodeArgs: (a: TokenRestoreArgs) => ({
    owner: a.owner,
    id: a.id,
    hash: a.hash,
    fields: Object.entries(a.fields).flat(),
  }),
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
