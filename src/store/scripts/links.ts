/**
 * The scripts of host links (docs/protocol.md, "IPv6 prefixes"): link and unlink (the operator's), the admission of a
 * linked host to its parent's prefix change (under the host's own lease, not counted), and forget (a host removed).
 * A link lives in the linked host's hash (linkParent, linkIid) and in its parent's set of links (Keys.hostLinks).
 */
import { LINK_SKIPS as SKIPS, type LinkSkip } from '../../core/admission.js';
import { HOST_FIELDS as HF } from '../keys.js';
import { LEASE_PREAMBLE } from '../lua.js';
import { defineScript, replyFields, replyKind, replyOneOf, replyString } from '../script.js';
import type { HashFields } from '../codec.js';

export interface LinkKeys {
  host: string;
  parent: string;
  parentLinks: string;
  /** The links of the parent the host follows now (the parent's own when it follows none). */
  formerParentLinks: string;
  /** The host's own followers. */
  hostLinks: string;
}

export interface LinkArgs {
  fqdn: string;
  parent: string;
  iid: string;
  /** The parent the host followed when it was read ('' none): the script refuses ('moved') if that changed. */
  formerParent: string;
  maxLinks: number;
}

export type LinkReply =
  /** self: the host is its own parent (its prefix updates would find its own lease busy). */
  | { kind: 'ok' | 'moved' | 'full' | 'self' }
  | { kind: 'nohost'; name: string }
  | { kind: 'owner'; hostOwner: string; parentOwner: string }
  | { kind: 'type'; name: string; type: string }
  /** The parent follows `name` itself. */
  | { kind: 'chain-up'; name: string }
  /** The host has followers of its own. */
  | { kind: 'chain-down'; count: number };

/**
 * link(KEYS: host, parent, parentLinks, formerParentLinks, hostLinks; ARGV: fqdn, parent, iid, formerParent, maxLinks)
 * → {'ok'} | {'moved'} | {'full'} | {'self'} | {'nohost', name} | {'owner', hostOwner, parentOwner} |
 * {'type', name, type} | {'chain-up', name} | {'chain-down', count}. No self-links, no chains: a parent follows
 * nobody, a linked host has no followers. The parent's linksChanged mark makes its next prefix update publish the
 * new follower (no nochg).
 */
export const LINK = defineScript({
  name: 'ddnsHostLink',
  lua: `
local h = redis.call('HMGET', KEYS[1], '${HF.owner}', '${HF.type}', '${HF.linkParent}')
if not h[1] then return {'nohost', ARGV[1]} end
if ARGV[1] == ARGV[2] then return {'self'} end
local p = redis.call('HMGET', KEYS[2], '${HF.owner}', '${HF.type}', '${HF.linkParent}')
if not p[1] then return {'nohost', ARGV[2]} end
if (h[3] or '') ~= ARGV[4] then return {'moved'} end
if h[1] ~= p[1] then return {'owner', h[1], p[1]} end
if h[2] ~= 'dynamic' then return {'type', ARGV[1], h[2] or ''} end
if p[2] ~= 'dynamic' then return {'type', ARGV[2], p[2] or ''} end
if p[3] and p[3] ~= '' then return {'chain-up', p[3]} end
local followers = redis.call('SCARD', KEYS[5])
if followers > 0 then return {'chain-down', tostring(followers)} end
if redis.call('SISMEMBER', KEYS[3], ARGV[1]) == 0 and redis.call('SCARD', KEYS[3]) >= tonumber(ARGV[5]) then return {'full'} end
if ARGV[4] ~= '' and ARGV[4] ~= ARGV[2] then redis.call('SREM', KEYS[4], ARGV[1]) end
redis.call('HSET', KEYS[1], '${HF.linkParent}', ARGV[2], '${HF.linkIid}', ARGV[3])
redis.call('SADD', KEYS[3], ARGV[1])
redis.call('HINCRBY', KEYS[2], '${HF.linksChanged}', 1)
return {'ok'}
`,
  numberOfKeys: 5,
  keys: (k: LinkKeys) => [k.host, k.parent, k.parentLinks, k.formerParentLinks, k.hostLinks],
  args: (a: LinkArgs) => [a.fqdn, a.parent, a.iid, a.formerParent, a.maxLinks],
  reply: (raw): LinkReply => {
    const kinds = ['ok', 'moved', 'full', 'self', 'nohost', 'owner', 'type', 'chain-up', 'chain-down'] as const;
    const { kind, rest } = replyKind(raw, kinds, 'host link');
    const s = (i: number) => replyString(rest[i], 'host link');
    switch (kind) {
      case 'nohost':
      case 'chain-up':
        return { kind, name: s(0) };
      case 'owner':
        return { kind, hostOwner: s(0), parentOwner: s(1) };
      case 'type':
        return { kind, name: s(0), type: s(1) };
      case 'chain-down':
        return { kind, count: Number(s(0)) };
      default:
        return { kind };
    }
  },
});

