/**
 * The Lua helpers the scripts are assembled from (the scripts themselves, each one typed
 * definition, are in ./scripts/). Every script runs on Redis's clock (TIME), never a
 * frontend's. Hash field names come from the tables of keys.ts (HOST_FIELDS, ACCOUNT_FIELDS,
 * TOKEN_FIELDS, ECHO_FIELDS), interpolated into the Lua text: no field name is spelled twice.
 *
 * Every fragment is a set of Lua functions that take what they read as parameters (the host's
 * key, the pending set, tokens…): no fragment reads KEYS or ARGV, nor a local another fragment
 * or the script set, but the clock (`now`, `ms`: NOW) and the helper functions it calls. A
 * script's preamble pastes the fragments it needs, in the order they call each other
 * (LEASE_PREAMBLE for the lease scripts); its keys and arguments are bound by name after it
 * (defineScript's prologue), so no helper can see them but as parameters.
 */
import { hash, randomBytes } from 'node:crypto';
import { ACCOUNT_FIELDS as AF, HOST_FIELDS as HF, LEASE_FIELDS, TOKEN_FIELDS as TF } from './keys.js';

/** Shared preamble: `now` in milliseconds from the Redis clock. */
export const NOW = `
if redis.replicate_commands then redis.replicate_commands() end
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local function ms(n) return string.format('%.0f', n) end
`;

/** The fields of a lease record, in the order recordOf (FAMILIES) reads them. */
export const LEASE_RECORD_FIELDS = [HF.leaseFamilies, HF.leaseFamiliesOf, HF.leaseLate, HF.legacyLeaseRecord]
  .map((f) => `'${f}'`)
  .join(', ');

/**
 * The lease record of the host at `key`: the address families ('4', '6', '46', '') the holder of a lease writes,
 * the lease token they belong to, and the late mark, kept until its commit. A repair of an interrupted change
 * rewrites those families (and every one Redis knows) and leaves the rest as the primary has them (docs/protocol.md,
 * "The update request"). A record of another lease than the one asked about (an older version's frontend took the
 * lease over) or none means both. Late: a change that lost its lease may have landed while this holder was in flight;
 * its families were added, and the holder's commit or release leaves a repair due. Versions before kept all three in
 * one field, `<families>[r]:<token>` (legacyLeaseRecord): still read, deleted by the next write.
 */
export const FAMILIES = `
local function union(a, b)
  local has4 = a:find('4', 1, true) or b:find('4', 1, true)
  local has6 = a:find('6', 1, true) or b:find('6', 1, true)
  return (has4 and '4' or '') .. (has6 and '6' or '')
end
-- The families and late mark recorded for the lease \`token\`, from the record's fields (LEASE_RECORD_FIELDS, as
-- HMGET returns them): nil, false when none are.
local function recordOf(r, token)
  if not token or token == '' then return nil, false end
  if r[2] == token then return r[1] or '', r[3] == '1' end
  if r[4] then
    local f, late, t = string.match(r[4], '^([46]*)(r?):(.*)$')
    if t == token then return f, late == 'r' end
  end
  return nil, false
end
local function leaseRecord(key, token)
  if not token or token == '' then return nil, false end
  return recordOf(redis.call('HMGET', key, ${LEASE_RECORD_FIELDS}), token)
end
local function familiesOf(key, token)
  return leaseRecord(key, token) or '46'
end
local function lateFor(key, token)
  local _, late = leaseRecord(key, token)
  return late
end
local function setLeaseRecord(key, families, token, late)
  if late then
    redis.call('HSET', key, '${HF.leaseFamilies}', families, '${HF.leaseFamiliesOf}', token, '${HF.leaseLate}', '1')
    redis.call('HDEL', key, '${HF.legacyLeaseRecord}')
  else
    redis.call('HSET', key, '${HF.leaseFamilies}', families, '${HF.leaseFamiliesOf}', token)
    redis.call('HDEL', key, '${HF.leaseLate}', '${HF.legacyLeaseRecord}')
  end
end
local function widen(key, lk, families)
  setLeaseRecord(key, union(familiesOf(key, lk), families), lk, true)
end
local function isLeaseField(f)
  return ${LEASE_FIELDS.map((f) => `f == '${f}'`).join(' or ')}
end
`;

