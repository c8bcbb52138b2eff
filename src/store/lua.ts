/**
 * The Lua scripts: every read-decide-write step runs as one script, so any number of
 * frontends on one Redis count exactly. Time comes from Redis (TIME), never from a
 * frontend's clock. Field names are those of keys.ts (HOST_FIELDS, ACCOUNT_FIELDS).
 * Loaded with ioredis defineCommand: EVALSHA, falling back to EVAL after a restart.
 */
import type { Redis } from 'ioredis';

/** Shared preamble: `now` in milliseconds from the Redis clock. */
const NOW = `
if redis.replicate_commands then redis.replicate_commands() end
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local function ms(n) return string.format('%.0f', n) end
`;

/**
 * The address families ('4', '6', '46', '') a lease's holder writes, kept with the lease in
 * the host's 'la' as '<families>[r]:<lease token>' until its commit: a repair of an interrupted
 * change rewrites those (and every family Redis knows) and leaves the rest as the primary has
 * them (docs/protocol.md, "The update request"). A record that belongs to another lease than the one asked about (an older
 * version's frontend took the lease over) or none means both. 'r' (late): a change that lost
 * its lease may have landed while this holder was in flight; its families were added, and
 * the holder's commit or release leaves a repair due.
 */
const FAMILIES = `
local function union(a, b)
  local has4 = a:find('4', 1, true) or b:find('4', 1, true)
  local has6 = a:find('6', 1, true) or b:find('6', 1, true)
  return (has4 and '4' or '') .. (has6 and '6' or '')
end
local function familiesOf(la, token)
  if la and token and token ~= '' then
    local f, t = string.match(la, '^([46]*)r?:(.*)$')
    if t == token then return f end
  end
  return '46'
end
local function lateFor(la, token)
  if not la or not token then return false end
  return string.match(la, '^[46]*r:(.*)$') == token
end
local function widen(lk, families)
  local la = redis.call('HGET', KEYS[1], 'la')
  redis.call('HSET', KEYS[1], 'la', union(familiesOf(la, lk), families) .. 'r:' .. lk)
end
`;

/**
 * admit(KEYS: host, pending; ARGV: account, minIntervalMs, maxFrequent, leaseMs, token, mode,
 * families, [field, value]…) → {kind} | {'change', hostFlat, prevFl, prevFc, seq, repairDue, la, takenOver}.
 * repairDue = '1': the lease taken over had expired (a repair was due), else ''.
 * mode 'count' = only the frequency rule; 'expect' = compare the field/value pairs
 * (absent field = '', flag '0' = ''). families: the address families the request writes
 * ('4', '6', '46', ''). la: those the change must write in full (kept with the lease as
 * 'la'); takenOver: those of the expired lease it took over ('' when none). The body reads
 * its arguments from `A` (see GUARD).
 */
const ADMIT_BODY = `
local key = KEYS[1]
local flat = redis.call('HGETALL', key)
local h = {}
for i = 1, #flat, 2 do h[flat[i]] = flat[i + 1] end
if h['o'] == nil then return {'rejected', 'unknown-host'} end
if h['o'] ~= A[1] then return {'rejected', 'not-owner'} end
if h['t'] ~= 'dynamic' then return {'rejected', 'not-dynamic'} end
local state = h['s'] or 'active'
if state == 'closed' then return {'rejected', 'closed'} end
if state == 'blocked' then return {'rejected', 'abuse'} end
if h['lk'] ~= nil and h['lk'] ~= '' and (tonumber(h['lu']) or 0) > now then return {'busy'} end
-- An expired lease: its holder died between publishing and recording, so DNS may hold a
-- change Redis does not know. Never nochg then: this request republishes it (see 'la').
local stale = h['lk'] ~= nil and h['lk'] ~= ''

-- The frequency rule: a request sooner than minInterval after the previous one is frequent;
-- a non-frequent one resets the run. More than maxFrequent in a row blocks the host.
local minInterval = tonumber(A[2])
local maxFrequent = tonumber(A[3])
local prevFl = h['fl'] or ''
local prevFc = h['fc'] or ''
local last = tonumber(prevFl)
local count = tonumber(prevFc) or 0
if last ~= nil and now - last < minInterval then count = count + 1 else count = 0 end
local seq = (tonumber(h['fs']) or 0) + 1
h['fl'] = ms(now)
h['fc'] = tostring(count)
h['fs'] = tostring(seq)
if count > maxFrequent then
  redis.call('HSET', key, 'fl', h['fl'], 'fc', h['fc'], 'fs', h['fs'], 's', 'blocked')
  return {'rejected', 'abuse'}
end

local function hostFlat()
  local out = {}
  for f, v in pairs(h) do
    if f ~= 'lk' and f ~= 'lu' and f ~= 'la' then out[#out + 1] = f; out[#out + 1] = v end
  end
  return out
end

local changed = stale and A[6] == 'expect'
if A[6] == 'expect' and not changed then
  for i = 8, #A, 2 do
    local f = A[i]
    local v = h[f] or ''
    if (f == 'w' or f == 'b') and v == '0' then v = '' end
    -- The backup-MX flag means nothing without an MX (mx=NOCHG on a host that has none);
    -- a request that names a new MX already differs on m.
    local moot = f == 'b' and (h['m'] or '') == ''
    if v ~= A[i + 1] and not moot then changed = true; break end
  end
end
if not changed then
  redis.call('HSET', key, 'fl', h['fl'], 'fc', h['fc'], 'fs', h['fs'])
  return {'nochg'}
end
-- The address families this change writes in full, kept with its lease (FAMILIES): the
-- ones it names; both for a host back from offline; plus, taking over an interrupted
-- change, what that one wrote.
local la = union(A[7], '')
if state == 'offline' then la = '46' end
local takenOver = ''
if stale then
  takenOver = familiesOf(h['la'], h['lk'])
  la = union(la, takenOver)
end
local leaseEnd = now + tonumber(A[4])
redis.call('HSET', key, 'fl', h['fl'], 'fc', h['fc'], 'fs', h['fs'], 'lk', A[5], 'lu', ms(leaseEnd), 'la', la .. ':' .. A[5])
redis.call('ZADD', KEYS[2], leaseEnd, key)
return {'change', hostFlat(), prevFl, prevFc, h['fs'], stale and '1' or '', la, takenOver}
`;

