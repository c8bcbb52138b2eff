/**
 * The lease scripts of the update path and the reconciler: admit (three forms) hands out a
 * host's lease, commit and release end it, reclaim takes over an expired one, stale and
 * postpone keep the pending set; hostClaim is an operator's lease (host remove). Every one
 * also keeps `pending` (the sorted set of leases in flight, by their end) up to date.
 */
import type { Expectations } from '../../app/ports.js';
import {
  ADMIT_KINDS,
  ADMIT_REJECTIONS,
  GUARD_CHECKS,
  type AdmitRejection,
  type GuardCheck,
} from '../../core/admission.js';
import { recordedAgent } from '../../core/request-log.js';
import { flag, type TargetState } from '../../core/types.js';
import { encodeExpectations, encodeWrittenFamilies, type HashFields } from '../codec.js';
import { HOST_FIELDS as HF, TOKEN_FIELDS as TF } from '../keys.js';
import {
  blindDigest,
  GUARD,
  HOST_ADMISSION,
  LEASE_PREAMBLE,
  LEASE_RECORD_FIELDS,
  NOW,
  TALLY_FIELDS,
  TOKEN_CHECKS,
} from '../lua.js';
import { defineBatchableScript } from '../batch.js';
import {
  defineScript,
  presentFlag,
  replyArray,
  replyFields,
  replyInteger,
  replyKind,
  replyOneOf,
  replyString,
} from '../script.js';

/** A host and the sorted set of leases in flight. */
export interface LeaseKeys {
  host: string;
  pending: string;
}

/** What admit needs to know of the request (the lease token is the caller's). */
export interface AdmitArgs {
  account: string;
  minIntervalMs: number;
  maxFrequent: number;
  leaseMs: number;
  /** The token of the lease a change takes. */
  leaseToken: string;
  /** The settings asked for; null: only the frequency rule (the echo with a hostname). */
  expect: Expectations | null;
  /**
   * Record this request as the host's last (core/request-log.ts): `reply` is the word a request counted without a
   * change gets (`nochg`; `!donator` in count mode); absent: nothing is recorded (the echo, the tests).
   */
  requestLog?: { reply: string; source: string; userAgent: string };
}

/** A password login's checks (GUARD): its account's keys beside the host's. */
export interface GuardedAdmitKeys extends LeaseKeys {
  junkBlock: string;
  sourceCooldown: string;
  accountCooldown: string;
  account: string;
}

export interface GuardedAdmitArgs extends AdmitArgs {
  /** SHA-1 (hex) of the password hash the credentials were verified against (sent blinded: blindDigest); '': none. */
  hashDigest: string;
  donator: boolean;
  /** Skip the junk-block and cool-down checks (PasswordGuard.passwordOnly). */
  passwordOnly: boolean;
}

/** A token login's checks (TOKEN_CHECKS). */
export interface TokenGuardKeys extends LeaseKeys {
  junkBlock: string;
  sourceCooldown: string;
  token: string;
  account: string;
}

export interface TokenGuardArgs {
  /** The token's keyed hash and its account's donator flag, as looked up. */
  tokenHash: string;
  donator: boolean;
}

export type TokenAdmitArgs = AdmitArgs & TokenGuardArgs;

/** An admission that takes no lease: refused by the host or the login, busy, or nothing to change. */
export type AdmitNoLease =
  | { kind: 'rejected'; outcome: AdmitRejection }
  | { kind: 'refused'; check: GuardCheck }
  | { kind: 'busy' }
  | { kind: 'nochg' };

export type AdmitReply =
  | AdmitNoLease
  | {
      kind: 'change';
      /** The host's fields with this request's frequency fields, without the lease ones. */
      host: HashFields;
      /** The count-undo of this request: what it found, and the fs and fl it wrote. */
      undo: CountUndo;
      /** The lease taken over had expired: a repair was due. */
      repairDue: boolean;
      /** The address families the change writes in full ('4', '6', '46', ''). */
      families: string;
      /** Those of the expired lease it took over ('' when none). */
      takenOver: string;
    };

