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
import { TOKEN_GUARD_KEYS, type AdmitNoLease, type TokenGuardArgs } from './lease.js';

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

/** txtAdmit's own arguments, in ARGV order after a guard's. */
const TXT_ADMIT_ARGS = ['accountName', 'op', 'value', 'keep', 'limit', 'windowMs', 'leaseMs', 'leaseToken'] as const;

const txtAdmitArgs = (a: TxtAdmitArgs) => ({
  accountName: a.account,
  op: a.op,
  value: a.value,
  keep: Math.max(1, Math.floor(a.keep)),
  limit: Math.max(0, Math.floor(a.limit)),
  windowMs: Math.max(1, Math.floor(a.windowMs)),
  leaseMs: Math.max(1, Math.floor(a.leaseMs)),
  leaseToken: a.leaseToken,
});

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
 * txtAdmit(key, pending, account, op, value, keep, limit, windowMs, leaseMs, leaseToken) → {kind} |
 * {'change', hostFlat, values, repairDue, takenOver}. The host checks of admit (nohost … abuse: a blocked host gets
 * abuse), then the TXT rate rule: more than `limit` TXT requests in the host's window → abuse for this request only
 * (the host is not blocked, address updates go on). nochg when the set already is what the request asks, unless the
 * lease taken over had expired (a repair is due: the change republishes the stored state). A change marks the host as
 * managing its TXT set (HF.txt present) before anything is published, so a repair of it rewrites the set.
 */
const TXT_ADMIT_FUNCTION = `${HOST_ADMISSION}
local function txtAdmit(key, pending, account, op, value, keep, limit, windowMs, leaseMs, leaseToken)
local refusal, h = hostAdmission(key, account)
if refusal then return refusal end
local stale = h['${HF.leaseToken}'] ~= nil and h['${HF.leaseToken}'] ~= ''

local start = tonumber(h['${HF.txtWindowStart}'])
local count = tonumber(h['${HF.txtCount}']) or 0
if start == nil or now - start >= tonumber(windowMs) then start = now; count = 0 end
if count >= tonumber(limit) then return {'rejected', 'abuse'} end
redis.call('HSET', key, '${HF.txtWindowStart}', ms(start), '${HF.txtCount}', tostring(count + 1))

local stored = h['${HF.txt}']
local current = {}
if stored ~= nil and stored ~= '' then
  for v in string.gmatch(stored, '[^\\n]+') do current[#current + 1] = v end
end
local nextValues = {}
local changed = false
if op == 'set' then
  local found = false
  for _, v in ipairs(current) do if v == value then found = true end end
  for _, v in ipairs(current) do nextValues[#nextValues + 1] = v end
  if not found then
    nextValues[#nextValues + 1] = value
    while #nextValues > tonumber(keep) do table.remove(nextValues, 1) end
    changed = true
  elseif current[#current] ~= value then
    -- Presented again: it becomes the newest (the next new value evicts the other). The records
    -- are the same set, so only Redis changes.
    nextValues = {}
    for _, v in ipairs(current) do if v ~= value then nextValues[#nextValues + 1] = v end end
    nextValues[#nextValues + 1] = value
    redis.call('HSET', key, '${HF.txt}', table.concat(nextValues, '\\n'))
  end
elseif op == 'remove' then
  for _, v in ipairs(current) do
    if v == value then changed = true else nextValues[#nextValues + 1] = v end
  end
else
  changed = #current > 0
end
if not changed and not stale then return {'nochg'} end

if stored == nil then redis.call('HSET', key, '${HF.txt}', ''); h['${HF.txt}'] = '' end
local takenOver = ''
if stale then takenOver = familiesOf(key, h['${HF.leaseToken}']) end
local leaseEnd = leaseEndFor(h['${HF.leaseAbandoned}'], leaseToken, tonumber(leaseMs))
redis.call('HSET', key, '${HF.leaseToken}', leaseToken, '${HF.leaseUntil}', ms(leaseEnd))
setLeaseRecord(key, takenOver, leaseToken, false)
redis.call('ZADD', pending, leaseEnd, key)
local out = {}
for f, v in pairs(h) do
  if not isLeaseField(f) then out[#out + 1] = f; out[#out + 1] = v end
end
return {'change', out, table.concat(nextValues, '\\n'), stale and '1' or '', takenOver}
end
`;

