/**
 * The Redis client, tuned so that an outage fails requests fast (→ 911) instead of
 * queueing them: no offline queue once connected, one retry per request, a command
 * timeout, endless capped reconnects, and one log line per outage.
 */
import { Redis, type ChainableCommander, type RedisOptions } from 'ioredis';
import type { Config } from '../config/schema.js';
import { BridgeError, StoreUnavailableError } from '../core/errors.js';
import type { Logger } from '../core/log.js';

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
  return { path: decodeURIComponent(u.pathname), db: Number(u.searchParams.get('db') ?? 0), ...(password ? { password } : {}) };
}

export function createRedis(cfg: Config['redis'], logger: Logger): Redis {
  const target = connectionOf(cfg.url);
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
  const redis = typeof target === 'string' ? new Redis(target, options) : new Redis({ ...options, ...target });

  let down = false;
  redis.on('error', (err: Error) => {
    if (down) return;
    down = true;
    // The URL may carry a password: log the error text only.
    logger.error('redis unavailable', { error: err.message });
  });
  redis.on('ready', () => {
    redis.options.enableOfflineQueue = false;
    if (down) logger.info('redis available again');
    down = false;
  });
  redis.on('reconnecting', () => {
    // A clean server shutdown emits no 'error'; a reconnect (never after quit) marks the outage.
    if (down) return;
    down = true;
    logger.error('redis connection lost');
  });
  return redis;
}

/**
 * Run one store operation; anything that is not one of our own errors (connection
 * loss, timeout, a Redis error reply) becomes StoreUnavailableError.
 */
export async function storeCall<T>(operation: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
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
