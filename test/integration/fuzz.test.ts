/**
 * Protocol fuzz suite (issue 27, item 1): a corpus and seeded random mutations thrown over raw
 * sockets at every listener of real `serve` processes (Redis, Knot): the update listener plain
 * and over TLS (update, echo and the ACME routes), TLS garbage and cut-off handshakes at the
 * TLS port, the admin listener, and the same under `serve --workers 2` (the primary holds the
 * admin listener), and the RFC 2136 gateway over UDP and TCP in both (DNS messages of every kind, good and bad:
 * test/support/gateway-fuzz.ts). Asserted: every process stays up (no worker restarted), every answer is a
 * valid HTTP response or a close without a byte (only where Input.mayClose allows), no connection
 * is left hanging, nothing changed in Redis (but the refused-login and junk counters) or in DNS,
 * and afterwards /healthz is 200 and an update is `good`, then `nochg`. The gateway's own rules: every request
 * answered once with its ID, nothing sent for a response (QR=1), no UDP answer larger than the request allows, TCP
 * connections ended once ours is; afterwards a real signed UPDATE is NOERROR over UDP and TCP and on the primary.
 * Apart: the gateway under --workers 2 (signed UPDATEs over both transports), and its per-source rate limit.
 *
 * FUZZ_SEED=N replays a run (the seed is in every failure message); FUZZ_SCALE=x scales the counts;
 * FUZZ_DEBUG=400 prints the inputs answered with that status.
 */
