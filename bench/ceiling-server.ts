/**
 * The HTTP ceiling: a bare node:http server that answers every request with a fixed
 * token, framed like the bridge's replies (HTTP/1.0 semantics: Content-Length,
 * `Connection: close`). What the bridge's nochg path is compared against.
 *
 * In-process: startCeilingServer(). As separate processes, like `serve --workers N`:
 *   node ceiling-server.js PORT WORKERS   → prints `listening PORT` on stdout when every worker listens.
 */
import cluster from 'node:cluster';
import http from 'node:http';
import { fileURLToPath } from 'node:url';

const BODY = 'nochg 192.0.2.1\n';

export function createCeilingServer(): http.Server {
  return http.createServer((_req, res) => {
    res.writeHead(200, {
      'Content-Type': 'text/plain; charset=utf-8',
      'Content-Length': Buffer.byteLength(BODY),
      Connection: 'close',
    });
    res.end(BODY);
  });
}

/** Listen on 127.0.0.1 (port 0 = a free one); resolves with the server and its port. */
export function startCeilingServer(port = 0): Promise<{ server: http.Server; port: number }> {
  const server = createCeilingServer();
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
  if (cluster.isWorker) {
    const { port: bound } = await startCeilingServer(port);
    process.send?.({ listening: bound });
    process.on('disconnect', () => process.exit(0));
    // An orderly exit on SIGTERM too, so that a `--cpu-prof` profile is written.
    process.on('SIGTERM', () => process.exit(0));
    return;
  }
  if (workers === 1) {
    const { port: bound } = await startCeilingServer(port);
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
