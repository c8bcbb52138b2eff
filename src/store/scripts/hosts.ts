/**
 * The host scripts of the operator's commands: add, remove, set state, and the bulk import.
 * No shadowing across accounts: NESTING in lua.ts.
 */
import type { HostType, SettableHostState } from '../../core/types.js';
import { ACCOUNT_FIELDS as AF, HOST_FIELDS as HF } from '../keys.js';
import { DROP_TOKEN_COUNT, NESTING, NOW } from '../lua.js';
import { defineScript, replyArray, replyInteger, replyKind, replyOneOf, replyString } from '../script.js';

/** A name between a host and its zone's apex: its host key and its nest index. */
export interface BetweenKeys {
  host: string;
  nestIndex: string;
}

export interface HostAddKeys {
  host: string;
  account: string;
  /** The host's own nest index. */
  nestIndex: string;
  /** Those of each name between it and its zone's apex, in the order of `HostAddArgs.between`. */
  between: readonly BetweenKeys[];
}

export interface HostAddArgs {
  owner: string;
  type: HostType;
  fqdn: string;
  /** The names between it and its zone's apex. */
  between: readonly string[];
}

/** A host of another account it would lie below or above (NESTING). */
export interface Shadowing {
  kind: 'below' | 'above';
  name: string;
  owner: string;
}

export type HostAddReply = { kind: 'ok' | 'noaccount' | 'exists' } | Shadowing;

/**
 * hostAdd(KEYS: host, account, its nest index, then per name between it and its zone's apex:
 * that name's host key and nest index; ARGV: owner, type, fqdn, then those names) → {'ok'} |
 * {'noaccount'} | {'exists'} | {'below'|'above', name, owner} (see NESTING).
 */
export const HOST_ADD = defineScript({
  name: 'ddnsHostAdd',
  preamble: NESTING,
  keys: ['host', 'account', 'nestIndex'],
  keyTail: 'betweenKeys',
  args: ['owner', 'hostType', 'fqdn'],
  argTail: 'between',
  lua: `
if redis.call('EXISTS', account) == 0 then return {'noaccount'} end
if redis.call('EXISTS', host) == 1 then return {'exists'} end
local conflict = nestingConflict(owner, nestIndex, betweenKeys, 1, between)
if conflict then return conflict end
redis.call('HSET', host, '${HF.owner}', owner, '${HF.type}', hostType, '${HF.state}', 'active')
redis.call('HINCRBY', account, '${AF.hostCount}', 1)
nest(fqdn, owner, betweenKeys, 1, #between)
return {'ok'}
`,
  encodeKeys: (k: HostAddKeys) => ({
    host: k.host,
    account: k.account,
    nestIndex: k.nestIndex,
    betweenKeys: k.between.flatMap((b) => [b.host, b.nestIndex]),
  }),
  encodeArgs: (a: HostAddArgs) => ({ owner: a.owner, hostType: a.type, fqdn: a.fqdn, between: a.between }),
  reply: (raw): HostAddReply => {
    const { kind, rest } = replyKind(raw, ['ok', 'noaccount', 'exists', 'below', 'above'] as const, 'host add');
    if (kind !== 'below' && kind !== 'above') return { kind };
    return { kind, name: replyString(rest[0], 'host add'), owner: replyString(rest[1], 'host add') };
  },
});

export interface HostRemoveKeys {
  host: string;
  /** The owner's account. */
  account: string;
  pending: string;
  hostTokens: string;
  /** The nest index of each of the host's ancestors (NESTING). */
  nestIndexes: readonly string[];
  /** Each of the host's tokens' record and index, in the order of `HostRemoveArgs.tokenIds`. */
  tokens: readonly { record: string; index: string }[];
}

export interface HostRemoveArgs {
  /** The owner as read: removed only while it still is. */
  owner: string;
  /** The operator's lease ('' = none): removed only while it still holds the host. */
  leaseToken: string;
  fqdn: string;
  /** How many nest indexes `HostRemoveKeys.nestIndexes` holds. */
  ancestors: number;
  /** The host's token ids as read: removed only while they still are. */
  tokenIds: readonly string[];
}

/**
 * hostRemove(KEYS: host, owner account, pending, host's token set, the nest index of each of
 * its ancestors (NESTING), then each token's record and index; ARGV: owner, lease token,
 * fqdn, number of ancestors, then the token ids) → 'ok' | 'gone' | 'changed' (another owner,
 * or other tokens than those read) | 'lost' (lease token given and the lease is no longer
 * that one). The host's update tokens go with it.
 */