import { REQUEST_LOG_FIELDS } from '../../src/store/keys.js';
import { expect } from 'chai';
import dgram from 'node:dgram';
import { writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import tls from 'node:tls';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { parseHeader } from '../../src/core/dns-wire.js';
import type { TsigAlgorithm } from '../../src/core/tsig.js';
import { freePort, makeTempDir, removeDir, requireBinariesOrSkip } from '../../src/lab/index.js';
import { deepMerge, rawRequest, ZONE } from '../support/bridge.js';
import { Serve } from '../support/serve-process.js';
import { TlsBridge } from '../support/tls-bridge.js';
import { mulberry32 } from '../support/prng.js';
import { waitFor } from '../support/wait.js';
import {
  amplification,
  describeInput,
  gatewayProblem,
  gatewayStatus,
  sendTcp,
  sendUdp,
  signedUpdate,
  tcpInput,
  udpInput,
  type GatewayFuzzContext,
  type GatewayInput,
} from '../support/gateway-fuzz.js';

const SEED = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
const SCALE = Number(process.env.FUZZ_SCALE ?? 1);
const CONCURRENCY = 16;
/** A connection still open this long after the input was sent is wedged (the server's own timeouts are 1–2 s). */
const WEDGED_MS = 8000;
const TOKEN = 'c'.repeat(24) + '0123456789abcdef0123456789abcdef';
const FUZZ_USER = 'fuzzer';
const FUZZ_PASSWORD = 'fuzz-pw';
/** Owned by FUZZ_USER and closed: no request, even with the right password, may change it. */
const CLOSED_HOST = `closed.${ZONE}`;
/** Never named by the fuzz corpus: the update that must still work at the end. */
const OWNER = 'owner';
const OWNER_PASSWORD = 'owner-pw';
const OWNED_HOST = `owned.${ZONE}`;

/**
 * Key families a refused request legitimately writes (src/store/keys.ts): failed logins and
 * cool-downs per source and account, junk counters and blocks, the address echo's counter.
 * Everything else under the prefix must be byte for byte the same.
 */
const COUNTER_FAMILIES = ['fi:', 'fa:', 'ti:', 'ta:', 'jc:', 'jb:', 'e:'];

type Rnd = () => number;
const pick = <T>(rnd: Rnd, xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
const b64 = (s: string): string => Buffer.from(s, 'latin1').toString('base64');

/** One input: its bytes, how it is sent, and whether a close without a byte is a valid outcome. */
interface Input {
  bytes: Buffer;
  /** Our end closed behind the bytes (`printf … | nc`); otherwise the server's timeouts must end it. */
  halfClose: boolean;
  /**
   * A close without a byte is acceptable only for: byte-level mutations and random garbage (they
   * may not be a request at all, or one cut off before its head ended), bytes at the TLS port
   * outside a handshake (answered by TLS records or nothing), and method PRI (node takes it for
   * the HTTP/2 preface and closes at once). Every other corpus request, however odd its target,
   * headers, body or method, must get a status line.
   */
  mayClose: boolean;
  /** Bytes at the TLS port before any handshake: the answer may be a TLS alert record instead. */
  tlsRaw?: boolean;
}

// ---- the corpus ----------------------------------------------------------------------------

const ODD_TARGETS = [
  '*',
  '//[/',
  '//[::1',
  'http://a:99999999/',
  'http://a:-1/nic/update',
  'http://%zz/',
  'http://[/v1/accounts',
  'HTTP://A:65536/healthz',
  'http://127.0.0.1:0/checkip',
  'http://x/nic/update?hostname=' + CLOSED_HOST,
  'https://x:443/acme/present',
  '/%',
  '/%zz',
  '/%00',
  '/%E0%A4%A',
  '/..%2f..%2fetc/passwd',
  '/?',
  '/#frag',
  '/' + 'a'.repeat(9000),
  '/nic/update?' + '&'.repeat(4000),
  '/nic/update?hostname=' + 'x.'.repeat(3000),
  '/checkip?%ff%fe',
  '/v1/hosts/%E0%A4%A/tokens',
  '/v1/accounts/%',
  '/v1/accounts/..%2F..',
  '/v1//accounts',
  '/v1/hosts/' + CLOSED_HOST + '/close',
  '/metrics?x=%zz',
  '/readyz#',
  '/healthz/..',
];

const UPDATE_TARGETS = [
  `/nic/update?hostname=${CLOSED_HOST}&myip=192.0.2.1`,
  `/nic/update?hostname=${CLOSED_HOST}&myip=2001:db8::1&txt=abc`,
  `/dyndns/update?hostname=${CLOSED_HOST},${OWNED_HOST}&myip=192.0.2.9`,
  `/v3/update?hostname=${OWNED_HOST}`,
  `/nic/update?hostname=${OWNED_HOST}&myip=198.51.100.7`,
  '/nic/update',
  '/checkip',
  '/ip',
  '/nic/checkip',
  '/acme/present',
  '/acme/cleanup',
  '/update',
  '/nope',
];

const ADMIN_TARGETS = [
  '/healthz',
  '/readyz',
  '/metrics',
  '/v1',
  '/v1/openapi.json',
  '/v1/accounts',
  `/v1/accounts/${FUZZ_USER}`,
  `/v1/accounts/${OWNER}`,
  '/v1/hosts',
  `/v1/hosts/${CLOSED_HOST}`,
  `/v1/hosts/${OWNED_HOST}/tokens`,
  '/v1/tokens/nope',
  '/v1/agents/blocked',
  '/nope',
];

/** Admin targets that read a JSON body checked against a schema (the only ones written to with the token). */
const ADMIN_BODY_TARGETS: readonly [string, string][] = [
  ['POST', '/v1/accounts'],
  ['POST', '/v1/hosts'],
  ['POST', `/v1/hosts/${OWNED_HOST}/link`],
  ['POST', `/v1/hosts/${OWNED_HOST}/tokens`],
  ['POST', '/v1/agents/blocked'],
  ['PUT', `/v1/accounts/${OWNER}/password`],
  ['PUT', `/v1/accounts/${OWNER}/donator`],
];

const JSON_JUNK = [
  '',
  '{',
  '[]',
  'null',
  'true',
  '"\\ud800"',
  '{"fqdn":1}',
  `{"fqdn":"_acme-challenge.${CLOSED_HOST}.","value":"${'v'.repeat(43)}"}`,
  `{"fqdn":"_acme-challenge.${OWNED_HOST}.","value":"${'v'.repeat(43)}"}`,
  `{"fqdn":"a,b","value":"x"}`,
  `{"domain":"${CLOSED_HOST}","token":"t","keyAuth":"k"}`,
  `{"domain":"${OWNED_HOST}","token":"t","keyAuth":"${'k'.repeat(5000)}"}`,
  `{"subdomain":"closed","txt":"${'x'.repeat(43)}"}`,
  `{"SubDomain":"${OWNED_HOST}","Txt":"${'x'.repeat(43)}"}`,
  '{"subdomain":"a,b","txt":"x"}',
  '{"__proto__":{"polluted":1},"txt":"x"}',
  '{"constructor":{"prototype":{"x":1}}}',
  '['.repeat(5000),
  '{"a":' + '{"a":'.repeat(2000) + '1' + '}'.repeat(2001),
  '{"txt":"' + 'x'.repeat(70000) + '"}',
  '\xff\xfe\x00{"txt":"x"}',
  'hostname=a&myip=1.2.3.4',
];

/**
 * With the admin token, bodies that every schema refuses (an unknown field, or no object at all),
 * so that nothing is ever written: `zz` is no field of any request.
 */
const ADMIN_TOKEN_BODIES = [
  '{"name":"fz","password":"x","zz":1}',
  `{"fqdn":"fz.${ZONE}","account":"${OWNER}","zz":1}`,
  '{"to":"x","iid":"::1","zz":1}',
  '{"note":"n","zz":1}',
  '{"pattern":"*","zz":1}',
  '{"password":"p","zz":1}',
  '{"donator":true,"zz":1}',
  '{"zz":1}',
  '[{"name":"fz","password":"x"}]',
  'null',
  '{',
  '"' + 'x'.repeat(70000) + '"',
  '{"name":"fz","password":"x"', // cut off
];

function authorizations(admin: boolean): string[] {
  const junk = [
    '',
    `Authorization: Basic ${b64(`${FUZZ_USER}:${FUZZ_PASSWORD}`)}`,
    `Authorization: Basic ${b64(`${FUZZ_USER}:wrong`)}`,
    `Authorization: Basic ${b64('nocolon')}`,
    'Authorization: Basic !!!!',
    'Authorization: Basic',
    'Authorization: ',
    `Authorization: Basic ${b64('u:' + 'p'.repeat(3000))}`,
    `Authorization: Basic ${b64('u\x00:p\r\n')}`,
    `Authorization: Basic ${b64(`${FUZZ_USER}:${FUZZ_PASSWORD}`)}\r\nAuthorization: Basic ${b64('evil:x')}`,
    'Authorization: Bearer',
    `Authorization: Bearer ${TOKEN.slice(0, -1)}`,
    `Authorization: Bearer ${TOKEN}x`,
    `Authorization: Bearer ${TOKEN.toUpperCase()}`,
    `Authorization: Bearer ${TOKEN} ${TOKEN}`,
    `Authorization: Bearer ${'t'.repeat(7000)}`,
    `Authorization: Digest username="${FUZZ_USER}"`,
    `X-Api-User: ${FUZZ_USER}\r\nX-Api-Key: ${FUZZ_PASSWORD}`,
    `X-Api-User: ${CLOSED_HOST}\r\nX-Api-Key: wrong`,
    'X-Api-User: \x01\r\nX-Api-Key: x',
    `X-Api-Key: ${'k'.repeat(2000)}`,
  ];
  return admin ? junk.filter((a) => !a.includes(`Basic ${b64(`${FUZZ_USER}:${FUZZ_PASSWORD}`)}`)) : junk;
}

/** Headers node's parser takes (odd in what they say). */
const EXTRA_HEADERS = [
  'Host: x',
  'Host: ',
  'User-Agent: fuzz/1.0',
  'User-Agent: ',
  `User-Agent: ${'u'.repeat(5000)}`,
  'Expect: 100-continue',
  'Expect: fuzz',
  'Connection: keep-alive',
  'Connection: Upgrade\r\nUpgrade: websocket',
  'Upgrade: h2c\r\nConnection: Upgrade, HTTP2-Settings\r\nHTTP2-Settings: AAMAAABkAAQAAP__',
  'X-Forwarded-For: 203.0.113.9, [::1]:80, junk',
  'X-Forwarded-For: fe80::1%eth0',
  'Content-Type: application/json',
  'Content-Type: application/json; charset=utf-16',
  'Content-Type: application/x-www-form-urlencoded',
  'Content-Type: ',
  'Cookie: ' + 'c=1; '.repeat(200),
];

/** Headers it refuses (400, 431): fewer of these, or little would get past the parser. */
const BAD_HEADERS = [
  'Host: a\r\nHost: b',
  `X-Big: ${'b'.repeat(9000)}`,
  'Bad Header: x',
  'NoColon',
  ' folded: continuation',
  'X-Nul: a\x00b',
];

const header = (rnd: Rnd): string => (rnd() < 0.15 ? pick(rnd, BAD_HEADERS) : pick(rnd, EXTRA_HEADERS));

/** Framing: consistent, or one of the ways a body and its length can disagree. */
function framed(rnd: Rnd, body: string): { headers: string[]; body: string } {
  const len = Buffer.byteLength(body, 'latin1');
  const chunked = `${len.toString(16)}\r\n${body}\r\n0\r\n\r\n`;
  return pick(rnd, [
    { headers: [`Content-Length: ${len}`], body },
    { headers: [`Content-Length: ${len}`], body },
    { headers: ['Transfer-Encoding: chunked'], body: chunked },
    { headers: [], body: '' },
    { headers: [`Content-Length: ${len}`, `Content-Length: ${len + 1}`], body },
    { headers: [`Content-Length: ${len}`, 'Transfer-Encoding: chunked'], body: chunked },
    { headers: ['Content-Length: -1'], body },
    { headers: ['Content-Length: 1e3'], body },
    { headers: ['Content-Length: 99999999999999999999'], body },
    { headers: [`Content-Length: ${len + 50}`], body },
    { headers: ['Transfer-Encoding: chunked, gzip'], body: chunked },
    { headers: ['Transfer-Encoding: gzip'], body },
    { headers: ['Transfer-Encoding: xchunked'], body },
    { headers: ['Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked'], body: chunked },
    { headers: ['Transfer-Encoding: chunked'], body: 'zz\r\n' + body + '\r\n0\r\n\r\n' },
  ]);
}

const METHODS = [
  'GET',
  'POST',
  'GET',
  'POST',
  'GET',
  'GET',
  'POST',
  'POST',
  'HEAD',
  'PUT',
  'DELETE',
  'OPTIONS',
  'PATCH',
  'TRACE',
  'FOO',
  'get',
  'CONNECT',
  'M-SEARCH',
  'PRI',
];
const VERSIONS = [
  'HTTP/1.1',
  'HTTP/1.1',
  'HTTP/1.1',
  'HTTP/1.0',
  'HTTP/1.0',
  'HTTP/1.1',
  'HTTP/1.0',
  'HTTP/1.1',
  'HTTP/2.0',
  'HTTP/0.9',
  'HTTP/1.1x',
  '',
];

/** One request of the corpus for the update listener (update, echo and the ACME routes). */
function updateRequest(rnd: Rnd): string {
  const method = pick(rnd, METHODS);
  const target = rnd() < 0.25 ? pick(rnd, ODD_TARGETS) : pick(rnd, UPDATE_TARGETS);
  const version = pick(rnd, VERSIONS);
  const headers = [rnd() < 0.9 ? 'Host: x' : '', pick(rnd, authorizations(false)), header(rnd)];
  if (rnd() < 0.3) headers.push(header(rnd));
  let body = '';
  if (method !== 'GET' || rnd() < 0.1) {
    const f = framed(rnd, pick(rnd, JSON_JUNK));
    headers.push(...f.headers);
    body = f.body;
  }
  return `${method} ${target}${version ? ' ' + version : ''}\r\n${headers.filter(Boolean).join('\r\n')}\r\n\r\n${body}`;
}

/**
 * One request of the corpus for the admin listener. Without the token: anything. With it:
 * read-only methods on any target, or a schema-checked route with a body every schema refuses
 * (ADMIN_TOKEN_BODIES): a fuzzer holding the token must not provision.
 */
function adminRequest(rnd: Rnd): { text: string; token: boolean } {
  const version = pick(rnd, VERSIONS.slice(0, 3));
  // Node requires a Host header of HTTP/1.1 requests on the admin listener (400 without).
  const extra = [rnd() < 0.9 ? 'Host: x' : '', header(rnd)];
  if (rnd() < 0.35) {
    const bearer = `Authorization: Bearer ${TOKEN}`;
    if (rnd() < 0.5) {
      const target = rnd() < 0.3 ? pick(rnd, ODD_TARGETS) : pick(rnd, ADMIN_TARGETS);
      return {
        text: `${pick(rnd, ['GET', 'HEAD'])} ${target} ${version}\r\n${[bearer, ...extra].filter(Boolean).join('\r\n')}\r\n\r\n`,
        token: true,
      };
    }
    const [method, target] = pick(rnd, ADMIN_BODY_TARGETS);
    const f = framed(rnd, pick(rnd, ADMIN_TOKEN_BODIES));
    const type = pick(rnd, [
      'Content-Type: application/json',
      'Content-Type: application/json; charset=utf-8',
      'Content-Type: text/plain',
      '',
    ]);
    const head = [bearer, type, ...f.headers, ...extra].filter(Boolean).join('\r\n');
    return {
      text: `${pick(rnd, [method, method, 'PATCH'])} ${target} ${version}\r\n${head}\r\n\r\n${f.body}`,
      token: true,
    };
  }
  const method = pick(rnd, METHODS);
  const target =
    rnd() < 0.3 ? pick(rnd, ODD_TARGETS) : pick(rnd, [...ADMIN_TARGETS, ...ADMIN_BODY_TARGETS.map(([, t]) => t)]);
  const headers = [pick(rnd, authorizations(true)), ...extra];
  let body = '';
  if (method !== 'GET' || rnd() < 0.1) {
    const f = framed(
      rnd,
      pick(rnd, [...JSON_JUNK, '{"name":"fz","password":"x"}', `{"fqdn":"fz.${ZONE}","account":"${OWNER}"}`]),
    );
    headers.push('Content-Type: application/json', ...f.headers);
    body = f.body;
  }
  return {
    text: `${method} ${target}${version ? ' ' + version : ''}\r\n${headers.filter(Boolean).join('\r\n')}\r\n\r\n${body}`,
    token: false,
  };
}

/** Byte-level mutations: flips, insertions of the characters parsers care about, cuts, repeats. */
function mutate(rnd: Rnd, bytes: Buffer): Buffer {
  let b = Buffer.from(bytes);
  const n = 1 + Math.floor(rnd() * 4);
  for (let i = 0; i < n && b.length > 0; i++) {
    const at = Math.floor(rnd() * b.length);
    switch (Math.floor(rnd() * 7)) {
      case 0:
        b[at] = Math.floor(rnd() * 256);
        break;
      case 1: {
        const ins = Buffer.from(
          pick(rnd, [
            '\x00',
            '\r',
            '\n',
            '\r\n',
            ' ',
            ':',
            '%',
            '%zz',
            '\x7f',
            '\xff',
            '\r\n\r\n',
            'Content-Length: 7\r\n',
          ]),
          'latin1',
        );
        b = Buffer.concat([b.subarray(0, at), ins, b.subarray(at)]);
        break;
      }
      case 2:
        b = Buffer.concat([b.subarray(0, at), b.subarray(Math.min(b.length, at + 1 + Math.floor(rnd() * 20)))]);
        break;
      case 3:
        b = b.subarray(0, at);
        break;
      case 4: {
        const end = Math.min(b.length, at + 1 + Math.floor(rnd() * 200));
        b = Buffer.concat([b.subarray(0, end), b.subarray(at, end), b.subarray(end)]);
        break;
      }
      case 5:
        b = Buffer.from(b.toString('latin1').replace(/\r\n/g, pick(rnd, ['\n', '\r', '\r\r\n'])), 'latin1');
        break;
      default:
        b = Buffer.concat([b, b]); // pipelined twice
    }
  }
  return b;
}

const garbage = (rnd: Rnd, max: number): Buffer =>
  Buffer.from(Array.from({ length: Math.floor(rnd() * max) }, () => Math.floor(rnd() * 256)));

function httpInput(rnd: Rnd, text: string, canMutate: boolean): Input {
  const bytes = Buffer.from(text, 'latin1');
  const r = rnd();
  if (canMutate && r < 0.03) return { bytes: garbage(rnd, 300), halfClose: rnd() < 0.9, mayClose: true };
  if (canMutate && r < 0.3) return { bytes: mutate(rnd, bytes), halfClose: rnd() < 0.9, mayClose: true };
  // Method PRI (the HTTP/2 connection preface): node closes the connection at once, unanswered.
  return { bytes, halfClose: rnd() < 0.9, mayClose: text.startsWith('PRI ') };
}

/** A real ClientHello, as node's TLS client sends it (captured from a socket that answers nothing). */
async function clientHello(): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const server = net.createServer((s) => {
      s.once('data', (d: Buffer) => {
        resolve(d);
        s.destroy();
        server.close();
      });
    });
    server.listen(0, '127.0.0.1', () => {
      const c = tls.connect({ host: '127.0.0.1', port: (server.address() as net.AddressInfo).port, servername: 'x' });
      c.on('error', () => undefined);
    });
    server.on('error', reject);
  });
}