const ADMIT = `${NOW}${FAMILIES}local A = ARGV${ADMIT_BODY}`;

/**
 * The login checks, in the same script before the admission, for a request whose
 * credentials were verified (by the fast path's cache, or just now by the full path): the
 * request then costs one round trip, and a password changed since stops it at once. KEYS
 * 3–6: the junk block of its (source, User-Agent) pair, the login cool-downs of the source
 * and the account, the account hash; ARGV 1–2: the SHA-1 (hex) of the stored password hash
 * and the donator flag ('1'/'0') the credentials were verified against, then admit's
 * arguments. A failing check → {'refused', check} with nothing written: 'agent' (junk
 * block), 'login' (cool-down), 'stale' (the account changed since the verification).
 */
const GUARD = `
if redis.call('EXISTS', KEYS[3]) > 0 then return {'refused', 'agent'} end
if redis.call('EXISTS', KEYS[4], KEYS[5]) > 0 then return {'refused', 'login'} end
local login = redis.call('HMGET', KEYS[6], 'h', 'd')
local donator = '0'
if login[2] == '1' then donator = '1' end
if not login[1] or redis.sha1hex(login[1]) ~= ARGV[1] or donator ~= ARGV[2] then return {'refused', 'stale'} end
local A = {unpack(ARGV, 3)}
`;

const ADMIT_GUARDED = `${NOW}${FAMILIES}${GUARD}${ADMIT_BODY}`;

/**
 * The login checks of an update token (docs/security.md, "Update tokens"): KEYS 3–6: the junk
 * block of the (source, User-Agent) pair, the login cool-down of the source (not the
 * account's: nobody can lock a token out), the token record, the owner account; ARGV 1–2: the
 * token's hash and the donator flag it was looked up with. A failing check → {'refused',
 * check}, nothing written: 'stale' when the token was revoked, has expired (Redis clock) or
 * its account's donator flag changed.
 */
const TOKEN_CHECKS = `
if redis.call('EXISTS', KEYS[3]) > 0 then return {'refused', 'agent'} end
if redis.call('EXISTS', KEYS[4]) > 0 then return {'refused', 'login'} end
local token = redis.call('HMGET', KEYS[5], 'k', 'e')
if token[1] ~= ARGV[1] or (token[2] and tonumber(token[2]) <= now) then return {'refused', 'stale'} end
local donator = '0'
if redis.call('HGET', KEYS[6], 'd') == '1' then donator = '1' end
if donator ~= ARGV[2] then return {'refused', 'stale'} end
`;

/** admit for a token login: its checks, the time it was last used, then admit (ARGV from 3). */
const ADMIT_TOKEN = `${NOW}${FAMILIES}${TOKEN_CHECKS}
redis.call('HSET', KEYS[5], 'l', ms(now))
local A = {unpack(ARGV, 3)}
${ADMIT_BODY}`;

/** tokenCheck(KEYS, ARGV: as ADMIT_TOKEN's first six and two) → {'ok'} | {'refused', check}. */
const TOKEN_CHECK = `${NOW}${TOKEN_CHECKS}
return {'ok'}
`;

/**
 * tokenFind(KEYS: token index (by hash); ARGV: key prefix, hash) → false (unknown or expired)
 * | {id, fqdn, account, donator '1'/'0', from}. The record's and the account's keys are
 * derived here from the index: a login costs one round trip.
 */
