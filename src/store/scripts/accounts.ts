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
  lua: `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], '${AF.passwordHash}', ARGV[2], '${AF.donator}', ARGV[3], '${AF.createdAt}', ARGV[4])
redis.call('SADD', KEYS[2], ARGV[1])
return 1
`,
  numberOfKeys: 2,
  keys: (k: AccountKeys) => [k.account, k.accounts],
  args: (a: { name: string; passwordHash: string; donator: boolean; createdAt: number }) => [
    a.name,
    a.passwordHash,
    flag(a.donator),
    Math.floor(a.createdAt),
  ],
  reply: (raw) => replyInteger(raw, 'account create') === 1,
});

/** A field an operator sets on an account. */
export type SettableAccountField = typeof AF.passwordHash | typeof AF.donator;

/** accountSet(KEYS: account; ARGV: field, value) → 1 | 0 (no such account). Decoded: found. */
export const ACCOUNT_SET = defineScript({
  name: 'ddnsAccountSet',
  lua: `
if redis.call('HEXISTS', KEYS[1], '${AF.passwordHash}') == 0 then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
`,
  numberOfKeys: 1,
  keys: (k: { account: string }) => [k.account],
  args: (a: { field: SettableAccountField; value: string }) => [a.field, a.value],
  reply: (raw) => replyInteger(raw, 'account update') === 1,
});

/** accountRemove(KEYS: account, account set; ARGV: name) → 'ok' | 'gone' | 'owns hosts' | 'owns tokens'. */
export const ACCOUNT_REMOVE = defineScript({
  name: 'ddnsAccountRemove',
  lua: `
if redis.call('HEXISTS', KEYS[1], '${AF.passwordHash}') == 0 then return 'gone' end
if (tonumber(redis.call('HGET', KEYS[1], '${AF.hostCount}')) or 0) > 0 then return 'owns hosts' end
if (tonumber(redis.call('HGET', KEYS[1], '${AF.tokenCount}')) or 0) > 0 then return 'owns tokens' end
redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[2], ARGV[1])
return 'ok'
`,
  numberOfKeys: 2,
  keys: (k: AccountKeys) => [k.account, k.accounts],
  args: (a: { name: string }) => [a.name],
  reply: (raw) => replyOneOf(raw, ['ok', 'gone', 'owns hosts', 'owns tokens'] as const, 'account remove'),
});