function tlsGarbage(rnd: Rnd, hello: Buffer): Input {
  const cut = (b: Buffer) => b.subarray(0, 1 + Math.floor(rnd() * (b.length - 1)));
  const bytes = pick(rnd, [
    () => cut(hello),
    () => mutate(rnd, hello),
    () => garbage(rnd, 600),
    () => Buffer.concat([hello, garbage(rnd, 200)]),
    () => Buffer.from('\x16\x03\x01\xff\xff' + 'A'.repeat(100), 'latin1'),
    () => Buffer.from('\x16\x03\x03\x00\x05\x01\x00\x00\x01\x00', 'latin1'),
    () => Buffer.from('\x80\x2e\x01\x00\x02\x00\x15\x00\x00\x00\x10', 'latin1'),
    () => Buffer.from('\x15\x03\x03\x00\x02\x02\x28', 'latin1'),
    () => Buffer.from(`GET /nic/update?hostname=${CLOSED_HOST} HTTP/1.1\r\nHost: x\r\n\r\n`),
    () => Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'),
  ])();
  return { bytes, halfClose: rnd() < 0.85, mayClose: true, tlsRaw: true };
}

// ---- sending and judging ---------------------------------------------------------------------

/** What came back: the bytes, or that the connection was still open WEDGED_MS after the input. */
interface Outcome {
  reply: Buffer;
  wedged: boolean;
}

