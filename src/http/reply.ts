/**
 * The one place that turns outcomes into bytes (their tokens and statuses from core/outcomes). Every reply: an
 * HTTP/1.0 status line, text/plain, Content-Length, Connection: close, never chunked, and no header value that looks
 * like an IP address (ddclient scans headers for one).
 */
import {
  hostReply,
  requestReply,
  retryAfterOf,
  type EchoOutcome,
  type Outcome,
  type RequestOutcome,
} from '../core/outcomes.js';
import { tokenCarriesAddress, type Token } from '../core/tokens.js';
import type { HostLine, UpdateReply } from '../app/update.js';
import type { EchoReply } from '../app/echo.js';

const REASONS: Record<number, string> = {
  200: 'OK',
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  408: 'Request Timeout',
  413: 'Payload Too Large',
  414: 'URI Too Long',
  429: 'Too Many Requests',
  431: 'Request Header Fields Too Large',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
};

export interface RawReply {
  status: number;
  body: string;
  headers?: ReadonlyArray<readonly [string, string]>;
  /** Default text/plain (the ACME client APIs answer JSON: http/acme.ts). */
  contentType?: string;
  /**
   * The reply token of the outcome, for the metrics' `token` label, when the body does not start with it (DuckDNS's
   * `OK` / `KO`: http/duckdns.ts); absent: the body's first word.
   */
  outcomeToken?: string;
}

/** `headOnly`: a HEAD request gets the headers (with the body's length) and no body. */
export function encodeReply(reply: RawReply, headOnly = false): Buffer {
  const body = Buffer.from(reply.body, 'utf8');
  let head =
    `HTTP/1.0 ${reply.status} ${REASONS[reply.status] ?? 'Error'}\r\n` +
    `Content-Type: ${reply.contentType ?? 'text/plain'}; charset=utf-8\r\n` +
    `Content-Length: ${body.length}\r\n` +
    'Connection: close\r\n';
  for (const [name, value] of reply.headers ?? []) head += `${name}: ${value}\r\n`;
  const headBytes = Buffer.from(head + '\r\n', 'latin1');
  return headOnly ? headBytes : Buffer.concat([headBytes, body]);
}

function line(token: Token, addresses?: string): string {
  return tokenCarriesAddress(token) && addresses ? `${token} ${addresses}\n` : `${token}\n`;
}

/** An outcome answered once for the whole request (or instead of the echo's address). */
export function outcomeReply(outcome: RequestOutcome | EchoOutcome, realm: string): RawReply {
  const { token, status } = requestReply(outcome);
  const headers = [
    ...(status === 401 ? [['WWW-Authenticate', `Basic realm="${realm}"`] as const] : []),
    ...retryAfterHeader([outcome]),
  ];
  return { status, body: line(token), ...(headers.length > 0 ? { headers } : {}) };
}

export function updateReply(reply: UpdateReply, realm: string): RawReply {
  if (reply.kind === 'request') return outcomeReply(reply.outcome, realm);
  const headers = retryAfterHeader(reply.lines.map((l) => l.outcome));
  return {
    status: 200,
    body: reply.lines.map((l: HostLine) => line(hostReply(l.outcome).token, l.addresses)).join(''),
    ...(headers.length > 0 ? { headers } : {}),
  };
}

/** `Retry-After` for answers that say "come back later" (core/outcomes retryAfterSeconds); none otherwise. */
export function retryAfterHeader(outcomes: readonly Outcome[]): (readonly [string, string])[] {
  const seconds = retryAfterOf(outcomes);
  return seconds === undefined ? [] : [['Retry-After', String(seconds)]];
}

export function echoReply(reply: EchoReply, realm: string): RawReply {
  if (reply.kind === 'refused') return outcomeReply(reply.outcome, realm);
  return { status: 200, body: `Current IP Address: ${reply.address}\n` };
}

export function errorReply(status: 400 | 404 | 405 | 408 | 413 | 414 | 431 | 500 | 503): RawReply {
  const reply: RawReply = { status, body: `${(REASONS[status] ?? 'error').toLowerCase()}\n` };
  if (status === 405) return { ...reply, headers: [['Allow', 'GET, POST']] };
  return reply;
}