/** The call of txtAdmit with the names every txtAdmit binds. */
const CALL_TXT_ADMIT =
  'return txtAdmit(host, pending, accountName, op, value, keep, limit, windowMs, leaseMs, leaseToken)\n';

/** txtAdmit without login checks (tests). */
export const TXT_ADMIT = defineScript({
  name: 'ddnsTxtAdmit',
  preamble: `${LEASE_PREAMBLE}${TXT_ADMIT_FUNCTION}`,
  keys: ['host', 'pending'],
  args: TXT_ADMIT_ARGS,
  encodeArgs: txtAdmitArgs,
  lua: CALL_TXT_ADMIT,
  reply: txtAdmitReply,
});

/** txtAdmit after a password login's checks (GUARD in lua.ts), in the same atomic step. */
export const TXT_ADMIT_GUARDED = defineScript({
  name: 'ddnsTxtAdmitGuarded',
  preamble: `${LEASE_PREAMBLE}${GUARD}${TXT_ADMIT_FUNCTION}`,
  keys: ['host', 'pending', 'junkBlock', 'sourceCooldown', 'accountCooldown', 'account'],
  args: ['digest', 'donator', 'passwordOnly', ...TXT_ADMIT_ARGS],
  encodeArgs: (a: GuardedTxtAdmitArgs) => ({
    digest: blindDigest(a.hashDigest),
    donator: flag(a.donator),
    passwordOnly: a.passwordOnly ? '1' : '',
    ...txtAdmitArgs(a),
  }),
  lua: `local refused = guardRefusal(junkBlock, sourceCooldown, accountCooldown, account, digest, donator, passwordOnly)
if refused then return refused end
${CALL_TXT_ADMIT}`,
  reply: txtAdmitReply,
});

/** txtAdmit for a token login: its checks (TOKEN_CHECKS in lua.ts), the time it was last used, then txtAdmit. */
export const TXT_ADMIT_TOKEN = defineScript({
  name: 'ddnsTxtAdmitToken',
  preamble: `${LEASE_PREAMBLE}${TOKEN_CHECKS}${TXT_ADMIT_FUNCTION}`,
  keys: TOKEN_GUARD_KEYS,
  args: ['tokenHash', 'donator', ...TXT_ADMIT_ARGS],
  encodeArgs: (a: TokenTxtAdmitArgs) => ({ tokenHash: a.tokenHash, donator: flag(a.donator), ...txtAdmitArgs(a) }),
  lua: `local refused = tokenRefusal(junkBlock, sourceCooldown, token, account, tokenHash, donator)
if refused then return refused end
redis.call('HSET', token, '${TF.lastUsedAt}', ms(now))
${CALL_TXT_ADMIT}`,
  reply: txtAdmitReply,
});

/**
 * txtCommit(KEYS: host, pending; ARGV: token, values ('\n'-joined), families) → 'ok' | 'lost' | 'gone': record the
 * published TXT set and end the lease, as commit does for an address change ('lost': the lease was no longer ours;
 * nothing is written and a repair of what this caller wrote is due, LOST_CHANGE).
 */
export const TXT_COMMIT = defineScript({
  name: 'ddnsTxtCommit',
  preamble: LEASE_PREAMBLE,
  keys: ['host', 'pending'],
  args: ['token', 'values', 'families'],
  lua: `
if redis.call('HEXISTS', host, '${HF.owner}') == 0 then
  redis.call('ZREM', pending, host)
  return 'gone'
end
local lk = redis.call('HGET', host, '${HF.leaseToken}')
if lk ~= token then
  lostChange(host, pending, lk, 0, families)
  return 'lost'
end
local late = lateFor(host, lk)
redis.call('HSET', host, '${HF.txt}', values)
endLease(host, pending, late)
return 'ok'
`,
  encodeArgs: (a: { token: string; values: readonly string[]; families: string }) => ({
    token: a.token,
    values: a.values.join('\n'),
    families: a.families,
  }),
  reply: (raw) => replyOneOf(raw, ['ok', 'lost', 'gone'] as const, 'txt commit'),
});
