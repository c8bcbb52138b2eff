/**
 * The ACME TXT scripts (docs/protocol.md, "ACME TXT records"): txtAdmit (three forms, as admit's: no login checks, a
 * password login's, a token login's) hands out the host's lease for a change of its TXT set, txtCommit records the set
 * and ends the lease. The lease is the host's one lease, so a TXT change and an address change never cross; release
 * and the repair of an interrupted change are the lease scripts' (lease.ts).
 */
import { ADMIT_KINDS, ADMIT_REJECTIONS, GUARD_CHECKS } from '../../core/admission.js';
import { flag } from '../../core/types.js';
import type { HashFields } from '../codec.js';
import { HOST_FIELDS as HF, TOKEN_FIELDS as TF } from '../keys.js';
import { blindDigest, GUARD, HOST_ADMISSION, LEASE_PREAMBLE, TOKEN_CHECKS } from '../lua.js';
import { defineScript, replyFields, replyKind, replyOneOf, replyString } from '../script.js';
import {
  tokenGuardKeyList,
  type AdmitNoLease,
  type GuardedAdmitKeys,
  type LeaseKeys,
  type TokenGuardArgs,
  type TokenGuardKeys,
} from './lease.js';

export interface TxtAdmitArgs {
  account: string;
  op: 'set' | 'remove' | 'clear';
  /** The value to set or remove ('' for clear). */
  value: string;
  /** Values kept at most: the oldest go. */
  keep: number;
  /** TXT requests per host and window (frequency.txtLimit), and the window. */
  limit: number;
  windowMs: number;
  leaseMs: number;
  leaseToken: string;
}

export interface GuardedTxtAdmitArgs extends TxtAdmitArgs {
  hashDigest: string;
  donator: boolean;
  passwordOnly: boolean;
}

export type TokenTxtAdmitArgs = TxtAdmitArgs & TokenGuardArgs;

export type TxtAdmitReply =
  | AdmitNoLease
  | {
      kind: 'change';
      /** The host's fields, without the lease ones. */
      host: HashFields;
      /** The TXT values the change publishes, oldest first. */
      values: string[];
      /** The lease taken over had expired: the stored state is republished with the change. */
      repairDue: boolean;
      /** The address families of the interrupted change taken over ('' when none). */
      takenOver: string;
    };

const txtAdmitArgv = (a: TxtAdmitArgs): (string | number)[] => [
  a.account,
  a.op,
  a.value,
  Math.max(1, Math.floor(a.keep)),
  Math.max(0, Math.floor(a.limit)),
  Math.max(1, Math.floor(a.windowMs)),
  Math.max(1, Math.floor(a.leaseMs)),
  a.leaseToken,
];

function txtAdmitReply(raw: unknown): TxtAdmitReply {
  const script = 'txt admit';
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
      if (rest.length !== 4) throw new Error(`${script}: unexpected reply ${JSON.stringify(raw)}`);
      const values = replyString(rest[1], script);
      return {
        kind,
        host: replyFields(rest[0], script),
        values: values === '' ? [] : values.split('\n'),
        repairDue: replyString(rest[2], script) === '1',
        takenOver: replyString(rest[3], script),
      };
    }
  }
}

/**
 * txtAdmit(KEYS: host, pending; ARGV (in `A`): account, op, value, keep, limit, windowMs, leaseMs, token) → {kind} |
 * {'change', hostFlat, values, repairDue, takenOver}. The host checks of admit (nohost … abuse: a blocked host gets
 * abuse), then the TXT rate rule: more than `limit` TXT requests in the host's window → abuse for this request only
 * (the host is not blocked, address updates go on). nochg when the set already is what the request asks, unless the
 * lease taken over had expired (a repair is due: the change republishes the stored state). A change marks the host as
 * managing its TXT set (HF.txt present) before anything is published, so a repair of it rewrites the set.
 */