const TOKEN_FIND = `${NOW}
local id = redis.call('GET', KEYS[1])
if not id then return false end
local t = redis.call('HMGET', ARGV[1] .. 't:' .. id, 'k', 'f', 'a', 'e', 'r')
if t[1] ~= ARGV[2] or not t[2] or not t[3] then return false end
if t[4] and tonumber(t[4]) <= now then return false end
local donator = '0'
if redis.call('HGET', ARGV[1] .. 'a:' .. t[3], 'd') == '1' then donator = '1' end
return {id, t[2], t[3], donator, t[5] or ''}
`;

/**
 * tokenAdd(KEYS: host, account, token, token index, host's token set; ARGV: owner, id, fqdn,
 * hash, expiresInMs ('' = never), from, note) → {'ok', createdAt, expiresAt|''} | {'changed'}
 * (the host is gone or has another owner) | {'exists'} (the id or hash is taken).
 */
const TOKEN_ADD = `${NOW}
if redis.call('HGET', KEYS[1], 'o') ~= ARGV[1] then return {'changed'} end
if redis.call('EXISTS', KEYS[3], KEYS[4]) > 0 then return {'exists'} end
local expires = ''
if ARGV[5] ~= '' then expires = ms(now + tonumber(ARGV[5])) end
redis.call('HSET', KEYS[3], 'f', ARGV[3], 'a', ARGV[1], 'k', ARGV[4], 'c', ms(now))
if expires ~= '' then redis.call('HSET', KEYS[3], 'e', expires) end
if ARGV[6] ~= '' then redis.call('HSET', KEYS[3], 'r', ARGV[6]) end
if ARGV[7] ~= '' then redis.call('HSET', KEYS[3], 'n', ARGV[7]) end
redis.call('SET', KEYS[4], ARGV[2])
redis.call('SADD', KEYS[5], ARGV[2])
redis.call('HINCRBY', KEYS[2], 'k', 1)
return {'ok', ms(now), expires}
`;

/** Count one token less on the account hash KEYS[i] (the field goes at zero). */
const DROP_TOKEN_COUNT = `
local function dropTokenCount(accountKey, n)
  if n > 0 and redis.call('HEXISTS', accountKey, 'h') == 1 then
    if redis.call('HINCRBY', accountKey, 'k', -n) <= 0 then redis.call('HDEL', accountKey, 'k') end
  end
end
`;

/**
 * tokenRemove(KEYS: token, token index, host's token set, account; ARGV: id, hash) → 'ok' |
 * 'changed' (the record is no longer the one read).
 */
const TOKEN_REMOVE = `${DROP_TOKEN_COUNT}
if redis.call('HGET', KEYS[1], 'k') ~= ARGV[2] then return 'changed' end
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('SREM', KEYS[3], ARGV[1])
dropTokenCount(KEYS[4], 1)
return 'ok'
`;

/**
 * Leave the host's lease expired now (KEYS[1]: host) and due in the pending set (KEYS[2])
 * `inMs` later, for reclaim to publish the stored state again; `token` also sets the lease
 * token (`r:lost`: the lease had been dropped by the newer holder).
 */
const REPAIR_DUE = `
local function repairDue(inMs, token)
  if token then redis.call('HSET', KEYS[1], 'lk', token) end
  redis.call('HSET', KEYS[1], 'lu', ms(now))
  redis.call('ZADD', KEYS[2], now + inMs, KEYS[1])
end
`;

/**
 * A change whose lease was taken over (now lk, '' or false when nobody holds it) may still
 * land after the newer holder's: with nobody holding the host, a repair of what it wrote
 * (`families`, and what Redis records) is due in `inMs` (token r:lost); a holder in flight
 * adds those families to its own and leaves a repair due when it is done (FAMILIES' late mark).
 */
const LOST_CHANGE = `
local function lostChange(lk, inMs, families)
  if not lk or lk == '' then
    repairDue(inMs, 'r:lost')
    redis.call('HSET', KEYS[1], 'la', union(families, '') .. ':r:lost')
  else
    widen(lk, families)
  end
end
-- The holder is done with its lease: it goes, unless a change that lost the lease may have
-- landed meanwhile (late): then a repair is due now.
local function endLease(late)
  if late then
    redis.call('HDEL', KEYS[1], 'rf')
    repairDue(0)
  else
    redis.call('HDEL', KEYS[1], 'lk', 'lu', 'rf', 'la')
    redis.call('ZREM', KEYS[2], KEYS[1])
  end
end
`;

/**
 * Undo one request's frequency count (KEYS[1]: host; prevFl, prevFc: what it found; seq, fl:
 * the fs and fl it wrote) unless a later request counted since (fs moved on) or the host is
 * another one now (removed and added again: its own fs may have reached the same number, but
 * not at the same millisecond): `dnserr` and `911` do not count.
 */
const UNDO_COUNT = `
local function undoCount(prevFl, prevFc, seq, countedAt)
  local counted = redis.call('HMGET', KEYS[1], 'fs', 'fl')
  if counted[1] ~= seq or counted[2] ~= countedAt then return end
  if prevFl == '' then redis.call('HDEL', KEYS[1], 'fl') else redis.call('HSET', KEYS[1], 'fl', prevFl) end
  if prevFc == '' then redis.call('HDEL', KEYS[1], 'fc') else redis.call('HSET', KEYS[1], 'fc', prevFc) end
end
`;

