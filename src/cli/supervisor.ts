/**
 * The worker supervisor of `serve --workers N` (the node:cluster primary; docs/architecture.md,
 * "serve: one process, or a primary and its workers"). It forks the workers, answers their
 * request for the config, tells when all of them listen, restarts one that dies (at most
 * MAX_RESTARTS_PER_MINUTE, then everything stops with status 1 so that systemd sees the crash
 * loop), passes a reload on, and stops them: SIGTERM, SIGKILL after WORKER_STOP_GRACE_MS.
 */
import cluster, { type Worker } from 'node:cluster';
import type { Config } from '../config/schema.js';
import type { Logger } from '../core/log.js';
import type { TlsListenerFiles } from '../http/tls.js';

/** An address a worker listens on. */
export type Listener = { host: string; port: number; tls?: TlsListenerFiles };

/** Messages from a worker to the primary. */
export type WorkerMessage = { kind: 'ready'; bound: Listener[] } | { kind: 'config?' };
/** The primary's answer to 'config?', and the SIGHUP it passes on. */
export type PrimaryMessage = { kind: 'config'; config: Config } | { kind: 'reload'; config?: Config };

/** Restarts of dying workers allowed within a minute before the primary gives up. */
export const MAX_RESTARTS_PER_MINUTE = 10;
/** How long stopping workers get to finish their requests before SIGKILL (a worker cut off from its primary, too). */
export const WORKER_STOP_GRACE_MS = 30_000;

export interface SupervisorOptions {
  count: number;
  logger: Logger;
  /** The config a worker gets when it asks: the one the primary runs (reloaded ones included). */
  config: () => Config;
  /** node options for the workers. */
  execArgv: string[];
}

export class WorkerSupervisor {
  private readonly alive = new Set<Worker>();
  private readonly restarts: number[] = [];
  private ready = false;
  private stoppingFor: string | undefined;
  private finish: (code: number) => void = () => undefined;
  /** The exit status once every worker is gone after a stop. */
  readonly done = new Promise<number>((resolve) => (this.finish = resolve));

  constructor(private readonly opts: SupervisorOptions) {}

  get workers(): number {
    return this.alive.size;
  }

  get stopping(): boolean {
    return this.stoppingFor !== undefined;
  }

  /**
   * Fork the workers; resolves with the addresses they listen on once all of them do, or
   * undefined when the start failed (a worker exited first, or a stop came): `done` then tells.
   */
  async start(): Promise<Listener[] | undefined> {
    const firstReady = new Promise<Listener[]>((resolve) => {
      let pending = this.opts.count;
      cluster.on('message', (_worker, m: WorkerMessage) => {
        if (m?.kind !== 'ready' || this.ready) return;
        if (--pending === 0) resolve(m.bound);
      });
    });
    // 'advanced': the config holds Buffers (the TSIG secrets), which JSON would not carry.
    cluster.setupPrimary({ execArgv: this.opts.execArgv, serialization: 'advanced' });
    for (let i = 0; i < this.opts.count; i++) this.fork();
    const outcome = await Promise.race([firstReady, this.done.then(() => undefined)]);
    if (outcome !== undefined && !this.stopping) this.ready = true;
    return this.ready ? outcome : undefined;
  }

  /** Pass a reload on to every worker (the config the primary read again, if it could). */
  reload(config: Config | undefined): void {
    for (const w of this.alive) if (w.isConnected()) w.send({ kind: 'reload', config } satisfies PrimaryMessage);
  }

  /** Stop every worker (once); `done` resolves with `code` when the last is gone. */
  stop(reason: string, code: number): void {
    if (this.stopping) return;
    this.stoppingFor = reason;
    this.opts.logger.info('stopping', { signal: reason, workers: this.alive.size });
    if (this.alive.size === 0) return this.finish(code);
    const killer = setTimeout(() => {
      for (const w of this.alive) w.process.kill('SIGKILL');
    }, WORKER_STOP_GRACE_MS);
    killer.unref();
    // A signal, not an IPC message: a worker still loading has no listener yet and would miss a
    // message, while SIGTERM then simply ends it (it has nothing to close yet).
    for (const w of this.alive) w.process.kill('SIGTERM');
    const check = setInterval(() => {
      if (this.alive.size === 0) {
        clearInterval(check);
        clearTimeout(killer);
        this.finish(code);
      }
    }, 20);
  }

  private fork(): Worker {
    const { logger } = this.opts;
    const worker = cluster.fork();
    this.alive.add(worker);
    // A send to a worker that has just died (its config, a stop) fails here, not as an
    // unhandled 'error' that would end the primary; its 'exit' follows and is handled below.
    worker.on('error', (err: Error) =>
      logger.warn('worker channel error', { pid: worker.process.pid, error: err.message }),
    );
    worker.on('message', (m: WorkerMessage) => {
      if (m?.kind === 'config?') worker.send({ kind: 'config', config: this.opts.config() } satisfies PrimaryMessage);
    });
    worker.on('exit', (code, signal) => this.onExit(worker, code, signal));
    return worker;
  }

  private onExit(worker: Worker, code: number, signal: string): void {
    const { logger } = this.opts;
    this.alive.delete(worker);
    if (this.stopping) return;
    if (!this.ready) {
      logger.error('a worker exited while starting', { pid: worker.process.pid, code, signal });
      return this.stop('worker failed to start', 1);
    }
    const now = Date.now();
    while (this.restarts.length > 0 && now - this.restarts[0]! > 60_000) this.restarts.shift();
    if (this.restarts.length >= MAX_RESTARTS_PER_MINUTE) {
      logger.error('workers keep dying; giving up', { restartsPerMinute: this.restarts.length });
      return this.stop('too many worker restarts', 1);
    }
    this.restarts.push(now);
    logger.warn('worker died; starting another', { pid: worker.process.pid, code, signal });
    this.fork();
  }
}