export const HOST_REMOVE = defineScript({
  name: 'ddnsHostRemove',
  preamble: DROP_TOKEN_COUNT,
  keys: ['host', 'account', 'pending', 'hostTokens'],
  keyTail: 'indexesAndTokens',
  args: ['owner', 'leaseToken', 'fqdn', 'ancestors'],
  argTail: 'tokenIds',
  lua: `
local stored = redis.call('HGET', host, '${HF.owner}')
if not stored then return 'gone' end
if stored ~= owner then return 'changed' end
if leaseToken ~= '' and redis.call('HGET', host, '${HF.leaseToken}') ~= leaseToken then return 'lost' end
local nAncestors = tonumber(ancestors)
local tokens = #tokenIds
if redis.call('SCARD', hostTokens) ~= tokens then return 'changed' end
for i = 1, tokens do
  if redis.call('SISMEMBER', hostTokens, tokenIds[i]) == 0 then return 'changed' end
end
-- indexesAndTokens: the ancestors' nest indexes, then each token's record and index.
for i = 1, nAncestors do redis.call('HDEL', indexesAndTokens[i], fqdn) end
for i = nAncestors + 1, #indexesAndTokens do redis.call('DEL', indexesAndTokens[i]) end
redis.call('DEL', hostTokens)
dropTokenCount(account, tokens)
redis.call('DEL', host)
redis.call('ZREM', pending, host)
if redis.call('HEXISTS', account, '${AF.passwordHash}') == 1 then
  if redis.call('HINCRBY', account, '${AF.hostCount}', -1) <= 0 then redis.call('HDEL', account, '${AF.hostCount}') end
end
return 'ok'
`,
  encodeKeys: (k: HostRemoveKeys) => ({
    host: k.host,
    account: k.account,
    pending: k.pending,
    hostTokens: k.hostTokens,
    indexesAndTokens: [...k.nestIndexes, ...k.tokens.flatMap((t) => [t.record, t.index])],
  }),
  encodeArgs: (a: HostRemoveArgs) => a,
  reply: (raw) => replyOneOf(raw, ['ok', 'gone', 'changed', 'lost'] as const, 'host remove'),
});

/**
 * hostSetState(KEYS: host; ARGV: state, onlyFrom...) → 1 | 0 (no such host) | {'from', state}
 * (its state is not one of onlyFrom, when any is given: nothing changed). Checked and set in
 * one step, so two operators' changes cannot cross. Going back to active (unblock, reopen)
 * starts the frequency rule afresh; bumping fs makes a release still in flight leave the
 * counters alone.
 */
export const HOST_SET_STATE = defineScript({
  name: 'ddnsHostSetState',
  preamble: NOW,
  keys: ['host'],
  args: ['state'],
  argTail: 'onlyFrom',
  lua: `
if redis.call('HEXISTS', host, '${HF.owner}') == 0 then return 0 end
if #onlyFrom > 0 then
  local current = redis.call('HGET', host, '${HF.state}') or 'active'
  local allowed = false
  for _, from in ipairs(onlyFrom) do if from == current then allowed = true end end
  if not allowed then return {'from', current} end
end
redis.call('HSET', host, '${HF.state}', state)
if state == 'active' then
  redis.call('HDEL', host, '${HF.lastRequest}', '${HF.frequentCount}')
  redis.call('HINCRBY', host, '${HF.frequencySeq}', 1)
  -- Made active again (reopen, unblock): quiet from now, or the quiet-host sweep would close it at once.
  redis.call('HSET', host, '${HF.createdAt}', ms(now))
end
return 1
`,
  encodeArgs: (a: { state: SettableHostState; onlyFrom: readonly string[] }) => a,
  reply: (raw): 'set' | 'gone' | { refused: string } => {
    if (Array.isArray(raw) && raw[0] === 'from' && typeof raw[1] === 'string') return { refused: raw[1] };
    return replyInteger(raw, 'host state') === 1 ? 'set' : 'gone';
  },
});

/** One host of an import batch, with the keys `HostImportKeys.hosts` holds for it at the same place. */
export interface ImportHostArgs {
  /** 1-based index into `HostImportArgs.accounts`. */
  account: number;
  type: HostType;
  fqdn: string;
  /** The names between it and its zone's apex. */
  between: readonly string[];
}

/** One host of an import batch: its host key and nest index, and those of the names between. */
export interface ImportHostKeys extends BetweenKeys {
  between: readonly BetweenKeys[];
}

export interface HostImportKeys {
  /** The batch's distinct accounts, in the order of `HostImportArgs.accounts`. */
  accounts: readonly string[];
  hosts: readonly ImportHostKeys[];
}

export interface HostImportArgs {
  /** The batch's distinct account names. */
  accounts: readonly string[];
  hosts: readonly ImportHostArgs[];
}

/**
 * 'ok' = registered; 'same' = registered already with this owner and type (a re-run of an
 * import); 'exists' = a host of that name with another owner or type (left as is); 'noaccount'.
 */
export type ImportOutcome =
  | { kind: 'ok' }
  | { kind: 'same' }
  | { kind: 'exists'; owner: string; type: string }
  | { kind: 'noaccount' }
  /** It would lie below or above `other`, a host of another account (NESTING in lua.ts). */
  | { kind: 'shadowing'; relation: 'below' | 'above'; other: string; owner: string };

