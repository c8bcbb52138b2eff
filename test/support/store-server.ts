/**
 * The set-up the store integration tests share: a private redis-server in a temp dir, the
 * Store under test on it, and a plain client for looking at the keys directly.
 */
import { Redis } from 'ioredis';
import { silentLogger, type Logger } from '../../src/core/log.js';
import { makeTempDir, removeDir, requireBinariesOrSkip, startRedis, type RedisServer } from '../../src/lab/index.js';
import { openStore, type Store, type StoreConfig } from '../../src/store/index.js';

/** Keeps every line logged, for tests that check what was (not) logged. */
export class RecordingLogger implements Logger {
  readonly lines: { level: string; msg: string; fields?: Record<string, unknown> }[] = [];
  debug(msg: string, fields?: Record<string, unknown>) {
    this.lines.push({ level: 'debug', msg, fields });
  }
  info(msg: string, fields?: Record<string, unknown>) {
    this.lines.push({ level: 'info', msg, fields });
  }
  warn(msg: string, fields?: Record<string, unknown>) {
    this.lines.push({ level: 'warn', msg, fields });
  }
  error(msg: string, fields?: Record<string, unknown>) {
    this.lines.push({ level: 'error', msg, fields });
  }
}

/** What a test file sets apart from the shared defaults of storeTestConfig. */
export interface StoreTestSettings {
  keyPrefix: string;
  /** Default 2000. */
  commandTimeoutMs?: number;
  /** User-Agent patterns; default none. */
  blocked?: string[];
  junk?: Partial<StoreConfig['junk']>;
  credentials?: Partial<StoreConfig['credentials']>;
}

/** The store settings for `url`: shared defaults, with the file's own prefix and numbers. */
export function storeTestConfig(url: string, over: StoreTestSettings): StoreConfig {
  return {
    redis: { url, keyPrefix: over.keyPrefix, commandTimeoutMs: over.commandTimeoutMs ?? 2000 },
    agents: { blocked: over.blocked ?? [] },
    junk: { threshold: 3, windowMs: 1000, blockMs: 300, ...over.junk },
    credentials: {
      maxFailures: 3,
      windowMs: 1000,
      cooldownMs: 300,
      cacheTtlMs: 1000,
      cacheSize: 10,
      ...over.credentials,
    },
  };
}

export interface RedisStoreOptions {
  /** The store's logger; default silent. */
  logger?: Logger;
  /** Open the plain client `raw` too; default true. */
  raw?: boolean;
}

/** What useRedisStore set up; each getter throws until its before hook has run. */
export interface RedisStoreLab {
  readonly server: RedisServer;
  readonly url: string;
  readonly store: Store;
  readonly raw: Redis;
}

/**
 * Registers the before / after hooks of the enclosing describe: redis-server in a temp dir
 * named `${name}-…` (the suite is skipped without redis-server), the store from
 * `configOf(url)` and the plain client. Call it before the file's own hooks.
 */
export function useRedisStore(
  name: string,
  configOf: (url: string) => StoreConfig,
  opts: RedisStoreOptions = {},
): RedisStoreLab {
  let dir: string | undefined;
  let server: RedisServer | undefined;
  let store: Store | undefined;
  let raw: Redis | undefined;

  before(async function () {
    requireBinariesOrSkip(this, ['redis-server']);
    dir = await makeTempDir(`${name}-`);
    server = await startRedis({ dir });
    store = openStore(configOf(server.url), opts.logger ?? silentLogger);
    if (opts.raw ?? true) raw = new Redis(server.url);
  });

  after(async () => {
    await store?.close();
    raw?.disconnect();
    await server?.stop();
    if (dir) await removeDir(dir);
  });

  const ready = <T>(value: T | undefined, what: string): T => {
    if (value === undefined)
      throw new Error(`useRedisStore(${name}): no ${what} (outside a test, or set up without it)`);
    return value;
  };
  return {
    get server() {
      return ready(server, 'server');
    },
    get url() {
      return ready(server, 'server').url;
    },
    get store() {
      return ready(store, 'store');
    },
    get raw() {
      return ready(raw, 'raw client');
    },
  };
}
