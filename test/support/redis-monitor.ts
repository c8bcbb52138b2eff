/**
 * A Redis MONITOR stream read over a plain TCP socket. ioredis' monitor() races its own
 * ready check against the MONITOR reply ("Command queue state error" when another client's
 * command arrives first), so tests that count commands read the stream themselves: send
 * MONITOR, wait for +OK, then parse one line per command.
 */
import net from 'node:net';

export interface MonitorLine {
  /** The command and its arguments, unescaped. */
  args: string[];
  /** The sending client's address ("127.0.0.1:4242"), or "lua" for a script's calls. */
  source: string;
}

/**
 * One MONITOR line: `+1795317230.654128 [0 127.0.0.1:39154] "set" "k" "v"`. Arguments are
 * quoted the way Redis' sdscatrepr writes them (\\ \" \n \r \t \a \b \xHH).
 */
export function parseMonitorLine(line: string): MonitorLine | undefined {
  const head = /^\+\d+\.\d+ \[\d+ ([^\]]+)\] /.exec(line);
  if (!head) return undefined;
  const args: string[] = [];
  let i = head[0].length;
  while (i < line.length) {
    if (line[i] === ' ') {
      i++;
      continue;
    }
    if (line[i] !== '"') return undefined;
    i++;
    const bytes: number[] = [];
    for (;;) {
      if (i >= line.length) return undefined;
      const c = line[i]!;
      if (c === '"') {
        i++;
        break;
      }
      if (c === '\\') {
        const e = line[i + 1];
        const simple: Record<string, number> = { '\\': 0x5c, '"': 0x22, n: 0x0a, r: 0x0d, t: 0x09, a: 0x07, b: 0x08 };
        if (e === 'x') {
          bytes.push(parseInt(line.slice(i + 2, i + 4), 16));
          i += 4;
        } else if (e !== undefined && e in simple) {
          bytes.push(simple[e]!);
          i += 2;
        } else return undefined;
        continue;
      }
      bytes.push(...Buffer.from(c, 'latin1'));
      i++;
    }
    args.push(Buffer.from(bytes).toString('utf8'));
  }
  return { args, source: head[1]! };
}

export class RedisMonitor {
  private buffered = '';
  private started = false;

  private constructor(
    private readonly socket: net.Socket,
    onLine: (line: MonitorLine) => void,
    onStarted: (err?: Error) => void,
  ) {
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      this.buffered += chunk;
      let nl: number;
      while ((nl = this.buffered.indexOf('\r\n')) >= 0) {
        const line = this.buffered.slice(0, nl);
        this.buffered = this.buffered.slice(nl + 2);
        if (!this.started) {
          this.started = true;
          onStarted(line === '+OK' ? undefined : new Error(`MONITOR answered ${JSON.stringify(line.slice(0, 80))}`));
          continue;
        }
        const parsed = parseMonitorLine(line);
        if (parsed) onLine(parsed);
      }
    });
  }

  /** Connects to a redis://host:port URL and resolves once MONITOR answered +OK. */
  static async open(url: string, onLine: (line: MonitorLine) => void): Promise<RedisMonitor> {
    const { hostname, port } = new URL(url);
    const socket = net.connect({ host: hostname.replace(/^\[|\]$/g, ''), port: Number(port || 6379) });
    let monitor!: RedisMonitor;
    await new Promise<void>((resolve, reject) => {
      monitor = new RedisMonitor(socket, onLine, (err) => (err ? reject(err) : resolve()));
      socket.once('error', reject);
      socket.once('connect', () => socket.write('MONITOR\r\n'));
    }).catch((err: unknown) => {
      socket.destroy();
      throw err;
    });
    socket.on('error', () => {}); // closed by close(); a reset after that is not a test failure
    return monitor;
  }

  close(): void {
    this.socket.destroy();
  }
}