/** Hex digits of the nonce that starts a blinded digest. */
const BLIND_NONCE_HEX = 32;

/**
 * The login checks, in the same script before the admission, for a request whose
 * credentials were verified (by the fast path's cache, or just now by the full path): the
 * request then costs one round trip, and a password changed since stops it at once.
 * guardRefusal(junkBlock, sourceCooldown, accountCooldown, account): the junk block of its
 * (source, User-Agent) pair, the login cool-downs of the source and the account, the account
 * hash; digest: the blinded digest of the stored password hash the credentials were verified
 * against (blindDigest); donator: the flag ('1'/'0') they were verified with; passwordOnly: '1'
 * to check only those (the full path made the others itself). → {'refused', check} with
 * nothing written, or nil: 'agent' (junk block), 'login' (cool-down), 'stale' (the account
 * changed since the verification, or credentials nobody verified: blindDigest(''), which never
 * matches).
 */
export const GUARD = `
local function guardRefusal(junkBlock, sourceCooldown, accountCooldown, account, digest, donator, passwordOnly)
  if passwordOnly ~= '1' and redis.call('EXISTS', junkBlock, sourceCooldown, accountCooldown) > 0 then
    if redis.call('EXISTS', junkBlock) > 0 then return {'refused', 'agent'} end
    return {'refused', 'login'}
  end
  local login = redis.call('HMGET', account, '${AF.passwordHash}', '${AF.donator}')
  local stored = '0'
  if login[2] == '1' then stored = '1' end
  local nonce = string.sub(digest, 1, ${BLIND_NONCE_HEX})
  if not login[1] or redis.sha1hex(nonce .. redis.sha1hex(login[1])) ~= string.sub(digest, ${BLIND_NONCE_HEX + 1}) or stored ~= donator then return {'refused', 'stale'} end
  return nil
end
`;

/**
 * What guardRefusal's `digest` carries for the digest of a stored password hash (hashDigest in auth): a
 * fresh nonce and the SHA-1 of nonce and digest, so the argument differs on every request and
 * says nothing of the credentials (docs/security.md, "No password oracle"). '' (nobody verified
 * these credentials: the fast path's probe) hashes the nonce with NEVER_A_DIGEST in its place, which no
 * account matches: the same command, refused by the same checks, and the same work and random bytes
 * here (a right and a wrong password draw on the block alike).
 */
export function blindDigest(digest: string): string {
  const nonce = BLINDING.hex(BLIND_NONCE_HEX / 2);
  return nonce + hash('sha1', nonce + (digest === '' ? NEVER_A_DIGEST : digest), 'hex');
}

/** As long as a SHA-1 in hex, and never one (not hex): the script's SHA-1 of nonce and digest cannot match it. */
const NEVER_A_DIGEST = 'x'.repeat(40);

/**
 * Random bytes taken from a block drawn 4 KiB at a time: one call into the system's random source per couple of
 * hundred requests, not two per request (each cost ~8 µs and a getpid(2): OpenSSL's fork check). Every byte is used
 * once; the block lives only in this process.
 */
class RandomBlock {
  private block = Buffer.alloc(0);
  private at = 0;

  constructor(private readonly size: number) {}

  /** `bytes` fresh random bytes as hex. */
  hex(bytes: number): string {
    if (this.at + bytes > this.block.length) {
      this.block = randomBytes(Math.max(this.size, bytes));
      this.at = 0;
    }
    const out = this.block.toString('hex', this.at, this.at + bytes);
    this.at += bytes;
    return out;
  }
}

const BLINDING = new RandomBlock(4096);

/**
 * The login checks of an update token (docs/security.md, "Update tokens"):
 * tokenRefusal(junkBlock, sourceCooldown, tokenKey, account): the junk block of the (source,
 * User-Agent) pair, the login cool-down of the source (not the account's: nobody can lock a
 * token out), the token record, the owner account; tokenHash, donator: the token's hash and the
 * donator flag it was looked up with. → {'refused', check}, nothing written, or nil: 'stale'
 * when the token was revoked, has expired (Redis clock) or its account's donator flag changed.
 */
