/**
 * A small HTTP load generator: raw node:net sockets, one request per connection
 * (`Connection: close`, as dyndns clients do), a fixed number of concurrent clients, each
 * sending its next request when the previous answer has been read to the end.
 */
import net from 'node:net';
import { closedLoop, summarize, type Measurement } from './stats.js';

export interface HttpLoad {
  host: string;
  port: number;
  concurrency: number;
  /** At most this many requests… */
  requests: number;
  /** …and at most this long. */
  maxSeconds: number;
  /** The request bytes for request `index`, sent by client `slot`. */
  request(index: number, slot: number): string;
  /** Whether the reply body is the expected one. */
  expect(index: number, slot: number, body: string): boolean;
  /** Give up on one request after this long (default 10 s). */
  timeoutMs?: number;
}

export async function runHttpLoad(load: HttpLoad): Promise<Measurement> {
  const latencies: number[] = [];
  let ok = 0;
  let errors = 0;
  let firstError: string | undefined;
  const { seconds } = await closedLoop(load.concurrency, load.requests, load.maxSeconds, async (index, slot) => {
    const started = performance.now();
    let answer: string;
    try {
      answer = await exchange(load.host, load.port, load.request(index, slot), load.timeoutMs ?? 10_000);
    } catch (err) {
      errors++;
      firstError ??= (err as Error).message;
      return;
    }
    latencies.push(performance.now() - started);
    const sep = answer.indexOf('\r\n\r\n');
    const body = sep < 0 ? '' : answer.slice(sep + 4);
    if (load.expect(index, slot, body)) ok++;
    else {
      errors++;
      firstError ??= `unexpected reply: ${JSON.stringify(answer.slice(0, 200))}`;
    }
  });
  return summarize(latencies, ok, errors, seconds, firstError);
}

/** Connect, send, read until the server closes. */
export function exchange(host: string, port: number, request: string, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host, port, noDelay: true });
    let text = '';
    let settled = false;
    const done = (err?: Error): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      if (err) reject(err);
      else resolve(text);
    };
    const timer = setTimeout(() => done(new Error(`no complete reply within ${timeoutMs} ms`)), timeoutMs);
    socket.setEncoding('latin1');
    socket.on('connect', () => socket.write(request));
    socket.on('data', (chunk: string) => (text += chunk));
    socket.on('end', () => done());
    socket.on('close', () => done(text.length > 0 ? undefined : new Error('connection closed without a reply')));
    socket.on('error', (err) => done(err));
  });
}

/** The request target (path and query) of a dyndns2 update. */
export function updatePath(hostname: string, ip: string): string {
  return `/nic/update?hostname=${hostname}&myip=${ip}`;
}

/** A dyndns2 update request as a router sends it. */
export function updateRequest(hostname: string, ip: string, authorization: string): string {
  return (
    `GET ${updatePath(hostname, ip)} HTTP/1.0\r\n` +
    'Host: 127.0.0.1\r\n' +
    `Authorization: ${authorization}\r\n` +
    'User-Agent: ddns-bridge-bench/1.0 bench@example.test\r\n' +
    'Connection: close\r\n\r\n'
  );
}
