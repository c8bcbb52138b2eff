/**
 * TCP to a zone's primary (RFC 1035 §4.2.2 / RFC 7766): one persistent connection,
 * 2-byte length framing, pipelined requests matched by message ID, a bound on messages
 * in flight (BIND's update-quota drops excess silently) with a FIFO for the rest.
 * Socket errors never escape: they fail the affected requests with a retryable error.
 * A connection on which a request timed out with nothing read since it was written is
 * reset: later requests (the retry first) go out on a new one, because a firewall or NAT
 * that lost the connection's state swallows everything on it silently, for as long as the
 * OS keeps the socket. Reset (RST), not closed: a normal close leaves the kernel
 * retransmitting what it still holds for minutes, and a copy landing after a newer change
 * sent on the next connection would put an older record back. The requests still on it
 * fail as maybe applied (the zone sender retries them).
 */
import { randomInt } from 'node:crypto';
import net from 'node:net';
import type { DnsUpdateError } from '../core/errors.js';
import { connectionFailure, protocolFailure, timeoutFailure } from './rcode.js';

export interface TransportOptions {
  /** Zone name, for error messages. */
  zone: string;
  host: string;
  port: number;
  maxInFlight: number;
  /** Give up connecting after this long (default 5000 ms). */
  connectTimeoutMs?: number;
}

/** Builds the bytes to send once the transport has chosen the message ID. */
export type MessageBuilder = (id: number) => Buffer;

interface Request {
  build: MessageBuilder;
  resolve(response: Buffer): void;
  reject(err: DnsUpdateError): void;
  timer: NodeJS.Timeout;
  id?: number;
  /** The connection it was written to: only that connection's answers and loss concern it. */
  socket?: net.Socket;
  /** socket.bytesRead when it was written. */
  bytesReadAtSend?: number;
  /** Holds one of the maxInFlight slots (else it waits in the FIFO). */
  holdsSlot: boolean;
  done: boolean;
}

/**
 * How long the ID of an abandoned (timed-out) request stays reserved on its connection: a late answer must not match
 * a new request.
 */
const ABANDONED_ID_HOLD_MS = 60_000;
const ID_SPACE = 0x10000;
/** Free IDs kept so that a random pick succeeds within a few tries. */
const ID_HEADROOM = 4096;

export class TcpTransport {
  private socket: net.Socket | undefined;
  private connecting: Promise<net.Socket> | undefined;
  private readonly inFlight = new Map<number, Request>();
  private readonly waiting: Request[] = [];
  /** ID → until when it stays reserved, and the connection its late answer could come on. */
  private readonly abandoned = new Map<number, { until: number; socket: net.Socket }>();
  private slotsUsed = 0;
  private closed = false;

  constructor(private readonly opts: TransportOptions) {}

  /** Requests currently holding a slot (sent or about to be). */
  get activeCount(): number {
    return this.slotsUsed;
  }

  /**
   * Send one message and resolve with the response carrying the same ID. `timeoutMs`
   * covers waiting for a slot, connecting and the answer.
   */
  request(build: MessageBuilder, timeoutMs: number): Promise<Buffer> {
    return new Promise<Buffer>((resolve, reject) => {
      if (this.closed) {
        reject(connectionFailure(this.opts.zone, 'transport is closed'));
        return;
      }
      const req: Request = {
        build,
        resolve,
        reject,
        holdsSlot: false,
        done: false,
        timer: setTimeout(() => this.expire(req, timeoutMs), Math.max(0, timeoutMs)),
      };
      if (this.slotsUsed < Math.max(1, this.opts.maxInFlight)) this.start(req);
      else this.waiting.push(req);
    });
  }

  /** Fail everything pending and close the connection. Later requests fail at once. */
  close(): void {
    this.closed = true;
    const err = connectionFailure(this.opts.zone, 'transport closed');
    for (const req of [...this.waiting]) this.finish(req, err);
    // Sent and unanswered: the primary may still apply them.
    for (const req of [...this.inFlight.values()]) this.finish(req, err.asMaybeApplied());
    this.socket?.destroy();
    this.socket = undefined;
  }

  private start(req: Request): void {
    req.holdsSlot = true;
    this.slotsUsed++;
    void this.connect().then(
      (socket) => this.send(req, socket),
      (err: DnsUpdateError) => this.finish(req, err),
    );
  }

  private send(req: Request, socket: net.Socket): void {
    if (req.done) return;
    if (socket.destroyed || socket !== this.socket) {
      this.finish(req, connectionFailure(this.opts.zone, 'connection closed before sending'));
      return;
    }
    const id = this.freeId();
    let message: Buffer;
    try {
      message = req.build(id);
    } catch (err) {
      this.finish(req, protocolFailure(this.opts.zone, `cannot encode the message: ${(err as Error).message}`, err));
      return;
    }
    if (message.length > 0xffff) {
      this.finish(req, protocolFailure(this.opts.zone, `message of ${message.length} bytes is too large for TCP`));
      return;
    }
    req.id = id;
    req.socket = socket;
    req.bytesReadAtSend = socket.bytesRead;
    this.inFlight.set(id, req);
    const frame = Buffer.alloc(2 + message.length);
    frame.writeUInt16BE(message.length, 0);
    message.copy(frame, 2);
    socket.write(frame);
  }