/**
 * What commit and release need to undo one request's frequency count: `fl` and `fc` before it
 * ('' = absent), the `fs` it was counted as and the `fl` it wrote. A sequence '-' matches
 * nothing: no undo (a lease without that bookkeeping).
 */
export interface CountUndo {
  previousLastRequest: string;
  previousFrequentCount: string;
  sequence: string;
  countedAt: string;
}

export const NO_COUNT_UNDO: CountUndo = {
  previousLastRequest: '',
  previousFrequentCount: '',
  sequence: '-',
  countedAt: '-',
};

/** The keys of a token login's checks, as tokenRefusal takes them (host and pending first). */
export const TOKEN_GUARD_KEYS = ['host', 'pending', 'junkBlock', 'sourceCooldown', 'token', 'account'] as const;

/** admit's own arguments, in ARGV order after a guard's; then the expectations ([field, value]…) as `expect`. */
const ADMIT_ARGS = [
  'accountName',
  'minIntervalMs',
  'maxFrequent',
  'leaseMs',
  'leaseToken',
  'mode',
  'families',
  'note',
  'source',
  'agent',
] as const;

const NO_EXPECTATIONS: readonly string[] = [];

const admitArgs = (a: AdmitArgs) => ({
  accountName: a.account,
  minIntervalMs: Math.max(0, Math.floor(a.minIntervalMs)),
  maxFrequent: a.maxFrequent,
  leaseMs: Math.max(1, Math.floor(a.leaseMs)),
  leaseToken: a.leaseToken,
  mode: a.expect === null ? 'count' : 'expect',
  families: encodeWrittenFamilies(a.expect),
  note: a.requestLog?.reply ?? '',
  source: a.requestLog?.source ?? '',
  agent: a.requestLog === undefined ? '' : recordedAgent(a.requestLog.userAgent),
  expect: a.expect === null ? NO_EXPECTATIONS : encodeExpectations(a.expect),
});

function admitReply(raw: unknown, script: string): AdmitReply {
  const { kind, rest } = replyKind(raw, ADMIT_KINDS, script);
  switch (kind) {
    case 'rejected':
      return { kind, outcome: replyOneOf(rest[0], ADMIT_REJECTIONS, script) };
    case 'refused':
      return { kind, check: replyOneOf(rest[0], GUARD_CHECKS, script) };
    case 'busy':
    case 'nochg':
      return { kind };
    case 'change': {
      if (rest.length !== 7) throw new Error(`${script}: unexpected reply ${JSON.stringify(raw)}`);
      const host = replyFields(rest[0], script);
      const [previousLastRequest, previousFrequentCount, sequence, repairDue, families, takenOver] = rest
        .slice(1)
        .map((v) => replyString(v, script)) as [string, string, string, string, string, string];
      return {
        kind,
        host,
        undo: { previousLastRequest, previousFrequentCount, sequence, countedAt: host[HF.lastRequest] ?? '' },
        repairDue: repairDue === '1',
        families,
        takenOver,
      };
    }
  }
}

/**
 * admit(host, pending, account, minIntervalMs, maxFrequent, leaseMs, token, mode, families, expect) → {kind} |
 * {'change', hostFlat, prevFl, prevFc, seq, repairDue, la, takenOver}. repairDue = '1': the lease taken over had
 * expired (a repair was due), else ''. mode 'count' = only the frequency rule; 'expect' = compare the field/value
 * pairs of `expect` (absent field = '', flag '0' = ''). families: the address families the request writes ('4', '6',
 * '46', ''). la: those the change must write in full (kept with the lease: the lease record of FAMILIES); takenOver:
 * those of the expired lease it took over ('' when none). A Lua function of the preamble: the three admits call it
 * with their own named arguments, after their login checks.
 */