/**
 * commit(KEYS: host, pending; ARGV: token, ipv4, ipv6, wildcard, mx, backmx, offline, republish,
 * prevFl, prevFc, seq, countedAt, families) → 'ok' | 'lost' | 'gone' (host removed). A state an
 * operator set meanwhile (blocked, closed) is kept. republish = '1': the recorded state was
 * published again (reconciler), so the time of the last update stays. 'ok' also clears the
 * count of failed republishes: DNS and Redis agree again — unless a change that lost its lease
 * may have landed meanwhile (FAMILIES' late mark): then the lease is left expired and due
 * now, for a repair.
 * 'lost': the lease was no longer ours (it ended and another request or the reconciler took
 * it over, or the host was removed and added again). Nothing is written: what this caller
 * published may have reached DNS before or after the newer holder's change, so Redis keeps
 * the newer record (LOST_CHANGE: a repair of what this caller wrote, `families`, due now or
 * after the holder in flight). The request's count is undone (the caller answers 911, which
 * does not count).
 */
const COMMIT = `${NOW}${REPAIR_DUE}${UNDO_COUNT}${FAMILIES}${LOST_CHANGE}
local key = KEYS[1]
if redis.call('HEXISTS', key, 'o') == 0 then
  redis.call('ZREM', KEYS[2], key)
  return 'gone'
end
local lk = redis.call('HGET', key, 'lk')
if lk ~= ARGV[1] then
  lostChange(lk, 0, ARGV[13])
  undoCount(ARGV[9], ARGV[10], ARGV[11], ARGV[12])
  return 'lost'
end
local late = lateFor(redis.call('HGET', key, 'la'), lk)
local fields = {'4', '6', 'w', 'm', 'b'}
for i, f in ipairs(fields) do
  local v = ARGV[i + 1]
  if v == '' then redis.call('HDEL', key, f) else redis.call('HSET', key, f, v) end
end
local state = redis.call('HGET', key, 's')
if state ~= 'blocked' and state ~= 'closed' then
  if ARGV[7] == '1' then state = 'offline' else state = 'active' end
end
if ARGV[8] == '1' then redis.call('HSET', key, 's', state) else redis.call('HSET', key, 's', state, 'u', ms(now)) end
endLease(late)
return 'ok'
`;

/**
 * release(KEYS: host, pending; ARGV: token, prevFl, prevFc, seq, countedAt, republishInMs, failed,
 * families, refused) → 1 | 0 (lease not ours). families: what of this caller's may still
 * reach DNS; refused = '1': the primary refused it (nothing did; a failed republish is
 * refused). Undoes this request's
 * frequency count unless a later request counted since (also when the lease was taken over:
 * the reply is still dnserr). With republishInMs
 * (a number, '' = none) the primary may hold something Redis does not: the lease is left
 * expired (admit never answers nochg then) and due in the pending set after that delay, for
 * reclaim to publish the stored state again — also when the lease was taken over and the
 * newer holder is done (as for a lost commit). failed = '1': a republish failed; the host's
 * count of them (rf, which reclaim returns) goes up by one. Without republishInMs nothing is
 * due any more, and the count goes too — unless a change that lost its lease may have landed
 * meanwhile (see COMMIT): then a repair is due now.
 */
const RELEASE = `${NOW}${REPAIR_DUE}${UNDO_COUNT}${FAMILIES}${LOST_CHANGE}
local key = KEYS[1]
-- Even when the lease was taken over: if nobody counted since, this request's count goes.
undoCount(ARGV[2], ARGV[3], ARGV[4], ARGV[5])
local republishIn = tonumber(ARGV[6])
local lk = redis.call('HGET', key, 'lk')
if lk ~= ARGV[1] then
  -- Taken over, while what this caller sent may still be applied after the newer holder's
  -- change: as for a lost commit. Not when the primary refused it: nothing of it reached DNS.
  if republishIn and ARGV[9] ~= '1' and redis.call('HEXISTS', key, 'o') == 1 then
    lostChange(lk, republishIn, ARGV[8])
  end
  return 0
end
local la = redis.call('HGET', key, 'la')
if republishIn then
  repairDue(republishIn)
  if ARGV[7] == '1' then redis.call('HINCRBY', key, 'rf', 1) end
  -- The families the repair rewrites: what may still be applied (a refused change leaves
  -- those of the interrupted one it took over) — all of them after a late change.
  if not lateFor(la, ARGV[1]) then redis.call('HSET', key, 'la', union(ARGV[8], '') .. ':' .. ARGV[1]) end
else
  endLease(lateFor(la, ARGV[1]))
end
return 1
`;

/**
 * Take the lease of KEYS[1] (token ARGV[1], for ARGV[2] ms, writing `families`: see FAMILIES),
 * due in the pending set (KEYS[2]) at its end; returns the host's fields without the lease ones.
 */
