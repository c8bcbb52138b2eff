/**
 * SOA serial arithmetic (RFC 1982, SERIAL_BITS 32): serials wrap, so "newer" is a comparison within half the space.
 * The propagation watcher compares what a secondary serves with what the primary served after an UPDATE.
 */

const HALF = 2 ** 31;
const SPACE = 2 ** 32;

/**
 * s1 − s2 in serial arithmetic: how far s1 is ahead of s2 (negative: behind); undefined where RFC 1982 leaves it
 * undefined (exactly half the space apart).
 */
export function serialDistance(s1: number, s2: number): number | undefined {
  const d = (((s1 - s2) % SPACE) + SPACE) % SPACE;
  if (d === HALF) return undefined;
  return d < HALF ? d : d - SPACE;
}

/** `served` has reached `target`: equal, or newer in serial arithmetic. An undefined comparison has not. */
export function serialReached(served: number, target: number): boolean {
  const d = serialDistance(served, target);
  return d !== undefined && d >= 0;
}

/** How many serials `served` is behind `target` (0 when it has reached it; the half space when undefined). */
export function serialsBehind(served: number, target: number): number {
  const d = serialDistance(target, served);
  if (d === undefined) return HALF;
  return Math.max(0, d);
}
