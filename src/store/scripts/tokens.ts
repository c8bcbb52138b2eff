/** The update token scripts: the login's lookup and checks, and the operator's add and remove. */
import { GUARD_CHECKS, type GuardCheck } from '../../core/admission.js';
import { flag } from '../../core/types.js';
import { ACCOUNT_FIELDS as AF, HOST_FIELDS as HF, TOKEN_FIELDS as TF } from '../keys.js';
import { DROP_TOKEN_COUNT, NOW, TOKEN_CHECKS } from '../lua.js';
import { defineScript, replyArray, replyKind, replyOneOf, replyString } from '../script.js';
import { tokenGuardKeyList, type TokenGuardArgs } from './lease.js';

/** tokenCheck(KEYS, ARGV: as ADMIT_TOKEN's first six and two) → {'ok'} | {'refused', check}. */
export const TOKEN_CHECK = defineScript({
  name: 'ddnsTokenCheck',
  lua: `${NOW}${TOKEN_CHECKS}
return {'ok'}
`,
  numberOfKeys: 6,
  keys: tokenGuardKeyList,
  args: (a: TokenGuardArgs) => [a.tokenHash, flag(a.donator)],
  reply: (raw): 'ok' | GuardCheck => {
    const { kind, rest } = replyKind(raw, ['ok', 'refused'] as const, 'token check');
    return kind === 'ok' ? 'ok' : replyOneOf(rest[0], GUARD_CHECKS, 'token check');
  },
});

export interface FoundToken {
  id: string;
  fqdn: string;
  account: string;
  donator: boolean;
  /** Comma-separated CIDR blocks ('' = anywhere). */
  from: string;
  /** TXT only (TOKEN_FIELDS.acmeOnly). */
  acmeOnly: boolean;
}

/**
 * tokenFind(KEYS: token index (by hash), junk block of the (source, User-Agent) pair, the
 * source's login cool-down; ARGV: key prefix, hash) → {'refused', 'agent'|'login'} (checked
 * first, so a right token costs what a wrong one does) | false (unknown or expired) | {id, fqdn,
 * account, donator '1'/'0', from, acmeOnly '1'/''}. The record's and the account's keys are derived here from
 * the index: a login costs one round trip.
 */
export const TOKEN_FIND = defineScript({
  name: 'ddnsTokenFind',
  lua: `${NOW}
if redis.call('EXISTS', KEYS[2]) > 0 then return {'refused', 'agent'} end
if redis.call('EXISTS', KEYS[3]) > 0 then return {'refused', 'login'} end
local id = redis.call('GET', KEYS[1])
if not id then return false end
local t = redis.call('HMGET', ARGV[1] .. 't:' .. id, '${TF.hash}', '${TF.fqdn}', '${TF.account}', '${TF.expiresAt}', '${TF.from}', '${TF.acmeOnly}')
if t[1] ~= ARGV[2] or not t[2] or not t[3] then return false end
if t[4] and tonumber(t[4]) <= now then return false end
local donator = '0'
if redis.call('HGET', ARGV[1] .. 'a:' .. t[3], '${AF.donator}') == '1' then donator = '1' end
return {id, t[2], t[3], donator, t[5] or '', t[6] or ''}
`,
  numberOfKeys: 3,
  keys: (k: { index: string; junkBlock: string; sourceCooldown: string }) => [k.index, k.junkBlock, k.sourceCooldown],
  args: (a: { keyPrefix: string; hash: string }) => [a.keyPrefix, a.hash],
  reply: (raw): FoundToken | 'agent' | 'login' | undefined => {
    // Lua false arrives as null.
    if (raw === null) return undefined;
    const values = replyArray(raw, 'token find').map((v) => replyString(v, 'token find'));
    if (values[0] === 'refused') return replyOneOf(values[1], ['agent', 'login'] as const, 'token find');
    if (values.length !== 6) throw new Error(`token find: unexpected reply ${JSON.stringify(raw)}`);
    const [id, fqdn, account, donator, from, acmeOnly] = values as [string, string, string, string, string, string];
    return { id, fqdn, account, donator: donator === '1', from, acmeOnly: acmeOnly === '1' };
  },
});

