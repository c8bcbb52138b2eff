/**
 * Hosts that went quiet (docs/operators.md, "Quiet hosts"): no request counted by the frequency rule for a while.
 * Pure: since when a host is quiet, and the age buckets of the gauge.
 */
import type { HostRecord } from './types.js';

/** The ages the `ddns_bridge_quiet_hosts` gauge counts hosts quiet for at least. */
export const QUIET_BUCKETS = [
  ['1d', 86_400_000],
  ['7d', 604_800_000],
  ['30d', 2_592_000_000],
  ['90d', 7_776_000_000],
] as const;

/** Since when the host is quiet: its last counted request, else when the sweep first saw it; undefined: not yet. */
export function quietSince(host: Pick<HostRecord, 'lastRequestAt' | 'createdAt'>): number | undefined {
  return host.lastRequestAt ?? host.createdAt;
}

/** Quiet for at least `forMs` at `nowMs` (a host not known yet is not). */
export function isQuietFor(
  host: Pick<HostRecord, 'lastRequestAt' | 'createdAt'>,
  forMs: number,
  nowMs: number,
): boolean {
  const since = quietSince(host);
  return since !== undefined && nowMs - since >= forMs;
}