export const TOKEN_CHECKS = `
local function tokenRefusal(junkBlock, sourceCooldown, tokenKey, account, tokenHash, donator)
  if redis.call('EXISTS', junkBlock) > 0 then return {'refused', 'agent'} end
  if redis.call('EXISTS', sourceCooldown) > 0 then return {'refused', 'login'} end
  local t = redis.call('HMGET', tokenKey, '${TF.hash}', '${TF.expiresAt}')
  if t[1] ~= tokenHash or (t[2] and tonumber(t[2]) <= now) then return {'refused', 'stale'} end
  local stored = '0'
  if redis.call('HGET', account, '${AF.donator}') == '1' then stored = '1' end
  if stored ~= donator then return {'refused', 'stale'} end
  return nil
end
`;

/** Count `n` tokens less on the account hash `accountKey` (the field goes at zero). */
export const DROP_TOKEN_COUNT = `
local function dropTokenCount(accountKey, n)
  if n > 0 and redis.call('HEXISTS', accountKey, '${AF.passwordHash}') == 1 then
    if redis.call('HINCRBY', accountKey, '${AF.tokenCount}', -n) <= 0 then redis.call('HDEL', accountKey, '${AF.tokenCount}') end
  end
end
`;

/**
 * Leave the lease of the host at `key` expired now and due in the `pending` set `inMs` later,
 * for reclaim to publish the stored state again; `token` also sets the lease token (`r:lost`:
 * the lease had been dropped by the newer holder).
 */
export const REPAIR_DUE = `
local function repairDue(key, pending, inMs, token)
  if token then redis.call('HSET', key, '${HF.leaseToken}', token) end
  redis.call('HSET', key, '${HF.leaseUntil}', ms(now))
  redis.call('ZADD', pending, now + inMs, key)
end
`;

/**
 * A change whose lease was taken over (now lk, '' or false when nobody holds it) may still
 * land after the newer holder's: with nobody holding the host, a repair of what it wrote
 * (`families`, and what Redis records) is due in `inMs` (token r:lost); a holder in flight
 * adds those families to its own and leaves a repair due when it is done (FAMILIES' late mark).
 */
export const LOST_CHANGE = `
local function lostChange(key, pending, lk, inMs, families)
  if not lk or lk == '' then
    repairDue(key, pending, inMs, 'r:lost')
    setLeaseRecord(key, union(families, ''), 'r:lost', false)
  else
    widen(key, lk, families)
  end
end
-- The holder is done with its lease: it goes, unless a change that lost the lease may have
-- landed meanwhile (late): then a repair is due now.
-- \`also\`: more fields of the host to delete in the same HDEL (a commit's emptied ones), or nil.
local function endLease(key, pending, late, also)
  also = also or {}
  if late then
    redis.call('HDEL', key, '${HF.republishFailures}', unpack(also))
    repairDue(key, pending, 0)
  else
    redis.call('HDEL', key, '${HF.republishFailures}', ${LEASE_FIELDS.map((f) => `'${f}'`).join(', ')}, unpack(also))
    redis.call('ZREM', pending, key)
  end
end
`;

/**
 * Undo one request's frequency count (`key`: host; prevFl, prevFc: what it found; seq, fl:
 * the fs and fl it wrote) unless a later request counted since (fs moved on) or the host is
 * another one now (removed and added again: its own fs may have reached the same number, but
 * not at the same millisecond): `dnserr` and `911` do not count.
 */
export const UNDO_COUNT = `
local function undoCount(key, prevFl, prevFc, seq, countedAt)
  local counted = redis.call('HMGET', key, '${HF.frequencySeq}', '${HF.lastRequest}')
  if counted[1] ~= seq or counted[2] ~= countedAt then return end
  if prevFl == '' then redis.call('HDEL', key, '${HF.lastRequest}') else redis.call('HSET', key, '${HF.lastRequest}', prevFl) end
  if prevFc == '' then redis.call('HDEL', key, '${HF.frequentCount}') else redis.call('HSET', key, '${HF.frequentCount}', prevFc) end
end
`;

/**
 * The end of a lease `token` takes for `length` ms, given the host's abandoned-lease mark (HOST_FIELDS.leaseAbandoned,
 * nil or false when absent): now when its requester gave up before this admission ran (ABANDON left the token there
 * from another connection), so the lease ends as it is taken and is due for the reconciler at once.
 */