const ADMIT_FUNCTION = `${HOST_ADMISSION}
local function admit(key, pending, account, minIntervalMs, maxFrequent, leaseMs, leaseToken, mode, families, note, source, agent, expect)
local refusal, h, state = hostAdmission(key, account)
if refusal then
  -- The account's own host, closed or blocked: its owner's request, refused (REQUEST_LOG).
  if h and note ~= '' then
    local reply = refusal[2] == 'closed' and '!active' or 'abuse'
    redis.call('HSET', key, unpack(noted(h, reply, 'r', source, agent, {})))
  end
  return refusal
end
-- An expired lease: its holder died between publishing and recording, so DNS may hold a
-- change Redis does not know. Never nochg then: this request republishes it (FAMILIES).
local stale = h['${HF.leaseToken}'] ~= nil and h['${HF.leaseToken}'] ~= ''

-- The frequency rule: a request sooner than minInterval after the previous one is frequent;
-- a non-frequent one resets the run. More than maxFrequent in a row blocks the host.
local minInterval = tonumber(minIntervalMs)
local maxRun = tonumber(maxFrequent)
local prevFl = h['${HF.lastRequest}'] or ''
local prevFc = h['${HF.frequentCount}'] or ''
local last = tonumber(prevFl)
local count = tonumber(prevFc) or 0
if last ~= nil and now - last < minInterval then count = count + 1 else count = 0 end
local seq = (tonumber(h['${HF.frequencySeq}']) or 0) + 1
h['${HF.lastRequest}'] = ms(now)
h['${HF.frequentCount}'] = tostring(count)
h['${HF.frequencySeq}'] = tostring(seq)
local log = {}
if count > maxRun then
  if note ~= '' then noted(h, 'abuse', 'r', source, agent, log, h['${HF.lastRequest}']) end
  redis.call('HSET', key, '${HF.lastRequest}', h['${HF.lastRequest}'], '${HF.frequentCount}', h['${HF.frequentCount}'], '${HF.frequencySeq}', h['${HF.frequencySeq}'], '${HF.state}', 'blocked', unpack(log))
  return {'rejected', 'abuse'}
end

local function hostFlat()
  local out = {}
  for f, v in pairs(h) do
    if not isLeaseField(f) then out[#out + 1] = f; out[#out + 1] = v end
  end
  return out
end

local changed = stale and mode == 'expect'
if mode == 'expect' and not changed then
  for i = 1, #expect, 2 do
    local f = expect[i]
    local v = h[f] or ''
    if (f == '${HF.wildcard}' or f == '${HF.backmx}') and v == '0' then v = '' end
    -- The backup-MX flag means nothing without an MX (mx=NOCHG on a host that has none);
    -- a request that names a new MX already differs on m.
    local moot = f == '${HF.backmx}' and (h['${HF.mx}'] or '') == ''
    if v ~= expect[i + 1] and not moot then changed = true; break end
  end
end
if not changed then
  -- nochg counts as such; the reply of a request counted without a change in count mode (!donator) is refused.
  if note ~= '' then noted(h, note, note == 'nochg' and 'n' or 'r', source, agent, log, h['${HF.lastRequest}']) end
  redis.call('HSET', key, '${HF.lastRequest}', h['${HF.lastRequest}'], '${HF.frequentCount}', h['${HF.frequentCount}'], '${HF.frequencySeq}', h['${HF.frequencySeq}'], unpack(log))
  return {'nochg'}
end
-- The address families this change writes in full, kept with its lease (FAMILIES): the
-- ones it names; both for a host back from offline; plus, taking over an interrupted
-- change, what that one wrote.
local la = union(families, '')
if state == 'offline' then la = '46' end
local takenOver = ''
if stale then
  takenOver = familiesOf(key, h['${HF.leaseToken}'])
  la = union(la, takenOver)
end
local leaseEnd = leaseEndFor(h['${HF.leaseAbandoned}'], leaseToken, tonumber(leaseMs))
-- The lease and its record (setLeaseRecord's fields) in one HSET; the request's reply is its commit's or release's.
if note ~= '' then noted(h, '', '', source, agent, log, h['${HF.lastRequest}']) end
redis.call('HSET', key, '${HF.lastRequest}', h['${HF.lastRequest}'], '${HF.frequentCount}', h['${HF.frequentCount}'], '${HF.frequencySeq}', h['${HF.frequencySeq}'], '${HF.leaseToken}', leaseToken, '${HF.leaseUntil}', ms(leaseEnd), '${HF.linksSeen}', h['${HF.linksChanged}'] or '', '${HF.leaseFamilies}', la, '${HF.leaseFamiliesOf}', leaseToken, unpack(log))
if h['${HF.leaseLate}'] or h['${HF.legacyLeaseRecord}'] then redis.call('HDEL', key, '${HF.leaseLate}', '${HF.legacyLeaseRecord}') end
redis.call('ZADD', pending, leaseEnd, key)
return {'change', hostFlat(), prevFl, prevFc, h['${HF.frequencySeq}'], stale and '1' or '', la, takenOver}
end
`;

