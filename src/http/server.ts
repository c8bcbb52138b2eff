/**
 * The node:http frontend: routes, limits, parsing, and the single reply writer. Replies are
 * written as raw bytes on the socket (node:http would say HTTP/1.1) and the connection closed.
 * An HTTPS listener is a node:https server with the same handler: the same bytes inside TLS.
 */
import http from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { Logger } from '../core/log.js';
import { NO_TELEMETRY, type Telemetry } from '../core/telemetry.js';
import type { UpdateService } from '../app/update.js';
import type { EchoService } from '../app/echo.js';
import { ClientAddressResolver, paramsOf, parseBasicAuth } from './request.js';
import { echoReply, encodeReply, errorReply, outcomeReply, updateReply, type RawReply } from './reply.js';
import { readTlsPair, summarize, type TlsListenerFiles } from './tls.js';
import { ACME_PATHS, answerAcme, isAcmeRoute, type AcmeRoute } from './acme.js';
import { dyndns2Ask } from './desec.js';
import { answerDynv6, DYNV6_PATH } from './dynv6.js';
import { answerDuckDns, duckDnsFault, withDuckDns } from './duckdns.js';
import { connectionsCheckingInterval } from '../core/limits.js';

export interface HttpSettings {
  basePath: string;
  trustedProxies: readonly string[];
  realm: string;
  maxBodyBytes: number;
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
  maxHeaderBytes: number;
  maxConnections: number;
  /** `http.queryCredentials` (docs/protocol.md, "deSEC variants"). */
  queryCredentials?: boolean;
  /** `dialects.duckdns.zone` (http/duckdns.ts). */
  duckdnsZone?: string;
}

type Route = 'update' | 'echo' | AcmeRoute | 'dynv6' | 'duckdns';

/**
 * What the frontend keeps per connection, on the socket itself. Not in a WeakMap keyed by
 * socket: V8 keeps a WeakMap entry's value — here the request, and with it everything it
 * holds — through young-generation collections until a full one, so every answered
 * connection was promoted to the old space (4.2 KB per request against 0.7 for a bare
 * node:http server) and a worker's heap grew to ~110 MB between full collections.
 */
const CONNECTION = Symbol('ddns-bridge connection');

interface ConnectionState {
  /** The peer address, read when the connection was accepted. */
  peer: string | undefined;
  /** The request this connection is being answered for (one per connection). */
  answering: http.IncomingMessage | undefined;
}

type TrackedSocket = Socket & { [CONNECTION]?: ConnectionState };

function connectionOf(socket: Socket): ConnectionState | undefined {
  return (socket as TrackedSocket)[CONNECTION];
}

const UPDATE_ALIASES = ['/nic/update', '/v3/update'];
const ECHO_PATHS = ['/checkip', '/ip', '/nic/checkip'];

type Server = http.Server | https.Server;

/** An HTTPS listener and the files its certificate is read from (again on reload). */
interface TlsListener {
  server: https.Server;
  files: TlsListenerFiles;
  address: string;
  /** The certificate in use: its notAfter, seconds since the epoch (the metrics read it). */
  notAfter: number;
}

/** What reloadTls did for one listener. */
export type TlsReloadOutcome = { setting: string; ok: true } | { setting: string; ok: false; error: string };

export class HttpFrontend {
  readonly servers: Server[] = [];
  private readonly tlsListeners: TlsListener[] = [];
  private readonly routes = new Map<string, Route>();
  private readonly clientAddress: ClientAddressResolver;
  private inFlight = 0;
  private idleWaiters: Array<() => void> = [];

  constructor(
    private readonly settings: HttpSettings,
    private readonly services: { update: UpdateService; echo: EchoService },
    private readonly logger: Logger,
    private readonly telemetry: Telemetry = NO_TELEMETRY,
  ) {
    const base = settings.basePath.replace(/\/+$/, '');
    for (const p of [`${base}/dyndns/update`, ...UPDATE_ALIASES, ...UPDATE_ALIASES.map((a) => base + a)])
      this.routes.set(p, 'update');
    for (const p of [...ECHO_PATHS, ...ECHO_PATHS.map((e) => base + e)]) this.routes.set(p, 'echo');
    // The ACME client APIs (docs/protocol.md, "ACME client APIs").
    // Never over an update alias: with basePath `/nic`, `/nic/update` stays the update path.
    for (const [p, route] of ACME_PATHS)
      for (const path of [p, base + p]) if (!this.routes.has(path)) this.routes.set(path, route);
    // dynv6's update API (docs/protocol.md, "dynv6").
    for (const path of [DYNV6_PATH, base + DYNV6_PATH]) if (!this.routes.has(path)) this.routes.set(path, 'dynv6');
    this.clientAddress = new ClientAddressResolver(settings.trustedProxies);
  }

