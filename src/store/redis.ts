/**
 * The Redis client, tuned so that an outage fails requests fast (→ 911) instead of
 * queueing them: no offline queue once connected, one retry per request, a command
 * timeout, endless capped reconnects, and one log line per outage.
 */
import { Redis, type ChainableCommander, type RedisOptions } from 'ioredis';
import type { Config } from '../config/schema.js';
import { BridgeError, StoreUnavailableError } from '../core/errors.js';
import type { Logger } from '../core/log.js';
import { storeCallDone, storeCallStart } from './observe.js';

/** Longest pause between reconnect attempts. */
const MAX_RECONNECT_DELAY_MS = 1000;

/**
 * Where to connect: a `unix:` URL becomes an explicit socket path (percent-decoded, which
 * ioredis's own URL parsing does not do), `db` and `password` from its parameters; any other
 * URL goes to ioredis as it is.
 */
export function connectionOf(url: string): string | { path: string; db: number; password?: string } {
  const u = new URL(url);
  if (u.protocol !== 'unix:') return url;
  const password = u.searchParams.get('password') ?? undefined;
  return {
    path: decodeURIComponent(u.pathname),
    db: Number(u.searchParams.get('db') ?? 0),
    ...(password ? { password } : {}),
  };
}

/** Emitted (with the StoreUnavailableError) once the client has given up for good. */
export const FATAL_EVENT = 'ddns-bridge:fatal';

/**
 * A client that stops for good when its database cannot be selected: ioredis only emits the
 * SELECT's error and goes on in database 0, where every write would land in the wrong place.
 * Once `fatal` is set no command is written any more; each one (and each still queued)
 * fails with that error, which names the problem.
 */
class SelectGuardedRedis extends Redis {
  fatal: StoreUnavailableError | undefined;
  /** The socket holding back its writes until the end of this turn of the event loop. */
  private corked: Redis['stream'] | undefined;

  override sendCommand(...args: Parameters<Redis['sendCommand']>): unknown {
    const [command, stream] = args;
    if (this.fatal) {
      command.reject(this.fatal);
      return command.promise;
    }
    // Commands issued in one turn of the event loop (requests that arrived together) leave
    // in one write, uncorked once the turn's I/O callbacks have run: a syscall per turn
    // instead of per command, here and in redis-server, which also answers them in one
    // write. A lone command waits for no timer, only for the end of the turn.
    if (stream === undefined && this.status === 'ready' && this.corked !== this.stream) {
      const socket = this.stream;
      socket.cork();
      this.corked = socket;
      setImmediate(() => {
        if (this.corked === socket) this.corked = undefined;
        socket.uncork();
      });
    }
    return super.sendCommand(...args);
  }

  giveUp(error: StoreUnavailableError): void {
    if (this.fatal) return;
    this.fatal = error;
    // Commands waiting for the connection fail with the reason, not "Connection is closed."
    // (flushQueue is ioredis's own way to do this; private in its typings). Only those: the
    // ones written before ready are ioredis's own, and flushing them would stop reading the
    // socket, so the close below would wait for its 2 s fallback.
    (this as unknown as { flushQueue?: (e: Error, o: { commandQueue: boolean }) => void }).flushQueue?.(error, {
      commandQueue: false,
    });
    this.disconnect();
    this.emit(FATAL_EVENT, error);
  }

  override disconnect(reconnect = false): void {
    // ioredis's ready check, failing with `fatal`, asks to reconnect: never again. (Its second
    // disconnect would also arm a 2 s timer on the closed socket, keeping a CLI command alive.)
    if (this.fatal && reconnect) return;
    super.disconnect(reconnect);
  }
}

/** The error that made the client give up for good (a database it cannot select), if any. */
export function fatalErrorOf(redis: Redis): StoreUnavailableError | undefined {
  return redis instanceof SelectGuardedRedis ? redis.fatal : undefined;
}

