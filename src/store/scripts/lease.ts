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
import { flag, type TargetState } from '../../core/types.js';
import { encodeExpectations, encodeWrittenFamilies, type HashFields } from '../codec.js';
import { HOST_FIELDS as HF, TOKEN_FIELDS as TF } from '../keys.js';
import { blindDigest, GUARD, HOST_ADMISSION, LEASE_PREAMBLE, LEASE_RECORD_FIELDS, NOW, TOKEN_CHECKS } from '../lua.js';
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

const admitArgv = (a: AdmitArgs): (string | number)[] => [
  a.account,
  Math.max(0, Math.floor(a.minIntervalMs)),
  a.maxFrequent,
  Math.max(1, Math.floor(a.leaseMs)),
  a.leaseToken,
  a.expect === null ? 'count' : 'expect',
  encodeWrittenFamilies(a.expect),
  ...(a.expect === null ? [] : encodeExpectations(a.expect)),
];

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
 * admit(KEYS: host, pending; ARGV: account, minIntervalMs, maxFrequent, leaseMs, token, mode, families, [field,
 * value]…) → {kind} | {'change', hostFlat, prevFl, prevFc, seq, repairDue, la, takenOver}. repairDue = '1': the lease
 * taken over had expired (a repair was due), else ''. mode 'count' = only the frequency rule; 'expect' = compare the
 * field/value pairs (absent field = '', flag '0' = ''). families: the address families the request writes ('4', '6',
 * '46', ''). la: those the change must write in full (kept with the lease: the lease record of FAMILIES); takenOver:
 * those of the expired lease it took over ('' when none). The body reads its arguments from `A` (see GUARD).
 */
const ADMIT_BODY = `${HOST_ADMISSION}-- An expired lease: its holder died between publishing and recording, so DNS may hold a
-- change Redis does not know. Never nochg then: this request republishes it (FAMILIES).
local stale = h['${HF.leaseToken}'] ~= nil and h['${HF.leaseToken}'] ~= ''

-- The frequency rule: a request sooner than minInterval after the previous one is frequent;
-- a non-frequent one resets the run. More than maxFrequent in a row blocks the host.
local minInterval = tonumber(A[2])
local maxFrequent = tonumber(A[3])
local prevFl = h['${HF.lastRequest}'] or ''
local prevFc = h['${HF.frequentCount}'] or ''
local last = tonumber(prevFl)
local count = tonumber(prevFc) or 0
if last ~= nil and now - last < minInterval then count = count + 1 else count = 0 end
local seq = (tonumber(h['${HF.frequencySeq}']) or 0) + 1
h['${HF.lastRequest}'] = ms(now)
h['${HF.frequentCount}'] = tostring(count)
h['${HF.frequencySeq}'] = tostring(seq)
if count > maxFrequent then
  redis.call('HSET', key, '${HF.lastRequest}', h['${HF.lastRequest}'], '${HF.frequentCount}', h['${HF.frequentCount}'], '${HF.frequencySeq}', h['${HF.frequencySeq}'], '${HF.state}', 'blocked')
  return {'rejected', 'abuse'}
end

local function hostFlat()
  local out = {}
  for f, v in pairs(h) do
    if not isLeaseField(f) then out[#out + 1] = f; out[#out + 1] = v end
  end
  return out
end

local changed = stale and A[6] == 'expect'
if A[6] == 'expect' and not changed then
  for i = 8, #A, 2 do
    local f = A[i]
    local v = h[f] or ''
    if (f == '${HF.wildcard}' or f == '${HF.backmx}') and v == '0' then v = '' end
    -- The backup-MX flag means nothing without an MX (mx=NOCHG on a host that has none);
    -- a request that names a new MX already differs on m.
    local moot = f == '${HF.backmx}' and (h['${HF.mx}'] or '') == ''
    if v ~= A[i + 1] and not moot then changed = true; break end
  end
end
if not changed then
  redis.call('HSET', key, '${HF.lastRequest}', h['${HF.lastRequest}'], '${HF.frequentCount}', h['${HF.frequentCount}'], '${HF.frequencySeq}', h['${HF.frequencySeq}'])
  return {'nochg'}
end
-- The address families this change writes in full, kept with its lease (FAMILIES): the
-- ones it names; both for a host back from offline; plus, taking over an interrupted
-- change, what that one wrote.
local la = union(A[7], '')
if state == 'offline' then la = '46' end
local takenOver = ''
if stale then
  takenOver = familiesOf(h['${HF.leaseToken}'])
  la = union(la, takenOver)
end
local leaseEnd = leaseEndFor(h['${HF.leaseAbandoned}'], A[5], tonumber(A[4]))
-- The lease and its record (setLeaseRecord's fields) in one HSET.
redis.call('HSET', key, '${HF.lastRequest}', h['${HF.lastRequest}'], '${HF.frequentCount}', h['${HF.frequentCount}'], '${HF.frequencySeq}', h['${HF.frequencySeq}'], '${HF.leaseToken}', A[5], '${HF.leaseUntil}', ms(leaseEnd), '${HF.linksSeen}', h['${HF.linksChanged}'] or '', '${HF.leaseFamilies}', la, '${HF.leaseFamiliesOf}', A[5])
if h['${HF.leaseLate}'] or h['${HF.legacyLeaseRecord}'] then redis.call('HDEL', key, '${HF.leaseLate}', '${HF.legacyLeaseRecord}') end
redis.call('ZADD', KEYS[2], leaseEnd, key)
return {'change', hostFlat(), prevFl, prevFc, h['${HF.frequencySeq}'], stale and '1' or '', la, takenOver}
`;

