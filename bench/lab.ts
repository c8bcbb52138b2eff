/**
 * The bench's private servers: one redis-server, and a knotd, named and/or pdns_server each primary
 * for its own zone; a bridge config with both zones; the bench account. A second registry
 * (another database of the same redis-server) holds the large host count.
 */
import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { hashPassword } from '../src/auth/index.js';
import { loadConfig } from '../src/config/load.js';
import type { Config } from '../src/config/schema.js';
import {
  generateTsigKey,
  makeTempDir,
  removeDir,
  requireBinary,
  serverBinaries,
  startNameServer,
  startRedis,
  writeKeyFile,
  writePrivateFile,
  type LabKind,
  type NameServer,
  type RedisServer,
} from '../src/lab/index.js';
import { openStore, type Store } from '../src/store/index.js';
import { silentLogger } from '../src/core/log.js';

export const BENCH_ACCOUNT = 'bench';

/** One registry: a Redis database with the bench account, and a bridge config that uses it. */
export interface BenchRegistry {
  /** The bench's own store client for this database (imports, INFO). */
  store: Store;
  config: Config;
  configPath: string;
}

export interface BenchLab extends BenchRegistry {
  dir: string;
  redis: RedisServer;
  nameservers: Map<LabKind, NameServer>;
  /** BIND-format key file for nsupdate. */
  keyFile: string;
  /** `Basic …` for the bench account. */
  authorization: string;
  zoneOf(kind: LabKind): string;
  /**
   * Another registry on the same redis-server (database `db`, its own keyspace), same zones,
   * same account and password: the large host count is measured beside the small one.
   */
  openRegistry(db: number): Promise<BenchRegistry>;
  stop(): Promise<void>;
}

export function zoneFor(kind: LabKind): string {
  return `${kind}.bench.test`;
}

export async function startLab(kinds: readonly LabKind[]): Promise<BenchLab> {
  requireBinary('redis-server');
  for (const kind of kinds) for (const b of serverBinaries(kind)) requireBinary(b);
  requireBinary('nsupdate');
  const dir = await makeTempDir('ddns-bench-');
  const started: { stop(): Promise<void> }[] = [];
  // An early exit (Ctrl-C): the lab kills its servers on exit; the directory goes too.
  const removeOnExit = () => rmSync(dir, { recursive: true, force: true });
  process.on('exit', removeOnExit);
  const cleanup = async () => {
    for (const s of started.reverse()) await s.stop().catch(() => undefined);
    await removeDir(dir);
    process.off('exit', removeOnExit);
  };
  try {
    await mkdir(path.join(dir, 'redis'));
    const redis = await startRedis({ dir: path.join(dir, 'redis'), appendonly: false });
    started.push(redis);
    const key = generateTsigKey('bench-key', 'hmac-sha256');
    const nameservers = new Map<LabKind, NameServer>();
    for (const kind of kinds) {
      const nsDir = path.join(dir, kind);
      await mkdir(nsDir);
      const ns = await startNameServer(kind, { dir: nsDir, zone: zoneFor(kind), key });
      started.push(ns);
      nameservers.set(kind, ns);
    }
    const secretFile = path.join(dir, 'tsig.secret');
    await writePrivateFile(secretFile, key.secret + '\n');
    const keyFile = await writeKeyFile(path.join(dir, 'tsig.key'), key);
    const configJson = (db: number) => ({
      listen: ['127.0.0.1:0'],
      redis: { url: databaseUrl(redis.url, db), keyPrefix: 'ddns:' },
      zones: kinds.map((kind) => ({
        name: zoneFor(kind),
        primary: `127.0.0.1:${nameservers.get(kind)!.port}`,
        key: { name: key.name, algorithm: key.algorithm, secretFile },
        // docs/operators.md, "Nameserver facts": BIND applies UPDATEs one message at a time, PowerDNS slows down
        // with several in flight; Knot keeps the default.
        ...(kind !== 'knot' ? { maxInFlight: 1 } : {}),
      })),
      // The bench repeats requests for a host far faster than any client may: the frequency
      // rule would block it. An interval of 1 µs (0 ms after rounding) never counts a request
      // as frequent; the admit script does the same work either way.
      frequency: { minInterval: 0.000001, donatorMinInterval: 0.000001 },
      mx: { resolvers: [`127.0.0.1:${nameservers.get(kinds[0]!)!.port}`], timeout: 1 },
      log: { level: 'info' },
    });
    const password = 'bench-' + Math.random().toString(36).slice(2);
    const passwordHash = await hashPassword(password);
    const openRegistry = async (db: number): Promise<BenchRegistry> => {
      const configPath = path.join(dir, db === 0 ? 'config.json' : `config-db${db}.json`);
      await writePrivateFile(configPath, JSON.stringify(configJson(db), null, 2));
      const config = await loadConfig(configPath, {});
      const store = openStore(config, silentLogger);
      started.push({ stop: () => store.close() });
      await store.accounts.create({ name: BENCH_ACCOUNT, passwordHash, donator: false, createdAt: Date.now() });
      return { store, config, configPath };
    };
    const { store, config, configPath } = await openRegistry(0);
    return {
      dir,
      redis,
      nameservers,
      store,
      config,
      configPath,
      openRegistry,
      keyFile,
      authorization: `Basic ${Buffer.from(`${BENCH_ACCOUNT}:${password}`).toString('base64')}`,
      zoneOf: zoneFor,
      stop: cleanup,
    };
  } catch (err) {
    await cleanup();
    throw err;
  }
}

/** `redis://host:port/0` → the same server's database `db`. */
function databaseUrl(url: string, db: number): string {
  const u = new URL(url);
  u.pathname = `/${db}`;
  return u.toString();
}

/** `used_memory` from INFO memory, bytes. */
export async function redisUsedMemory(store: Store): Promise<number> {
  const info = await store.redis.info('memory');
  const m = /^used_memory:(\d+)/m.exec(info);
  if (!m) throw new Error('bench: no used_memory in INFO');
  return Number(m[1]);
}

/** CPU seconds redis-server has used (INFO cpu: user + system, main thread and children). */
export async function redisCpuSeconds(store: Store): Promise<number> {
  const info = await store.redis.info('cpu');
  const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? 0);
  return field('used_cpu_sys') + field('used_cpu_user');
}

/** Calls per command from INFO commandstats (commands run inside Lua scripts included). */
export async function redisCommandCalls(store: Store): Promise<Map<string, number>> {
  const info = await store.redis.info('commandstats');
  const calls = new Map<string, number>();
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) calls.set(m[1]!, Number(m[2]));
  return calls;
}

/** First line of a version command's output ('' when it cannot be run). */
export function versionOf(binary: string, args: string[]): Promise<string> {
  return new Promise((resolve) => {
    execFile(binary, args, { timeout: 5000 }, (_err, stdout, stderr) => {
      resolve(
        `${stdout}${stderr}`
          .split('\n')
          .find((l) => l.trim() !== '')
          ?.trim() ?? '',
      );
    });
  });
}