  private createServer(tls: https.ServerOptions | undefined): Server {
    const { settings } = this;
    const options: http.ServerOptions = {
      requireHostHeader: false,
      maxHeaderSize: settings.maxHeaderBytes,
      headersTimeout: settings.headersTimeoutMs,
      requestTimeout: settings.requestTimeoutMs,
      keepAliveTimeout: settings.keepAliveTimeoutMs,
      connectionsCheckingInterval: connectionsCheckingInterval(settings.headersTimeoutMs, settings.requestTimeoutMs),
    };
    const server: Server = tls
      ? https.createServer({
          ...options,
          ...tls,
          // A client that never finishes its TLS handshake is cut off like one that never sends its headers.
          handshakeTimeout: settings.headersTimeoutMs,
        })
      : http.createServer(options);
    server.maxConnections = settings.maxConnections;
    // A client may half-close after sending its request (`printf … | nc`): by default node
    // then ends the socket before our asynchronous reply is written, and the client never
    // learns that its update was applied. Half-open, node marks the response as the last one
    // and closes the socket once it is finished. (Not in @types/node; node 20 reads it.)
    (server as http.Server & { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
    // The peer address is read at accept: read when the request is handled, after the client
    // has reset the connection, getpeername fails and remoteAddress is undefined. Over TLS the
    // requests come on the TLS socket, handed over once the handshake is done.
    server.on(tls ? 'secureConnection' : 'connection', (socket: Socket) => {
      (socket as TrackedSocket)[CONNECTION] = { peer: socket.remoteAddress, answering: undefined };
      // Half-open as a plain connection is (httpAllowHalfOpen above needs it), but only once the
      // handshake is done: node 20's TLS server with allowHalfOpen leaks a connection whose client
      // closes during the handshake (never counted down: maxConnections fills up, close() hangs).
      if (tls) socket.allowHalfOpen = true;
    });
    server.on('request', (req, res) => this.onRequest(req, res));
    // Handled as any request: node would otherwise answer `HTTP/1.1 100 Continue` itself (the
    // client sends its body after its own short wait).
    server.on('checkContinue', (req, res) => this.onRequest(req, res));
    // Likewise any other Expect value (node would answer `HTTP/1.1 417` itself): ignored.
    server.on('checkExpectation', (req, res) => this.onRequest(req, res));
    server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => this.onClientError(err, socket));
    // CONNECT never reaches 'request': without this node would drop the socket unanswered.
    server.on('connect', (_req: http.IncomingMessage, socket: Socket) => {
      socket.on('error', () => undefined);
      socket.end(encodeReply(errorReply(405)));
      socket.destroySoon();
    });
    return server;
  }

  /**
   * Listen on one more address (each address gets its own server); returns the bound port.
   * `ipv6Only`: an IPv6 address (`::`) that must not take the IPv4 side of its port too,
   * because an IPv4 address listens on the same port.
   */
  async listen(host: string, port: number, opts: { ipv6Only?: boolean; tls?: TlsListenerFiles } = {}): Promise<number> {
    const pair = opts.tls ? await readTlsPair(opts.tls) : undefined;
    const server = this.createServer(pair?.secureContext);
    this.servers.push(server);
    await new Promise<void>((resolve, reject) => {
      const onError = (err: Error) => reject(err);
      server.once('error', onError);
      server.listen({ host, port, ipv6Only: opts.ipv6Only ?? false }, () => {
        server.off('error', onError);
        // Listening, node reports a failed accept (the process out of file descriptors under a
        // flood of connections) as an 'error' event: unhandled, it would end the process.
        server.on('error', (err: Error) =>
          this.logger.error('listener error', { address: host, port, error: err.message }),
        );
        resolve();
      });
    });
    const addr = server.address();
    const bound = typeof addr === 'object' && addr ? addr.port : port;
    if (opts.tls && pair) {
      const address = host.includes(':') ? `[${host}]:${bound}` : `${host}:${bound}`;
      const listener = { server: server as https.Server, files: opts.tls, address, notAfter: notAfterOf(pair.leaf) };
      this.tlsListeners.push(listener);
      this.telemetry.sample('tls_certificate_expiry_seconds', { listener: opts.tls.setting }, () => listener.notAfter);
      this.logger.info('tls certificate loaded', { listener: opts.tls.setting, address, ...summarize(pair.leaf) });
    }
    return bound;
  }

  /**
   * Read every HTTPS listener's certificate and key again. New connections get the new pair;
   * connections already open keep theirs. A pair that cannot be read or does not belong
   * together is not used: the listener keeps the one it has, and the log says why.
   */
  async reloadTls(): Promise<TlsReloadOutcome[]> {
    return Promise.all(
      this.tlsListeners.map(async (listener): Promise<TlsReloadOutcome> => {
        const { server, files, address } = listener;
        try {
          const pair = await readTlsPair(files);
          server.setSecureContext(pair.secureContext);
          listener.notAfter = notAfterOf(pair.leaf);
          this.logger.info('tls certificate loaded', { listener: files.setting, address, ...summarize(pair.leaf) });
          return { setting: files.setting, ok: true };
        } catch (err) {
          const error = err instanceof Error ? err.message : String(err);
          const fields = { listener: files.setting, address, error };
          this.logger.error('tls certificate not reloaded; keeping the previous one', fields);
          return { setting: files.setting, ok: false, error };
        }
      }),
    );
  }

  /** Stop accepting connections; resolve when every request in flight has been answered. */
  async close(): Promise<void> {
    const closed = this.servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve())));
    for (const s of this.servers) s.closeIdleConnections();
    if (this.inFlight > 0) await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
    for (const s of this.servers) s.closeAllConnections();
    await Promise.all(closed);
  }

  private onRequest(req: http.IncomingMessage, res: http.ServerResponse): void {
    // One request per connection: every reply closes it. A request pipelined behind the
    // first is never processed (its client gets no reply, so it must change nothing).
    const connection = connectionOf(req.socket);
    if (connection?.answering !== undefined) {
      req.resume();
      return;
    }
    // No peer address even at accept: the client reset the connection before it could be read
    // (the kernel still hands over what it had sent). Nobody is left to read a reply (writing
    // one only meets the reset), and there is no detected address to use: close, change nothing.
    if (connection?.peer === undefined) {
      this.logger.debug('connection reset before its peer address was read: closed unanswered');
      req.socket.destroy();
      return;
    }
    connection.answering = req;
    this.inFlight++;
    const started = performance.now();
    // The target is split once: the route serves the handler and the metrics.
    const { path, query } = splitTarget(req.url ?? '/');
    // GET of the acme-dns path (`/update`): DuckDNS when it names `domains`, else the update request (deSEC's form).
    const route = getOfUpdatePath(this.routes.get(path), req.method, query);
    void this.answer(req, res, route, query, connection.peer, started);
  }

  /**
   * Handle, write the reply, count it: one async function rather than a chain of four promise handlers (each a
   * promise and a closure per request). Never rejects: a rejection would end the process on node 20.
   */
  private async answer(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    route: Route | undefined,
    query: string,
    peer: string,
    started: number,
  ): Promise<void> {
    try {
      let reply: RawReply;
      try {
        reply = await this.handle(req, route, query, peer);
      } catch (err) {
        reply = this.failureReply(err);
      }
      this.write(req, res, reply);
      const seconds = (performance.now() - started) / 1000;
      const token = reply.outcomeToken ?? firstWord(reply.body);
      this.telemetry.httpRequest(route ?? 'other', token, reply.status, seconds);
    } catch (err) {
      // The reply is written (write() catches its own errors): what is left to fail is the accounting.
      this.logger.error('request accounting failed', { error: err instanceof Error ? err.message : String(err) });
      if (!req.socket.destroyed && !req.socket.writableEnded) req.socket.destroy();
    } finally {
      if (--this.inFlight === 0) for (const w of this.idleWaiters.splice(0)) w();
    }
  }

  /** The reply to a request whose handling failed. */
  private failureReply(err: unknown): RawReply {
    // The client's doing, not ours: its body ended early (node has answered 400 already, if it could).
    if (err instanceof ClientAborted) {
      this.logger.debug('request aborted by the client before its body ended');
      return errorReply(400);
    }
    this.logger.error('request failed', { error: err instanceof Error ? err.message : String(err) });
    // The use cases answer every failure they know of: anything else is our fault (911).
    return outcomeReply('unavailable', this.settings.realm);
  }

  /** `route` and `query`: of the request target; `peer`: the connection's peer address, read at accept. */
  private async handle(
    req: http.IncomingMessage,
    route: Route | undefined,
    query: string,
    peer: string,
  ): Promise<RawReply> {
    if (!route) return errorReply(404);
    if (req.method !== 'GET' && req.method !== 'POST') return errorReply(405);
    if (isAcmeRoute(route)) return this.acme(req, route, peer);
    if (route === 'duckdns') return this.duckdns(req, query, peer);

    let body: string | undefined;
    if (req.method === 'POST') {
      const read = await readBody(req, this.settings.maxBodyBytes);
      if (read === 'too-large') return errorReply(413);
      const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
      if (type === 'application/x-www-form-urlencoded' || (type === '' && read.length > 0)) body = read;
    }
    const clientIp = this.clientAddress.resolve(peer, req.headers['x-forwarded-for']);
    // A peer address that is not an IP address (not seen from node's TCP sockets): no detected address.
    if (clientIp === undefined) return errorReply(400);
    const params = paramsOf(query, body);
    if (route === 'dynv6') return answerDynv6({ params, headers: req.headers, clientIp }, this.services.update);

    if (route === 'echo') {
      const userAgent = req.headers['user-agent'];
      const reply = await this.services.echo.echo({
        clientIp,
        credentials: parseBasicAuth(req.headers.authorization),
        userAgent,
        hostname: params.get('hostname')?.[0],
      });
      return echoReply(reply, this.settings.realm);
    }
    const queryCredentials = this.settings.queryCredentials ?? false;
    const ask = dyndns2Ask(req.headers, params, query, { queryCredentials });
    const reply = await this.services.update.update({
      credentials: ask.credentials,
      params: ask.params,
      families: ask.families,
      userAgent: req.headers['user-agent'],
      clientIp,
    });
    return updateReply(reply, this.settings.realm);
  }

  /** An ACME client API request: a JSON body, POST only (http/acme.ts). */
  private async acme(req: http.IncomingMessage, route: AcmeRoute, peer: string): Promise<RawReply> {
    if (req.method !== 'POST') return errorReply(405);
    const read = await readBody(req, this.settings.maxBodyBytes);
    if (read === 'too-large') return errorReply(413);
    const clientIp = this.clientAddress.resolve(peer, req.headers['x-forwarded-for']);
    if (clientIp === undefined) return errorReply(400);
    const input = { route, headers: req.headers, body: read, clientIp, realm: this.settings.realm };
    return answerAcme(input, this.services.update);
  }

  /** A DuckDNS request: GET, the query string only (http/duckdns.ts). */
  private async duckdns(req: http.IncomingMessage, query: string, peer: string): Promise<RawReply> {
    const clientIp = this.clientAddress.resolve(peer, req.headers['x-forwarded-for']);
    if (clientIp === undefined) return errorReply(400);
    const input = { query, userAgent: req.headers['user-agent'], clientIp };
    const zone = this.settings.duckdnsZone;
    try {
      return await answerDuckDns(input, zone === undefined ? {} : { zone }, this.services.update, this.logger);
    } catch (err) {
      this.logger.error('request failed', { error: err instanceof Error ? err.message : String(err) });
      return duckDnsFault();
    }
  }

  private write(req: http.IncomingMessage, res: http.ServerResponse, reply: RawReply): void {
    const { socket } = req;
    try {
      // The bytes bypass ServerResponse (it always says HTTP/1.1).
      if (socket.destroyed) {
        res.detachSocket(socket);
        return;
      }
      socket.end(encodeReply(reply, req.method === 'HEAD'));
      // Then tell node the response is complete, as res.end() would: it lets go of the
      // request and the socket. Otherwise every closing connection still holds an unanswered
      // request and node builds an 'aborted' error (with a stack trace) for it.
      res.emit('finish');
      // A complete GET/HEAD: close once the reply is flushed, as node does for its own
      // `Connection: close` replies (waiting for the client's FIN costs node another error
      // object). After a POST an old client may still send a stray CRLF, and a body past the
      // 413 cap is still being read and dropped: closing on unread input would reset the
      // connection and could lose the reply, so those wait for the client to close.
      if (req.complete && req.method !== 'POST') socket.destroySoon();
      else this.closeLater(req, socket);
    } catch (err) {
      // Never an unhandled rejection (it would end the process): drop this connection only.
      this.logger.error('writing a reply failed', { error: err instanceof Error ? err.message : String(err) });
      socket.destroy();
    }
  }

  /**
   * A connection left for the client to close (see write) is not left for ever: once the
   * request is in (a body past the 413 cap keeps being read until then, bounded by
   * requestTimeout), a client that keeps it open or trickles another request into it is cut
   * off after the keep-alive time.
   */
  private closeLater(req: http.IncomingMessage, socket: Socket): void {
    const arm = (): void => {
      const timer = setTimeout(() => socket.destroy(), Math.max(1000, this.settings.keepAliveTimeoutMs)).unref();
      socket.once('close', () => clearTimeout(timer));
    };
    if (req.complete) return arm();
    req.once('end', arm);
    req.resume(); // a body nobody reads (404, 405) is drained so that 'end' comes
  }

  private onClientError(err: NodeJS.ErrnoException & { rawPacket?: Buffer }, socket: Socket): void {
    // Bytes after a whole request already being answered (a pipelined request that does not
    // parse, a body longer than its Content-Length): that request's reply is the one to send,
    // and it closes the connection. (Node keeps reading into the failed parser, dropping the
    // bytes.) A request still being read (a body that never ends) gets the error reply.
    if (connectionOf(socket)?.answering?.complete && !socket.writableEnded) return;
    // No state: a TLS connection whose handshake never completed (it timed out, or the bytes were
    // no TLS). An HTTP reply written into it would wait for the handshake for ever, and the
    // connection with it, holding one of maxConnections: close it.
    if (!socket.writable || socket.destroyed || connectionOf(socket) === undefined) {
      socket.destroy();
      return;
    }
    const status =
      err.code === 'HPE_HEADER_OVERFLOW'
        ? 431
        : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? 408
          : err.code === 'HPE_URI_TOO_LONG'
            ? 414
            : err.code === 'HPE_INVALID_METHOD' && isRequestLine(err.rawPacket)
              ? 405
              : 400;
    socket.end(encodeReply(errorReply(status)));
    socket.destroySoon();
  }
}

