/**
 * The HTTP ceiling: a bare node:http server that answers every request with a fixed
 * token, framed like the bridge's replies (HTTP/1.0 semantics: Content-Length,
 * `Connection: close`). What the bridge's nochg path is compared against.
 *
 * "bare + Redis" (BENCH_REDIS_URL set): the same server, but each request first runs one Lua script
 * of two `redis.call`s (count the request in the host's hash, read its address back) on that Redis
 * through ioredis's EVALSHA, the realistic ceiling for a design that counts every request in Redis
 * atomically (BENCHMARKS.md, "Where a nochg goes").
 *
 * In-process: startCeilingServer(). As separate processes, like `serve --workers N`:
 *   node ceiling-server.js PORT WORKERS   → prints `listening PORT` on stdout when every worker listens.
 */
import cluster from 'node:cluster';
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';

const BODY = 'nochg 192.0.2.1\n';

const HEADERS = {
  'Content-Type': 'text/plain; charset=utf-8',
  'Content-Length': Buffer.byteLength(BODY),
  Connection: 'close',
};

/** The script of "bare + Redis": two commands, as a nochg admission needs at the least (count, read). */
export const CEILING_SCRIPT_LUA = "redis.call('HINCRBY', KEYS[1], 'n', 1) return redis.call('HGET', KEYS[1], 'a')";

type CountingRedis = Redis & { countRequest(key: string): Promise<string | null> };

/** The key of a request: its `hostname` parameter (the bench's requests all carry one). */
function keyOf(url: string | undefined): string {
  const u = url ?? '';
  const at = u.indexOf('hostname=');
  if (at === -1) return 'bench-ceiling:-';
  const end = u.indexOf('&', at);
  return 'bench-ceiling:' + u.slice(at + 9, end === -1 ? undefined : end);
}

export function createCeilingServer(redisUrl?: string): http.Server {
  if (redisUrl === undefined)
    return http.createServer((_req, res) => {
      res.writeHead(200, HEADERS);
      res.end(BODY);
    });
  const redis = new Redis(redisUrl) as CountingRedis;
  redis.defineCommand('countRequest', { numberOfKeys: 1, lua: CEILING_SCRIPT_LUA });
  const server = http.createServer((req, res) => {
    redis.countRequest(keyOf(req.url)).then(
      () => {
        res.writeHead(200, HEADERS);
        res.end(BODY);
      },
      () => {
        res.writeHead(500, { Connection: 'close' });
        res.end();
      },
    );
  });
  server.once('close', () => redis.disconnect());
  return server;
}

/** Listen on 127.0.0.1 (port 0 = a free one); resolves with the server and its port. */
export function startCeilingServer(port = 0, redisUrl?: string): Promise<{ server: http.Server; port: number }> {
  const server = createCeilingServer(redisUrl);
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: '127.0.0.1', port }, () => {
      const addr = server.address();
      resolve({ server, port: typeof addr === 'object' && addr ? addr.port : port });
    });
  });
}

export const CEILING_BODY = BODY;
export const CEILING_SCRIPT = fileURLToPath(import.meta.url);

async function main(): Promise<void> {
  const port = Number(process.argv[2] ?? 0);
  const workers = Math.max(1, Number(process.argv[3] ?? 1));
  // From the environment, not argv: a Redis URL may carry a password.
  const redisUrl = process.env.BENCH_REDIS_URL || undefined;
  if (cluster.isWorker) {
    const { port: bound } = await startCeilingServer(port, redisUrl);
    process.send?.({ listening: bound });
    process.on('disconnect', () => process.exit(0));
    // An orderly exit on SIGTERM too, so that a `--cpu-prof` profile is written.
    process.on('SIGTERM', () => process.exit(0));
    return;
  }
  if (workers === 1) {
    const { port: bound } = await startCeilingServer(port, redisUrl);
    process.stdout.write(`listening ${bound}\n`);
    return;
  }
  let ready = 0;
  cluster.on('message', (_w, m: { listening?: number }) => {
    if (m.listening !== undefined && ++ready === workers) process.stdout.write(`listening ${m.listening}\n`);
  });
  // The same connection distribution as `serve --workers N` (see useKernelScheduling there).
  if (process.env.NODE_CLUSTER_SCHED_POLICY === undefined) cluster.schedulingPolicy = cluster.SCHED_NONE;
  for (let i = 0; i < workers; i++) cluster.fork();
  const stop = () => {
    for (const w of Object.values(cluster.workers ?? {})) w?.kill();
    process.exit(0);
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await main();