/** admit without login checks (the echo with a hostname, the tests). */
export const ADMIT = defineBatchableScript({
  name: 'ddnsAdmit',
  preamble: LEASE_PREAMBLE,
  body: `local A = ARGV${ADMIT_BODY}`,
  numberOfKeys: 2,
  keys: (k: LeaseKeys) => [k.host, k.pending],
  args: admitArgv,
  reply: (raw) => admitReply(raw, 'admit'),
});

/** admit after a password login's checks (GUARD in lua.ts), in the same atomic step. */
export const ADMIT_GUARDED = defineBatchableScript({
  name: 'ddnsAdmitGuarded',
  preamble: LEASE_PREAMBLE,
  body: `${GUARD}${ADMIT_BODY}`,
  numberOfKeys: 6,
  keys: (k: GuardedAdmitKeys) => [k.host, k.pending, k.junkBlock, k.sourceCooldown, k.accountCooldown, k.account],
  args: (a: GuardedAdmitArgs) => [
    blindDigest(a.hashDigest),
    flag(a.donator),
    a.passwordOnly ? '1' : '',
    ...admitArgv(a),
  ],
  reply: (raw) => admitReply(raw, 'admit'),
});

/** admit for a token login: its checks (TOKEN_CHECKS in lua.ts), the time it was last used, then admit. */
export const ADMIT_TOKEN = defineBatchableScript({
  name: 'ddnsAdmitToken',
  preamble: LEASE_PREAMBLE,
  body: `${TOKEN_CHECKS}
redis.call('HSET', KEYS[5], '${TF.lastUsedAt}', ms(now))
local A = {unpack(ARGV, 3)}
${ADMIT_BODY}`,
  numberOfKeys: 6,
  keys: tokenGuardKeyList,
  args: (a: TokenAdmitArgs) => [a.tokenHash, flag(a.donator), ...admitArgv(a)],
  reply: (raw) => admitReply(raw, 'admit'),
});