const TXT_ADMIT_BODY = `${HOST_ADMISSION}local stale = h['${HF.leaseToken}'] ~= nil and h['${HF.leaseToken}'] ~= ''

local start = tonumber(h['${HF.txtWindowStart}'])
local count = tonumber(h['${HF.txtCount}']) or 0
if start == nil or now - start >= tonumber(A[6]) then start = now; count = 0 end
if count >= tonumber(A[5]) then return {'rejected', 'abuse'} end
redis.call('HSET', key, '${HF.txtWindowStart}', ms(start), '${HF.txtCount}', tostring(count + 1))

local stored = h['${HF.txt}']
local current = {}
if stored ~= nil and stored ~= '' then
  for v in string.gmatch(stored, '[^\\n]+') do current[#current + 1] = v end
end
local nextValues = {}
local changed = false
if A[2] == 'set' then
  local found = false
  for _, v in ipairs(current) do if v == A[3] then found = true end end
  for _, v in ipairs(current) do nextValues[#nextValues + 1] = v end
  if not found then
    nextValues[#nextValues + 1] = A[3]
    while #nextValues > tonumber(A[4]) do table.remove(nextValues, 1) end
    changed = true
  elseif current[#current] ~= A[3] then
    -- Presented again: it becomes the newest (the next new value evicts the other). The records
    -- are the same set, so only Redis changes.
    nextValues = {}
    for _, v in ipairs(current) do if v ~= A[3] then nextValues[#nextValues + 1] = v end end
    nextValues[#nextValues + 1] = A[3]
    redis.call('HSET', key, '${HF.txt}', table.concat(nextValues, '\\n'))
  end
elseif A[2] == 'remove' then
  for _, v in ipairs(current) do
    if v == A[3] then changed = true else nextValues[#nextValues + 1] = v end
  end
else
  changed = #current > 0
end
if not changed and not stale then return {'nochg'} end

if stored == nil then redis.call('HSET', key, '${HF.txt}', ''); h['${HF.txt}'] = '' end
local takenOver = ''
if stale then takenOver = familiesOf(h['${HF.leaseToken}']) end
local leaseEnd = leaseEndFor(h['${HF.leaseAbandoned}'], A[8], tonumber(A[7]))
redis.call('HSET', key, '${HF.leaseToken}', A[8], '${HF.leaseUntil}', ms(leaseEnd))
setLeaseRecord(takenOver, A[8], false)
redis.call('ZADD', KEYS[2], leaseEnd, key)
local out = {}
for f, v in pairs(h) do
  if not isLeaseField(f) then out[#out + 1] = f; out[#out + 1] = v end
end
return {'change', out, table.concat(nextValues, '\\n'), stale and '1' or '', takenOver}
`;

/** txtAdmit without login checks (tests). */
export const TXT_ADMIT = defineScript({
  name: 'ddnsTxtAdmit',
  lua: `${LEASE_PREAMBLE}local A = ARGV${TXT_ADMIT_BODY}`,
  numberOfKeys: 2,
  keys: (k: LeaseKeys) => [k.host, k.pending],
  args: txtAdmitArgv,
  reply: txtAdmitReply,
});

/** txtAdmit after a password login's checks (GUARD in lua.ts), in the same atomic step. */
export const TXT_ADMIT_GUARDED = defineScript({
  name: 'ddnsTxtAdmitGuarded',
  lua: `${LEASE_PREAMBLE}${GUARD}${TXT_ADMIT_BODY}`,
  numberOfKeys: 6,
  keys: (k: GuardedAdmitKeys) => [k.host, k.pending, k.junkBlock, k.sourceCooldown, k.accountCooldown, k.account],
  args: (a: GuardedTxtAdmitArgs) => [
    blindDigest(a.hashDigest),
    flag(a.donator),
    a.passwordOnly ? '1' : '',
    ...txtAdmitArgv(a),
  ],
  reply: txtAdmitReply,
});

/** txtAdmit for a token login: its checks (TOKEN_CHECKS in lua.ts), the time it was last used, then txtAdmit. */
export const TXT_ADMIT_TOKEN = defineScript({
  name: 'ddnsTxtAdmitToken',
  lua: `${LEASE_PREAMBLE}${TOKEN_CHECKS}
redis.call('HSET', KEYS[5], '${TF.lastUsedAt}', ms(now))
local A = {unpack(ARGV, 3)}
${TXT_ADMIT_BODY}`,
  numberOfKeys: 6,
  keys: (k: TokenGuardKeys) => tokenGuardKeyList(k),
  args: (a: TokenTxtAdmitArgs) => [a.tokenHash, flag(a.donator), ...txtAdmitArgv(a)],
  reply: txtAdmitReply,
});

/**
 * txtCommit(KEYS: host, pending; ARGV: token, values ('\n'-joined), families) → 'ok' | 'lost' | 'gone': record the
 * published TXT set and end the lease, as commit does for an address change ('lost': the lease was no longer ours;
 * nothing is written and a repair of what this caller wrote is due, LOST_CHANGE).
 */
export const TXT_COMMIT = defineScript({
  name: 'ddnsTxtCommit',
  lua: `${LEASE_PREAMBLE}
local key = KEYS[1]
if redis.call('HEXISTS', key, '${HF.owner}') == 0 then
  redis.call('ZREM', KEYS[2], key)
  return 'gone'
end
local lk = redis.call('HGET', key, '${HF.leaseToken}')
if lk ~= ARGV[1] then
  lostChange(lk, 0, ARGV[3])
  return 'lost'
end
local late = lateFor(lk)
redis.call('HSET', key, '${HF.txt}', ARGV[2])
endLease(late)
return 'ok'
`,
  numberOfKeys: 2,
  keys: (k: LeaseKeys) => [k.host, k.pending],
  args: (a: { token: string; values: readonly string[]; families: string }) => [
    a.token,
    a.values.join('\n'),
    a.families,
  ],
  reply: (raw) => replyOneOf(raw, ['ok', 'lost', 'gone'] as const, 'txt commit'),
});