export const LEASE_END = `
local function leaseEndFor(marks, token, length)
  if marks and marks ~= '' and string.find(' ' .. marks .. ' ', ' ' .. token .. ' ', 1, true) then return now end
  return now + length
end
`;

/**
 * Take the lease of the host at `key` (`token`, for `leaseMs` ms, writing `families`: see
 * FAMILIES), due in the `pending` set at its end; returns the host's fields without the lease
 * ones (read first: only lease fields are written).
 */
export const TAKE_LEASE = `
local function takeLease(key, pending, families, token, leaseMs)
  local flat = redis.call('HGETALL', key)
  local out, marks = {}, nil
  for i = 1, #flat, 2 do
    if flat[i] == '${HF.leaseAbandoned}' then marks = flat[i + 1] end
    if not isLeaseField(flat[i]) then out[#out + 1] = flat[i]; out[#out + 1] = flat[i + 1] end
  end
  local leaseEnd = leaseEndFor(marks, token, tonumber(leaseMs))
  redis.call('HSET', key, '${HF.leaseToken}', token, '${HF.leaseUntil}', ms(leaseEnd))
  setLeaseRecord(key, families, token, false)
  redis.call('ZADD', pending, leaseEnd, key)
  return out
end
`;

/** The tally fields in the order tallyFrom reads them (an HMGET's). */
export const TALLY_FIELDS = [
  HF.tallyHour,
  HF.tallyGood,
  HF.tallyNochg,
  HF.tallyRefused,
  HF.tallyFailed,
  HF.tallyEarlier,
]
  .map((f) => `'${f}'`)
  .join(', ');

/**
 * The last request of a host and its counts by the hour (docs/operators.md, "The last request of a host";
 * core/request-log.ts reads them). noted(h, reply, kind, source, agent, out, stamp) → `out` with the fields to add to
 * the script's HSET of the host: the request's time (`stamp`: the ms(now) the script made already, if any), reply
 * (dyndns2's word; '' while in flight), source and User-Agent, and its count of `kind` ('g' good, 'n' nochg, 'r'
 * refused, 'f' failed, '' none) in the current hour. `h` holds the host's tally fields (HGETALL's, or tallyOf's).
 * tallied(h, kind, out): only the count, one field rewritten within the hour. When the hour turns, the last one joins
 * the earlier ones, pruned to 24: once an hour per host.
 */
export const REQUEST_LOG = `
-- The tally fields of an HMGET of TALLY_FIELDS from index i, as a table like the host's.
local function tallyFrom(t, i)
  return {['${HF.tallyHour}'] = t[i] or nil, ['${HF.tallyGood}'] = t[i + 1] or nil, ['${HF.tallyNochg}'] = t[i + 2] or nil,
    ['${HF.tallyRefused}'] = t[i + 3] or nil, ['${HF.tallyFailed}'] = t[i + 4] or nil, ['${HF.tallyEarlier}'] = t[i + 5] or nil}
end
local TALLY_FIELD = {g = '${HF.tallyGood}', n = '${HF.tallyNochg}', r = '${HF.tallyRefused}', f = '${HF.tallyFailed}'}
local function tallied(h, kind, out)
  if kind == '' then return out end
  local hour = math.floor(now / 3600000)
  local ch = tonumber(h['${HF.tallyHour}'])
  local field = TALLY_FIELD[kind]
  -- The hour last counted: one count goes up.
  if ch == hour then
    out[#out + 1] = field; out[#out + 1] = tostring((tonumber(h[field]) or 0) + 1)
    return out
  end
  if ch ~= nil then
    local kept = {}
    for e in string.gmatch(h['${HF.tallyEarlier}'] or '', '[^,]+') do
      local eh = tonumber(string.match(e, '^%d+'))
      if eh and eh > hour - 24 then kept[#kept + 1] = e end
    end
    if ch > hour - 24 then
      kept[#kept + 1] = string.format('%.0f %s %s %s %s', ch, h['${HF.tallyGood}'] or '0', h['${HF.tallyNochg}'] or '0',
        h['${HF.tallyRefused}'] or '0', h['${HF.tallyFailed}'] or '0')
    end
    out[#out + 1] = '${HF.tallyEarlier}'; out[#out + 1] = table.concat(kept, ',')
  end
  out[#out + 1] = '${HF.tallyHour}'; out[#out + 1] = string.format('%.0f', hour)
  for k, f in pairs(TALLY_FIELD) do out[#out + 1] = f; out[#out + 1] = k == kind and '1' or '0' end
  return out
end
local function noted(h, reply, kind, source, agent, out, stamp)
  out[#out + 1] = '${HF.requestAt}'; out[#out + 1] = stamp or ms(now)
  -- A client's next request mostly repeats its reply, source and agent: only what differs is written.
  if h['${HF.requestReply}'] ~= reply then out[#out + 1] = '${HF.requestReply}'; out[#out + 1] = reply end
  if h['${HF.requestSource}'] ~= source then out[#out + 1] = '${HF.requestSource}'; out[#out + 1] = source end
  if h['${HF.requestAgent}'] ~= agent then out[#out + 1] = '${HF.requestAgent}'; out[#out + 1] = agent end
  return tallied(h, kind, out)
end
local function tallyOf(key)
  local t = redis.call('HMGET', key, ${TALLY_FIELDS})
  return tallyFrom(t, 1)
end
`;