/** The call of admit with the names every admit binds. */
const CALL_ADMIT =
  'return admit(host, pending, accountName, minIntervalMs, maxFrequent, leaseMs, leaseToken, mode, families, note, source, agent, expect)\n';

/** admit without login checks (the echo with a hostname, the tests). */
export const ADMIT = defineBatchableScript({
  name: 'ddnsAdmit',
  preamble: `${LEASE_PREAMBLE}${ADMIT_FUNCTION}`,
  keys: ['host', 'pending'],
  args: ADMIT_ARGS,
  argTail: 'expect',
  encodeArgs: admitArgs,
  lua: CALL_ADMIT,
  reply: (raw) => admitReply(raw, 'admit'),
});

/** admit after a password login's checks (GUARD in lua.ts), in the same atomic step. */
export const ADMIT_GUARDED = defineBatchableScript({
  name: 'ddnsAdmitGuarded',
  preamble: `${LEASE_PREAMBLE}${GUARD}${ADMIT_FUNCTION}`,
  keys: ['host', 'pending', 'junkBlock', 'sourceCooldown', 'accountCooldown', 'account'],
  args: ['digest', 'donator', 'passwordOnly', ...ADMIT_ARGS],
  argTail: 'expect',
  // Object.assign, not a spread: a spread of the shared fields cost a copy into a fresh object shape per request.
  encodeArgs: (a: GuardedAdmitArgs) =>
    Object.assign(
      { digest: blindDigest(a.hashDigest), donator: flag(a.donator), passwordOnly: a.passwordOnly ? '1' : '' },
      admitArgs(a),
    ),
  lua: `local refused = guardRefusal(junkBlock, sourceCooldown, accountCooldown, account, digest, donator, passwordOnly)
if refused then return refused end
${CALL_ADMIT}`,
  reply: (raw) => admitReply(raw, 'admit'),
});

/** admit for a token login: its checks (TOKEN_CHECKS in lua.ts), the time it was last used, then admit. */
export const ADMIT_TOKEN = defineBatchableScript({
  name: 'ddnsAdmitToken',
  preamble: `${LEASE_PREAMBLE}${TOKEN_CHECKS}${ADMIT_FUNCTION}`,
  keys: TOKEN_GUARD_KEYS,
  args: ['tokenHash', 'donator', ...ADMIT_ARGS],
  argTail: 'expect',
  encodeArgs: (a: TokenAdmitArgs) => Object.assign({ tokenHash: a.tokenHash, donator: flag(a.donator) }, admitArgs(a)),
  lua: `local refused = tokenRefusal(junkBlock, sourceCooldown, token, account, tokenHash, donator)
if refused then return refused end
redis.call('HSET', token, '${TF.lastUsedAt}', ms(now))
${CALL_ADMIT}`,
  reply: (raw) => admitReply(raw, 'admit'),
});