const SOURCES = Array.from({ length: 8 }, (_, i) => `127.0.0.${i + 2}`);

function sendRaw(port: number, input: Input, source: string): Promise<Outcome> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const socket = net.connect({ host: '127.0.0.1', port, localAddress: source, allowHalfOpen: true });
    const timer = setTimeout(() => finish(true), WEDGED_MS);
    const finish = (wedged: boolean): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ reply: Buffer.concat(chunks), wedged });
    };
    socket.on('connect', () => (input.halfClose ? socket.end(input.bytes) : socket.write(input.bytes)));
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('error', () => undefined);
    socket.on('end', () => finish(false));
    socket.on('close', () => finish(false));
  });
}

function sendTls(port: number, input: Input, source: string): Promise<Outcome> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    // localAddress goes on to net.connect (not in the types of tls.connect's options).
    const options = { host: '127.0.0.1', port, localAddress: source, rejectUnauthorized: false, allowHalfOpen: true };
    const socket = tls.connect(options as tls.ConnectionOptions);
    const timer = setTimeout(() => finish(true), WEDGED_MS);
    const finish = (wedged: boolean): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ reply: Buffer.concat(chunks), wedged });
    };
    socket.on('secureConnect', () => (input.halfClose ? socket.end(input.bytes) : socket.write(input.bytes)));
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('error', () => undefined);
    socket.on('end', () => finish(false));
    socket.on('close', () => finish(false));
  });
}

/** A TLS record header: content type 20–23, version 3.x. */
function isTlsRecord(b: Buffer): boolean {
  return b.length >= 5 && b[0]! >= 20 && b[0]! <= 23 && b[1] === 3;
}

