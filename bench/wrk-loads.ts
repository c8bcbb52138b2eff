/**
 * The bench's HTTP loads as wrk runs (wrk.ts), for servers in child processes: a change load
 * over a pool of hosts, and a cycle over fixed requests (nochg, the ceiling). A reply of the
 * kind the load does not expect (a `nochg` in a change load, a `good` in a nochg load) counts
 * as an error of the measurement, as the Node generator's exact body check does.
 */
import { reserveAddresses } from './raw-dns.js';
import { round } from './stats.js';
import { runWrk, type WrkMeasurement } from './wrk.js';

/**
 * Addresses reserved per second of a change load: far more than any server here answers
 * (a few thousand per second), so a load never runs into addresses handed out after it.
 */
export const ADDRESSES_PER_SECOND = 100_000;

/** Where wrk sends its requests, and where its script goes. */
export interface WrkServer {
  port: number;
  /** A directory for wrk's script (the lab's). */
  dir: string;
}

/** Hosts `h{from}`, `h{from + stride}`, … (`count` of them) in `zone`. */
export interface WrkPool {
  zone: string;
  from: number;
  count: number;
  stride?: number;
}

/**
 * Every request a new address (never one a host had: a reserved block of the bench's address
 * sequence) for the next host of the pool, for `seconds` at `concurrency`. Without
 * `authorization` (the ceiling) the requests are the same, unauthenticated.
 */
export async function wrkChange(
  server: WrkServer,
  load: { pool: WrkPool; concurrency: number; seconds: number; authorization?: string; expect: 'good' | 'nochg' },
): Promise<WrkMeasurement> {
  const { pool } = load;
  const m = await runWrk({
    port: server.port,
    connections: load.concurrency,
    seconds: load.seconds,
    dir: server.dir,
    requests: {
      kind: 'change',
      prefix: 'h',
      suffix: `.${pool.zone}`,
      from: pool.from,
      count: pool.count,
      stride: pool.stride ?? 1,
      addressBase: reserveAddresses(Math.ceil(Math.max(1, load.seconds)) * ADDRESSES_PER_SECOND),
      authorization: load.authorization ?? '',
    },
  });
  return expectOnly(m, load.expect);
}

/** The request targets (path and query) one after another, for `seconds` at `concurrency`. */
export async function wrkCycle(
  server: WrkServer,
  load: {
    targets: readonly string[];
    concurrency: number;
    seconds: number;
    authorization?: string;
    expect: 'good' | 'nochg' | 'not-found';
  },
): Promise<WrkMeasurement> {
  const m = await runWrk({
    port: server.port,
    connections: load.concurrency,
    seconds: load.seconds,
    dir: server.dir,
    requests: { kind: 'cycle', targets: load.targets, authorization: load.authorization },
  });
  return expectOnly(m, load.expect);
}

/**
 * Replies of the other successful kind become errors of the measurement. `not-found`: the 404s are the successes
 * (the front's reference), every other reply an error.
 */
export function expectOnly(m: WrkMeasurement, kind: 'good' | 'nochg' | 'not-found'): WrkMeasurement {
  if (kind === 'not-found') {
    const all = m.ok + m.errors;
    m.ok = m.replies.notFound;
    m.errors = all - m.ok;
    m.rps = round(m.seconds > 0 ? m.ok / m.seconds : 0, 1);
    // The script's first "other" reply is a 404 here: name the first that was not, or the socket errors.
    if (m.errors === 0) delete m.firstError;
    else m.firstError = m.firstNot404 ?? `${m.socketErrors} socket errors`;
    return m;
  }
  const unexpected = kind === 'good' ? m.replies.nochg : m.replies.good;
  if (unexpected === 0) return m;
  m.ok -= unexpected;
  m.errors += unexpected;
  m.rps = round(m.seconds > 0 ? m.ok / m.seconds : 0, 1);
  m.firstError ??= `${unexpected} replies ${kind === 'good' ? 'nochg' : 'good'} where ${kind} was expected`;
  return m;
}