export interface CommitArgs {
  /** The lease token. */
  token: string;
  target: TargetState;
  /** The recorded state was published again (reconciler): the time of the last update stays. */
  republish: boolean;
  undo: CountUndo;
  /** The address families this caller wrote ('4', '6', '46', ''). */
  families: string;
  /** A parent's delegated prefix to record with the commit (docs/protocol.md, "IPv6 prefixes"); absent: kept. */
  prefix?: string;
  /** Noted as the host's last request (AdmitArgs.requestLog): its reply is `good`, or a lost commit's failure. */
  noted?: boolean;
}

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
export const COMMIT = defineBatchableScript({
  name: 'ddnsCommit',
  preamble: LEASE_PREAMBLE,
  keys: ['host', 'pending'],
  args: [
    'token',
    'ipv4',
    'ipv6',
    'wildcard',
    'mx',
    'backmx',
    'offline',
    'republish',
    'prevFl',
    'prevFc',
    'seq',
    'countedAt',
    'families',
    'prefix',
    'requestNoted',
  ],
  lua: `
-- What the commit reads, in one call: owner, lease token, state, the lease record (recordOf), the request tally.
local r = redis.call('HMGET', host, '${HF.owner}', '${HF.leaseToken}', '${HF.state}', ${LEASE_RECORD_FIELDS}, ${TALLY_FIELDS})
if not r[1] then
  redis.call('ZREM', pending, host)
  return 'gone'
end
local tally = tallyFrom(r, 8)
local lk = r[2]
if lk ~= token then
  lostChange(host, pending, lk, 0, families)
  undoCount(host, prevFl, prevFc, seq, countedAt)
  -- Answered 911: counted as failed; the last request shown is the newer holder's.
  if requestNoted == '1' then redis.call('HSET', host, unpack(tallied(tally, 'f', {}))) end
  return 'lost'
end
local _, late = recordOf({r[4], r[5], r[6], r[7]}, lk)
local state = r[3]
if state ~= 'blocked' and state ~= 'closed' then
  if offline == '1' then state = 'offline' else state = 'active' end
end
-- One HSET for the whole record; the emptied fields go with the lease's (endLease).
local sets, dels = {'${HF.state}', state}, {}
if republish ~= '1' then sets[3] = '${HF.updatedAt}'; sets[4] = ms(now) end
if requestNoted == '1' then
  sets[#sets + 1] = '${HF.requestReply}'; sets[#sets + 1] = 'good'
  tallied(tally, 'g', sets)
end
local fields = {'${HF.ipv4}', '${HF.ipv6}', '${HF.wildcard}', '${HF.mx}', '${HF.backmx}'}
local values = {ipv4, ipv6, wildcard, mx, backmx}
for i, f in ipairs(fields) do
  local v = values[i]
  if v == '' then dels[#dels + 1] = f else sets[#sets + 1] = f; sets[#sets + 1] = v end
end
redis.call('HSET', host, unpack(sets))
-- The prefix its linked hosts now follow. The links counted when the lease was taken followed
-- it too; one made since did not (its host was not among them): its mark stays.
if prefix ~= '' then
  redis.call('HSET', host, '${HF.lastPrefix}', prefix)
  local marks = redis.call('HMGET', host, '${HF.linksChanged}', '${HF.linksSeen}')
  if (marks[1] or '') == (marks[2] or '') then redis.call('HDEL', host, '${HF.linksChanged}') end
end
endLease(host, pending, late, dels)
return 'ok'
`,
  encodeArgs: (a: CommitArgs) => ({
    token: a.token,
    ipv4: a.target.ipv4 ?? '',
    ipv6: a.target.ipv6 ?? '',
    wildcard: presentFlag(a.target.wildcard),
    mx: a.target.mx ?? '',
    backmx: presentFlag(a.target.mx !== null && a.target.backmx),
    offline: flag(a.target.offline),
    republish: flag(a.republish),
    prevFl: a.undo.previousLastRequest,
    prevFc: a.undo.previousFrequentCount,
    seq: a.undo.sequence,
    countedAt: a.undo.countedAt,
    families: a.families,
    prefix: a.prefix ?? '',
    requestNoted: flag(a.noted ?? false),
  }),
  reply: (raw) => replyOneOf(raw, ['ok', 'lost', 'gone'] as const, 'commit'),
});