/** Why this outcome is not acceptable for this input, or undefined. */
function problemOf(input: Input, outcome: Outcome): string | undefined {
  if (outcome.wedged) return `still open ${WEDGED_MS} ms after the input (wedged)`;
  const { reply } = outcome;
  if (reply.length === 0) return input.mayClose ? undefined : 'closed without an answer';
  // At the TLS port outside a handshake: TLS records (an alert; a whole ClientHello gets the handshake's answer).
  if (input.tlsRaw)
    return isTlsRecord(reply) ? undefined : `not a TLS record: ${JSON.stringify(reply.toString('latin1', 0, 40))}`;
  const text = reply.toString('latin1');
  const end = text.indexOf('\r\n\r\n');
  if (end === -1) return `no end of the header: ${JSON.stringify(text.slice(0, 200))}`;
  const [status, ...headers] = text.slice(0, end).split('\r\n');
  if (!/^HTTP\/1\.[01] [1-5]\d\d [^\r\n]*$/.test(status!)) return `bad status line ${JSON.stringify(status)}`;
  for (const h of headers) {
    // A field name, a colon, a value without CR, LF or NUL.
    // eslint-disable-next-line no-control-regex
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+: ?[^\r\n\x00]*$/.test(h)) return `bad header line ${JSON.stringify(h)}`;
  }
  if (/^HTTP\/1\.[01] 5\d\d/.test(status!) && !/ 50[23] /.test(status!))
    return `server error ${JSON.stringify(status)}`;
  return undefined;
}

/** What one input got: the labels it is counted under (none: closed without a byte), and what was wrong. */
interface Shot {
  keys: string[];
  problem?: string;
  /** The input, for the failure message. */
  input: string;
}

interface Target {
  name: string;
  count: number;
  fire: (rnd: Rnd, source: string) => Promise<Shot>;
}

function httpTarget(
  name: string,
  count: number,
  next: (rnd: Rnd) => Input,
  send: (input: Input, source: string) => Promise<Outcome>,
): Target {
  return {
    name,
    count,
    fire: async (rnd, source) => {
      const input = next(rnd);
      const outcome = await send(input, source);
      const status = outcome.reply.toString('latin1', 9, 12);
      if (process.env.FUZZ_DEBUG && status === process.env.FUZZ_DEBUG)
        console.log(name, JSON.stringify(input.bytes.toString('latin1').slice(0, 200)));
      const keys = outcome.reply.length === 0 ? [] : [input.tlsRaw ? `tls-record-${outcome.reply[0]}` : status];
      return {
        keys,
        problem: problemOf(input, outcome),
        input: `${JSON.stringify(input.bytes.toString('latin1').slice(0, 300))}${input.halfClose ? '' : ' (kept open)'}`,
      };
    },
  };
}

/** The gateway key of OWNED_HOST (made in `before`): what the corpus signs its good UPDATEs with. */
let gatewayKey: GatewayFuzzContext['key'] | undefined;

function gatewayContext(): GatewayFuzzContext {
  if (gatewayKey === undefined) throw new Error('no gateway key yet');
  return { zone: ZONE, host: OWNED_HOST, key: gatewayKey };
}

/** `token add --tsig`'s key, from the line `… Key name NAME, algorithm ALG, secret SECRET`. */
function keyFromTokenAdd(out: string): NonNullable<typeof gatewayKey> {
  const m = /Key name (\S+), algorithm (\S+), secret (\S+)/.exec(out);
  if (!m) throw new Error(`no key in: ${out}`);
  return { name: m[1]!, algorithm: m[2]!.toLowerCase() as TsigAlgorithm, secret: Buffer.from(m[3]!, 'base64') };
}

/** A signed UPDATE setting OWNED_HOST's address, through the gateway at `port`: its RCODE (0: NOERROR). */
async function gatewayUpdate(port: number, transport: 'udp' | 'tcp', address: string): Promise<number> {
  const message = signedUpdate(gatewayContext(), Math.floor(Math.random() * 65536), address);
  const input: GatewayInput = { transport, chunks: [message], ids: [message.readUInt16BE(0)], closes: false };
  if (transport === 'tcp') {
    const length = Buffer.alloc(2);
    length.writeUInt16BE(message.length, 0);
    input.chunks = [Buffer.concat([length, message])];
  }
  const outcome = await (transport === 'udp' ? sendUdp : sendTcp)(port, input, '127.0.0.1');
  const problem = gatewayProblem(input, outcome);
  if (problem !== undefined) throw new Error(`gateway ${transport} update: ${problem}`);
  return parseHeader(outcome.answers[0]!).rcode;
}

function gatewayTarget(
  name: string,
  count: number,
  port: () => number,
  next: (rnd: Rnd, ctx: GatewayFuzzContext) => GatewayInput,
): Target {
  return {
    name,
    count,
    fire: async (rnd, source) => {
      const input = next(rnd, gatewayContext());
      const send = input.transport === 'udp' ? sendUdp : sendTcp;
      const outcome = await send(port(), input, source);
      const keys = gatewayStatus(input, outcome).filter((k) => k !== 'silent');
      return { keys, problem: gatewayProblem(input, outcome), input: describeInput(input).slice(0, 1200) };
    },
  };
}

interface Stats {
  sent: number;
  answered: number;
  closed: number;
  statuses: Map<string, number>;
  problems: string[];
}

async function run(targets: Target[]): Promise<Map<string, Stats>> {
  const all = new Map<string, Stats>();
  const jobs: (() => Promise<void>)[] = [];
  targets.forEach((t, ti) => {
    const stats: Stats = { sent: 0, answered: 0, closed: 0, statuses: new Map(), problems: [] };
    all.set(t.name, stats);
    for (let i = 0; i < t.count; i++) {
      jobs.push(async () => {
        // Each input its own stream: one can be replayed from (seed, target, index).
        const rnd = mulberry32((SEED ^ Math.imul(ti + 1, 0x9e3779b1) ^ Math.imul(i + 1, 0x85ebca6b)) >>> 0);
        const shot = await t.fire(rnd, SOURCES[i % SOURCES.length]!);
        stats.sent++;
        if (shot.keys.length > 0) {
          stats.answered++;
          for (const key of shot.keys) stats.statuses.set(key, (stats.statuses.get(key) ?? 0) + 1);
        } else stats.closed++;
        if (shot.problem && stats.problems.length < 8)
          stats.problems.push(`${t.name} #${i}: ${shot.problem}; input ${shot.input}`);
      });
    }
  });
  // Interleaved, so that the listeners are under fire at the same time; at most CONCURRENCY at once.
  const order = jobs.map((job, i) => ({ job, key: mulberry32(SEED + i)() })).sort((a, b) => a.key - b.key);
  let at = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (at < order.length) await order[at++]!.job();
    }),
  );
  return all;
}

