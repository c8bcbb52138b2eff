/**
 * A Redis replica and Redis Sentinels on loopback ports, for the failover test and anyone who
 * wants to see it (docs/operators.md, "Redis failover"). Each runs from a config file in `dir`:
 * a Sentinel rewrites its own, and a promoted replica is sent CONFIG REWRITE.
 */
import { writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import path from 'node:path';
import { requireBinary } from './binaries.js';
import { onFreePort, ServerProcess } from './process.js';
import { redisPing } from './redis.js';

const HOST = '127.0.0.1';

export interface Endpoint {
  host: string;
  port: number;
}

export interface LabProcess extends Endpoint {
  /** `host:port`, as redis.sentinels lists it. */
  address: string;
  pid: number | undefined;
  stop(): Promise<void>;
  kill(): Promise<void>;
}

/** A redis-server replicating `primary` (no persistence), once its link to the primary is up. */
export async function startReplica(opts: { dir: string; primary: Endpoint; port?: number }): Promise<LabProcess> {
  const binary = requireBinary('redis-server');
  return onFreePort(opts.port, async (port) => {
    const file = path.join(opts.dir, `replica-${port}.conf`);
    const lines = [
      `port ${port}`,
      `bind ${HOST}`,
      `dir ${opts.dir}`,
      `dbfilename replica-${port}.rdb`,
      'save ""',
      'appendonly no',
      'daemonize no',
      `replicaof ${opts.primary.host} ${opts.primary.port}`,
      // Sync over the socket, not through a file: quicker for the small data sets of the lab.
      'repl-diskless-load on-empty-db',
    ];
    await writeFile(file, lines.join('\n') + '\n');
    const proc = new ServerProcess(`redis replica on ${HOST}:${port}`, binary, [file], opts.dir);
    proc.spawn();
    await proc.waitUntilReady(port, async () => /master_link_status:up/.test(await redisInfo(HOST, port)));
    return processOf(proc, port);
  });
}

export interface SentinelOptions {
  dir: string;
  /** The master group name (redis.sentinelName). */
  name: string;
  primary: Endpoint;
  quorum: number;
  /** Unreachable this long: subjectively down. */
  downAfterMs: number;
  failoverTimeoutMs: number;
  port?: number;
}

/** One redis-sentinel (redis-server in Sentinel mode) watching `primary`. */
export async function startSentinel(opts: SentinelOptions): Promise<LabProcess> {
  const binary = requireBinary('redis-sentinel');
  return onFreePort(opts.port, async (port) => {
    const file = path.join(opts.dir, `sentinel-${port}.conf`);
    const lines = [
      `port ${port}`,
      `bind ${HOST}`,
      `dir ${opts.dir}`,
      'daemonize no',
      `sentinel monitor ${opts.name} ${opts.primary.host} ${opts.primary.port} ${opts.quorum}`,
      `sentinel down-after-milliseconds ${opts.name} ${opts.downAfterMs}`,
      `sentinel failover-timeout ${opts.name} ${opts.failoverTimeoutMs}`,
      `sentinel parallel-syncs ${opts.name} 1`,
    ];
    await writeFile(file, lines.join('\n') + '\n');
    const proc = new ServerProcess(`redis-sentinel on ${HOST}:${port}`, binary, [file], opts.dir);
    proc.spawn();
    await proc.waitUntilReady(port, () => redisPing(HOST, port));
    return processOf(proc, port);
  });
}

function processOf(proc: ServerProcess, port: number): LabProcess {
  return {
    host: HOST,
    port,
    address: `${HOST}:${port}`,
    get pid() {
      return proc.pid;
    },
    stop: () => proc.stop(),
    kill: () => proc.kill(),
  };
}

/**
 * One command over a raw socket (inline form: arguments without spaces), its reply as text;
 * '' when nothing answers within `timeoutMs`. Enough for INFO and SENTINEL queries.
 */
export function redisCommand(endpoint: Endpoint, command: string, timeoutMs = 1000): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ host: endpoint.host, port: endpoint.port });
    let reply = '';
    const done = (): void => {
      socket.destroy();
      resolve(reply);
    };
    socket.setTimeout(timeoutMs, done);
    socket.on('error', done);
    socket.on('connect', () => socket.write(`${command}\r\n`));
    socket.on('data', (d) => {
      reply += d.toString('latin1');
      if (replyComplete(reply)) done();
    });
  });
}

/** Whether a RESP reply is complete (the forms INFO and SENTINEL give: bulk string, array of bulk strings). */
function replyComplete(text: string): boolean {
  let i = 0;
  const element = (): boolean => {
    const end = text.indexOf('\r\n', i);
    if (end < 0) return false;
    const head = text.slice(i, end);
    i = end + 2;
    if (head[0] === '$') {
      const n = Number(head.slice(1));
      if (n < 0) return true;
      if (text.length < i + n + 2) return false;
      i += n + 2;
      return true;
    }
    if (head[0] === '*') {
      const n = Number(head.slice(1));
      for (let k = 0; k < n; k++) if (!element()) return false;
      return true;
    }
    return true; // +simple, -error, :integer
  };
  return element();
}

/** The strings of a RESP reply (bulk strings and simple ones), in order. */
export function replyStrings(text: string): string[] {
  const out: string[] = [];
  const lines = text.split('\r\n');
  for (let k = 0; k < lines.length; k++) {
    const line = lines[k]!;
    if (line.startsWith('$') && Number(line.slice(1)) >= 0) out.push(lines[++k] ?? '');
    else if (line.startsWith('+') || line.startsWith(':') || line.startsWith('-')) out.push(line.slice(1));
  }
  return out;
}

export function redisInfo(host: string, port: number): Promise<string> {
  return redisCommand({ host, port }, 'INFO replication');
}

/** The primary a Sentinel names for the group, `host:port`; undefined when it does not answer. */
export async function sentinelPrimary(sentinel: Endpoint, name: string): Promise<string | undefined> {
  const [host, port] = replyStrings(await redisCommand(sentinel, `SENTINEL get-master-addr-by-name ${name}`));
  return host && port ? `${host}:${port}` : undefined;
}

/** SENTINEL MASTER's fields (num-slaves, num-other-sentinels, flags, …). */
export async function sentinelMaster(sentinel: Endpoint, name: string): Promise<Record<string, string>> {
  const s = replyStrings(await redisCommand(sentinel, `SENTINEL master ${name}`));
  const out: Record<string, string> = {};
  for (let k = 0; k + 1 < s.length; k += 2) out[s[k]!] = s[k + 1]!;
  return out;
}

/**
 * Until every Sentinel knows the others and `replicas` replicas of the group (found through the
 * primary's INFO and the hello channel, every 2 s): before that a failover could not happen.
 */
export async function waitForSentinels(
  sentinels: readonly Endpoint[],
  name: string,
  replicas: number,
  timeoutMs = 20_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const views = await Promise.all(sentinels.map((s) => sentinelMaster(s, name)));
    const ready = views.every(
      (v) =>
        Number(v['num-other-sentinels']) === sentinels.length - 1 &&
        Number(v['num-slaves']) >= replicas &&
        v['flags'] === 'master',
    );
    if (ready) return;
    if (Date.now() > deadline) throw new Error(`lab: sentinels not ready: ${JSON.stringify(views)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