export interface ReleaseArgs {
  /** The lease token. */
  token: string;
  undo: CountUndo;
  /** The primary may hold what Redis does not: a republish is due after this delay. */
  republishInMs?: number;
  /** A republish failed: the host's count of them goes up. */
  failedRepublish: boolean;
  /** What of this caller's may still reach DNS ('4', '6', '46', ''). */
  families: string;
  /** The primary refused the change: nothing of it reached DNS. */
  refused: boolean;
  /** The reply of a request noted as the host's last (AdmitArgs.requestLog), counted as failed; '': none. */
  answered?: '' | 'dnserr' | '911';
}

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
 * Decoded: whether the lease was still the caller's.
 */
export const RELEASE = defineScript({
  name: 'ddnsRelease',
  preamble: LEASE_PREAMBLE,
  keys: ['host', 'pending'],
  args: ['token', 'prevFl', 'prevFc', 'seq', 'countedAt', 'republishInMs', 'failed', 'families', 'refused', 'answered'],
  lua: `
-- Even when the lease was taken over: if nobody counted since, this request's count goes.
undoCount(host, prevFl, prevFc, seq, countedAt)
local republishIn = tonumber(republishInMs)
local lk = redis.call('HGET', host, '${HF.leaseToken}')
-- The request's reply (REQUEST_LOG), only while its lease stands: else the last request is the newer holder's.
if answered ~= '' and redis.call('HEXISTS', host, '${HF.owner}') == 1 then
  local log = tallied(tallyOf(host), 'f', {})
  if lk == token then log[#log + 1] = '${HF.requestReply}'; log[#log + 1] = answered end
  redis.call('HSET', host, unpack(log))
end
if lk ~= token then
  -- Taken over, while what this caller sent may still be applied after the newer holder's
  -- change: as for a lost commit. Not when the primary refused it: nothing of it reached DNS.
  if republishIn and refused ~= '1' and redis.call('HEXISTS', host, '${HF.owner}') == 1 then
    lostChange(host, pending, lk, republishIn, families)
  end
  return 0
end
local late = lateFor(host, token)
if republishIn then
  repairDue(host, pending, republishIn)
  if failed == '1' then redis.call('HINCRBY', host, '${HF.republishFailures}', 1) end
  -- The families the repair rewrites: what may still be applied (a refused change leaves
  -- those of the interrupted one it took over) — all of them after a late change.
  if not late then setLeaseRecord(host, union(families, ''), token, false) end
else
  endLease(host, pending, late)
end
return 1
`,
  encodeArgs: (a: ReleaseArgs) => ({
    token: a.token,
    prevFl: a.undo.previousLastRequest,
    prevFc: a.undo.previousFrequentCount,
    seq: a.undo.sequence,
    countedAt: a.undo.countedAt,
    republishInMs: a.republishInMs === undefined ? '' : Math.max(0, Math.round(a.republishInMs)),
    failed: flag(a.failedRepublish),
    families: a.families,
    refused: flag(a.refused),
    answered: a.answered ?? '',
  }),
  reply: (raw) => replyInteger(raw, 'release') === 1,
});

/** A lease to take (reclaim, hostClaim): its token and length. */
export interface TakeLeaseArgs {
  token: string;
  leaseMs: number;
}

const takeLeaseArgs = (a: TakeLeaseArgs) => ({ token: a.token, leaseMs: Math.max(1, Math.floor(a.leaseMs)) });

export type ReclaimReply =
  { kind: 'gone' | 'clean' | 'held' } | { kind: 'reclaimed'; host: HashFields; families: string };

