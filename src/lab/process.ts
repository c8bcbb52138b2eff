/**
 * A server process owned by the lab: spawned in the foreground, output kept (tail only)
 * for error messages, stopped with SIGTERM then SIGKILL, and killed when this Node process
 * exits so a crashed test run does not leave servers behind.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFile, readdir, readlink } from 'node:fs/promises';
import { freePort } from './files.js';

const live = new Set<ChildProcess>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const child of live) {
      try {
        child.kill('SIGKILL');
      } catch {
        // already gone
      }
    }
  });
}

const TAIL_LINES = 40;
const STOP_GRACE_MS = 5000;

export class ServerProcess {
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  private outputLines: string[] = [];
  private partial = '';
  private readonly lineListeners: ((line: string) => void)[] = [];
  exitDescription: string | undefined;

  constructor(
    readonly label: string,
    private readonly command: string,
    private readonly args: readonly string[],
    private readonly cwd: string,
  ) {}

  get running(): boolean {
    return this.child !== undefined && this.exitDescription === undefined;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  spawn(): void {
    if (this.running) throw new Error(`lab: ${this.label} is already running`);
    installExitHook();
    this.exitDescription = undefined;
    this.outputLines = [];
    this.partial = '';
    const child = spawn(this.command, this.args, { cwd: this.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    live.add(child);
    child.stdout?.on('data', (d: Buffer) => this.collect(d));
    child.stderr?.on('data', (d: Buffer) => this.collect(d));
    this.exited = new Promise((resolve) => {
      child.once('error', (err) => {
        this.exitDescription = `failed to start: ${err.message}`;
        live.delete(child);
        resolve();
      });
      child.once('exit', (code, signal) => {
        this.exitDescription = signal ? `killed by ${signal}` : `exited with status ${code}`;
        live.delete(child);
        resolve();
      });
    });
  }

  private collect(data: Buffer): void {
    const lines = (this.partial + data.toString('utf8')).split('\n');
    this.partial = lines.pop() ?? '';
    this.outputLines.push(...lines);
    for (const line of lines) for (const listener of this.lineListeners) listener(line);
    if (this.outputLines.length > TAIL_LINES) this.outputLines.splice(0, this.outputLines.length - TAIL_LINES);
  }

  /** Call `listener` with every whole line the server prints, from now on and across restarts. */
  onLine(listener: (line: string) => void): void {
    this.lineListeners.push(listener);
  }

  /** The last lines the server printed (its log), for error messages. */
  tail(): string {
    return [...this.outputLines, this.partial].filter((l) => l.length > 0).join('\n');
  }

  /** SIGTERM, wait for exit; SIGKILL if it is still there after 5 s. */
  async stop(): Promise<void> {
    if (!this.running) return this.exited;
    this.child!.kill('SIGTERM');
    if (!(await this.waitForExit(STOP_GRACE_MS))) await this.kill();
  }

  /** Resolves true once the process has exited, false when it is still running after `ms`. */
  async waitForExit(ms: number): Promise<boolean> {
    if (!this.running) return true;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), ms);
    });
    const result = await Promise.race([this.exited.then(() => true as const), timeout]);
    clearTimeout(timer);
    return result;
  }

  /** SIGKILL, wait for exit (simulates a crash). */
  async kill(): Promise<void> {
    if (!this.running) return this.exited;
    this.child!.kill('SIGKILL');
    await this.exited;
  }

  /**
   * True when this process holds the TCP listener on 127.0.0.1:`port` (Linux /proc). A probe
   * that merely gets an answer on the port may be talking to another server that took it.
   */
  async ownsTcpListener(port: number): Promise<boolean> {
    const pid = this.child?.pid;
    if (!this.running || pid === undefined) return false;
    const table = await readFile('/proc/net/tcp', 'utf8').catch(() => '');
    const local = `0100007F:${port.toString(16).toUpperCase().padStart(4, '0')}`;
    const inodes = new Set<string>();
    for (const line of table.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f[1] === local && f[3] === '0A' && f[9]) inodes.add(`socket:[${f[9]}]`);
    }
    if (inodes.size === 0) return false;
    const fds = await readdir(`/proc/${pid}/fd`).catch(() => [] as string[]);
    for (const fd of fds) {
      const target = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => '');
      if (inodes.has(target)) return true;
    }
    return false;
  }

  /** True when the server's log says a socket could not be bound. */
  reportsAddressInUse(): boolean {
    return /address (already )?in use/i.test(this.tail());
  }

  /**
   * Poll `ready` every 100 ms until it returns true and this process owns the listener on
   * `port`; fail early when the process exits or the port turns out to be taken (PortInUseError,
   * so callers can retry with another port), and after `timeoutMs`. Errors carry the server's
   * output tail.
   */
  async waitUntilReady(port: number, ready: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (this.reportsAddressInUse()) {
        await this.stop();
        throw new PortInUseError(`lab: ${this.label}: port already in use\n${this.tail()}`);
      }
      if (!this.running) {
        throw new Error(`lab: ${this.label} ${this.exitDescription ?? 'is not running'}\n${this.tail()}`);
      }
      if (await ready().catch(() => false)) {
        // Something answered: make sure it is this process and not another server on the port.
        if (await this.ownsTcpListener(port)) return;
        if (!this.running) continue; // exited meanwhile: reported with its log above
        await this.stop();
        throw new PortInUseError(`lab: ${this.label}: another process answers on port ${port}\n${this.tail()}`);
      }
      if (Date.now() > deadline) {
        await this.stop();
        throw new Error(`lab: ${this.label} not ready after ${timeoutMs} ms\n${this.tail()}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/**
 * The lines of `proc`'s output that match `pattern`, the last `max` of them, kept from now on and
 * across restarts: what a test reads to see which transfers and NOTIFYs a server logged.
 */
export function keepLines(proc: ServerProcess, pattern: RegExp, max = 1000): () => string[] {
  const kept: string[] = [];
  proc.onLine((line) => {
    if (!pattern.test(line)) return;
    kept.push(line);
    if (kept.length > max) kept.splice(0, kept.length - max);
  });
  return () => [...kept];
}

/** The port was taken by someone else between freePort() and the server binding it. */
export class PortInUseError extends Error {}

/**
 * Start a server on `port`, or on a free port when none is given: a port from freePort() can
 * be taken by a parallel run before the server binds it, so a lost race (PortInUseError) gets
 * another port, twice at most; anything else is reported as is.
 */
export async function onFreePort<T>(port: number | undefined, start: (port: number) => Promise<T>): Promise<T> {
  const attempts = port === undefined ? 3 : 1;
  let lastError: unknown;
  for (let i = 0; i < attempts; i++) {
    try {
      return await start(port ?? (await freePort()));
    } catch (err) {
      if (!(err instanceof PortInUseError)) throw err;
      lastError = err;
    }
  }
  throw lastError;
}