const TAKE_LEASE = `${FAMILIES}
local function takeLease(families)
  local leaseEnd = now + tonumber(ARGV[2])
  redis.call('HSET', KEYS[1], 'lk', ARGV[1], 'lu', ms(leaseEnd), 'la', families .. ':' .. ARGV[1])
  redis.call('ZADD', KEYS[2], leaseEnd, KEYS[1])
  local flat = redis.call('HGETALL', KEYS[1])
  local out = {}
  for i = 1, #flat, 2 do
    if flat[i] ~= 'lk' and flat[i] ~= 'lu' and flat[i] ~= 'la' then out[#out + 1] = flat[i]; out[#out + 1] = flat[i + 1] end
  end
  return out
end
`;

/**
 * reclaim(KEYS: host, pending; ARGV: token, leaseMs) → {'gone'|'clean'|'held'} |
 * {'reclaimed', hostFlat, families}: take over a change lease whose holder died (expired), so
 * the stored state can be published again, with the families that holder wrote. The frequency
 * fields are left alone.
 */
const RECLAIM = `${NOW}${TAKE_LEASE}
local key = KEYS[1]
if redis.call('HEXISTS', key, 'o') == 0 then redis.call('ZREM', KEYS[2], key); return {'gone'} end
local lk = redis.call('HGET', key, 'lk')
if not lk or lk == '' then redis.call('ZREM', KEYS[2], key); return {'clean'} end
local lu = tonumber(redis.call('HGET', key, 'lu')) or 0
if lu > now then redis.call('ZADD', KEYS[2], lu, key); return {'held'} end
local families = familiesOf(redis.call('HGET', key, 'la'), lk)
return {'reclaimed', takeLease(families), families}
`;

/** staleLeases(KEYS: pending; ARGV: limit) → the host keys whose lease has ended, earliest first. */
const STALE = `${NOW}
return redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ms(now), 'LIMIT', 0, tonumber(ARGV[1]))
`;

/**
 * postpone(KEYS: pending; ARGV: ms, hostKey…): due again `ms` from now, those still pending
 * only, and never sooner than already set (another frontend may have backed one off meanwhile).
 */
const POSTPONE = `${NOW}
local due = ms(now + tonumber(ARGV[1]))
for i = 2, #ARGV do redis.call('ZADD', KEYS[1], 'XX', 'GT', due, ARGV[i]) end
return #ARGV - 1
`;

/**
 * No shadowing across accounts (docs/security.md): a host must not sit below or above a host of
 * another account, or one's wildcard answers for the other's name. Each host is recorded in the
 * nest index (`{p}d:{name}`: fqdn → owner) of every name between it and its zone's apex; flat
 * names (directly below the apex) record nothing.
 * nestingConflict: for a host `owner` would register, with its own nest index at KEYS[own]
 * and, from KEYS[first], the host key and nest index of each name in `names` (those between it
 * and the apex): {'below', name, owner} | {'above', name, owner} | false.
 */
export const NESTING = `
local function nestingConflict(owner, own, first, names)
  for i, name in ipairs(names) do
    local o = redis.call('HGET', KEYS[first + 2 * (i - 1)], 'o')
    if o and o ~= owner then return {'below', name, o} end
  end
  local below = redis.call('HGETALL', KEYS[own])
  for i = 1, #below, 2 do
    if below[i + 1] ~= owner then return {'above', below[i], below[i + 1]} end
  end
  return false
end
local function nest(fqdn, owner, first, count)
  for i = 1, count do redis.call('HSET', KEYS[first + 2 * i - 1], fqdn, owner) end
end
`;

/**
 * hostAdd(KEYS: host, account, its nest index, then per name between it and its zone's apex:
 * that name's host key and nest index; ARGV: owner, type, fqdn, then those names) → {'ok'} |
 * {'noaccount'} | {'exists'} | {'below'|'above', name, owner} (see NESTING).
 */
const HOST_ADD = `${NESTING}
if redis.call('EXISTS', KEYS[2]) == 0 then return {'noaccount'} end
if redis.call('EXISTS', KEYS[1]) == 1 then return {'exists'} end
local conflict = nestingConflict(ARGV[1], 3, 4, {unpack(ARGV, 4)})
if conflict then return conflict end
redis.call('HSET', KEYS[1], 'o', ARGV[1], 't', ARGV[2], 's', 'active')
redis.call('HINCRBY', KEYS[2], 'n', 1)
nest(ARGV[3], ARGV[1], 4, #ARGV - 3)
return {'ok'}
`;

/**
 * hostClaim(KEYS: host, pending; ARGV: token, leaseMs) → {'gone'} | {'busy'} | {'claimed', hostFlat, repairDue, takenOver}:
 * the host's lease for an operator's change (host remove), so no update or repair publishes
 * meanwhile. Not counted by the frequency rule. An expired lease is taken over (its holder
 * died; what it may have published goes with the host). Due in the pending set at the lease
 * end: if the claimer dies, the stored state is published again.
 */
