/** A `serve` process started by a test (BridgeEnv's own take no --workers), its JSON log parsed as it comes. */
import { spawn, type ChildProcess } from 'node:child_process';
import { freePort } from '../../src/lab/index.js';
import { CLI, sleep, type BridgeEnv } from './bridge.js';

export type LogLine = Record<string, unknown> & { msg?: string; level?: string };

/** A `serve` process of our own (BridgeEnv's has no --workers), its log parsed as it comes. */
export class Serve {
  readonly lines: LogLine[] = [];
  private constructor(
    readonly child: ChildProcess,
    readonly port: number,
  ) {}

  /** `configPath`: a config file of the test's own (default the env's); its one `listen` address gets a free port. */
  static async start(
    env: BridgeEnv,
    workers: number,
    extraEnv: NodeJS.ProcessEnv = {},
    configPath = env.configPath,
  ): Promise<Serve> {
    const port = await freePort();
    const args = [CLI, 'serve', '--config', configPath, '--port', String(port), '--workers', String(workers)];
    const child = spawn(process.execPath, args, {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, ...extraEnv },
    });
    const serve = new Serve(child, port);
    let buf = '';
    child.stderr.on('data', (d: Buffer) => {
      buf += d.toString();
      let nl: number;
      while ((nl = buf.indexOf('\n')) !== -1) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        try {
          serve.lines.push(JSON.parse(line) as LogLine);
        } catch {
          serve.lines.push({ msg: line });
        }
      }
    });
    await serve.waitFor((l) => l.msg === 'listening', 1, 20_000);
    return serve;
  }

  /** Resolves with the first `count` lines since `from` that match. */
  async waitFor(match: (l: LogLine) => boolean, count = 1, ms = 10_000, from = 0): Promise<LogLine[]> {
    const deadline = Date.now() + ms;
    for (;;) {
      const found = this.lines.slice(from).filter(match);
      if (found.length >= count) return found.slice(0, count);
      if (Date.now() > deadline || this.child.exitCode !== null)
        throw new Error(`no ${count} matching log lines: ${JSON.stringify(this.lines.slice(-10))}`);
      await sleep(20);
    }
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      this.child.once('exit', () => resolve());
      this.child.kill('SIGTERM');
    });
  }
}