/**
 * hostImport: many hosts in one call, each written as `host add` writes it (o, t, s=active and
 * the owner's `n`), never over an existing host.
 * KEYS: the batch's distinct account keys, then per host: its host key, its nest index, and
 * the host key and nest index of each name between it and its zone's apex.
 * ARGV: accountCount, account names…, then per host: account index (1-based), type, fqdn,
 * the number of names between, those names.
 * → per host: 'ok' | 'noaccount' | 'same' | '=' .. existing type .. ':' .. existing owner |
 * '<' (below) or '>' (above) .. other name .. ' ' .. its owner.
 */
export const HOST_IMPORT = defineScript({
  name: 'ddnsHostImport',
  preamble: NESTING,
  keys: [],
  keyTail: 'batchKeys',
  args: ['accountCount'],
  argTail: 'batch',
  lua: `
-- batchKeys: the accounts, then per host its key, its nest index and those of the names between;
-- batch: the account names, then per host: account index, type, fqdn, count of names between, those.
local keyList, argList = batchKeys, batch
local k = tonumber(accountCount)
local live = {}
local added = {}
for i = 1, k do
  live[i] = redis.call('EXISTS', keyList[i]) == 1
  added[i] = 0
end
local out = {}
local arg = k + 1
local key = k + 1
while arg <= #argList do
  local a = tonumber(argList[arg])
  local t = argList[arg + 1]
  local fqdn = argList[arg + 2]
  local nb = tonumber(argList[arg + 3])
  local names = {}
  for j = 1, nb do names[j] = argList[arg + 3 + j] end
  local hostKey = keyList[key]
  arg = arg + 4 + nb
  if not live[a] then
    out[#out + 1] = 'noaccount'
  elseif redis.call('EXISTS', hostKey) == 1 then
    local o = redis.call('HGET', hostKey, '${HF.owner}') or ''
    local ht = redis.call('HGET', hostKey, '${HF.type}') or ''
    if o == argList[a] and ht == t then out[#out + 1] = 'same'
    else out[#out + 1] = '=' .. ht .. ':' .. o end
  else
    local conflict = nestingConflict(argList[a], keyList[key + 1], keyList, key + 2, names)
    if conflict then
      out[#out + 1] = (conflict[1] == 'below' and '<' or '>') .. conflict[2] .. ' ' .. conflict[3]
    else
      redis.call('HSET', hostKey, '${HF.owner}', argList[a], '${HF.type}', t, '${HF.state}', 'active')
      nest(fqdn, argList[a], keyList, key + 2, nb)
      added[a] = added[a] + 1
      out[#out + 1] = 'ok'
    end
  end
  key = key + 2 + 2 * nb
end
for i = 1, k do
  if added[i] > 0 then redis.call('HINCRBY', keyList[i], '${AF.hostCount}', added[i]) end
end
return out
`,
  encodeKeys: (k: HostImportKeys) => ({
    batchKeys: [
      ...k.accounts,
      ...k.hosts.flatMap((h) => [h.host, h.nestIndex, ...h.between.flatMap((b) => [b.host, b.nestIndex])]),
    ],
  }),
  encodeArgs: (a: HostImportArgs) => ({
    accountCount: a.accounts.length,
    batch: [...a.accounts, ...a.hosts.flatMap((h) => [h.account, h.type, h.fqdn, h.between.length, ...h.between])],
  }),
  reply: (raw) => replyArray(raw, 'host import').map((v) => importOutcome(replyString(v, 'host import'))),
});

function importOutcome(reply: string): ImportOutcome {
  if (reply === 'ok') return { kind: 'ok' };
  if (reply === 'noaccount') return { kind: 'noaccount' };
  if (reply === 'same') return { kind: 'same' };
  if (reply.startsWith('<') || reply.startsWith('>')) {
    const space = reply.indexOf(' ');
    return {
      kind: 'shadowing',
      relation: reply[0] === '<' ? 'below' : 'above',
      other: reply.slice(1, space),
      owner: reply.slice(space + 1),
    };
  }
  if (reply.startsWith('=')) {
    const colon = reply.indexOf(':');
    return { kind: 'exists', type: reply.slice(1, colon), owner: reply.slice(colon + 1) };
  }
  throw new Error(`host import: unexpected outcome ${JSON.stringify(reply)}`);
}

/**
 * quietStamp(KEYS: host; ARGV: now) → 1 | 0: a host the quiet-host sweep found with neither a counted request nor a
 * creation time is quiet from `now` — only while it still exists (a plain HSETNX after a `host remove` would make a
 * hash of one field that `host add` then calls taken).
 */
export const QUIET_STAMP = defineScript({
  name: 'ddnsQuietStamp',
  keys: ['host'],
  args: ['now'],
  lua: `
if redis.call('HEXISTS', host, '${HF.owner}') == 0 then return 0 end
return redis.call('HSETNX', host, '${HF.createdAt}', now)
`,
  reply: (raw) => replyInteger(raw, 'quiet stamp'),
});