const HOST_CLAIM = `${NOW}${TAKE_LEASE}
local key = KEYS[1]
if redis.call('HEXISTS', key, 'o') == 0 then return {'gone'} end
local lk = redis.call('HGET', key, 'lk')
if lk and lk ~= '' and (tonumber(redis.call('HGET', key, 'lu')) or 0) > now then return {'busy'} end
local stale = lk and lk ~= ''
local takenOver = stale and familiesOf(redis.call('HGET', key, 'la'), lk) or ''
-- The removal deletes every record: both families.
return {'claimed', takeLease('46'), stale and '1' or '', takenOver}
`;

/**
 * hostRemove(KEYS: host, owner account, pending, host's token set, the nest index of each of
 * its ancestors (NESTING), then each token's record and index; ARGV: owner, lease token,
 * fqdn, number of ancestors, then the token ids) → 'ok' | 'gone' | 'changed' (another owner,
 * or other tokens than those read) | 'lost' (lease token given and the lease is no longer
 * that one). The host's update tokens go with it.
 */
const HOST_REMOVE = `${DROP_TOKEN_COUNT}
local owner = redis.call('HGET', KEYS[1], 'o')
if not owner then return 'gone' end
if owner ~= ARGV[1] then return 'changed' end
if ARGV[2] ~= '' and redis.call('HGET', KEYS[1], 'lk') ~= ARGV[2] then return 'lost' end
local ancestors = tonumber(ARGV[4])
local tokens = #ARGV - 4
if redis.call('SCARD', KEYS[4]) ~= tokens then return 'changed' end
for i = 1, tokens do
  if redis.call('SISMEMBER', KEYS[4], ARGV[i + 4]) == 0 then return 'changed' end
end
for i = 5, 4 + ancestors do redis.call('HDEL', KEYS[i], ARGV[3]) end
for i = 5 + ancestors, #KEYS do redis.call('DEL', KEYS[i]) end
redis.call('DEL', KEYS[4])
dropTokenCount(KEYS[2], tokens)
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[3], KEYS[1])
if redis.call('HEXISTS', KEYS[2], 'h') == 1 then
  if redis.call('HINCRBY', KEYS[2], 'n', -1) <= 0 then redis.call('HDEL', KEYS[2], 'n') end
end
return 'ok'
`;

/**
 * hostSetState(KEYS: host; ARGV: state) → 1 | 0 (no such host). Going back to active
 * (unblock, reopen) starts the frequency rule afresh; bumping fs makes a release still
 * in flight leave the counters alone.
 */
const HOST_SET_STATE = `
if redis.call('HEXISTS', KEYS[1], 'o') == 0 then return 0 end
redis.call('HSET', KEYS[1], 's', ARGV[1])
if ARGV[1] == 'active' then
  redis.call('HDEL', KEYS[1], 'fl', 'fc')
  redis.call('HINCRBY', KEYS[1], 'fs', 1)
end
return 1
`;

/** accountCreate(KEYS: account, account set; ARGV: name, hash, donator, createdAt) → 1 | 0 (exists). */
const ACCOUNT_CREATE = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'h', ARGV[2], 'd', ARGV[3], 'c', ARGV[4])
redis.call('SADD', KEYS[2], ARGV[1])
return 1
`;

/** accountSet(KEYS: account; ARGV: field, value) → 1 | 0 (no such account). */
const ACCOUNT_SET = `
if redis.call('HEXISTS', KEYS[1], 'h') == 0 then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
`;

/** accountRemove(KEYS: account, account set; ARGV: name) → 'ok' | 'gone' | 'owns hosts'. */
const ACCOUNT_REMOVE = `
if redis.call('HEXISTS', KEYS[1], 'h') == 0 then return 'gone' end
if (tonumber(redis.call('HGET', KEYS[1], 'n')) or 0) > 0 then return 'owns hosts' end
if (tonumber(redis.call('HGET', KEYS[1], 'k')) or 0) > 0 then return 'owns tokens' end
redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[2], ARGV[1])
return 'ok'
`;

/**
 * strike(KEYS: counter, marker [, counter, marker]…; ARGV: threshold, windowMs, markMs)
 * → number of markers set. Counts one event per counter within the window; reaching the
 * threshold sets the marker (cool-down / block) for markMs and starts the count afresh.
 */
const STRIKE = `
local threshold = tonumber(ARGV[1])
local marked = 0
for i = 1, #KEYS, 2 do
  local n = redis.call('INCR', KEYS[i])
  if n == 1 or redis.call('PTTL', KEYS[i]) < 0 then redis.call('PEXPIRE', KEYS[i], ARGV[2]) end
  if n >= threshold then
    redis.call('SET', KEYS[i + 1], '1', 'PX', ARGV[3])
    redis.call('DEL', KEYS[i])
    marked = marked + 1
  end