/**
 * reclaim(KEYS: host, pending; ARGV: token, leaseMs) → {'gone'|'clean'|'held'} |
 * {'reclaimed', hostFlat, families}: take over a change lease whose holder died (expired), so
 * the stored state can be published again, with the families that holder wrote. The frequency
 * fields are left alone.
 */
export const RECLAIM = defineScript({
  name: 'ddnsReclaim',
  preamble: LEASE_PREAMBLE,
  keys: ['host', 'pending'],
  args: ['token', 'leaseMs'],
  lua: `
if redis.call('HEXISTS', host, '${HF.owner}') == 0 then redis.call('ZREM', pending, host); return {'gone'} end
local lk = redis.call('HGET', host, '${HF.leaseToken}')
if not lk or lk == '' then redis.call('ZREM', pending, host); return {'clean'} end
local lu = tonumber(redis.call('HGET', host, '${HF.leaseUntil}')) or 0
if lu > now then redis.call('ZADD', pending, lu, host); return {'held'} end
local families = familiesOf(host, lk)
return {'reclaimed', takeLease(host, pending, families, token, leaseMs), families}
`,
  encodeArgs: takeLeaseArgs,
  reply: (raw): ReclaimReply => {
    const { kind, rest } = replyKind(raw, ['gone', 'clean', 'held', 'reclaimed'] as const, 'reclaim');
    if (kind !== 'reclaimed') return { kind };
    return { kind, host: replyFields(rest[0], 'reclaim'), families: replyString(rest[1], 'reclaim') };
  },
});

/** staleLeases(KEYS: pending; ARGV: limit) → the host keys whose lease has ended, earliest first. */
export const STALE = defineScript({
  name: 'ddnsStale',
  preamble: NOW,
  keys: ['pending'],
  args: ['limit'],
  lua: `
return redis.call('ZRANGEBYSCORE', pending, '-inf', ms(now), 'LIMIT', 0, tonumber(limit))
`,
  reply: (raw) => replyArray(raw, 'stale leases').map((k) => replyString(k, 'stale leases')),
});

/**
 * postpone(KEYS: pending; ARGV: ms, hostKey…): due again `ms` from now, those still pending
 * only, and never sooner than already set (another frontend may have backed one off meanwhile).
 * The host keys go as arguments: they are members of the set, never read. → how many.
 */
export const POSTPONE = defineScript({
  name: 'ddnsPostpone',
  preamble: NOW,
  keys: ['pending'],
  args: ['delayMs'],
  argTail: 'hostKeys',
  lua: `
local due = ms(now + tonumber(delayMs))
for _, hostKey in ipairs(hostKeys) do redis.call('ZADD', pending, 'XX', 'GT', due, hostKey) end
return #hostKeys
`,
  encodeArgs: (a: { ms: number; hostKeys: readonly string[] }) => ({
    delayMs: Math.max(0, Math.round(a.ms)),
    hostKeys: a.hostKeys,
  }),
  reply: (raw) => replyInteger(raw, 'postpone'),
});

export type HostClaimReply =
  { kind: 'gone' } | { kind: 'busy' } | { kind: 'claimed'; host: HashFields; repairDue: boolean; takenOver: string };

/**
 * hostClaim(KEYS: host, pending; ARGV: token, leaseMs) → {'gone'} | {'busy'} | {'claimed', hostFlat, repairDue,
 * takenOver}: the host's lease for an operator's change (host remove), so no update or repair publishes meanwhile.
 * Not counted by the frequency rule. An expired lease is taken over (its holder died; what it may have published goes
 * with the host). Due in the pending set at the lease end: if the claimer dies, the stored state is published again.
 */