/**
 * The host's checks at an admission, the address change's and the TXT change's alike:
 * hostAdmission(key, account) reads the host's fields into `h`; unknown, another account's, not
 * dynamic, closed or blocked: rejected; a lease another request holds: busy. → the refusal (the
 * script's reply; with h when the host is the account's: closed or blocked), or nil, h, state.
 */
export const HOST_ADMISSION = `
local function hostAdmission(key, account)
  local flat = redis.call('HGETALL', key)
  local h = {}
  for i = 1, #flat, 2 do h[flat[i]] = flat[i + 1] end
  if h['${HF.owner}'] == nil then return {'rejected', 'unknown-host'} end
  if h['${HF.owner}'] ~= account then return {'rejected', 'not-owner'} end
  if h['${HF.type}'] ~= 'dynamic' then return {'rejected', 'not-dynamic'} end
  local state = h['${HF.state}'] or 'active'
  if state == 'closed' then return {'rejected', 'closed'}, h end
  if state == 'blocked' then return {'rejected', 'abuse'}, h end
  if h['${HF.leaseToken}'] ~= nil and h['${HF.leaseToken}'] ~= '' and (tonumber(h['${HF.leaseUntil}']) or 0) > now then return {'busy'} end
  return nil, h, state
end
`;

/**
 * What every lease script (admit, commit, release, reclaim, host claim) starts with: the Redis
 * clock, then the helpers in the order they depend on each other.
 */
export const LEASE_PREAMBLE = `${NOW}${FAMILIES}${REPAIR_DUE}${UNDO_COUNT}${LOST_CHANGE}${LEASE_END}${TAKE_LEASE}${REQUEST_LOG}`;

/**
 * No shadowing across accounts (docs/security.md): a host must not sit below or above a host of
 * another account, or one's wildcard answers for the other's name. Each host is recorded in the
 * nest index (`{p}d:{name}`: fqdn → owner) of every name between it and its zone's apex; flat
 * names (directly below the apex) record nothing.
 * nestingConflict: for a host `owner` would register, with its own nest index `own` and, in the
 * table `keys` from index `first`, the host key and nest index of each name in `names` (those
 * between it and the apex): {'below', name, owner} | {'above', name, owner} | false.
 * nest: record `fqdn` in the nest index of each of those `count` names.
 */
export const NESTING = `
local function nestingConflict(owner, own, keys, first, names)
  for i, name in ipairs(names) do
    local o = redis.call('HGET', keys[first + 2 * (i - 1)], '${HF.owner}')
    if o and o ~= owner then return {'below', name, o} end
  end
  local below = redis.call('HGETALL', own)
  for i = 1, #below, 2 do
    if below[i + 1] ~= owner then return {'above', below[i], below[i + 1]} end
  end
  return false
end
local function nest(fqdn, owner, keys, first, count)
  for i = 1, count do redis.call('HSET', keys[first + 2 * i - 1], fqdn, owner) end
end
`;
