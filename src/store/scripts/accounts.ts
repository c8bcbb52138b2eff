/** The account scripts of the operator's commands: create, set a field, remove. */
import { flag } from '../../core/types.js';
import { ACCOUNT_FIELDS as AF } from '../keys.js';
import { defineScript, replyInteger, replyOneOf } from '../script.js';

export interface AccountKeys {
  account: string;
  /** The set of account names. */
  accounts: string;
}

/**
 * accountCreate(KEYS: account, account set; ARGV: name, hash, donator, createdAt) → 1 | 0 (exists). Decoded: created.
 */
export const ACCOUNT_CREATE = defineScript({
  name: 'ddnsAccountCreate',
  keys: ['account', 'accounts'],
  args: ['name', 'passwordHash', 'donator', 'createdAt'],
  lua: `
if redis.call('EXISTS', account) == 1 then return 0 end
redis.call('HSET', account, '${AF.passwordHash}', passwordHash, '${AF.donator}', donator, '${AF.createdAt}', createdAt)
redis.call('SADD', accounts, name)
return 1
`,
  encodeArgs: (a: { name: string; passwordHash: string; donator: boolean; createdAt: number }) => ({
    name: a.name,
    passwordHash: a.passwordHash,
    donator: flag(a.donator),
    createdAt: Math.floor(a.createdAt),
  }),
  reply: (raw) => replyInteger(raw, 'account create') === 1,
});

/** A field an operator sets on an account. */
export type SettableAccountField = typeof AF.passwordHash | typeof AF.donator;

/** accountSet(KEYS: account; ARGV: field, value) → 1 | 0 (no such account). Decoded: found. */
export const ACCOUNT_SET = defineScript({
  name: 'ddnsAccountSet',
  keys: ['account'],
  args: ['field', 'value'],
  lua: `
if redis.call('HEXISTS', account, '${AF.passwordHash}') == 0 then return 0 end
redis.call('HSET', account, field, value)
return 1
`,
  encodeArgs: (a: { field: SettableAccountField; value: string }) => a,
  reply: (raw) => replyInteger(raw, 'account update') === 1,
});

/** accountRemove(KEYS: account, account set; ARGV: name) → 'ok' | 'gone' | 'owns hosts' | 'owns tokens'. */
export const ACCOUNT_REMOVE = defineScript({
  name: 'ddnsAccountRemove',
  keys: ['account', 'accounts'],
  args: ['name'],
  lua: `
if redis.call('HEXISTS', account, '${AF.passwordHash}') == 0 then return 'gone' end
if (tonumber(redis.call('HGET', account, '${AF.hostCount}')) or 0) > 0 then return 'owns hosts' end
if (tonumber(redis.call('HGET', account, '${AF.tokenCount}')) or 0) > 0 then return 'owns tokens' end
redis.call('DEL', account)
redis.call('SREM', accounts, name)
return 'ok'
`,
  reply: (raw) => replyOneOf(raw, ['ok', 'gone', 'owns hosts', 'owns tokens'] as const, 'account remove'),
});