/**
 * unlink(KEYS: host, parentLinks; ARGV: fqdn, parent as read) → 'ok' | 'nohost' | 'notlinked' | 'moved' (the link
 * changed since it was read). The host keeps its AAAA record until its next change.
 */
export const UNLINK = defineScript({
  name: 'ddnsHostUnlink',
  lua: `
if redis.call('HEXISTS', KEYS[1], '${HF.owner}') == 0 then return 'nohost' end
local pp = redis.call('HGET', KEYS[1], '${HF.linkParent}') or ''
if pp ~= ARGV[2] then return 'moved' end
if pp == '' then return 'notlinked' end
redis.call('HDEL', KEYS[1], '${HF.linkParent}', '${HF.linkIid}')
redis.call('SREM', KEYS[2], ARGV[1])
return 'ok'
`,
  numberOfKeys: 2,
  keys: (k: { host: string; parentLinks: string }) => [k.host, k.parentLinks],
  args: (a: { fqdn: string; parent: string }) => [a.fqdn, a.parent],
  reply: (raw) => replyOneOf(raw, ['ok', 'nohost', 'notlinked', 'moved'] as const, 'host unlink'),
});

/**
 * forget(KEYS: hostLinks, parentLinks, follower host…; ARGV: fqdn): a removed host leaves its parent's links, and each
 * of its followers that still names it loses its link. → how many followers lost it.
 */
export const FORGET = defineScript({
  name: 'ddnsHostLinksForget',
  lua: `
local n = 0
for i = 3, #KEYS do
  if redis.call('HGET', KEYS[i], '${HF.linkParent}') == ARGV[1] then
    redis.call('HDEL', KEYS[i], '${HF.linkParent}', '${HF.linkIid}')
    n = n + 1
  end
end
redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[2], ARGV[1])
return n
`,
  keys: (k: { hostLinks: string; parentLinks: string; followers: readonly string[] }) => [
    k.hostLinks,
    k.parentLinks,
    ...k.followers,
  ],
  args: (a: { fqdn: string }) => [a.fqdn],
  reply: (raw) => Number(raw),
});

export interface AdmitLinkedArgs {
  token: string;
  leaseMs: number;
  parent: string;
  account: string;
  iid: string;
  ipv6: string;
}

export type AdmitLinkedReply =
  | { kind: 'skipped'; reason: LinkSkip }
  | { kind: 'nochg' }
  | { kind: 'change'; host: HashFields; repairDue: boolean; families: string; takenOver: string };

/**
 * admitLinked(KEYS: host, pending; ARGV: token, leaseMs, parent, account, iid, ipv6) → {'skipped', reason} |
 * {'nochg'} | {'change', hostFlat, repairDue, families, takenOver}: a linked host's lease for its parent's prefix
 * change, which writes its AAAA ('6'). Its frequency fields are left alone (only the parent's request counts). An
 * expired lease is taken over as admit does (its interrupted change's families are written too; never nochg then).
 */
export const ADMIT_LINKED = defineScript({
  name: 'ddnsAdmitLinked',
  lua: `${LEASE_PREAMBLE}
local key = KEYS[1]
local h = redis.call('HMGET', key, '${HF.owner}', '${HF.linkParent}', '${HF.linkIid}', '${HF.type}', '${HF.state}', '${HF.leaseToken}', '${HF.leaseUntil}', '${HF.ipv6}')
if not h[1] then return {'skipped', 'gone'} end
if h[2] ~= ARGV[3] or h[3] ~= ARGV[5] then return {'skipped', 'unlinked'} end
if h[1] ~= ARGV[4] then return {'skipped', 'not-owner'} end
if h[4] ~= 'dynamic' then return {'skipped', 'not-dynamic'} end
local state = h[5] or 'active'
if state ~= 'active' then return {'skipped', state} end
local stale = h[6] ~= false and h[6] ~= ''
if stale and (tonumber(h[7]) or 0) > now then return {'skipped', 'busy'} end
if not stale and h[8] == ARGV[6] then return {'nochg'} end
local takenOver = ''
if stale then takenOver = familiesOf(h[6]) end
local families = union('6', takenOver)
return {'change', takeLease(families), stale and '1' or '', families, takenOver}
`,
  numberOfKeys: 2,
  keys: (k: { host: string; pending: string }) => [k.host, k.pending],
  args: (a: AdmitLinkedArgs) => [a.token, Math.max(1, Math.floor(a.leaseMs)), a.parent, a.account, a.iid, a.ipv6],
  reply: (raw): AdmitLinkedReply => {
    const { kind, rest } = replyKind(raw, ['skipped', 'nochg', 'change'] as const, 'admit linked');
    if (kind === 'skipped') return { kind, reason: replyOneOf(rest[0], SKIPS, 'admit linked') };
    if (kind === 'nochg') return { kind };
    return {
      kind,
      host: replyFields(rest[0], 'admit linked'),
      repairDue: rest[1] === '1',
      families: replyString(rest[2], 'admit linked'),
      takenOver: replyString(rest[3], 'admit linked'),
    };
  },
});