end
return marked
`;

/**
 * echo(KEYS: echo hash; ARGV: minIntervalMs, maxFrequent, cooldownMs) → 'ok' | 'abuse'.
 * The host frequency rule per address; crossing it blocks the address until bu.
 */
const ECHO = `${NOW}
local key = KEYS[1]
local minInterval = tonumber(ARGV[1])
local cooldown = tonumber(ARGV[3])
local v = redis.call('HMGET', key, 'fl', 'fc', 'bu')
local blockedUntil = tonumber(v[3])
if blockedUntil ~= nil and now < blockedUntil then return 'abuse' end
local last = tonumber(v[1])
local count = tonumber(v[2]) or 0
if last ~= nil and now - last < minInterval then count = count + 1 else count = 0 end
if count > tonumber(ARGV[2]) then
  redis.call('HSET', key, 'fl', ms(now), 'fc', '0', 'bu', ms(now + cooldown))
  redis.call('PEXPIRE', key, math.max(cooldown, minInterval))
  return 'abuse'
end
redis.call('HSET', key, 'fl', ms(now), 'fc', tostring(count))
redis.call('HDEL', key, 'bu')
-- Past minInterval the entry no longer matters: the next request is not frequent anyway.
redis.call('PEXPIRE', key, minInterval)
return 'ok'
`;

const DEFINITIONS = {
  ddnsAdmit: { numberOfKeys: 2, lua: ADMIT },
  ddnsAdmitGuarded: { numberOfKeys: 6, lua: ADMIT_GUARDED },
  ddnsAdmitToken: { numberOfKeys: 6, lua: ADMIT_TOKEN },
  ddnsTokenCheck: { numberOfKeys: 6, lua: TOKEN_CHECK },
  ddnsTokenFind: { numberOfKeys: 1, lua: TOKEN_FIND },
  ddnsTokenAdd: { numberOfKeys: 5, lua: TOKEN_ADD },
  ddnsTokenRemove: { numberOfKeys: 4, lua: TOKEN_REMOVE },
  ddnsCommit: { numberOfKeys: 2, lua: COMMIT },
  ddnsRelease: { numberOfKeys: 2, lua: RELEASE },
  ddnsReclaim: { numberOfKeys: 2, lua: RECLAIM },
  ddnsStale: { numberOfKeys: 1, lua: STALE },
  ddnsPostpone: { numberOfKeys: 1, lua: POSTPONE },

  ddnsHostClaim: { numberOfKeys: 2, lua: HOST_CLAIM },

  ddnsHostSetState: { numberOfKeys: 1, lua: HOST_SET_STATE },
  ddnsAccountCreate: { numberOfKeys: 2, lua: ACCOUNT_CREATE },
  ddnsAccountSet: { numberOfKeys: 1, lua: ACCOUNT_SET },
  ddnsAccountRemove: { numberOfKeys: 2, lua: ACCOUNT_REMOVE },
  ddnsEcho: { numberOfKeys: 1, lua: ECHO },
} as const;

type ScriptName = keyof typeof DEFINITIONS | keyof typeof VARIADIC;
/** Scripts whose number of keys varies: the caller passes the count first. */
const VARIADIC = { ddnsStrike: STRIKE, ddnsHostRemove: HOST_REMOVE, ddnsHostAdd: HOST_ADD } as const;
type ScriptArg = string | number;

/** Typed access to the scripts on one client. */
export class StoreScripts {
  constructor(private readonly redis: Redis) {}

  // The lease scripts also keep `pendingKey` (changes in flight) up to date.
  admit(hostKey: string, pendingKey: string, args: ScriptArg[]): Promise<unknown> {
    return this.run('ddnsAdmit', [hostKey, pendingKey], args);
  }
  /** `tokenKeys`: junk block, source cool-down, token record, account (see TOKEN_CHECKS). */
  admitToken(hostKey: string, pendingKey: string, tokenKeys: readonly [string, string, string, string], args: ScriptArg[]): Promise<unknown> {
    return this.run('ddnsAdmitToken', [hostKey, pendingKey, ...tokenKeys], args);
  }
  tokenCheck(hostKey: string, pendingKey: string, tokenKeys: readonly [string, string, string, string], args: ScriptArg[]): Promise<unknown> {
    return this.run('ddnsTokenCheck', [hostKey, pendingKey, ...tokenKeys], args);
  }
  tokenFind(indexKey: string, keyPrefix: string, hash: string): Promise<unknown> {
    return this.run('ddnsTokenFind', [indexKey], [keyPrefix, hash]);
  }
  /** `keys`: host, account, token record, token index, the host's token set (see TOKEN_ADD). */
  tokenAdd(keys: readonly [string, string, string, string, string], args: ScriptArg[]): Promise<unknown> {
    return this.run('ddnsTokenAdd', keys, args);
  }
  tokenRemove(keys: readonly [string, string, string, string], id: string, hash: string): Promise<unknown> {
    return this.run('ddnsTokenRemove', keys, [id, hash]);
  }
  /** `guardKeys`: junk block, source cool-down, account cool-down, account (see GUARD). */
  admitGuarded(hostKey: string, pendingKey: string, guardKeys: readonly [string, string, string, string], args: ScriptArg[]): Promise<unknown> {
    return this.run('ddnsAdmitGuarded', [hostKey, pendingKey, ...guardKeys], args);
  }
  commit(hostKey: string, pendingKey: string, args: ScriptArg[]): Promise<unknown> {
    return this.run('ddnsCommit', [hostKey, pendingKey], args);
  }
  release(hostKey: string, pendingKey: string, args: ScriptArg[]): Promise<unknown> {
    return this.run('ddnsRelease', [hostKey, pendingKey], args);
  }
  reclaim(hostKey: string, pendingKey: string, token: string, leaseMs: number): Promise<unknown> {
    return this.run('ddnsReclaim', [hostKey, pendingKey], [token, leaseMs]);
  }
  stale(pendingKey: string, limit: number): Promise<unknown> {
    return this.run('ddnsStale', [pendingKey], [limit]);
  }
  postpone(pendingKey: string, ms: number, hostKeys: readonly string[]): Promise<unknown> {
    return this.run('ddnsPostpone', [pendingKey], [ms, ...hostKeys]);
  }
  /** `between`: the names between the host and its zone's apex, with their host keys and nest indexes. */
  hostAdd(
    keys: readonly [string, string, string],
    between: readonly { name: string; keys: readonly [string, string] }[],
    owner: string,
    type: string,
    fqdn: string,
  ): Promise<unknown> {
    return this.run('ddnsHostAdd', [...keys, ...between.flatMap((b) => b.keys)], [owner, type, fqdn, ...between.map((b) => b.name)]);
  }
  hostClaim(hostKey: string, pendingKey: string, token: string, leaseMs: number): Promise<unknown> {
    return this.run('ddnsHostClaim', [hostKey, pendingKey], [token, leaseMs]);
  }
  /** `nestIndexes`: those of the host's ancestors; `tokens`: its token ids, with the keys of each one's record and index. */
  hostRemove(
    hostKeys: readonly [string, string, string, string],
    nestIndexes: readonly string[],
    args: { owner: string; lease: string; fqdn: string },
    tokens: readonly { id: string; keys: readonly [string, string] }[],
  ): Promise<unknown> {
    const keys = [...hostKeys, ...nestIndexes, ...tokens.flatMap((t) => t.keys)];
    return this.run('ddnsHostRemove', keys, [args.owner, args.lease, args.fqdn, nestIndexes.length, ...tokens.map((t) => t.id)]);
  }
  hostSetState(hostKey: string, state: string): Promise<unknown> {
    return this.run('ddnsHostSetState', [hostKey], [state]);
  }
  accountCreate(accountKey: string, setKey: string, args: ScriptArg[]): Promise<unknown> {
    return this.run('ddnsAccountCreate', [accountKey, setKey], args);
  }
  accountSet(accountKey: string, field: string, value: string): Promise<unknown> {
    return this.run('ddnsAccountSet', [accountKey], [field, value]);
  }
  accountRemove(accountKey: string, setKey: string, name: string): Promise<unknown> {
    return this.run('ddnsAccountRemove', [accountKey, setKey], [name]);
  }
  /** `pairs` = [counter, marker] key pairs; see STRIKE. */
  strike(pairs: readonly (readonly [string, string])[], threshold: number, windowMs: number, markMs: number): Promise<unknown> {
    return this.run('ddnsStrike', pairs.flat(), [threshold, windowMs, markMs]);
  }
  echo(echoKey: string, minIntervalMs: number, maxFrequent: number, cooldownMs: number): Promise<unknown> {
    return this.run('ddnsEcho', [echoKey], [minIntervalMs, maxFrequent, cooldownMs]);
  }

  private run(name: ScriptName, keys: readonly string[], args: readonly ScriptArg[]): Promise<unknown> {
    const command = (this.redis as unknown as Record<string, (...a: ScriptArg[]) => Promise<unknown>>)[name];
    if (typeof command !== 'function') throw new Error(`redis script ${name} is not defined`);
    if (name in VARIADIC) return command.call(this.redis, keys.length, ...keys, ...args);
    return command.call(this.redis, ...keys, ...args);
  }
}

const loaded = new WeakMap<Redis, StoreScripts>();

/** The scripts of a client, defined on it once (every adapter on the client shares them). */
export function scriptsFor(redis: Redis): StoreScripts {
  let scripts = loaded.get(redis);
  if (scripts === undefined) {
    for (const [name, def] of Object.entries(DEFINITIONS)) redis.defineCommand(name, def);
    // numberOfKeys omitted: the caller passes the key count as the first argument.
    for (const [name, lua] of Object.entries(VARIADIC)) redis.defineCommand(name, { lua });
    scripts = new StoreScripts(redis);
    loaded.set(redis, scripts);
  }
  return scripts;
}