  /**
   * A random 16-bit ID not in flight and not recently abandoned. Held IDs are kept in
   * insertion (= expiry) order, so the sweep stops at the first live one. When nearly all
   * IDs are taken (a primary that silently drops a flood), the connection is dropped:
   * late answers cannot arrive on a new one, so its held IDs are free again.
   */
  private freeId(): number {
    const now = Date.now();
    for (const [id, { until }] of this.abandoned) {
      if (until > now) break;
      this.abandoned.delete(id);
    }
    if (this.inFlight.size + this.abandoned.size > ID_SPACE - ID_HEADROOM) {
      this.socket?.destroy();
      this.abandoned.clear();
    }
    for (;;) {
      const id = randomInt(0, ID_SPACE);
      if (!this.inFlight.has(id) && !this.abandoned.has(id)) return id;
    }
  }

  private connect(): Promise<net.Socket> {
    if (this.socket && !this.socket.destroyed) return Promise.resolve(this.socket);
    this.connecting ??= new Promise<net.Socket>((resolve, reject) => {
      const { host, port } = this.opts;
      const timeoutMs = this.opts.connectTimeoutMs ?? 5000;
      const socket = net.connect({ host, port, noDelay: true, keepAlive: true });
      socket.on('error', () => {}); // reported through the connect failure or 'close'
      let settled = false;
      const fail = (why: string, cause?: unknown): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        this.connecting = undefined;
        socket.destroy();
        reject(connectionFailure(this.opts.zone, why, cause));
      };
      const timer = setTimeout(() => fail(`no connection to ${host}:${port} within ${timeoutMs} ms`), timeoutMs);
      socket.once('error', (err) => fail(`cannot connect to ${host}:${port}: ${err.message}`, err));
      socket.once('connect', () => {
        if (settled) return;
        if (this.closed) return fail('transport closed');
        settled = true;
        clearTimeout(timer);
        this.connecting = undefined;
        this.attach(socket);
        resolve(socket);
      });
    });
    return this.connecting;
  }

  private attach(socket: net.Socket): void {
    this.socket = socket;
    let readBuffer = Buffer.alloc(0);
    let lastError: Error | undefined;
    socket.on('data', (chunk: Buffer) => {
      readBuffer = this.onData(socket, readBuffer.length === 0 ? chunk : Buffer.concat([readBuffer, chunk]));
    });
    socket.on('error', (err) => {
      lastError = err;
    });
    socket.on('close', () => {
      if (this.socket === socket) this.socket = undefined;
      // Late answers cannot arrive on another connection: its held IDs are free again.
      for (const [id, held] of this.abandoned) if (held.socket === socket) this.abandoned.delete(id);
      const why = lastError
        ? `connection to the primary failed: ${lastError.message}`
        : 'the primary closed the connection';
      // Every request still in flight on it was sent: the primary may have read it and may
      // still apply it, even after a later message on a new connection (no ordering across
      // connections). Maybe applied: a host that then fails has its stored state republished.
      // Requests on a newer connection are not concerned.
      const err = connectionFailure(this.opts.zone, why, lastError).asMaybeApplied();
      for (const req of [...this.inFlight.values()]) if (req.socket === socket) this.finish(req, err);
    });
  }

  /** Match the complete frames in `buffered` (read from `socket`); returns the unread rest. */
  private onData(socket: net.Socket, buffered: Buffer): Buffer {
    while (buffered.length >= 2) {
      const length = buffered.readUInt16BE(0);
      if (buffered.length < 2 + length) break;
      const message = buffered.subarray(2, 2 + length);
      buffered = buffered.subarray(2 + length);
      if (message.length < 12) continue; // not even a header: nothing to match
      const req = this.inFlight.get(message.readUInt16BE(0));
      if (req && req.socket === socket) this.finish(req, undefined, Buffer.from(message));
      // An unknown ID is a late answer to an abandoned request: ignore it.
    }
    return buffered;
  }

  private expire(req: Request, timeoutMs: number): void {
    if (req.done) return;
    const failure = timeoutFailure(this.opts.zone, timeoutMs);
    const socket = req.socket;
    if (req.id === undefined || socket === undefined) return this.finish(req, failure); // never sent
    this.abandoned.set(req.id, { until: Date.now() + ABANDONED_ID_HOLD_MS, socket });
    // Not a byte came back since this request went out: the connection may be a black hole.
    if (socket.bytesRead === req.bytesReadAtSend) this.retire(socket);
    this.finish(req, failure.asMaybeApplied());
  }

  /**
   * Send nothing more on `socket` (the next request connects afresh) and reset it: the
   * kernel drops what it still holds for the primary (see the top of this file). Its 'close'
   * fails the requests still on it, as maybe applied.
   */
  private retire(socket: net.Socket): void {
    if (this.socket === socket) this.socket = undefined;
    socket.resetAndDestroy();
  }

  /** Settle a request exactly once and hand its slot to the next waiter. */
  private finish(req: Request, err: DnsUpdateError | undefined, response?: Buffer): void {
    if (req.done) return;
    req.done = true;
    clearTimeout(req.timer);
    if (req.id !== undefined && this.inFlight.get(req.id) === req) this.inFlight.delete(req.id);
    if (req.holdsSlot) {
      this.slotsUsed--;
      const next = this.closed ? undefined : this.waiting.shift();
      if (next) this.start(next);
    } else {
      const at = this.waiting.indexOf(req);
      if (at >= 0) this.waiting.splice(at, 1);
    }
    if (err) req.reject(err);
    else req.resolve(response!);
  }
}