export interface TokenAddKeys {
  host: string;
  account: string;
  token: string;
  index: string;
  hostTokens: string;
}

export interface TokenAddArgs {
  /** The host's owner as read: the token is added only while it still is. */
  owner: string;
  id: string;
  fqdn: string;
  hash: string;
  /** Undefined: never expires. */
  expiresInMs?: number;
  from: readonly string[];
  note: string;
  acmeOnly?: boolean;
}

export type TokenAddReply =
  { kind: 'ok'; createdAt: number; expiresAt: number | null } | { kind: 'changed' | 'exists' };

/**
 * tokenAdd(KEYS: host, account, token, token index, host's token set; ARGV: owner, id, fqdn,
 * hash, expiresInMs ('' = never), from, note, acmeOnly ('1' | '')) → {'ok', createdAt, expiresAt|''} | {'changed'}
 * (the host is gone or has another owner) | {'exists'} (the id or hash is taken).
 */
export const TOKEN_ADD = defineScript({
  name: 'ddnsTokenAdd',
  lua: `${NOW}
if redis.call('HGET', KEYS[1], '${HF.owner}') ~= ARGV[1] then return {'changed'} end
if redis.call('EXISTS', KEYS[3], KEYS[4]) > 0 then return {'exists'} end
local expires = ''
if ARGV[5] ~= '' then expires = ms(now + tonumber(ARGV[5])) end
redis.call('HSET', KEYS[3], '${TF.fqdn}', ARGV[3], '${TF.account}', ARGV[1], '${TF.hash}', ARGV[4], '${TF.createdAt}', ms(now))
if expires ~= '' then redis.call('HSET', KEYS[3], '${TF.expiresAt}', expires) end
if ARGV[6] ~= '' then redis.call('HSET', KEYS[3], '${TF.from}', ARGV[6]) end
if ARGV[7] ~= '' then redis.call('HSET', KEYS[3], '${TF.note}', ARGV[7]) end
if ARGV[8] == '1' then redis.call('HSET', KEYS[3], '${TF.acmeOnly}', '1') end
redis.call('SET', KEYS[4], ARGV[2])
redis.call('SADD', KEYS[5], ARGV[2])
redis.call('HINCRBY', KEYS[2], '${AF.tokenCount}', 1)
return {'ok', ms(now), expires}
`,
  numberOfKeys: 5,
  keys: (k: TokenAddKeys) => [k.host, k.account, k.token, k.index, k.hostTokens],
  args: (a: TokenAddArgs) => [
    a.owner,
    a.id,
    a.fqdn,
    a.hash,
    a.expiresInMs ?? '',
    a.from.join(','),
    a.note,
    a.acmeOnly ? '1' : '',
  ],
  reply: (raw): TokenAddReply => {
    const { kind, rest } = replyKind(raw, ['ok', 'changed', 'exists'] as const, 'token add');
    if (kind !== 'ok') return { kind };
    const expiresAt = replyString(rest[1], 'token add');
    return {
      kind,
      createdAt: Number(replyString(rest[0], 'token add')),
      expiresAt: expiresAt === '' ? null : Number(expiresAt),
    };
  },
});

/**
 * tokenRemove(KEYS: token, token index, host's token set, account; ARGV: id, hash) → 'ok' |
 * 'changed' (the record is no longer the one read).
 */
export const TOKEN_REMOVE = defineScript({
  name: 'ddnsTokenRemove',
  lua: `${DROP_TOKEN_COUNT}
if redis.call('HGET', KEYS[1], '${TF.hash}') ~= ARGV[2] then return 'changed' end
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('SREM', KEYS[3], ARGV[1])
dropTokenCount(KEYS[4], 1)
return 'ok'
`,
  numberOfKeys: 4,
  keys: (k: { token: string; index: string; hostTokens: string; account: string }) => [
    k.token,
    k.index,
    k.hostTokens,
    k.account,
  ],
  args: (a: { id: string; hash: string }) => [a.id, a.hash],
  reply: (raw) => replyOneOf(raw, ['ok', 'changed'] as const, 'token remove'),
});
