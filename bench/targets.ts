/**
 * What the bench runs against: the bridge in this process (buildBridge) or as
 * `ddns-bridge serve --workers N` children; the HTTP ceiling likewise. Each exposes its port,
 * how to read its resident memory, and stop().
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { Config } from '../src/config/schema.js';
import type { Logger } from '../src/core/log.js';
import { buildBridge, type Bridge } from '../src/cli/compose.js';
import { CEILING_SCRIPT, startCeilingServer } from './ceiling-server.js';

/** `in-process`, or `workers-N`: `serve --workers N` as child processes. */
export type BridgeMode = 'in-process' | `workers-${number}`;

export interface Target {
  port: number;
  /** Resident memory in bytes: per process (pid → rss) at this moment. */
  rss(): Promise<Map<number, number>>;
  /** CPU time (user + system) its processes have used so far, seconds. In-process: this whole process. */
  cpuSeconds(): Promise<number>;
  /** Runs in the bench process (its CPU includes the load generator's). */
  inProcess: boolean;
  /** The in-process bridge (for sender statistics); undefined for child processes. */
  bridge?: Bridge;
  /** Child processes: the primary's pid (its workers are the others; `--cpu-prof` names files by pid). */
  primaryPid?: number;
  stop(): Promise<void>;
}

const CLI = fileURLToPath(new URL('../src/cli/main.js', import.meta.url));

/** Children still running: killed if the bench exits early (Ctrl-C) so nothing is left behind. */
const children = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});

function track(child: ChildProcess): ChildProcess {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

export function workersOf(mode: BridgeMode): number {
  return mode === 'in-process' ? 0 : Number(mode.slice('workers-'.length));
}

export async function startBridgeTarget(
  mode: BridgeMode,
  config: Config,
  configPath: string,
  logger: Logger,
  /** Node options for the serve process, which its workers inherit (e.g. `--cpu-prof`). */
  nodeOptions: readonly string[] = [],
  /** The CLI to run: this build's, or an earlier build's (`--section baseline`). */
  cli: string = CLI,
): Promise<Target> {
  if (mode === 'in-process') {
    const bridge = buildBridge(config, logger);
    const port = await bridge.http.listen('127.0.0.1', 0);
    return { port, bridge, rss: ownRss, cpuSeconds: ownCpu, inProcess: true, stop: () => bridge.close() };
  }
  const child = track(
    spawn(
      process.execPath,
      [...nodeOptions, cli, 'serve', '--config', configPath, '--port', '0', '--workers', String(workersOf(mode))],
      {
        stdio: ['ignore', 'ignore', 'pipe'],
        env: { ...process.env, DDNS_BRIDGE_CONFIG: '' },
      },
    ),
  );
  const lines = await waitForLog(child, (l) => l.msg === 'listening', 30_000);
  const port = Number(lines.find((l) => l.msg === 'listening')!.port);
  const pids = [child.pid!, ...lines.filter((l) => l.msg === 'worker listening').map((l) => Number(l.pid))];
  return {
    port,
    rss: () => procRss(pids),
    cpuSeconds: () => procCpu(pids),
    inProcess: false,
    primaryPid: child.pid!,
    stop: () => stopChild(child),
  };
}

export async function startCeilingTarget(
  mode: BridgeMode,
  nodeOptions: readonly string[] = [],
  /** "bare + Redis": one script call per request on this Redis (ceiling-server.ts). */
  redisUrl?: string,
): Promise<Target> {
  if (mode === 'in-process') {
    const { server, port } = await startCeilingServer(0, redisUrl);
    return {
      port,
      rss: ownRss,
      cpuSeconds: ownCpu,
      inProcess: true,
      stop: () =>
        new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        }),
    };
  }
  const workers = workersOf(mode);
  const child = track(
    spawn(process.execPath, [...nodeOptions, CEILING_SCRIPT, '0', String(workers)], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, BENCH_REDIS_URL: redisUrl ?? '' },
    }),
  );
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error('the ceiling server did not start')), 15_000);
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening (\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the ceiling server exited with ${code}`));
    });
  });
  // The primary and its cluster workers: the workers are the primary's children.
  const pids = async () => [child.pid!, ...(await childrenOf(child.pid!))];
  return {
    port,
    rss: async () => procRss(await pids()),
    cpuSeconds: async () => procCpu(await pids()),
    inProcess: false,
    primaryPid: child.pid!,
    stop: () => stopChild(child),
  };
}

async function ownCpu(): Promise<number> {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

const CLOCK_TICKS = 100; // USER_HZ on Linux

/** utime + stime of each pid from /proc/PID/stat, summed, seconds (gone pids count 0). */
export async function procCpu(pids: readonly number[]): Promise<number> {
  const ticks = await Promise.all(
    pids.map(async (pid) => {
      try {
        const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
        // Fields after the command name (which may hold spaces) start after the last ')'.
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        return Number(fields[11]) + Number(fields[12]);
      } catch {
        return 0;
      }
    }),
  );
  return ticks.reduce((a, b) => a + b, 0) / CLOCK_TICKS;
}

async function childrenOf(pid: number): Promise<number[]> {
  try {
    const text = await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8');
    return text.split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

async function ownRss(): Promise<Map<number, number>> {
  return new Map([[process.pid, process.memoryUsage.rss()]]);
}

/** VmRSS of each pid from /proc (pids that are gone are left out). */
export async function procRss(pids: readonly number[]): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  await Promise.all(
    pids.map(async (pid) => {
      try {
        const status = await readFile(`/proc/${pid}/status`, 'utf8');
        const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
        if (m) out.set(pid, Number(m[1]) * 1024);
      } catch {
        // gone
      }
    }),
  );
  return out;
}

type LogLine = Record<string, unknown>;

/** Collect JSON log lines from a child's stderr until one matches (rejects if it exits first). */
function waitForLog(child: ChildProcess, match: (l: LogLine) => boolean, timeoutMs: number): Promise<LogLine[]> {
  return new Promise((resolve, reject) => {
    let buf = '';
    const lines: LogLine[] = [];
    const timer = setTimeout(
      () => fail(new Error(`serve did not start within ${timeoutMs} ms: ${buf.slice(-1000)}`)),
      timeoutMs,
    );
    const fail = (err: Error): void => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(err);
    };
    const onData = (d: Buffer): void => {
      buf += d.toString();
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const text = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (!text.startsWith('{')) continue;
        try {
          const line = JSON.parse(text) as LogLine;
          lines.push(line);
          if (line.level === 'error') process.stderr.write(`bench: serve: ${text}\n`);
          if (match(line)) {
            clearTimeout(timer);
            child.off('exit', onExit);
            // Keep draining (and showing errors) so the child never blocks on a full pipe.
            child.stderr!.off('data', onData);
            child.stderr!.on('data', (more: Buffer) => {
              for (const l of more.toString().split('\n'))
                if (l.includes('"level":"error"')) process.stderr.write(`bench: serve: ${l}\n`);
            });
            resolve(lines);
            return;
          }
        } catch {
          // not a log line
        }
      }
    };
    const onExit = (code: number | null): void => fail(new Error(`serve exited with ${code}: ${buf.slice(-1000)}`));
    child.stderr!.on('data', onData);
    child.once('exit', onExit);
  });
}

function stopChild(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const killer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.once('exit', () => {
      clearTimeout(killer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}
