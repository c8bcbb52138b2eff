/** A private redis-server on a loopback port, in a directory of the caller's choosing. */
import { connect } from 'node:net';
import path from 'node:path';
import { requireBinary } from './binaries.js';
import { onFreePort, ServerProcess } from './process.js';

export interface RedisServer {
  host: string;
  port: number;
  url: string;
  /** The same server over its Unix socket (`unix:///…/redis.sock?db=0`). */
  socketUrl: string;
  dir: string;
  /**
   * A clean shutdown that keeps the data: SHUTDOWN SAVE writes dump.rdb into `dir`, which
   * start() loads again (as an operator's restart of a persistent Redis would). Falls back to
   * SIGTERM, then SIGKILL, when Redis does not exit by itself.
   */
  stop(): Promise<void>;
  /** Start again on the same port and directory. */
  start(): Promise<void>;
  /** SIGKILL: a crash. Only what the AOF (appendonly, fsync always) holds survives. */
  kill(): Promise<void>;
  /** The process id while it runs (SIGSTOP and SIGCONT: a stalled Redis). */
  readonly pid: number | undefined;
}

export interface RedisOptions {
  dir: string;
  /** AOF with `appendfsync always` (for crash-durability tests); default off, and no RDB save points. */
  appendonly?: boolean;
  port?: number;
}

const HOST = '127.0.0.1';

export async function startRedis(opts: RedisOptions): Promise<RedisServer> {
  const binary = requireBinary('redis-server');
  return onFreePort(opts.port, async (port) => {
    const args = ['--port', String(port), '--bind', HOST, '--save', '', '--dir', opts.dir, '--daemonize', 'no'];
    // Also a Unix socket, owner-only (the path stays far below the 107-byte limit in a temp dir).
    const socket = path.join(opts.dir, `redis-${port}.sock`);
    args.push('--unixsocket', socket, '--unixsocketperm', '700');
    args.push('--appendonly', opts.appendonly ? 'yes' : 'no');
    if (opts.appendonly) args.push('--appendfsync', 'always');
    const proc = new ServerProcess(`redis-server on ${HOST}:${port}`, binary, args, opts.dir);
    const start = async (): Promise<void> => {
      proc.spawn();
      await proc.waitUntilReady(port, () => redisPing(HOST, port));
    };
    await start();
    return {
      host: HOST,
      port,
      url: `redis://${HOST}:${port}/0`,
      socketUrl: `unix://${socket}?db=0`,
      dir: opts.dir,
      stop: async () => {
        if (!proc.running) return;
        await redisShutdownSave(HOST, port);
        if (!(await proc.waitForExit(5000))) await proc.stop();
      },
      start,
      kill: () => proc.kill(),
      get pid() {
        return proc.running ? proc.pid : undefined;
      },
    };
  });
}

/** True when a raw PING gets +PONG (not -LOADING while the AOF is replayed). */
export function redisPing(host: string, port: number, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    let reply = '';
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.on('error', () => done(false));
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (d) => {
      reply += d.toString('latin1');
      if (reply.includes('\r\n')) done(reply.startsWith('+PONG'));
    });
  });
}

/** Ask Redis to save and exit; Redis closes the connection when it goes (no reply on success). */
function redisShutdownSave(host: string, port: number): Promise<void> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (): void => {
      socket.destroy();
      resolve();
    };
    socket.setTimeout(2000, done);
    socket.on('error', done);
    socket.on('close', done);
    socket.on('connect', () => socket.write('SHUTDOWN SAVE\r\n'));
  });
}
