/**
 * What an admission can answer (docs/architecture.md, "Where a reply token is chosen"): the
 * admit scripts reply with these words (src/store/scripts/lease.ts, txt.ts, tokens.ts, links.ts),
 * the store checks each reply against these lists, and the ports (src/app/ports.ts) type their
 * answers with the types below. One list each, so a word cannot be added on one side only.
 */
import type { HostOutcome } from './outcomes.js';

/** The kinds of an admission's answer (ports' Admission, TxtAdmission). */
export const ADMIT_KINDS = ['rejected', 'refused', 'busy', 'nochg', 'change'] as const;
export type AdmitKind = (typeof ADMIT_KINDS)[number];

/**
 * Why admit refused a host: not registered, another account's, not dynamic, closed; abuse:
 * already blocked, or this request crossed the frequency limit and blocked it.
 */
export const ADMIT_REJECTIONS = [
  'unknown-host',
  'not-owner',
  'not-dynamic',
  'closed',
  'abuse',
] as const satisfies readonly HostOutcome[];
export type AdmitRejection = (typeof ADMIT_REJECTIONS)[number];

/**
 * Which login check of an admission's guard failed: 'agent': the (source, User-Agent) pair is
 * junk-blocked; 'login': the source or the account is in cool-down; 'stale': the account's
 * password hash or donator flag changed since the credentials were verified.
 */
export const GUARD_CHECKS = ['agent', 'login', 'stale'] as const;
export type GuardCheck = (typeof GUARD_CHECKS)[number];

/** Why a linked host was left out of its parent's prefix change. */
export const LINK_SKIPS = [
  'gone',
  'unlinked',
  'not-owner',
  'not-dynamic',
  'offline',
  'blocked',
  'closed',
  'busy',
] as const;
export type LinkSkip = (typeof LINK_SKIPS)[number];
