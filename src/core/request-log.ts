/**
 * The last request of a host and its counts by the hour (docs/operators.md, "The last request of a host"). The
 * admission script writes them in the call the request already makes (REQUEST_LOG in store/lua.ts); this module
 * reads them back: pure, so the store decodes and the use case counts with a clock it is given.
 */

/** The host's last update request, as the admission (and its commit or release) recorded it. */
export interface LastRequest {
  /** When its admission ran (ms, Redis's clock). */
  at: number;
  /**
   * Its reply in dyndns2's words (`good`, `nochg`, `abuse`, `!active`, `!donator`, `dnserr`, `911`), whatever the
   * dialect; null: still in flight, or its process ended before it was answered.
   */
  reply: string | null;
  userAgent: string;
  source: string;
}

/** Requests of one host in one hour (`hour`: hours since the epoch). */
export interface HourTally {
  hour: number;
  good: number;
  nochg: number;
  refused: number;
  failed: number;
}

export interface RequestCounts {
  good: number;
  nochg: number;
  refused: number;
  failed: number;
}

/** The hours the counts cover: the current one and the 23 before it. */
export const TALLY_HOURS = 24;
export const HOUR_MS = 3_600_000;
/** A User-Agent is kept to this many characters (the script's argument, and a bound on the host's hash). */
export const RECORDED_AGENT_MAX = 200;

/** The User-Agent as recorded: cut to RECORDED_AGENT_MAX characters. */
export function recordedAgent(userAgent: string): string {
  return userAgent.length > RECORDED_AGENT_MAX ? userAgent.slice(0, RECORDED_AGENT_MAX) : userAgent;
}

const ENTRY = /^(\d+) (\d+) (\d+) (\d+) (\d+)$/;

/** The hour last counted and its counts, as stored (one field each; absent: 0). */
export interface CurrentTally {
  hour?: string;
  good?: string;
  nochg?: string;
  refused?: string;
  failed?: string;
}

/**
 * The hourly tallies of the stored fields: `current` (the hour last counted) and `earlier` (older hours as
 * `hour good nochg refused failed`, comma-separated, pruned to TALLY_HOURS when the hour turns). Malformed entries
 * are skipped.
 */
export function parseTallies(current: CurrentTally, earlier: string | undefined): HourTally[] {
  const out: HourTally[] = [];
  const n = (v: string | undefined) => v ?? '0';
  const now =
    current.hour === undefined
      ? ''
      : `${current.hour} ${n(current.good)} ${n(current.nochg)} ${n(current.refused)} ${n(current.failed)}`;
  for (const entry of [...(earlier ?? '').split(','), now]) {
    const m = ENTRY.exec(entry);
    if (m === null) continue;
    out.push({
      hour: Number(m[1]),
      good: Number(m[2]),
      nochg: Number(m[3]),
      refused: Number(m[4]),
      failed: Number(m[5]),
    });
  }
  return out;
}

/** The counts of the hours within the last TALLY_HOURS at `nowMs` (the current hour included). */
export function countsOverDay(tallies: readonly HourTally[], nowMs: number): RequestCounts {
  const hour = Math.floor(nowMs / HOUR_MS);
  const counts: RequestCounts = { good: 0, nochg: 0, refused: 0, failed: 0 };
  for (const t of tallies) {
    // An hour ahead of ours is counted: Redis's clock, which wrote it, may run a little ahead.
    if (t.hour <= hour - TALLY_HOURS) continue;
    counts.good += t.good;
    counts.nochg += t.nochg;
    counts.refused += t.refused;
    counts.failed += t.failed;
  }
  return counts;
}
