/**
 * Leases whose caller gave up on Redis (docs/operators.md, "Redis stalls"). A lease-taking call (an admission, a
 * reclaim, a claim) or a commit that fails by timeout or a lost connection may still run once Redis answers again —
 * a stalled Redis runs what it buffered — and the lease it takes would then be held by nobody for a whole lease
 * time: every request for that host waits MAX_BUSY_WAIT_MS and gets `911`. So the caller sends ABANDON (its lease
 * token, chosen by the client) right after the failure, on the same client:
 *
 * - Same connection as the failed call (the usual stall): Redis runs one connection's commands in order, so ABANDON
 *   runs right after the stale call and ends the lease it took, before any later request's admission on that
 *   connection. Nothing is added on the normal path: no round trip, no field read or written.
 * - Another connection (ioredis reconnected, a Sentinel failover): the stale call may run after ABANDON, so ABANDON
 *   also marks the token on the host; an admission that finds its own token marked ends its lease as it takes it.
 *
 * An ABANDON that fails is sent again (backing off, and at once when the client reconnects), those of one turn of
 * the event loop as one call; at most MAX_WAITING wait (the oldest dropped: their lease, if any, ends at its end).
 */
import { ReplyError, type Redis } from 'ioredis';
import { runScript } from './script.js';
import { fatalErrorOf } from './redis.js';
import { ABANDON, type AbandonItem, type LeaseKeys } from './scripts/lease.js';

/** Abandons waiting to be sent at most; the oldest go first. */
export const MAX_WAITING = 10_000;
/** Abandons in one call at most. */
const MAX_ITEMS_PER_CALL = 256;
const MIN_RETRY_MS = 200;
const MAX_RETRY_MS = 5000;

/** Where a call went out: the client's socket when it was issued (a reconnect makes a new one). */
export type Connection = object | undefined;

interface Waiting {
  lease: LeaseKeys & { token: string };
  sentOn: Connection;
  /** The failed call takes a lease (an admission): it may still run after ABANDON on another connection. */
  takes: boolean;
}

export class LeaseAbandoner {
  private waiting: Waiting[] = [];
  private flushQueued = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private retryMs = MIN_RETRY_MS;

  constructor(private readonly redis: Redis) {
    // A new connection: what waits goes out at once, before most retries of the requests that gave up.
    redis.on('ready', () => this.flushSoon());
  }

  /** The connection a call issued now goes out on: hand it to abandon() if the call fails. */
  connection(): Connection {
    return this.redis.stream;
  }

  /**
   * The call that took (or would have taken) `lease`, issued on `sentOn`, failed with `error`: end the lease once
   * Redis answers. `takes`: the call takes the lease (an admission), not one that ends it (a commit).
   */
  abandon(lease: LeaseKeys & { token: string }, sentOn: Connection, takes: boolean, error: unknown): void {
    if (neverSent(error)) return;
    if (this.waiting.length >= MAX_WAITING) this.waiting.shift();
    this.waiting.push({ lease, sentOn, takes });
    this.flushSoon();
  }

  /** Abandons not yet answered by Redis (tests). */
  get pending(): number {
    return this.waiting.length;
  }

  private flushSoon(): void {
    if (this.flushQueued || this.waiting.length === 0) return;
    this.flushQueued = true;
    setImmediate(() => {
      this.flushQueued = false;
      this.flush();
    });
  }

  private flush(): void {
    if (this.redis.status === 'end' || fatalErrorOf(this.redis)) {
      this.waiting = []; // closed for good: nothing will run any more on this client
      return;
    }
    const batch = this.waiting;
    this.waiting = [];
    for (let i = 0; i < batch.length; i += MAX_ITEMS_PER_CALL) void this.send(batch.slice(i, i + MAX_ITEMS_PER_CALL));
  }

  private async send(batch: Waiting[]): Promise<void> {
    // In order behind the failed call only on its own connection, and only once written there now.
    const current = this.redis.status === 'ready' ? this.redis.stream : undefined;
    const items: AbandonItem[] = batch.map((w) => ({
      ...w.lease,
      mark: w.takes && (current === undefined || w.sentOn !== current),
    }));
    try {
      await runScript(this.redis, ABANDON, { items }, { items }, 'lease abandon');
      this.retryMs = MIN_RETRY_MS;
    } catch (err) {
      // Answered with an error sending it again would not mend (a bug); a demoted primary, one still loading or busy
      // with a script is asked again (the client finds the new primary).
      if (isLastingReplyError(err)) return;
      // Not answered (it may still run: harmless, it is idempotent): again later, after those that came meanwhile.
      this.waiting = [...batch, ...this.waiting].slice(-MAX_WAITING);
      this.retryLater();
    }
  }

  private retryLater(): void {
    if (this.retryTimer !== undefined) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.flushSoon();
    }, this.retryMs);
    this.retryTimer.unref();
    this.retryMs = Math.min(this.retryMs * 2, MAX_RETRY_MS);
  }
}

/** Run `call`, which takes the lease `token` of `keys` on the abandoner's client; if it fails, abandon that lease. */
export async function takingLease<T>(
  abandoner: LeaseAbandoner,
  keys: LeaseKeys,
  token: string,
  call: () => Promise<T>,
): Promise<T> {
  const sentOn = abandoner.connection();
  try {
    return await call();
  } catch (err) {
    abandoner.abandon({ ...keys, token }, sentOn, true, err);
    throw err;
  }
}

const abandoners = new WeakMap<Redis, LeaseAbandoner>();

/** The one abandoner of a client (every store on that client shares it). */
export function abandonerOf(redis: Redis): LeaseAbandoner {
  let abandoner = abandoners.get(redis);
  if (abandoner === undefined) abandoners.set(redis, (abandoner = new LeaseAbandoner(redis)));
  return abandoner;
}

/**
 * Calls that never reached a socket: ioredis refused them while disconnected (no offline queue once connected) or
 * the client gave up for good. Nothing of theirs can run.
 */
function neverSent(error: unknown): boolean {
  const cause = causeOf(error);
  return cause instanceof Error && cause.message.startsWith("Stream isn't writeable");
}

function isLastingReplyError(error: unknown): boolean {
  const cause = causeOf(error);
  return cause instanceof (ReplyError as typeof Error) && !/^(READONLY|MASTERDOWN|LOADING|BUSY)\b/.test(cause.message);
}

/** The client's own error under a StoreUnavailableError (storeCall). */
function causeOf(error: unknown): unknown {
  return error instanceof Error && error.cause instanceof Error ? error.cause : error;
}
