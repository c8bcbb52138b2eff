/**
 * The admin listener: `/metrics`, `/healthz`, `/readyz` for anyone who can reach it, and the
 * provisioning API (`/v1/…`) for the holder of the bearer token. It never shares an address with
 * an update listener (config/load.ts refuses one). Errors become `{ "error", "message" }` here,
 * in errorReply and nowhere else. Reference: docs/operators.md, "The admin listener".
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { Socket } from 'node:net';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import type { AdminService } from '../app/admin.js';
import type { ReadinessReport } from '../app/readiness.js';
import {
  BridgeError,
  DnsUpdateError,
  ERROR_CATALOG,
  InvalidInputError,
  type ExchangeErrorCode,
} from '../core/errors.js';
import type { Logger } from '../core/log.js';
import { OPERATIONS, pathMatcher, type Operation } from './api.js';
import { openApiDocument } from './openapi.js';
import { connectionsCheckingInterval } from '../core/limits.js';

export interface AdminDeps {
  admin: AdminService;
  /** The bearer token of /v1 (config admin.token). */
  token: string;
  metrics: { contentType: string; render(): Promise<string> };
  readiness: { report(): Promise<ReadinessReport> };
  version: string;
  logger: Logger;
  /** Connection limits and timeouts (admin.maxConnections; the rest are http.*'s). */
  limits: AdminLimits;
}

export interface AdminLimits {
  maxConnections: number;
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
  maxHeaderBytes: number;
}

/** The largest request body read (a JSON object of a few fields). */
export const MAX_ADMIN_BODY_BYTES = 64 * 1024;

