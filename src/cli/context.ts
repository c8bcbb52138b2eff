/** What every command needs: the config path (flag or env), the loaded config, a logger. */
import { loadConfig, configWarnings } from '../config/load.js';
import type { ScryptCost } from '../auth/index.js';
import type { Config } from '../config/schema.js';
import { JsonLogger } from './logger.js';

export interface CommandContext {
  config: Config;
  logger: JsonLogger;
  /** The config file read and validated again (a reload); absent where there is no file (a worker). */
  reread?: () => Promise<Config>;
  /**
   * The scrypt cost of passwords the commands set (account add, passwd). Never set by the CLI, which hashes at
   * DEFAULT_SCRYPT_COST; the tests' in-process commands lower it (test/support/bridge.ts).
   */
  passwordCost?: ScryptCost;
}

export function configPathFrom(argv: { config?: string }, env: NodeJS.ProcessEnv): string {
  const p = argv.config || env.DDNS_BRIDGE_CONFIG;
  if (!p) throw new UsageError('no config file: pass --config FILE or set DDNS_BRIDGE_CONFIG');
  return p;
}

export async function loadContext(
  argv: { config?: string },
  env: NodeJS.ProcessEnv,
  opts: { warn?: boolean } = {},
): Promise<CommandContext> {
  const path = configPathFrom(argv, env);
  const context = { ...contextOf(await loadConfig(path, env)), reread: () => loadConfig(path, env) };
  if (opts.warn) for (const w of await configWarnings(path, env)) context.logger.warn(w);
  return context;
}

/**
 * The context of an already validated (and frozen) config: its logger masks the zone secrets, the Redis
 * password and the admin token. `write` takes the log lines (default: stderr).
 */
export function contextOf(config: Config, write?: (line: string) => void): CommandContext {
  const logger = new JsonLogger(config.log.level, write);
  for (const zone of config.zones) logger.addSecret(zone.key.secret);
  if (config.redis.password !== undefined) logger.addSecret(config.redis.password);
  if (config.admin !== undefined) logger.addSecret(config.admin.token);
  const urlPassword = redisUrlPassword(config.redis.url);
  if (urlPassword !== undefined) logger.addSecret(urlPassword);
  return { config, logger };
}

/** A mistake in how the command was called: exit status 2. */
export class UsageError extends Error {}

/**
 * The password a redis:// URL carries (`redis://:pw@host`, or `?password=` on a socket URL).
 * Not store's connectionOf: that would load ioredis into the cluster primary, which builds no
 * Redis client.
 */
function redisUrlPassword(url: string): string | undefined {
  try {
    const u = new URL(url);
    const password = u.password !== '' ? decodeURIComponent(u.password) : u.searchParams.get('password');
    return password === null || password === '' ? undefined : password;
  } catch {
    return undefined;
  }
}