/** Every key under the prefix but the counter families, with its type and value (sorted where unordered). */
async function snapshot(redis: Redis): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const keys = (await redis.keys('ddns:*')).filter((k) => !COUNTER_FAMILIES.some((f) => k.startsWith(`ddns:${f}`)));
  for (const key of keys.sort()) {
    const type = await redis.type(key);
    let value: unknown;
    if (type === 'string') value = await redis.get(key);
    // A host's request log counts the requests that reach it (refused ones too), by design: not its state.
    else if (type === 'hash')
      value = Object.entries(await redis.hgetall(key))
        .filter(([f]) => !(key.startsWith('ddns:h:') && (REQUEST_LOG_FIELDS as readonly string[]).includes(f)))
        .sort();
    else if (type === 'set') value = (await redis.smembers(key)).sort();
    else if (type === 'zset') value = await redis.zrange(key, 0, -1, 'WITHSCORES');
    else if (type === 'list') value = await redis.lrange(key, 0, -1);
    out.set(key, `${type} ${JSON.stringify(value)}`);
  }
  return out;
}

function diff(before: Map<string, string>, after: Map<string, string>): string[] {
  const changes: string[] = [];
  for (const [k, v] of after) if (before.get(k) !== v) changes.push(`${k}: ${before.get(k) ?? '(none)'} -> ${v}`);
  for (const k of before.keys()) if (!after.has(k)) changes.push(`${k}: removed`);
  return changes;
}

