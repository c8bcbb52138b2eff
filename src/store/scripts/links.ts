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
  keys: ['host', 'parent', 'parentLinks', 'formerParentLinks', 'hostLinks'],
  args: ['fqdn', 'parentName', 'iid', 'formerParent', 'maxLinks'],
  lua: `
local h = redis.call('HMGET', host, '${HF.owner}', '${HF.type}', '${HF.linkParent}')
if not h[1] then return {'nohost', fqdn} end
if fqdn == parentName then return {'self'} end
local p = redis.call('HMGET', parent, '${HF.owner}', '${HF.type}', '${HF.linkParent}')
if not p[1] then return {'nohost', parentName} end
if (h[3] or '') ~= formerParent then return {'moved'} end
if h[1] ~= p[1] then return {'owner', h[1], p[1]} end
if h[2] ~= 'dynamic' then return {'type', fqdn, h[2] or ''} end
if p[2] ~= 'dynamic' then return {'type', parentName, p[2] or ''} end
if p[3] and p[3] ~= '' then return {'chain-up', p[3]} end
local followers = redis.call('SCARD', hostLinks)
if followers > 0 then return {'chain-down', tostring(followers)} end
if redis.call('SISMEMBER', parentLinks, fqdn) == 0 and redis.call('SCARD', parentLinks) >= tonumber(maxLinks) then return {'full'} end
if formerParent ~= '' and formerParent ~= parentName then redis.call('SREM', formerParentLinks, fqdn) end
redis.call('HSET', host, '${HF.linkParent}', parentName, '${HF.linkIid}', iid)
redis.call('SADD', parentLinks, fqdn)
redis.call('HINCRBY', parent, '${HF.linksChanged}', 1)
return {'ok'}
`,
  encodeKeys: (k: LinkKeys) => k,
  encodeArgs: (a: LinkArgs) => ({
    fqdn: a.fqdn,
    parentName: a.parent,
    iid: a.iid,
    formerParent: a.formerParent,
    maxLinks: a.maxLinks,
  }),
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
  keys: ['host', 'parentLinks'],
  args: ['fqdn', 'parent'],
  lua: `
if redis.call('HEXISTS', host, '${HF.owner}') == 0 then return 'nohost' end
local pp = redis.call('HGET', host, '${HF.linkParent}') or ''
if pp ~= parent then return 'moved' end
if pp == '' then return 'notlinked' end
redis.call('HDEL', host, '${HF.linkParent}', '${HF.linkIid}')
redis.call('SREM', parentLinks, fqdn)
return 'ok'
`,
  reply: (raw) => replyOneOf(raw, ['ok', 'nohost', 'notlinked', 'moved'] as const, 'host unlink'),
});

/**
 * forget(KEYS: hostLinks, parentLinks, follower host…; ARGV: fqdn): a removed host leaves its parent's links, and each
 * of its followers that still names it loses its link. → how many followers lost it.
 */
export const FORGET = defineScript({
  name: 'ddnsHostLinksForget',
  keys: ['hostLinks', 'parentLinks'],
  keyTail: 'followers',
  args: ['fqdn'],
  lua: `
local n = 0
for _, follower in ipairs(followers) do
  if redis.call('HGET', follower, '${HF.linkParent}') == fqdn then
    redis.call('HDEL', follower, '${HF.linkParent}', '${HF.linkIid}')
    n = n + 1
  end
end
redis.call('DEL', hostLinks)
redis.call('SREM', parentLinks, fqdn)
return n
`,
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
  preamble: LEASE_PREAMBLE,
  keys: ['host', 'pending'],
  args: ['token', 'leaseMs', 'parent', 'account', 'iid', 'ipv6'],
  lua: `
local key = host
local h = redis.call('HMGET', key, '${HF.owner}', '${HF.linkParent}', '${HF.linkIid}', '${HF.type}', '${HF.state}', '${HF.leaseToken}', '${HF.leaseUntil}', '${HF.ipv6}')
if not h[1] then return {'skipped', 'gone'} end
if h[2] ~= parent or h[3] ~= iid then return {'skipped', 'unlinked'} end
if h[1] ~= account then return {'skipped', 'not-owner'} end
if h[4] ~= 'dynamic' then return {'skipped', 'not-dynamic'} end
local state = h[5] or 'active'
if state ~= 'active' then return {'skipped', state} end
local stale = h[6] ~= false and h[6] ~= ''
if stale and (tonumber(h[7]) or 0) > now then return {'skipped', 'busy'} end
if not stale and h[8] == ipv6 then return {'nochg'} end
local takenOver = ''
if stale then takenOver = familiesOf(key, h[6]) end
local families = union('6', takenOver)
return {'change', takeLease(key, pending, families, token, leaseMs), stale and '1' or '', families, takenOver}
`,
  encodeArgs: (a: AdmitLinkedArgs) => ({ ...a, leaseMs: Math.max(1, Math.floor(a.leaseMs)) }),
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