/** The keys of a token login's checks, as TOKEN_CHECKS reads them (KEYS 3–6; host and pending first). */
export function tokenGuardKeyList(k: TokenGuardKeys): string[] {
  return [k.host, k.pending, k.junkBlock, k.sourceCooldown, k.token, k.account];
}

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
  body: `
local key = KEYS[1]
-- What the commit reads, in one call: owner, lease token, state, then the lease record (recordOf).
local r = redis.call('HMGET', key, '${HF.owner}', '${HF.leaseToken}', '${HF.state}', ${LEASE_RECORD_FIELDS})
if not r[1] then
  redis.call('ZREM', KEYS[2], key)
  return 'gone'
end
local lk = r[2]
if lk ~= ARGV[1] then
  lostChange(lk, 0, ARGV[13])
  undoCount(ARGV[9], ARGV[10], ARGV[11], ARGV[12])
  return 'lost'
end
local _, late = recordOf({r[4], r[5], r[6], r[7]}, lk)
local state = r[3]
if state ~= 'blocked' and state ~= 'closed' then
  if ARGV[7] == '1' then state = 'offline' else state = 'active' end
end
-- One HSET for the whole record; the emptied fields go with the lease's (endLease).
local sets, dels = {'${HF.state}', state}, {}
if ARGV[8] ~= '1' then sets[3] = '${HF.updatedAt}'; sets[4] = ms(now) end
local fields = {'${HF.ipv4}', '${HF.ipv6}', '${HF.wildcard}', '${HF.mx}', '${HF.backmx}'}
for i, f in ipairs(fields) do
  local v = ARGV[i + 1]
  if v == '' then dels[#dels + 1] = f else sets[#sets + 1] = f; sets[#sets + 1] = v end
end
redis.call('HSET', key, unpack(sets))
-- ARGV[14]: the prefix its linked hosts now follow. The links counted when the lease was taken
-- followed it too; one made since did not (its host was not among them): its mark stays.
if ARGV[14] and ARGV[14] ~= '' then
  redis.call('HSET', key, '${HF.lastPrefix}', ARGV[14])
  local marks = redis.call('HMGET', key, '${HF.linksChanged}', '${HF.linksSeen}')
  if (marks[1] or '') == (marks[2] or '') then redis.call('HDEL', key, '${HF.linksChanged}') end
end
endLease(late, dels)
return 'ok'
`,
  numberOfKeys: 2,
  keys: (k: LeaseKeys) => [k.host, k.pending],
  args: (a: CommitArgs) => [
    a.token,
    a.target.ipv4 ?? '',
    a.target.ipv6 ?? '',
    presentFlag(a.target.wildcard),
    a.target.mx ?? '',
    presentFlag(a.target.mx !== null && a.target.backmx),
    flag(a.target.offline),
    flag(a.republish),
    ...countUndoArgv(a.undo),
    a.families,
    a.prefix ?? '',
  ],
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
  lua: `${LEASE_PREAMBLE}
local key = KEYS[1]
-- Even when the lease was taken over: if nobody counted since, this request's count goes.
undoCount(ARGV[2], ARGV[3], ARGV[4], ARGV[5])
local republishIn = tonumber(ARGV[6])
local lk = redis.call('HGET', key, '${HF.leaseToken}')
if lk ~= ARGV[1] then
  -- Taken over, while what this caller sent may still be applied after the newer holder's
  -- change: as for a lost commit. Not when the primary refused it: nothing of it reached DNS.
  if republishIn and ARGV[9] ~= '1' and redis.call('HEXISTS', key, '${HF.owner}') == 1 then
    lostChange(lk, republishIn, ARGV[8])
  end
  return 0
end
local late = lateFor(ARGV[1])
if republishIn then
  repairDue(republishIn)
  if ARGV[7] == '1' then redis.call('HINCRBY', key, '${HF.republishFailures}', 1) end
  -- The families the repair rewrites: what may still be applied (a refused change leaves
  -- those of the interrupted one it took over) — all of them after a late change.
  if not late then setLeaseRecord(union(ARGV[8], ''), ARGV[1], false) end
else
  endLease(late)
end
return 1
`,
  numberOfKeys: 2,
  keys: (k: LeaseKeys) => [k.host, k.pending],
  args: (a: ReleaseArgs) => [
    a.token,
    ...countUndoArgv(a.undo),
    a.republishInMs === undefined ? '' : Math.max(0, Math.round(a.republishInMs)),
    flag(a.failedRepublish),
    a.families,
    flag(a.refused),
  ],
  reply: (raw) => replyInteger(raw, 'release') === 1,
});

function countUndoArgv(u: CountUndo): string[] {
  return [u.previousLastRequest, u.previousFrequentCount, u.sequence, u.countedAt];
}

/** A lease to take (reclaim, hostClaim): its token and length. */
export interface TakeLeaseArgs {
  token: string;
  leaseMs: number;
}