/**
 * Resolves once the first connection attempt has an outcome, or after `maxWaitMs` (a Redis
 * still loading its data is not ready for a long time): undefined when Redis is ready or merely
 * unreachable (retried; commands answer 911 meanwhile), the error when the client gave up for
 * good. `serve` waits for this before it listens.
 */
export function firstOutcome(redis: Redis, maxWaitMs: number): Promise<StoreUnavailableError | undefined> {
  if (fatalErrorOf(redis) || redis.status === 'ready' || redis.status === 'end')
    return Promise.resolve(fatalErrorOf(redis));
  const events = ['ready', 'error', 'end', FATAL_EVENT];
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      for (const e of events) redis.off(e, done);
      // A refused SELECT arrives as 'error' first: look once every listener has seen it.
      setImmediate(() => resolve(fatalErrorOf(redis)));
    };
    const timer = setTimeout(done, maxWaitMs);
    for (const e of events) redis.on(e, done);
  });
}

/** Resolves with the error once the client gives up for good (never, while it does not). */
export function whenFatal(redis: Redis): Promise<StoreUnavailableError> {
  const now = fatalErrorOf(redis);
  if (now) return Promise.resolve(now);
  return new Promise((resolve) => redis.once(FATAL_EVENT, resolve));
}

/**
 * With redis.sentinels: ask the Sentinels for the primary of the group; the URL gives only the
 * database, user and password, which apply to the primary. docs/operators.md, "Redis failover"
 */