export const HOST_CLAIM = defineScript({
  name: 'ddnsHostClaim',
  preamble: LEASE_PREAMBLE,
  keys: ['host', 'pending'],
  args: ['token', 'leaseMs'],
  lua: `
if redis.call('HEXISTS', host, '${HF.owner}') == 0 then return {'gone'} end
local lk = redis.call('HGET', host, '${HF.leaseToken}')
if lk and lk ~= '' and (tonumber(redis.call('HGET', host, '${HF.leaseUntil}')) or 0) > now then return {'busy'} end
local stale = lk and lk ~= ''
local takenOver = stale and familiesOf(host, lk) or ''
-- The removal deletes every record: both families.
return {'claimed', takeLease(host, pending, '46', token, leaseMs), stale and '1' or '', takenOver}
`,
  encodeArgs: takeLeaseArgs,
  reply: (raw): HostClaimReply => {
    const { kind, rest } = replyKind(raw, ['gone', 'busy', 'claimed'] as const, 'host claim');
    if (kind !== 'claimed') return { kind };
    return {
      kind,
      host: replyFields(rest[0], 'host claim'),
      repairDue: rest[1] === '1',
      takenOver: replyString(rest[2], 'host claim'),
    };
  },
});

/** The most tokens a host's abandoned-lease mark keeps (HOST_FIELDS.leaseAbandoned), the oldest going first. */
export const ABANDON_MARKS = 8;

/** One lease a caller gave up on: its host and pending set, its token. */
export interface AbandonItem extends LeaseKeys {
  token: string;
  /**
   * The call that takes the lease may still run after this one (it went out on another connection): when the host
   * holds no lease of this token, mark the token, so that the admission, if it comes, ends its lease at once.
   */
  mark: boolean;
}

/**
 * abandon(KEYS: host, pending, host, pending, …; ARGV: token, mark, …) → how many leases it ended. For each host: a
 * lease its caller gave up on (a timeout or a lost connection: `911`) and so will never commit or release. Held by
 * that token: left expired now and due in the pending set now, as the lease of a holder that died is once it ends;
 * the reconciler republishes the recorded state and the next request takes the host over (admit treats an expired
 * lease as a change, never nochg): nothing of it was published, or, after a commit that never ran, what was is
 * rolled back to the record. Not held by it: with mark '1' the token joins the host's abandoned-lease mark
 * (LEASE_END), else nothing. A removed host: nothing. docs/operators.md, "Redis stalls".
 */
export const ABANDON = defineScript({
  name: 'ddnsAbandon',
  preamble: NOW,
  keys: [],
  keyTail: 'hostsAndPending',
  args: [],
  argTail: 'tokensAndMarks',
  lua: `
local ended = 0
for i = 1, #hostsAndPending, 2 do
  local key, token = hostsAndPending[i], tokensAndMarks[i]
  -- A key that is no host hash (WRONGTYPE) is skipped, not an error for every host of the call.
  local r = redis.pcall('HMGET', key, '${HF.owner}', '${HF.leaseToken}', '${HF.leaseUntil}', '${HF.leaseAbandoned}')
  if not r.err and r[1] then
    if r[2] == token then
      if (tonumber(r[3]) or 0) > now then redis.call('HSET', key, '${HF.leaseUntil}', ms(now)) end
      redis.call('ZADD', hostsAndPending[i + 1], 'LT', now, key)
      ended = ended + 1
    elseif tokensAndMarks[i + 1] == '1' then
      local marks = {}
      for t in string.gmatch(r[4] or '', '%S+') do marks[#marks + 1] = t end
      marks[#marks + 1] = token
      while #marks > ${ABANDON_MARKS} do table.remove(marks, 1) end
      redis.call('HSET', key, '${HF.leaseAbandoned}', table.concat(marks, ' '))
    end
  end
end
return ended
`,
  encodeKeys: (k: { items: readonly AbandonItem[] }) => ({
    hostsAndPending: k.items.flatMap((i) => [i.host, i.pending]),
  }),
  encodeArgs: (a: { items: readonly AbandonItem[] }) => ({
    tokensAndMarks: a.items.flatMap((i) => [i.token, i.mark ? '1' : '']),
  }),
  reply: (raw) => replyInteger(raw, 'abandon'),
});
