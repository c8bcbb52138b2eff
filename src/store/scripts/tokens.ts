/** The update token scripts: the login's lookup and checks, and the operator's add and remove. */
import { GUARD_CHECKS, type GuardCheck } from '../../core/admission.js';
import { flag } from '../../core/types.js';
import { ACCOUNT_FIELDS as AF, HOST_FIELDS as HF, TOKEN_FIELDS as TF } from '../keys.js';
import { DROP_TOKEN_COUNT, NOW, TOKEN_CHECKS } from '../lua.js';
import { defineScript, replyArray, replyKind, replyOneOf, replyString } from '../script.js';
import { TOKEN_GUARD_KEYS, type TokenGuardArgs, type TokenGuardKeys } from './lease.js';

/** tokenCheck(KEYS, ARGV: as ADMIT_TOKEN's first six and two) → {'ok'} | {'refused', check}. */
export const TOKEN_CHECK = defineScript({
  name: 'ddnsTokenCheck',
  preamble: `${NOW}${TOKEN_CHECKS}`,
  keys: TOKEN_GUARD_KEYS,
  args: ['tokenHash', 'donator'],
  lua: `
return tokenRefusal(junkBlock, sourceCooldown, token, account, tokenHash, donator) or {'ok'}
`,
  encodeKeys: (k: TokenGuardKeys) => k,
  encodeArgs: (a: TokenGuardArgs) => ({ tokenHash: a.tokenHash, donator: flag(a.donator) }),
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
  /** A gateway TSIG key's algorithm ('' = an HTTP update token). */
  tsig: string;
}

/**
 * tokenFind(KEYS: token index (by hash), junk block of the (source, User-Agent) pair, the
 * source's login cool-down; ARGV: key prefix, hash) → {'refused', 'agent'|'login'} (checked
 * first, so a right token costs what a wrong one does) | false (unknown or expired) | {id, fqdn,
 * account, donator '1'/'0', from, acmeOnly '1'/'', tsig algorithm or ''}. The record's and the account's keys are
 * derived here from the index: a login costs one round trip.
 */
export const TOKEN_FIND = defineScript({
  name: 'ddnsTokenFind',
  preamble: NOW,
  keys: ['index', 'junkBlock', 'sourceCooldown'],
  args: ['keyPrefix', 'hash'],
  lua: `
if redis.call('EXISTS', junkBlock) > 0 then return {'refused', 'agent'} end
if redis.call('EXISTS', sourceCooldown) > 0 then return {'refused', 'login'} end
local id = redis.call('GET', index)
if not id then return false end
local t = redis.call('HMGET', keyPrefix .. 't:' .. id, '${TF.hash}', '${TF.fqdn}', '${TF.account}', '${TF.expiresAt}', '${TF.from}', '${TF.acmeOnly}', '${TF.tsig}')
if t[1] ~= hash or not t[2] or not t[3] then return false end
if t[4] and tonumber(t[4]) <= now then return false end
local donator = '0'
if redis.call('HGET', keyPrefix .. 'a:' .. t[3], '${AF.donator}') == '1' then donator = '1' end
return {id, t[2], t[3], donator, t[5] or '', t[6] or '', t[7] or ''}
`,
  reply: (raw): FoundToken | 'agent' | 'login' | undefined => {
    // Lua false arrives as null.
    if (raw === null) return undefined;
    const values = replyArray(raw, 'token find').map((v) => replyString(v, 'token find'));
    if (values[0] === 'refused') return replyOneOf(values[1], ['agent', 'login'] as const, 'token find');
    if (values.length !== 7) throw new Error(`token find: unexpected reply ${JSON.stringify(raw)}`);
    const [id, fqdn, account, donator, from, acmeOnly, tsig] = values as [
      string,
      string,
      string,
      string,
      string,
      string,
      string,
    ];
    return { id, fqdn, account, donator: donator === '1', from, acmeOnly: acmeOnly === '1', tsig };
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
  /** A gateway TSIG key's algorithm; undefined: an HTTP update token. */
  tsig?: string;
}

export type TokenAddReply =
  { kind: 'ok'; createdAt: number; expiresAt: number | null } | { kind: 'changed' | 'exists' };

/**
 * tokenAdd(KEYS: host, account, token, token index, host's token set; ARGV: owner, id, fqdn,
 * hash, expiresInMs ('' = never), from, note, acmeOnly ('1' | ''), tsig (algorithm | '')) → {'ok', createdAt,
 * expiresAt|''} | {'changed'}
 * (the host is gone or has another owner) | {'exists'} (the id or hash is taken).
 */
export const TOKEN_ADD = defineScript({
  name: 'ddnsTokenAdd',
  preamble: NOW,
  keys: ['host', 'account', 'token', 'index', 'hostTokens'],
  args: ['owner', 'id', 'fqdn', 'hash', 'expiresInMs', 'from', 'note', 'acmeOnly', 'tsig'],
  lua: `
if redis.call('HGET', host, '${HF.owner}') ~= owner then return {'changed'} end
if redis.call('EXISTS', token, index) > 0 then return {'exists'} end
local expires = ''
if expiresInMs ~= '' then expires = ms(now + tonumber(expiresInMs)) end
redis.call('HSET', token, '${TF.fqdn}', fqdn, '${TF.account}', owner, '${TF.hash}', hash, '${TF.createdAt}', ms(now))
if expires ~= '' then redis.call('HSET', token, '${TF.expiresAt}', expires) end
if from ~= '' then redis.call('HSET', token, '${TF.from}', from) end
if note ~= '' then redis.call('HSET', token, '${TF.note}', note) end
if acmeOnly == '1' then redis.call('HSET', token, '${TF.acmeOnly}', '1') end
if tsig ~= '' then redis.call('HSET', token, '${TF.tsig}', tsig) end
redis.call('SET', index, id)
redis.call('SADD', hostTokens, id)
redis.call('HINCRBY', account, '${AF.tokenCount}', 1)
return {'ok', ms(now), expires}
`,
  encodeKeys: (k: TokenAddKeys) => k,
  encodeArgs: (a: TokenAddArgs) => ({
    owner: a.owner,
    id: a.id,
    fqdn: a.fqdn,
    hash: a.hash,
    expiresInMs: a.expiresInMs ?? '',
    from: a.from.join(','),
    note: a.note,
    acmeOnly: a.acmeOnly ? '1' : '',
    tsig: a.tsig ?? '',
  }),
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
  preamble: DROP_TOKEN_COUNT,
  keys: ['token', 'index', 'hostTokens', 'account'],
  args: ['id', 'hash'],
  lua: `
if redis.call('HGET', token, '${TF.hash}') ~= hash then return 'changed' end
redis.call('DEL', token, index)
redis.call('SREM', hostTokens, id)
dropTokenCount(account, 1)
return 'ok'
`,
  reply: (raw) => replyOneOf(raw, ['ok', 'changed'] as const, 'token remove'),
});