/** An error of the HTTP exchange itself (not of the admin service); its status is ERROR_CATALOG's. */
class AdminHttpError extends Error {
  constructor(
    readonly code: ExchangeErrorCode,
    message: string = ERROR_CATALOG[code].text,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

interface Reply {
  status: number;
  body?: unknown;
  /** Sent as is (the metrics text). */
  text?: { contentType: string; body: string };
  headers?: Record<string, string>;
}

interface CompiledOperation {
  op: Operation;
  names: string[];
  pattern: RegExp;
  validate?: ValidateFunction;
}

export class AdminListener {
  private readonly servers: http.Server[] = [];
  private readonly operations: CompiledOperation[];
  private readonly tokenDigest: Buffer;
  private openApi: string | undefined;

  constructor(private readonly deps: AdminDeps) {
    const ajv = new Ajv2020({ allErrors: false, strict: true, strictRequired: false });
    this.operations = OPERATIONS.map((op) => ({
      op,
      ...pathMatcher(op.path),
      ...(op.body ? { validate: ajv.compile(op.body) } : {}),
    }));
    this.tokenDigest = digest(deps.token);
  }

  /** Listen on host:port (0: any free port); resolves with the bound port. */
  listen(host: string, port: number): Promise<number> {
    const { limits } = this.deps;
    const options: http.ServerOptions = {
      maxHeaderSize: limits.maxHeaderBytes,
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      connectionsCheckingInterval: connectionsCheckingInterval(limits.headersTimeoutMs, limits.requestTimeoutMs),
    };
    const server = http.createServer(options, (req, res) => {
      // answer() catches what a request can raise; this is the last net, so that nothing a
      // client sends becomes an unhandled rejection (which ends the process on node 20).
      this.answer(req, res).catch((err: unknown) => this.lastResort(res, err));
    });
    // Past it node closes a new connection at once, unanswered (docs/security.md, "The admin listener").
    server.maxConnections = limits.maxConnections;
    // A client that half-closes after its request (`printf … | nc`) still gets its answer, as
    // on the update listener: node then closes once the response is written.
    (server as http.Server & { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
    // CONNECT never reaches the request handler: without this node drops the socket unanswered.
    server.on('connect', (_req: http.IncomingMessage, socket: Socket) => {
      socket.on('error', () => undefined);
      const reply = errorReply(new AdminHttpError('ERR_METHOD_NOT_ALLOWED'));
      const body = JSON.stringify(reply.body) + '\n';
      socket.end(
        `HTTP/1.1 ${reply.status} ${http.STATUS_CODES[reply.status]}\r\n` +
          'Content-Type: application/json\r\nCache-Control: no-store\r\n' +
          `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
      socket.destroySoon();
    });
    this.servers.push(server);
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host, port }, () => {
        server.off('error', reject);
        // As on the update listener: a failed accept (out of file descriptors) is logged, not the end of the process.
        server.on('error', (err: Error) =>
          this.deps.logger.error('admin listener error', { address: host, port, error: err.message }),
        );
        resolve((server.address() as { port: number }).port);
      });
    });
  }

  async close(): Promise<void> {
    await Promise.all(
      this.servers.map(
        (s) =>
          new Promise<void>((resolve) => {
            s.close(() => resolve());
            s.closeIdleConnections();
            // A request still in flight (a host removal waits for DNS) gets a few seconds.
            setTimeout(() => s.closeAllConnections(), 5000).unref();
          }),
      ),
    );
  }

  /** A request whose answer itself failed: a 500 if nothing was sent yet, else the connection dropped. */
  private lastResort(res: http.ServerResponse, err: unknown): void {
    this.deps.logger.error('admin request failed', { error: err instanceof Error ? err.message : String(err) });
    try {
      if (res.headersSent || res.destroyed) return void res.destroy();
      const reply = errorReply(undefined);
      const body = JSON.stringify(reply.body) + '\n';
      res.writeHead(reply.status, {
        'Content-Type': 'application/json',
        'Cache-Control': 'no-store',
        'Content-Length': String(Buffer.byteLength(body)),
        Connection: 'close',
      });
      res.end(body);
    } catch {
      res.destroy();
    }
  }

  private async answer(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const started = performance.now();
    const method = req.method ?? 'GET';
    let path = '';
    let reply: Reply;
    try {
      // Inside the try: node's parser passes targets that URL refuses (`//[/`, `http://a:99999999/`).
      const url = requestUrl(req.url);
      path = url.pathname;
      reply = await this.route(method, url, req);
    } catch (err) {
      reply = errorReply(err);
      if (reply.status >= 500 && !(err instanceof BridgeError)) {
        const error = err instanceof Error ? err.message : String(err);
        this.deps.logger.error('admin request failed', { method, path, error });
      }
    }
    // A body nobody read (a refused request) is drained, so the connection stays usable.
    if (!req.readableEnded) req.resume();
    this.write(res, reply);
    const fields = { method, path, status: reply.status, ms: Math.round(performance.now() - started) };
    // Scrapes and probes come every few seconds: only the API's requests are worth a line each.
    if (path.startsWith('/v1')) this.deps.logger.info('admin request', fields);
    else this.deps.logger.debug('admin request', fields);
  }

  private async route(method: string, url: URL, req: http.IncomingMessage): Promise<Reply> {
    const path = url.pathname;
    if (path === '/healthz' || path === '/readyz' || path === '/metrics') {
      if (method !== 'GET' && method !== 'HEAD') throw notAllowed(['GET', 'HEAD']);
      if (path === '/healthz') return { status: 200, body: { status: 'ok' } };
      if (path === '/readyz') {
        const report = await this.deps.readiness.report();
        // Without the token only which checks failed: the reasons (Redis's and the primary's
        // error text) are in the log, once per change (app/readiness.ts), or shown to the token.
        const body = this.hasToken(req) ? report : { ready: report.ready, failed: report.failed };
        return { status: report.ready ? 200 : 503, body };
      }
      const body = await this.deps.metrics.render();
      return { status: 200, text: { contentType: this.deps.metrics.contentType, body } };
    }
    if (path !== '/v1' && !path.startsWith('/v1/')) throw new NotFound(`no such path: ${path}`);
    // The token first: nothing else about /v1 (which paths exist, what a body holds) is told without it.
    this.authorize(req);
    if (path === '/v1/openapi.json') {
      if (method !== 'GET' && method !== 'HEAD') throw notAllowed(['GET', 'HEAD']);
      this.openApi ??= JSON.stringify(openApiDocument(this.deps.version));
      return { status: 200, text: { contentType: 'application/json', body: this.openApi } };
    }
    const matches = this.operations
      .map((c) => ({ c, m: c.pattern.exec(path) }))
      .filter((x): x is { c: CompiledOperation; m: RegExpExecArray } => x.m !== null);
    if (matches.length === 0) throw new NotFound(`no such path: ${path}`);
    const found = matches.find((x) => x.c.op.method === method);
    if (!found) throw notAllowed(matches.map((x) => x.c.op.method));
    const { c, m } = found;
    const params: Record<string, string> = {};
    c.names.forEach((name, i) => (params[name] = decodeSegment(m[i + 1]!, name)));
    const body = c.validate ? await readJson(req, c.validate) : {};
    const result = await c.op.handle(this.deps.admin, { params, query: url.searchParams, body });
    return { status: result.status, body: result.body };
  }

  /** Constant time: both sides are hashed first, so neither length nor content shows in the timing. */
  private hasToken(req: http.IncomingMessage): boolean {
    const header = req.headers.authorization ?? '';
    const m = /^Bearer +(\S+) *$/i.exec(header);
    return m !== null && timingSafeEqual(digest(m[1]!), this.tokenDigest);
  }

  private authorize(req: http.IncomingMessage): void {
    if (!this.hasToken(req)) {
      throw new AdminHttpError('ERR_UNAUTHORIZED', undefined, {
        'WWW-Authenticate': 'Bearer realm="ddns-bridge admin"',
      });
    }
  }

  private write(res: http.ServerResponse, reply: Reply): void {
    const headers: Record<string, string> = { 'Cache-Control': 'no-store', ...reply.headers };
    let body = '';
    if (reply.text) {
      headers['Content-Type'] = reply.text.contentType;
      body = reply.text.body;
    } else if (reply.body !== undefined) {
      headers['Content-Type'] = 'application/json';
      body = JSON.stringify(reply.body) + '\n';
    }
    headers['Content-Length'] = String(Buffer.byteLength(body));
    res.writeHead(reply.status, headers);
    res.end(res.req.method === 'HEAD' ? undefined : body);
  }
}

class NotFound extends BridgeError {
  constructor(message: string) {
    super('ERR_NOT_FOUND', message);
  }
}

function notAllowed(methods: readonly string[]): AdminHttpError {
  const allow = [...new Set(methods)].join(', ');
  const text = ERROR_CATALOG.ERR_METHOD_NOT_ALLOWED.text;
  return new AdminHttpError('ERR_METHOD_NOT_ALLOWED', `${text}; use ${allow}`, { Allow: allow });
}

/** The request target as a URL; a target URL cannot read is the client's error (400), never a throw upward. */
function requestUrl(target: string | undefined): URL {
  try {
    return new URL(target ?? '/', 'http://admin.invalid');
  } catch {
    throw new InvalidInputError('the request target is not a valid URL');
  }
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

function decodeSegment(raw: string, name: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    throw new InvalidInputError('not a valid URL-encoded path segment', name);
  }
}

async function readJson(req: http.IncomingMessage, validate: ValidateFunction): Promise<Record<string, unknown>> {
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/json') {
    req.resume();
    throw new AdminHttpError('ERR_UNSUPPORTED_MEDIA_TYPE');
  }
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > MAX_ADMIN_BODY_BYTES) {
        req.resume();
        throw new AdminHttpError('ERR_PAYLOAD_TOO_LARGE', `the body is larger than ${MAX_ADMIN_BODY_BYTES} bytes`);
      }
      chunks.push(chunk);
    }
  } catch (err) {
    if (err instanceof AdminHttpError) throw err;
    // The client closed before its body ended: its 400 (node answers it, if it can), not our 500.
    throw new InvalidInputError('the body ended before its declared length');
  }
  let body: unknown;
  try {
    body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new InvalidInputError('the body is not valid JSON');
  }
  if (!validate(body)) {
    const e = validate.errors?.[0];
    const field =
      e?.keyword === 'required'
        ? String((e.params as { missingProperty: string }).missingProperty)
        : e?.keyword === 'additionalProperties'
          ? String((e.params as { additionalProperty: string }).additionalProperty)
          : (e?.instancePath ?? '').replace(/^\//, '').split('/')[0] || undefined;
    const detail =
      e?.keyword === 'required'
        ? 'is required'
        : e?.keyword === 'additionalProperties'
          ? 'is not a field of this request'
          : `${e?.message ?? 'is invalid'}`;
    throw new InvalidInputError(field === undefined ? `the body ${detail}` : detail, field);
  }
  return body as Record<string, unknown>;
}

/**
 * The one place an error becomes an admin reply: its status from ERROR_CATALOG (core/errors.ts),
 * its own message, else the catalog's text. Messages never carry secrets (core/errors.ts).
 */
export function errorReply(err: unknown): Reply {
  if (err instanceof AdminHttpError) {
    return {
      status: ERROR_CATALOG[err.code].status,
      body: { error: err.code, message: err.message },
      headers: err.headers,
    };
  }
  if (err instanceof BridgeError) {
    const field = err instanceof InvalidInputError && err.field !== undefined ? { field: err.field } : {};
    const message = err instanceof DnsUpdateError ? `the DNS change failed: ${err.message}` : err.message;
    return { status: ERROR_CATALOG[err.code].status, body: { error: err.code, message, ...field } };
  }
  const { status, text } = ERROR_CATALOG.ERR_INTERNAL;
  return { status, body: { error: 'ERR_INTERNAL', message: text } };
}