function sentinelOptions(cfg: Config['redis']): RedisOptions | undefined {
  if (cfg.sentinels === undefined || cfg.sentinelName === undefined) return undefined;
  const u = new URL(cfg.url);
  const username = decodeURIComponent(u.username);
  const password = decodeURIComponent(u.password);
  return {
    sentinels: cfg.sentinels.map(({ host, port }) => ({ host, port })),
    name: cfg.sentinelName,
    role: 'master',
    db: Number(u.pathname.replace(/^\//, '') || 0),
    ...(username ? { username } : {}),
    ...(password ? { password } : {}),
    sentinelRetryStrategy: (attempt) => Math.min(attempt * 100, MAX_RECONNECT_DELAY_MS),
    sentinelCommandTimeout: cfg.commandTimeoutMs,
    // A primary demoted under us (a failover while it stayed reachable) refuses writes: ask the
    // Sentinels again. The command itself fails (911), never resent.
    reconnectOnError: (err) => err.message.startsWith('READONLY'),
  };
}

export function createRedis(cfg: Config['redis'], logger: Logger): Redis {
  const sentinel = sentinelOptions(cfg);
  const target = sentinel ?? connectionOf(cfg.url);
  const options: RedisOptions = {
    // Commands issued before the first connect wait for it (bounded by the timeout and
    // the retry limit below); after that, a dead connection rejects at once.
    enableOfflineQueue: true,
    maxRetriesPerRequest: 1,
    commandTimeout: cfg.commandTimeoutMs,
    connectTimeout: Math.max(cfg.commandTimeoutMs, 1000),
    // A command written before the connection dropped may have run: resending it could
    // count a request twice. It fails instead (911), the client retries.
    autoResendUnfulfilledCommands: false,
    retryStrategy: (attempt) => Math.min(attempt * 100, MAX_RECONNECT_DELAY_MS),
    connectionName: 'ddns-bridge',
  };
  // From redis.passwordFile / passwordEnv (the config refuses one beside a password in the URL).
  const password = cfg.password !== undefined ? { password: cfg.password } : {};
  const redis =
    typeof target === 'string'
      ? new SelectGuardedRedis(target, { ...options, ...password })
      : new SelectGuardedRedis({ ...options, ...target, ...password });

  let down = false;
  redis.on('error', (err: Error) => {
    // The server refused the database (SELECT 99 of 16, …): retrying cannot help.
    if ((err as { command?: { name?: string } }).command?.name === 'select') {
      // Only a database the server does not have is fatal. Anything else filed under the
      // SELECT is a moment's trouble (a busy script, LOADING, maxclients reached on a
      // reconnect, which ioredis files under the first command): reconnect and select again,
      // never go on in database 0.
      if (!/^ERR (DB index is out of range|invalid DB index|SELECT is not allowed in cluster mode)/.test(err.message)) {
        if (!down) logger.error('redis unavailable', { error: err.message });
        down = true;
        redis.disconnect(true);
        return;
      }
      // The reply text only: the URL may carry a password.
      logger.error('redis: cannot select the configured database; not using Redis', { error: err.message });
      redis.giveUp(
        new StoreUnavailableError(`redis: cannot select the database of redis.url: ${err.message}`, { cause: err }),
      );
      return;
    }
    if (down || redis.fatal) return;
    down = true;
    // The URL may carry a password: log the error text only.
    logger.error('redis unavailable', { error: err.message });
  });
  // Commands written on a connection that is lost get no reply. ioredis keeps them for a
  // resend (off: one that ran would count twice) and rejects them only at commandTimeout:
  // every request in flight waited that long for its 911. They fail as soon as it closes.
  // Only after 'ready': before it the queue holds ioredis's own connect-time commands.
  let connected = false;
  redis.on('close', () => {
    if (!connected) return;
    connected = false;
    (redis as unknown as { flushQueue(e: Error, o: { offlineQueue: boolean }): void }).flushQueue(
      new Error('redis connection lost'),
      { offlineQueue: false },
    );
  });
  redis.on('ready', () => {
    connected = true;
    redis.options.enableOfflineQueue = false;
    if (redis.fatal) return;
    if (down) logger.info('redis available again');
    down = false;
  });
  redis.on('reconnecting', () => {
    // A clean server shutdown emits no 'error'; a reconnect (never after quit) marks the outage.
    if (down || redis.fatal) return;
    down = true;
    logger.error('redis connection lost');
  });
  return redis;
}

/** redis.waitReplicas in force: how many replicas must hold a write, and how long WAIT waits for them. */
export interface ReplicaWait {
  replicas: number;
  timeoutMs: number;
}

/**
 * WAIT gets half of redis.commandTimeout: its reply ("too few") must come before the client's own
 * command timeout, which would say less. Undefined when off (waitReplicas 0).
 */
export function replicaWaitOf(cfg: Config['redis']): ReplicaWait | undefined {
  const replicas = cfg.waitReplicas ?? 0;
  if (replicas <= 0) return undefined;
  return { replicas, timeoutMs: Math.max(1, Math.floor(cfg.commandTimeoutMs / 2)) };
}

/**
 * Run one store operation; anything that is not one of our own errors (connection
 * loss, timeout, a Redis error reply) becomes StoreUnavailableError.
 */
export async function storeCall<T>(operation: string, fn: () => Promise<T>): Promise<T> {
  const started = storeCallStart(); // timed for the metrics (observe.ts)
  try {
    const result = await fn();
    storeCallDone(operation, started, false);
    return result;
  } catch (err) {
    storeCallDone(operation, started, true);
    throw asStoreError(operation, err);
  }
}

export function asStoreError(operation: string, err: unknown): BridgeError {
  if (err instanceof BridgeError) return err;
  const detail = err instanceof Error ? err.message : String(err);
  return new StoreUnavailableError(`redis: ${operation} failed: ${detail}`, { cause: err });
}

/** Close a client without hanging when Redis is unreachable. */
export async function closeRedis(redis: Redis): Promise<void> {
  if (redis.status === 'end') return;
  if (redis.status !== 'ready') {
    redis.disconnect();
    return;
  }
  try {
    await redis.quit();
  } catch {
    redis.disconnect();
  }
}

/** Run a pipeline; any failed command fails the whole operation. Returns the values in order. */
export async function execPipeline(operation: string, pipeline: ChainableCommander): Promise<unknown[]> {
  return storeCall(operation, async () => {
    const replies = await pipeline.exec();
    if (replies === null) throw new Error('pipeline discarded');
    return replies.map(([err, value]) => {
      if (err) throw err;
      return value;
    });
  });
}
