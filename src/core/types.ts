/** Domain types shared by every layer (pure data, no behaviour beyond helpers). */
import type { HourTally, LastRequest } from './request-log.js';

export const HOST_TYPES = ['dynamic', 'static', 'webhop', 'subdomain'] as const;
export type HostType = (typeof HOST_TYPES)[number];
/** The type of a host added without one (host add, the API, an import line of two fields). */
export const DEFAULT_HOST_TYPE: HostType = 'dynamic';

export const HOST_STATES = ['active', 'offline', 'blocked', 'closed'] as const;
export type HostState = (typeof HOST_STATES)[number];
/** The states an operator sets (block, close, reopen); `offline` is only ever an update's. */
export const SETTABLE_HOST_STATES = ['active', 'blocked', 'closed'] as const satisfies readonly HostState[];
export type SettableHostState = (typeof SETTABLE_HOST_STATES)[number];

export interface Account {
  name: string;
  /** Self-describing password hash (see auth/password). */
  passwordHash: string;
  /** A paying account: may set offline, shorter minimum interval. */
  donator: boolean;
  createdAt: number;
}

/**
 * What DNS holds for a host, as last confirmed by the primary (NOERROR). Redis mirrors
 * the published records: an address is present here iff its record is in DNS.
 */
export interface HostDnsState {
  ipv4: string | null;
  ipv6: string | null;
  wildcard: boolean;
  /** The resolved mail exchanger set by the last update, or null (no MX). */
  mx: string | null;
  backmx: boolean;
}

export interface HostRecord extends HostDnsState {
  fqdn: string;
  account: string;
  type: HostType;
  state: HostState;
  /** The host whose IPv6 prefix it follows, and its interface identifier (docs/protocol.md, "IPv6 prefixes"). */
  link?: HostLink;
  /** The last delegated prefix an update of this host carried, which its linked hosts follow (`network/length`). */
  prefix?: string;
  /** Milliseconds since the epoch of the last change confirmed by DNS (0 = never). */
  updatedAt: number;
  /**
   * The ACME TXT values at `_acme-challenge.<fqdn>`, oldest first (docs/protocol.md, "ACME TXT records");
   * undefined: the bridge has never set any, and leaves that name alone.
   */
  txt?: readonly string[];
  /** The last request that passed its checks and was counted (ms; the frequency rule's); undefined: none yet. */
  lastRequestAt?: number;
  /** When the quiet-host sweep first saw it without a request, or it was made active again (ms); undefined: not yet. */
  createdAt?: number;
  /** Its last update request (core/request-log.ts); undefined: none recorded. */
  lastRequest?: LastRequest;
  /** Its requests by the hour, as stored (countsOverDay reads them). */
  requestTallies?: readonly HourTally[];
}

/** A host that follows another's prefix: AAAA = the parent's prefix + `iid` (core/prefix.ts). */
export interface HostLink {
  parent: string;
  iid: string;
}

export function emptyDnsState(): HostDnsState {
  return { ipv4: null, ipv6: null, wildcard: false, mx: null, backmx: false };
}

/** What one update request asks for one host, after parameter parsing. */
export interface RequestedSettings {
  /** Addresses to set; only the families present are changed; null removes the family's record (the gateway). */
  ipv4?: string | null;
  ipv6?: string | null;
  /** `keep` = NOCHG (OPNsense): leave the wildcard flag as it is. */
  wildcard: boolean | 'keep';
  /** `keep` = NOCHG: leave the backup-MX flag as it is. */
  backmx: boolean | 'keep';
  offline: boolean;
}

/** The DNS state a change leads to, plus whether the host ends up offline. */
export interface TargetState extends HostDnsState {
  offline: boolean;
}

/**
 * The `mx` of a request after resolution: the name when it resolves, null when absent or
 * unresolvable (→ MX deleted), `keep` for NOCHG.
 */
export type ResolvedMx = string | null | 'keep';

/**
 * Merge the current state with what a request asks. Going offline removes addresses and
 * keeps MX; coming back sets only the requested families.
 */
export function targetState(current: HostRecord, req: RequestedSettings, resolvedMx: ResolvedMx): TargetState {
  if (req.offline) {
    return { ...pickDns(current), ipv4: null, ipv6: null, offline: true };
  }
  const wasOffline = current.state === 'offline';
  const mx = resolvedMx === 'keep' ? current.mx : resolvedMx;
  const backmx = req.backmx === 'keep' ? current.backmx : req.backmx;
  return {
    ipv4: req.ipv4 !== undefined ? req.ipv4 : wasOffline ? null : current.ipv4,
    ipv6: req.ipv6 !== undefined ? req.ipv6 : wasOffline ? null : current.ipv6,
    wildcard: req.wildcard === 'keep' ? current.wildcard : req.wildcard,
    mx,
    backmx: mx === null ? false : backmx,
    offline: false,
  };
}

/** One flag per address family (A, AAAA). */
export interface AddressFamilies {
  ipv4: boolean;
  ipv6: boolean;
}

/**
 * The address families a change leaves as the primary has them: those it does not write in
 * full (`written`) and the store does not know — records the bridge never set, such as those
 * another provider left (docs/protocol.md, "The update request": "the other family's records stay as they are").
 */
export function familiesToLeave(
  stored: Pick<HostDnsState, 'ipv4' | 'ipv6'>,
  written: AddressFamilies,
): AddressFamilies {
  return { ipv4: !written.ipv4 && stored.ipv4 === null, ipv6: !written.ipv6 && stored.ipv6 === null };
}

export function pickDns(h: HostDnsState): HostDnsState {
  return { ipv4: h.ipv4, ipv6: h.ipv6, wildcard: h.wildcard, mx: h.mx, backmx: h.backmx };
}

/** True when `target` is what the host already is: the request changes nothing (nochg). */
export function sameState(current: HostRecord, target: TargetState): boolean {
  const currentOffline = current.state === 'offline';
  if (currentOffline !== target.offline) return false;
  if (target.offline) return true;
  return (
    current.ipv4 === target.ipv4 &&
    current.ipv6 === target.ipv6 &&
    current.wildcard === target.wildcard &&
    current.mx === target.mx &&
    current.backmx === target.backmx
  );
}

/** Stored text form of a boolean flag. */
export const flag = (b: boolean): '1' | '0' => (b ? '1' : '0');

/**
 * The request's settings as stored-field expectations (see app/ports Expectations):
 * the request is `nochg` iff every one holds. Mirrors `targetState` + `sameState`.
 */
export function expectationsFor(req: RequestedSettings, resolvedMx: ResolvedMx): Record<string, string> {
  if (req.offline) return { state: 'offline' };
  const out: Record<string, string> = { state: 'active' };
  // A removed family is expected absent (stored '').
  if (req.ipv4 !== undefined) out.ipv4 = req.ipv4 ?? '';
  if (req.ipv6 !== undefined) out.ipv6 = req.ipv6 ?? '';
  if (req.wildcard !== 'keep') out.wildcard = flag(req.wildcard);
  if (resolvedMx !== 'keep') out.mx = resolvedMx ?? '';
  // The store ignores this flag while the host has no MX (it means nothing then).
  if (req.backmx !== 'keep') out.backmx = flag(resolvedMx !== null && req.backmx);
  return out;
}