const takeLeaseArgv = (a: TakeLeaseArgs) => [a.token, Math.max(1, Math.floor(a.leaseMs))];

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
  lua: `${LEASE_PREAMBLE}
local key = KEYS[1]
if redis.call('HEXISTS', key, '${HF.owner}') == 0 then redis.call('ZREM', KEYS[2], key); return {'gone'} end
local lk = redis.call('HGET', key, '${HF.leaseToken}')
if not lk or lk == '' then redis.call('ZREM', KEYS[2], key); return {'clean'} end
local lu = tonumber(redis.call('HGET', key, '${HF.leaseUntil}')) or 0
if lu > now then redis.call('ZADD', KEYS[2], lu, key); return {'held'} end
local families = familiesOf(lk)
return {'reclaimed', takeLease(families), families}
`,
  numberOfKeys: 2,
  keys: (k: LeaseKeys) => [k.host, k.pending],
  args: takeLeaseArgv,
  reply: (raw): ReclaimReply => {
    const { kind, rest } = replyKind(raw, ['gone', 'clean', 'held', 'reclaimed'] as const, 'reclaim');
    if (kind !== 'reclaimed') return { kind };
    return { kind, host: replyFields(rest[0], 'reclaim'), families: replyString(rest[1], 'reclaim') };
  },
});

/** staleLeases(KEYS: pending; ARGV: limit) → the host keys whose lease has ended, earliest first. */
export const STALE = defineScript({
  name: 'ddnsStale',
  lua: `${NOW}
return redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ms(now), 'LIMIT', 0, tonumber(ARGV[1]))
`,
  numberOfKeys: 1,
  keys: (k: { pending: string }) => [k.pending],
  args: (a: { limit: number }) => [a.limit],
  reply: (raw) => replyArray(raw, 'stale leases').map((k) => replyString(k, 'stale leases')),
});

/**
 * postpone(KEYS: pending; ARGV: ms, hostKey…): due again `ms` from now, those still pending
 * only, and never sooner than already set (another frontend may have backed one off meanwhile).
 * The host keys go as arguments: they are members of the set, never read. → how many.
 */
export const POSTPONE = defineScript({
  name: 'ddnsPostpone',
  lua: `${NOW}
local due = ms(now + tonumber(ARGV[1]))
for i = 2, #ARGV do redis.call('ZADD', KEYS[1], 'XX', 'GT', due, ARGV[i]) end
return #ARGV - 1
`,
  numberOfKeys: 1,
  keys: (k: { pending: string }) => [k.pending],
  args: (a: { ms: number; hostKeys: readonly string[] }) => [Math.max(0, Math.round(a.ms)), ...a.hostKeys],
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
  lua: `${LEASE_PREAMBLE}
local key = KEYS[1]
if redis.call('HEXISTS', key, '${HF.owner}') == 0 then return {'gone'} end
local lk = redis.call('HGET', key, '${HF.leaseToken}')
if lk and lk ~= '' and (tonumber(redis.call('HGET', key, '${HF.leaseUntil}')) or 0) > now then return {'busy'} end
local stale = lk and lk ~= ''
local takenOver = stale and familiesOf(lk) or ''
-- The removal deletes every record: both families.
return {'claimed', takeLease('46'), stale and '1' or '', takenOver}
`,
  numberOfKeys: 2,
  keys: (k: LeaseKeys) => [k.host, k.pending],
  args: takeLeaseArgv,
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
  lua: `${NOW}
local ended = 0
for i = 1, #KEYS, 2 do
  local key, token = KEYS[i], ARGV[i]
  -- A key that is no host hash (WRONGTYPE) is skipped, not an error for every host of the call.
  local r = redis.pcall('HMGET', key, '${HF.owner}', '${HF.leaseToken}', '${HF.leaseUntil}', '${HF.leaseAbandoned}')
  if not r.err and r[1] then
    if r[2] == token then
      if (tonumber(r[3]) or 0) > now then redis.call('HSET', key, '${HF.leaseUntil}', ms(now)) end
      redis.call('ZADD', KEYS[i + 1], 'LT', now, key)
      ended = ended + 1
    elseif ARGV[i + 1] == '1' then
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
  keys: (k: { items: readonly AbandonItem[] }) => k.items.flatMap((i) => [i.host, i.pending]),
  args: (a: { items: readonly AbandonItem[] }) => a.items.flatMap((i) => [i.token, i.mark ? '1' : '']),
  reply: (raw) => replyInteger(raw, 'abandon'),
});