describe('protocol fuzz: every listener, plain, TLS and --workers 2', function () {
  this.timeout(300_000);
  let bridge: TlsBridge;
  let workers: Serve;
  /** A third serve (one process) with the gateway's default rate per source, for the rate-limit check. */
  let rated: Serve;
  let redis: Redis;
  let tokenDir: string;
  let adminPort: number;
  let workersAdminPort: number;
  let ratedAdminPort: number;
  let gatewayPort: number;
  let workersGatewayPort: number;
  let ratedGatewayPort: number;

  before(async function () {
    requireBinariesOrSkip(this, ['redis-server', 'knotd', 'kdig', 'openssl']);
    tokenDir = await makeTempDir('fuzz-');
    const tokenFile = path.join(tokenDir, 'admin.token');
    await writeFile(tokenFile, TOKEN, { mode: 0o600 });
    const gatewayKeyFile = path.join(tokenDir, 'gateway.key');
    await writeFile(gatewayKeyFile, randomBytes(32).toString('base64') + '\n', { mode: 0o600 });
    adminPort = await freePort();
    workersAdminPort = await freePort();
    ratedAdminPort = await freePort();
    gatewayPort = await freePort();
    workersGatewayPort = await freePort();
    ratedGatewayPort = await freePort();
    bridge = await TlsBridge.start({
      config: {
        admin: { listen: [`127.0.0.1:${adminPort}`], tokenFile },
        // The server's own limits end every connection the fuzz leaves open, quickly.
        http: { headersTimeout: 1, requestTimeout: 2, keepAliveTimeout: 1 },
        log: { level: 'info' },
        // A rate per source the fuzz stays under: its messages are judged, not dropped.
        gateway: { listen: [`127.0.0.1:${gatewayPort}`], keyFile: gatewayKeyFile, ratePerSource: 100000 },
      },
    });
    await bridge.waitForLog((l) => l.msg === 'RFC 2136 gateway listening');
    const env = bridge.env;
    await env.addAccount(FUZZ_USER, FUZZ_PASSWORD);
    await env.addHost(CLOSED_HOST, FUZZ_USER);
    await env.cliOk(['host', 'close', CLOSED_HOST]);
    await env.addAccount(OWNER, OWNER_PASSWORD);
    await env.addHost(OWNED_HOST, OWNER);
    // The CLI reads the gateway's master key from the config the serve process was started with.
    gatewayKey = keyFromTokenAdd(await env.cliOk(['token', 'add', OWNED_HOST, '--tsig']));
    // The second service: one plain listener (serve --port), its own admin and gateway addresses, two workers.
    const workersConfig = path.join(env.dir, 'config-workers.json');
    await writeFile(
      workersConfig,
      JSON.stringify(
        deepMerge(env.config, {
          admin: { listen: [`127.0.0.1:${workersAdminPort}`] },
          gateway: { listen: [`127.0.0.1:${workersGatewayPort}`] },
        }),
      ),
      { mode: 0o600 },
    );
    workers = await Serve.start(env, 2, {}, workersConfig);
    await workers.waitFor((l) => l.msg === 'RFC 2136 gateway listening', 2, 20_000);
    const ratedConfig = path.join(env.dir, 'config-rated.json');
    await writeFile(
      ratedConfig,
      JSON.stringify(
        deepMerge(env.config, {
          admin: { listen: [`127.0.0.1:${ratedAdminPort}`] },
          gateway: { listen: [`127.0.0.1:${ratedGatewayPort}`], ratePerSource: 20 },
        }),
      ),
      { mode: 0o600 },
    );
    rated = await Serve.start(env, 1, {}, ratedConfig);
    await rated.waitFor((l) => l.msg === 'RFC 2136 gateway listening', 1, 20_000);
    redis = new Redis(env.redis.url);
  });

  after(async () => {
    redis?.disconnect();
    await rated?.stop();
    await workers?.stop();
    await bridge?.stop();
    if (tokenDir) await removeDir(tokenDir);
  });

  it('the gateway under --workers 2: signed UPDATEs over UDP and over TCP, NOERROR each time', async () => {
    const env = bridge.env;
    for (let i = 0; i < 6; i++) {
      for (const transport of ['udp', 'tcp'] as const) {
        const address = `192.0.2.${100 + i * 2 + (transport === 'tcp' ? 1 : 0)}`;
        expect(await gatewayUpdate(workersGatewayPort, transport, address), `${transport} #${i}`).to.equal(0);
        expect(await env.ns.query(OWNED_HOST, 'A'), `${transport} #${i}`).to.deep.equal([address]);
      }
    }
    expect(workers.child.exitCode).to.equal(null);
    expect(
      workers.lines.filter((l) => l.level === 'error' || /worker died|worker exited/.test(String(l.msg))),
    ).to.deep.equal([]);
  });

  it('the gateway: TSIG key and algorithm names it cannot write back (past 255 bytes, empty labels) are no fault', async () => {
    const wire = (labels: string[]): Buffer =>
      Buffer.concat([
        ...labels.map((l) => Buffer.concat([Buffer.from([l.length]), Buffer.from(l, 'latin1')])),
        Buffer.from([0]),
      ]);
    const a63 = 'a'.repeat(63);
    /** An UPDATE of the zone with a TSIG record (MAC of zeros, a key nobody has) of these names. */
    const signedLooking = (keyName: Buffer, algorithm: Buffer): Buffer => {
      const zone = wire(ZONE.split('.'));
      const head = Buffer.from('1234280000010000000000010000', 'hex').subarray(0, 12);
      const rdata = Buffer.concat([
        algorithm,
        Buffer.from('0000', 'hex'),
        Buffer.alloc(4),
        Buffer.from('012c0020', 'hex'),
      ]);
      const time = Math.floor(Date.now() / 1000);
      rdata.writeUInt32BE(time, algorithm.length + 2);
      const tail = Buffer.concat([rdata, Buffer.alloc(32), Buffer.from('123400000000', 'hex')]);
      const fixed = Buffer.alloc(10);
      fixed.writeUInt16BE(250, 0);
      fixed.writeUInt16BE(255, 2);
      fixed.writeUInt16BE(tail.length, 8);
      return Buffer.concat([head, zone, Buffer.from('00060001', 'hex'), keyName, fixed, tail]);
    };
    const sha256 = wire(['hmac-sha256']);
    const cases: [string, Buffer][] = [
      [
        'a key name of 4 labels of 63 bytes and the zone (past 255 bytes)',
        signedLooking(wire([a63, a63, a63, a63, ...ZONE.split('.')]), sha256),
      ],
      [
        'a key name with a dot in a label (a..b: an empty label once split)',
        signedLooking(wire(['a..b', ...ZONE.split('.')]), sha256),
      ],
      ['a key name of one label "."+"."', signedLooking(wire(['..']), sha256)],
      ['an algorithm name past 255 bytes', signedLooking(wire(['k']), wire([a63, a63, a63, a63, 'x']))],
      ['an algorithm name hmac..sha256 in one label', signedLooking(wire(['k']), wire(['hmac..sha256']))],
    ];
    const since = bridge.log().length;
    for (const [what, message] of cases) {
      const input: GatewayInput = { transport: 'udp', chunks: [message], ids: [0x1234], closes: false };
      const outcome = await sendUdp(gatewayPort, input, '127.0.0.11');
      const hex = message.toString('hex');
      expect(gatewayProblem(input, outcome), `${what}: ${hex}`).to.equal(undefined);
      // FORMERR (no such name can be) or NOTAUTH (BADKEY): not SERVFAIL, not a fault in the log.
      expect(parseHeader(outcome.answers[0]!).rcode, `${what}: ${hex}`).to.be.oneOf([1, 9]);
    }
    expect(
      bridge
        .log()
        .slice(since)
        .filter((l) => l.level === 'error'),
    ).to.deep.equal([]);
  });

  it('the gateway over TCP: a client that half-closes behind its signed UPDATE still gets the answer', async () => {
    // `printf … | nc -N` style: the request, then our end closed; the answer needs a Redis round trip first.
    const message = signedUpdate(gatewayContext(), 0x4242, '192.0.2.60');
    const framed = Buffer.concat([Buffer.from([message.length >> 8, message.length & 0xff]), message]);
    const reply = await new Promise<Buffer>((resolve) => {
      const chunks: Buffer[] = [];
      const socket = net.connect({ host: '127.0.0.1', port: gatewayPort, allowHalfOpen: true }, () =>
        socket.end(framed),
      );
      const timer = setTimeout(() => socket.destroy(), 10_000);
      socket.on('data', (d: Buffer) => chunks.push(d));
      socket.on('error', () => undefined);
      socket.on('close', () => {
        clearTimeout(timer);
        resolve(Buffer.concat(chunks));
      });
    });
    // The change is made either way (the connection's end does not cancel it): only the answer can be lost.
    await waitFor(async () => (await bridge.env.ns.query(OWNED_HOST, 'A')).includes('192.0.2.60'), {
      what: 'the primary to show the half-closed UPDATE',
    });
    expect(reply.length, 'answer bytes').to.be.greaterThan(2 + 12);
    const header = parseHeader(reply.subarray(2));
    expect([header.id, header.rcode]).to.deep.equal([0x4242, 0]);
  });

  it('the gateway rate per source (default 20/s, bursts of 40): 200 datagrams at once, at most ~40 answers', async () => {
    const socket = dgram.createSocket('udp4');
    const answers: Buffer[] = [];
    socket.on('message', (m) => answers.push(m));
    await new Promise<void>((resolve) => socket.bind({ address: '127.0.0.10', port: 0 }, resolve));
    const soa = (id: number): Buffer => {
      const labels = ZONE.split('.').map((l) => Buffer.concat([Buffer.from([l.length]), Buffer.from(l)]));
      const h = Buffer.alloc(12);
      h.writeUInt16BE(id, 0);
      h.writeUInt16BE(1, 4);
      return Buffer.concat([h, ...labels, Buffer.from([0, 0, 6, 0, 1])]);
    };
    const started = Date.now();
    for (let i = 0; i < 200; i++)
      await new Promise<void>((r) => socket.send(soa(i), ratedGatewayPort, '127.0.0.1', () => r()));
    const sendMs = Date.now() - started;
    // The answers to the burst, and then quiet (every answered message counted in the metrics first).
    const dropped = async (): Promise<number> => {
      const r = await rawRequest(
        '127.0.0.1',
        ratedAdminPort,
        `GET /metrics HTTP/1.0\r\nAuthorization: Bearer ${TOKEN}\r\n\r\n`,
      );
      const line = r
        .toString()
        .split('\n')
        .filter((l) => l.startsWith('ddns_bridge_gateway_requests_total{') && l.includes('rcode="dropped"'));
      return line.reduce((sum, l) => sum + Number(l.split(' ').pop()), 0);
    };
    await waitFor(async () => (await dropped()) + answers.length >= 200, {
      timeoutMs: 10_000,
      what: 'all 200 messages answered or counted as dropped',
    });
    socket.close();
    // 40 at once, and 20 a second more while the burst was being sent.
    const allowed = 40 + Math.ceil((sendMs / 1000) * 20) + 1;
    expect(answers.length, `answers (burst sent in ${sendMs} ms)`).to.be.within(1, allowed);
    expect(await dropped()).to.equal(200 - answers.length);
    expect(rated.child.exitCode).to.equal(null);
  });

  it('a few thousand inputs: every process up, valid answers or a bare close, nothing changed', async () => {
    const env = bridge.env;
    const hello = await clientHello();
    const serialBefore = await env.ns.serial();
    const before = await snapshot(redis);
    // The log lines of this test alone (the gateway's regression test above may have logged faults of its own).
    const logsFrom = [bridge.log().length, workers.lines.length, rated.lines.length] as const;
    const n = (count: number) => Math.max(1, Math.round(count * SCALE));
    const plain = (port: number) => (input: Input, source: string) => sendRaw(port, input, source);
    const admin = (rnd: Rnd) => {
      const r = adminRequest(rnd);
      return httpInput(rnd, r.text, !r.token);
    };
    const update = (rnd: Rnd) => httpInput(rnd, updateRequest(rnd), true);
    const targets: Target[] = [
      httpTarget('update (plain)', n(800), update, plain(bridge.plainPort)),
      httpTarget('update (TLS)', n(300), update, (i, s) => sendTls(bridge.tlsPort, i, s)),
      httpTarget('TLS garbage', n(200), (rnd) => tlsGarbage(rnd, hello), plain(bridge.tlsPort)),
      httpTarget('admin', n(700), admin, plain(adminPort)),
      httpTarget('update (--workers 2)', n(400), update, plain(workers.port)),
      httpTarget('admin (--workers 2 primary)', n(400), admin, plain(workersAdminPort)),
      gatewayTarget('gateway UDP', n(600), () => gatewayPort, udpInput),
      gatewayTarget('gateway TCP', n(300), () => gatewayPort, tcpInput),
      gatewayTarget('gateway UDP (--workers 2)', n(300), () => workersGatewayPort, udpInput),
      gatewayTarget('gateway TCP (--workers 2)', n(200), () => workersGatewayPort, tcpInput),
    ];
    // Printed first: a run cut off by mocha's timeout can still be replayed.
    console.log(`      seed ${SEED} (replay: FUZZ_SEED=${SEED})`);
    const started = Date.now();
    const stats = await run(targets);
    const seconds = (Date.now() - started) / 1000;
    const summary = [...stats]
      .map(([name, s]) => `${name}: ${s.sent} sent, ${s.closed} closed bare, ${JSON.stringify([...s.statuses].sort())}`)
      .join('\n        ');
    const amp = `largest UDP answer/request: ${amplification.answer}/${amplification.request} bytes`;
    console.log(`      seed ${SEED}, ${seconds.toFixed(1)} s, ${amp}\n        ${summary}`);
    const at = `(FUZZ_SEED=${SEED})`;

    expect(
      [...stats.values()].flatMap((s) => s.problems),
      at,
    ).to.deep.equal([]);
    // Every process up: the single serve, the primary, and no worker replaced.
    expect(bridge.serve.exitCode, `serve exited ${at}`).to.equal(null);
    expect(workers.child.exitCode, `primary exited ${at}`).to.equal(null);
    expect(
      workers.lines.filter((l) => /worker died|worker exited/.test(String(l.msg))),
      at,
    ).to.deep.equal([]);
    // Errors logged: none is a request that failed in our code.
    const errors = [
      ...bridge.log().slice(logsFrom[0]),
      ...workers.lines.slice(logsFrom[1]),
      ...rated.lines.slice(logsFrom[2]),
    ].filter((l) => l.level === 'error');
    expect(errors, at).to.deep.equal([]);
    // Nothing changed in Redis (but the counters of refused requests) or in DNS.
    expect(diff(before, await snapshot(redis)), at).to.deep.equal([]);
    expect(await env.ns.serial(), `SOA serial ${at}`).to.equal(serialBefore);

    // Still serving everywhere: health, and an update through each service.
    for (const port of [adminPort, workersAdminPort]) {
      const r = await rawRequest('127.0.0.1', port, 'GET /healthz HTTP/1.0\r\n\r\n');
      expect(r.toString(), at).to.match(/^HTTP\/1\.1 200 OK\r\n/);
    }
    const first = await env.get(`/nic/update?hostname=${OWNED_HOST}&myip=192.0.2.77`, {
      auth: [OWNER, OWNER_PASSWORD],
      port: bridge.plainPort,
    });
    expect(first.body, at).to.equal('good 192.0.2.77\n');
    const again = await env.get(`/nic/update?hostname=${OWNED_HOST}&myip=192.0.2.77`, {
      auth: [OWNER, OWNER_PASSWORD],
      port: workers.port,
    });
    expect(again.body, at).to.equal('nochg 192.0.2.77\n');
    // The gateway still takes a real signed UPDATE, over UDP and TCP, in each service.
    for (const [port, transport, address] of [
      [gatewayPort, 'udp', '192.0.2.88'],
      [workersGatewayPort, 'tcp', '192.0.2.89'],
      [workersGatewayPort, 'udp', '192.0.2.90'],
      [gatewayPort, 'tcp', '192.0.2.91'],
    ] as const) {
      expect(await gatewayUpdate(port, transport, address), `${transport} ${port} ${at}`).to.equal(0);
      expect(await env.ns.query(OWNED_HOST, 'A'), at).to.deep.equal([address]);
    }
  });
});