/**
 * Whether the bytes node's parser failed on start with a request line, `<token> <target> HTTP/x.y`. It reports a
 * method it does not know (`FOO`, lowercase `get`: methods are case-sensitive) and bytes that are no request at all
 * (`GARBAGE`, a TLS hello) alike as an invalid method: the first are a request with a wrong method, 405 as for known
 * wrong methods (docs/protocol.md, "The update request"); the others stay 400. (A request line trickled in pieces is
 * judged on its first piece: 400.)
 */
function isRequestLine(raw: Buffer | undefined): boolean {
  return raw !== undefined && /^[!#$%&'*+.^_`|~0-9A-Za-z-]+ [^\s]+ HTTP\/\d\.\d\r?\n/.test(raw.toString('latin1'));
}

/** `/update` is acme-dns's POST and the update path's GET (deSEC's `/update?…`: docs/protocol.md, "deSEC variants"). */
/**
 * `GET /update`: DuckDNS's request when its query names `domains` or `token` (DuckDNS's own), else the update request
 * (deSEC's `update.dedyn.io/update?…`); `POST /update` stays acme-dns's.
 */
function getOfUpdatePath(route: Route | undefined, method: string | undefined, query: string): Route | undefined {
  if (route !== 'acme-dns' || method !== 'GET') return route;
  return /(?:^|&)(?:domains|token)=/.test(query) ? withDuckDns(route, method) : 'update';
}

/** The reply token: the body's first word (`good`, `badauth`, `911`; the metrics bound the set). */
function firstWord(body: string): string {
  const end = body.search(/\s/);
  return end === -1 ? body : body.slice(0, end);
}

function notAfterOf(leaf: { validTo: string }): number {
  return new Date(leaf.validTo).getTime() / 1000;
}

function splitTarget(target: string): { path: string; query: string } {
  let t = target;
  // Absolute-form request targets (sent through some proxies).
  if (/^https?:\/\//i.test(t)) {
    const slash = t.indexOf('/', t.indexOf('//') + 2);
    t = slash === -1 ? '/' : t.slice(slash);
  }
  const q = t.indexOf('?');
  return q === -1 ? { path: t, query: '' } : { path: t.slice(0, q), query: t.slice(q + 1) };
}

function readBody(req: http.IncomingMessage, limit: number): Promise<string | 'too-large'> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > limit) {
    req.resume();
    return Promise.resolve('too-large');
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      // Past the cap: answer now, keep reading and dropping the rest (closing with unread
      // input would reset the connection and lose the 413); requestTimeout bounds it.
      if (size > limit) {
        chunks.length = 0;
        resolve('too-large');
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', () => reject(new ClientAborted()));
    req.on('aborted', () => reject(new ClientAborted()));
  });
}

/** The client closed or reset the connection before the request body ended. */
class ClientAborted extends Error {
  constructor() {
    super('request aborted');
  }
}
