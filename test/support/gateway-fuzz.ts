/**
 * The RFC 2136 gateway's part of the fuzz suite (test/integration/fuzz.test.ts): seeded DNS messages, good and bad,
 * thrown at its UDP and TCP listener from raw sockets, and the judge of what came back. The rules checked:
 * a request (QR=0, a whole header) is answered, once, with its ID, QR set; a response (QR=1) or a datagram shorter
 * than a header gets nothing; a UDP answer is never larger than the request allows (512 bytes, or its EDNS size);
 * a TCP stream gets one framed answer per request frame, and its connection ends once ours does.
 */
import dgram from 'node:dgram';
import net from 'node:net';
import { encodeUpdate, parseHeader, type UpdateMessage } from '../../src/core/dns-wire.js';
import { signMessage, TSIG_ALGORITHMS, type TsigKeyConfig } from '../../src/core/tsig.js';
import { decodeRequest } from '../../src/gateway/message.js';

export type Rnd = () => number;
const pick = <T>(rnd: Rnd, xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
const int = (rnd: Rnd, n: number): number => Math.floor(rnd() * n);
const bytes = (rnd: Rnd, max: number): Buffer =>
  Buffer.from(Array.from({ length: int(rnd, max) }, () => int(rnd, 256)));

/** A UDP request unanswered this long got no answer (silence is checked for as long). */
const UDP_WAIT_MS = 5000;
/** Silence expected: a late answer would come within this. */
const SILENCE_MS = 800;
/** A TCP connection still open this long after our end was closed is wedged. */
const WEDGED_MS = 8000;

export interface GatewayFuzzContext {
  zone: string;
  /** A host of the zone that the key below may change. */
  host: string;
  key: TsigKeyConfig;
}

// ---- building messages ------------------------------------------------------------------------

const OPCODE_QUERY = 0;
const OPCODE_UPDATE = 5;

function header(id: number, flags: number, counts: readonly number[]): Buffer {
  const b = Buffer.alloc(12);
  b.writeUInt16BE(id, 0);
  b.writeUInt16BE(flags, 2);
  counts.forEach((c, i) => b.writeUInt16BE(c & 0xffff, 4 + i * 2));
  return b;
}

/** A name's wire form, labels taken as they are (no check: a label may hold a dot). */
function wireName(labels: readonly (string | Buffer)[]): Buffer {
  const parts: Buffer[] = [];
  for (const l of labels) {
    const b = typeof l === 'string' ? Buffer.from(l, 'latin1') : l;
    parts.push(Buffer.from([b.length & 0xff]), b);
  }
  parts.push(Buffer.from([0]));
  return Buffer.concat(parts);
}
const nameOf = (text: string): Buffer => wireName(text === '' ? [] : text.split('.'));

function question(name: Buffer, type: number, klass = 1): Buffer {
  const tail = Buffer.alloc(4);
  tail.writeUInt16BE(type, 0);
  tail.writeUInt16BE(klass, 2);
  return Buffer.concat([name, tail]);
}

function rr(name: Buffer, type: number, klass: number, ttl: number, rdata: Buffer, rdlength = rdata.length): Buffer {
  const fixed = Buffer.alloc(10);
  fixed.writeUInt16BE(type, 0);
  fixed.writeUInt16BE(klass, 2);
  fixed.writeUInt32BE(ttl >>> 0, 4);
  fixed.writeUInt16BE(rdlength & 0xffff, 8);
  return Buffer.concat([name, fixed, rdata]);
}

const opt = (size: number, rdata = Buffer.alloc(0), rdlength?: number): Buffer =>
  rr(Buffer.from([0]), 41, size, 0, rdata, rdlength);

interface TsigFields {
  algorithm: Buffer;
  time: number;
  fudge: number;
  mac: Buffer;
  macSize?: number;
  originalId: number;
  error: number;
  other: Buffer;
  otherLen?: number;
}

function tsigRdata(t: TsigFields): Buffer {
  const a = Buffer.alloc(10);
  a.writeUInt16BE(Math.floor(t.time / 2 ** 32) & 0xffff, 0);
  a.writeUInt32BE(t.time % 2 ** 32, 2);
  a.writeUInt16BE(t.fudge, 6);
  a.writeUInt16BE(t.macSize ?? t.mac.length, 8);
  const b = Buffer.alloc(6);
  b.writeUInt16BE(t.originalId, 0);
  b.writeUInt16BE(t.error, 2);
  b.writeUInt16BE(t.otherLen ?? t.other.length, 4);
  return Buffer.concat([t.algorithm, a, t.mac, b, t.other]);
}

/** A message from its sections (counts as given, or as the sections are). */
function message(
  id: number,
  opcode: number,
  sections: readonly (readonly Buffer[])[],
  opts: { qr?: boolean; rd?: boolean; counts?: number[] } = {},
): Buffer {
  const flags = (opts.qr ? 0x8000 : 0) | ((opcode & 0xf) << 11) | (opts.rd ? 0x100 : 0);
  return Buffer.concat([header(id, flags, opts.counts ?? sections.map((s) => s.length)), ...sections.flat()]);
}

const soaQuery = (id: number, name: string, extra: Buffer[] = []): Buffer =>
  message(id, OPCODE_QUERY, [[question(nameOf(name), 6)], [], [], extra], { rd: true });

/** An UPDATE that changes nothing whatever key signs it: its prerequisite (a TXT RRset of the host) never holds. */
function noopUpdate(ctx: GatewayFuzzContext, id: number): Buffer {
  const msg: UpdateMessage = {
    id,
    zone: ctx.zone,
    prerequisites: [{ kind: 'rrset-exists', name: ctx.host, type: 'TXT' }],
    updates: [
      { kind: 'delete-rrset', name: ctx.host, type: 'A' },
      { kind: 'add', name: ctx.host, ttl: 60, data: { type: 'A', address: '192.0.2.200' } },
    ],
  };
  return encodeUpdate(msg);
}

/** A real signed UPDATE: set `address` as the host's A record. */
export function signedUpdate(ctx: GatewayFuzzContext, id: number, address: string): Buffer {
  const msg: UpdateMessage = {
    id,
    zone: ctx.zone,
    prerequisites: [],
    updates: [
      { kind: 'delete-rrset', name: ctx.host, type: 'A' },
      { kind: 'add', name: ctx.host, ttl: 60, data: { type: 'A', address } },
    ],
  };
  return signMessage(encodeUpdate(msg), ctx.key, { timeSigned: Date.now() / 1000, fudge: 300 }).message;
}

const sign = (m: Buffer, key: TsigKeyConfig): Buffer =>
  signMessage(m, key, { timeSigned: Date.now() / 1000, fudge: 300 }).message;

/** Byte flips, cuts and repeats of a message. */
function flip(rnd: Rnd, m: Buffer): Buffer {
  let b = Buffer.from(m);
  const n = 1 + int(rnd, 4);
  for (let i = 0; i < n && b.length > 0; i++) {
    const at = int(rnd, b.length);
    const r = rnd();
    if (r < 0.6) b[at] = int(rnd, 256);
    else if (r < 0.7) b[at] = b[at]! ^ (1 << int(rnd, 8));
    else if (r < 0.8) b = b.subarray(0, at);
    else if (r < 0.9) b = Buffer.concat([b.subarray(0, at), b.subarray(Math.min(b.length, at + 1 + int(rnd, 8)))]);
    else b = Buffer.concat([b.subarray(0, at), bytes(rnd, 8), b.subarray(at)]);
  }
  return b;
}

const ALGORITHM_NAMES = [
  ...TSIG_ALGORITHMS,
  'hmac-md5.sig-alg.reg.int',
  'HMAC-SHA256',
  'gss-tsig',
  '',
  'x'.repeat(63),
  'hmac-sha256.',
];

/** One DNS message of the corpus (any bytes: many are no message at all). */
export function gatewayMessage(rnd: Rnd, ctx: GatewayFuzzContext): Buffer {
  const id = int(rnd, 65536);
  const zone = ctx.zone;
  const long63 = 'a'.repeat(63);
  switch (int(rnd, 16)) {
    case 0: // random bytes
      return bytes(rnd, 600);
    case 1: // a header cut off, or a header alone (12 bytes: what an amplifier would send)
      return soaQuery(id, zone).subarray(0, int(rnd, 13));
    case 2: {
      // a valid header, wild counts, a short or empty rest
      const counts = [0, 0, 0, 0].map(() => pick(rnd, [0, 1, 2, 255, 0x7fff, 0xffff, int(rnd, 65536)]));
      return Buffer.concat([header(id, pick(rnd, [0, 0x2800, 0x0100, 0x2000]), counts), bytes(rnd, 64)]);
    }
    case 3: {
      // compression pointer loops: to itself, between two, into the header, past the end
      const loops = [
        Buffer.from([0xc0, 0x0c]),
        Buffer.from([0x01, 0x61, 0xc0, 0x0c]),
        Buffer.from([0xc0, 0x0e, 0xc0, 0x0c]),
        Buffer.from([0xc0, 0x02]),
        Buffer.from([0xc0, 0x00]),
        Buffer.from([0xff, 0xff]),
        Buffer.from([0xc0]),
      ];
      const name = pick(rnd, loops);
      const where = int(rnd, 3);
      if (where === 0) return Buffer.concat([header(id, 0, [1, 0, 0, 0]), question(name, 6)]);
      if (where === 1)
        return message(id, OPCODE_UPDATE, [[question(nameOf(zone), 6)], [], [rr(name, 1, 1, 60, Buffer.alloc(4))], []]);
      // the TSIG key name or its algorithm name a loop
      const rdata = tsigRdata({
        algorithm: rnd() < 0.5 ? name : Buffer.from([0xc0, 0x0c]),
        time: Date.now() / 1000,
        fudge: 300,
        mac: bytes(rnd, 40),
        originalId: id,
        error: 0,
        other: Buffer.alloc(0),
      });
      return message(id, OPCODE_UPDATE, [[question(nameOf(zone), 6)], [], [], [rr(name, 250, 255, 0, rdata)]]);
    }
    case 4: {
      // names with labels of 63 bytes and more, names past 255 bytes (plain, or through pointers), dots in labels
      const names = [
        wireName([long63, ...zone.split('.')]),
        wireName([long63, long63, long63, long63, ...zone.split('.')]),
        Buffer.concat([Buffer.from([64]), Buffer.alloc(64, 0x61), nameOf(zone)]),
        Buffer.concat([Buffer.from([0x7f]), Buffer.alloc(127, 0x61), Buffer.from([0])]),
        wireName(['a.b', 'c..d', '.', ...zone.split('.')]),
        wireName(['..', ...zone.split('.')]),
        wireName([Buffer.from([0, 0xff, 0x2e]), ...zone.split('.')]),
      ];
      const name = pick(rnd, names);
      const where = int(rnd, 4);
      if (where === 0) return Buffer.concat([header(id, 0, [1, 0, 0, 0]), question(name, 6)]);
      if (where === 1)
        return message(id, OPCODE_UPDATE, [
          [question(name, 6)],
          [],
          [rr(nameOf(ctx.host), 1, 1, 60, Buffer.alloc(4))],
          [],
        ]);
      if (where === 2)
        return message(id, OPCODE_UPDATE, [[question(nameOf(zone), 6)], [], [rr(name, 1, 1, 60, Buffer.alloc(4))], []]);
      // a key name of 63+ byte labels, or more than 255 bytes through a chain of pointers to 63-byte labels
      const unsigned = noopUpdate(ctx, id);
      const chainAt = unsigned.length;
      const chain = Buffer.concat([
        wireName([long63]).subarray(0, 64),
        Buffer.from([0xc0 | (chainAt >> 8), chainAt & 0xff]),
      ]);
      const rdata = tsigRdata({
        algorithm: nameOf('hmac-sha256'),
        time: Date.now() / 1000,
        fudge: 300,
        mac: bytes(rnd, 33),
        originalId: id,
        error: 0,
        other: Buffer.alloc(0),
      });
      // past 255 bytes uncompressed; or (chain) a 63-byte label pointing back at itself, 64 jumps deep
      const keyName =
        rnd() < 0.5
          ? name
          : Buffer.concat([
              wireName([long63]).subarray(0, 64),
              wireName([long63]).subarray(0, 64),
              wireName([long63]).subarray(0, 64),
              wireName([long63]).subarray(0, 64),
              nameOf(zone),
            ]);
      const tsigRr = rr(rnd() < 0.3 ? chain : keyName, 250, 255, 0, rdata);
      const m = Buffer.concat([unsigned, tsigRr]);
      m.writeUInt16BE(1, 10);
      return m;
    }
    case 5: {
      // a response (QR set): any of the good messages
      const m = Buffer.from(
        pick(rnd, [
          () => soaQuery(id, zone),
          () => noopUpdate(ctx, id),
          () => sign(noopUpdate(ctx, id), ctx.key),
          () => sign(soaQuery(id, zone), ctx.key),
          () => header(id, 0, [0, 0, 0, 0]),
        ])(),
      );
      m[2] = m[2]! | 0x80;
      return rnd() < 0.2 ? flip(rnd, m) : m;
    }
    case 6: {
      // OPT records of odd sizes, places and lengths
      const size = pick(rnd, [0, 1, 511, 512, 513, 1232, 4096, 65535, int(rnd, 65536)]);
      const o = pick(rnd, [
        () => [opt(size)],
        () => [opt(size, bytes(rnd, 40))],
        () => [opt(size, Buffer.alloc(4), 200)],
        () => [opt(size, Buffer.alloc(0), 1)],
        () => [opt(size), opt(size)],
        () => [rr(nameOf(zone), 41, size, 0, Buffer.alloc(0))],
      ])();
      const base = pick(rnd, [
        () => soaQuery(id, zone, o),
        () => soaQuery(id, `x.${zone}`, o),
        () => soaQuery(id, 'example.org', o),
        () => message(id, OPCODE_QUERY, [[question(nameOf(zone), 255)], o, [], []]),
        () => {
          const u = Buffer.concat([noopUpdate(ctx, id), ...o]);
          u.writeUInt16BE(o.length, 10);
          return u;
        },
      ])();
      return rnd() < 0.5 && base.length > 12 ? sign(base, ctx.key) : base;
    }
    case 7: {
      // TSIG records with garbage in them
      const unsigned = pick(rnd, [() => noopUpdate(ctx, id), () => soaQuery(id, zone)])();
      const fields: TsigFields = {
        algorithm: nameOf(pick(rnd, ALGORITHM_NAMES)),
        time: pick(rnd, [Date.now() / 1000, 0, 2 ** 48 - 1, Date.now() / 1000 - 3600]),
        fudge: pick(rnd, [300, 0, 65535]),
        mac: bytes(rnd, 80),
        originalId: pick(rnd, [id, int(rnd, 65536)]),
        error: pick(rnd, [0, 0, 16, 17, 18, 22, 65535]),
        other: bytes(rnd, 12),
      };
      if (rnd() < 0.3) fields.macSize = int(rnd, 65536);
      if (rnd() < 0.2) fields.otherLen = int(rnd, 65536);
      const rdata = rnd() < 0.25 ? bytes(rnd, 120) : tsigRdata(fields);
      const owner = nameOf(pick(rnd, [ctx.key.name, `000000000000.${ctx.host}`, 'k', '', ctx.key.name.toUpperCase()]));
      const tsigRr = rr(owner, 250, pick(rnd, [255, 255, 1]), pick(rnd, [0, 0, 60]), rdata);
      let m = Buffer.concat([unsigned, tsigRr]);
      m.writeUInt16BE(1, 10);
      if (rnd() < 0.2) {
        // not the last record
        m = Buffer.concat([m, opt(1232)]);
        m.writeUInt16BE(2, 10);
      }
      return m;
    }
    case 8: {
      // signed, with a key nobody has: an unknown name, or the right name with the wrong secret or algorithm
      const key: TsigKeyConfig = {
        name: pick(rnd, [
          ctx.key.name,
          `${bytes(rnd, 6).toString('hex').padEnd(12, '0')}.${ctx.host}`,
          `000000000000.${ctx.host}`,
          'fuzz-key',
          `${ctx.key.name.split('.')[0]}.other.${zone}`,
        ]),
        algorithm: pick(rnd, TSIG_ALGORITHMS),
        secret: bytes(rnd, 64),
      };
      const base = pick(rnd, [() => noopUpdate(ctx, id), () => soaQuery(id, zone)])();
      return signMessage(base, key, {
        timeSigned: Date.now() / 1000 + pick(rnd, [0, 0, -4000, 4000]),
        fudge: 300,
      }).message;
    }
    case 9:
    case 10:
    case 11: {
      // mutated copies of a valid signed UPDATE (flipping the ID alone keeps its MAC good: it changes nothing)
      const good = sign(noopUpdate(ctx, id), ctx.key);
      const r = rnd();
      if (r < 0.1) return good;
      if (r < 0.2) {
        const m = Buffer.from(good);
        m.writeUInt16BE(int(rnd, 65536), 0);
        return m;
      }
      if (r < 0.3) return good.subarray(0, int(rnd, good.length));
      if (r < 0.35) return Buffer.concat([good, bytes(rnd, 16)]);
      return flip(rnd, good);
    }
    case 12: {
      // zone discovery, plain or signed, for names in and out of the zone
      const q = pick(rnd, [zone, `x.${zone}`, `a.b.${ctx.host}`, 'example.org', '', zone.toUpperCase()]);
      const type = pick(rnd, [6, 6, 1, 255, 250, 251, 252]);
      const m = message(id, OPCODE_QUERY, [[question(nameOf(q), type, pick(rnd, [1, 1, 3, 255]))], [], [], []], {
        rd: rnd() < 0.5,
        counts: rnd() < 0.1 ? [2, 0, 0, 0] : undefined,
      });
      return rnd() < 0.3 ? sign(m, ctx.key) : m;
    }
    case 13: {
      // other opcodes (IQUERY, STATUS, NOTIFY, 15), an UPDATE without a key, an UPDATE for another zone
      return pick(rnd, [
        () => message(id, pick(rnd, [1, 2, 4, 6, 15]), [[question(nameOf(zone), 6)], [], [], []]),
        () => noopUpdate(ctx, id),
        () => sign(encodeUpdate({ id, zone: 'example.org', prerequisites: [], updates: [] }), ctx.key),
        () =>
          sign(
            encodeUpdate({
              id,
              zone,
              prerequisites: [{ kind: 'rrset-exists', name: ctx.host, type: 'TXT' }],
              updates: [{ kind: 'delete-rrset', name: `other.${zone}`, type: 'A' }],
            }),
            ctx.key,
          ),
      ])();
    }
    default:
      // any of the above, flipped
      return flip(rnd, gatewayMessage(rnd, ctx));
  }
}

// ---- inputs, sending, judging -----------------------------------------------------------------

/** A request the gateway must answer: a whole header with QR clear. */
const isRequest = (m: Buffer): boolean => m.length >= 12 && (m[2]! & 0x80) === 0;

/** The largest UDP answer a message allows: 512, or its OPT's size (read with the gateway's own decoder). */
function udpLimitOf(m: Buffer): number {
  try {
    return Math.min(decodeRequest(m).udpSize, 65535);
  } catch {
    return 512;
  }
}

export interface GatewayInput {
  transport: 'udp' | 'tcp';
  /** UDP: one datagram. TCP: the stream, written chunk by chunk (frames split across them). */
  chunks: Buffer[];
  /** TCP: the IDs of the frames that must be answered, in order; UDP: one if the datagram is a request. */
  ids: number[];
  /** TCP: a frame's length is shorter than a header, so the server closes (answers before it may be lost). */
  closes: boolean;
}

export function udpInput(rnd: Rnd, ctx: GatewayFuzzContext): GatewayInput {
  const m = gatewayMessage(rnd, ctx);
  return { transport: 'udp', chunks: [m], ids: isRequest(m) ? [m.readUInt16BE(0)] : [], closes: false };
}

const frame = (m: Buffer, length = m.length): Buffer => {
  const p = Buffer.alloc(2);
  p.writeUInt16BE(length & 0xffff, 0);
  return Buffer.concat([p, m]);
};

export function tcpInput(rnd: Rnd, ctx: GatewayFuzzContext): GatewayInput {
  const msg = () => gatewayMessage(rnd, ctx);
  /** A message the server answers (most of the corpus is, but a TCP stream ends at the first too short). */
  const request = (): Buffer => {
    let m = msg();
    for (let i = 0; i < 8 && !(m.length >= 12 && isRequest(m)); i++) m = msg();
    return m;
  };
  const stream = pick(rnd, [
    () => frame(msg()),
    () => frame(request()),
    () => frame(request()),
    // pipelined: more than the server reads ahead (4)
    () => Buffer.concat(Array.from({ length: 2 + int(rnd, 8) }, () => frame(request()))),
    () => Buffer.concat(Array.from({ length: 2 + int(rnd, 4) }, () => frame(msg()))),
    () => Buffer.from([0, 0]),
    () => Buffer.concat([frame(msg()), Buffer.from([0, 0])]),
    () => frame(Buffer.alloc(int(rnd, 12), 1)),
    () => Buffer.concat([Buffer.from([0xff, 0xff]), bytes(rnd, 100)]),
    () => frame(msg(), 12 + int(rnd, 65524)),
    () => Buffer.concat([frame(request()), bytes(rnd, 40)]),
    () => Buffer.from([0x00]),
    () => bytes(rnd, 300),
  ])();
  // Split: whole, in a few random pieces, or byte by byte for short streams.
  let chunks: Buffer[] = [stream];
  const how = rnd();
  if (how < 0.3 && stream.length > 1) {
    const cuts = Array.from({ length: 1 + int(rnd, 3) }, () => 1 + int(rnd, stream.length - 1)).sort((a, b) => a - b);
    chunks = [0, ...cuts].map((at, i, all) => stream.subarray(at, all[i + 1] ?? stream.length)).filter((c) => c.length);
  } else if (how < 0.4 && stream.length <= 64) {
    chunks = [...stream].map((b) => Buffer.from([b]));
  }
  // What the server makes of the stream: the frames it reads whole, up to one shorter than a header.
  const ids: number[] = [];
  let closes = false;
  for (let at = 0; stream.length - at >= 2;) {
    const length = stream.readUInt16BE(at);
    if (length < 12) {
      closes = true;
      break;
    }
    if (stream.length - at - 2 < length) break;
    const m = stream.subarray(at + 2, at + 2 + length);
    if (isRequest(m)) ids.push(m.readUInt16BE(0));
    at += 2 + length;
  }
  return { transport: 'tcp', chunks, ids, closes };
}

export interface GatewayOutcome {
  answers: Buffer[];
  /** TCP: the connection was closed by the server before we closed ours. */
  closedEarly: boolean;
  /** TCP: still open WEDGED_MS after we closed our end. */
  wedged: boolean;
  /** TCP: bytes after the last whole frame when the connection ended. */
  leftover: number;
}

export function sendUdp(port: number, input: GatewayInput, source: string): Promise<GatewayOutcome> {
  return new Promise((resolve) => {
    const answers: Buffer[] = [];
    const socket = dgram.createSocket('udp4');
    let timer: NodeJS.Timeout | undefined;
    const finish = (): void => {
      clearTimeout(timer);
      socket.close();
      resolve({ answers, closedEarly: false, wedged: false, leftover: 0 });
    };
    socket.on('error', () => undefined);
    socket.on('message', (m) => {
      answers.push(m);
      // One answer expected: wait a little longer for a second one that must not come.
      clearTimeout(timer);
      timer = setTimeout(finish, 100);
    });
    socket.bind({ address: source, port: 0 }, () => {
      socket.send(input.chunks[0]!, port, '127.0.0.1');
      timer = setTimeout(finish, input.ids.length > 0 ? UDP_WAIT_MS : SILENCE_MS);
    });
  });
}

export function sendTcp(port: number, input: GatewayInput, source: string): Promise<GatewayOutcome> {
  return new Promise((resolve) => {
    let buf = Buffer.alloc(0);
    const answers: Buffer[] = [];
    let ended = false;
    let closedEarly = false;
    let timer: NodeJS.Timeout | undefined;
    const socket = net.connect({ host: '127.0.0.1', port, localAddress: source });
    socket.setNoDelay(true);
    const finish = (wedged: boolean): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ answers, closedEarly, wedged, leftover: buf.length });
    };
    /** Our end closed: the server must close too. */
    const endOurs = (): void => {
      if (ended) return;
      ended = true;
      clearTimeout(timer);
      socket.end();
      timer = setTimeout(() => finish(true), WEDGED_MS);
    };
    socket.on('error', () => undefined);
    socket.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      while (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
        answers.push(buf.subarray(2, 2 + buf.readUInt16BE(0)));
        buf = buf.subarray(2 + buf.readUInt16BE(0));
      }
      if (answers.length >= input.ids.length && !input.closes) {
        // All answered: a moment for an extra one that must not come, then our end.
        clearTimeout(timer);
        timer = setTimeout(endOurs, input.ids.length > 0 ? 100 : SILENCE_MS);
      }
    });
    socket.on('close', () => {
      if (!ended) closedEarly = true;
      finish(false);
    });
    socket.on('connect', () => {
      void (async () => {
        for (const [i, c] of input.chunks.entries()) {
          if (socket.destroyed) return;
          socket.write(c);
          // A gap between the pieces, so that they arrive as separate reads.
          if (i < input.chunks.length - 1) await new Promise((r) => setTimeout(r, 2));
        }
        if (input.closes) timer = setTimeout(endOurs, UDP_WAIT_MS);
        else if (input.ids.length === 0) timer = setTimeout(endOurs, SILENCE_MS);
        else timer = setTimeout(endOurs, UDP_WAIT_MS);
      })();
    });
  });
}

/** Why the outcome breaks a rule, or undefined. */
export function gatewayProblem(input: GatewayInput, outcome: GatewayOutcome): string | undefined {
  const { answers } = outcome;
  if (input.transport === 'udp') {
    const request = input.chunks[0]!;
    if (input.ids.length === 0 && answers.length > 0)
      return `answered ${answers.length} time(s) a message that is no request (QR=1 or shorter than a header)`;
    if (input.ids.length === 1 && answers.length !== 1) return `${answers.length} answers to a request (1 expected)`;
    const limit = Math.max(512, udpLimitOf(request));
    for (const a of answers) {
      if (a.length > limit) return `a ${a.length}-byte UDP answer, the request allows ${limit}`;
      // No amplification: a bare header gets a bare header back (at most a small factor more).
      if (request.length <= 12 && a.length > 4 * 12) return `a ${a.length}-byte answer to a ${request.length}-byte one`;
    }
  } else {
    if (outcome.wedged) return `still open ${WEDGED_MS} ms after our end closed (wedged)`;
    if (!input.closes && answers.length !== input.ids.length)
      return `${answers.length} answers to ${input.ids.length} request frames${outcome.closedEarly ? ' (closed by the server)' : ''}`;
    if (input.closes && answers.length > input.ids.length)
      return `${answers.length} answers to ${input.ids.length} request frames`;
    if (outcome.leftover > 0) return `${outcome.leftover} bytes after the last whole answer frame`;
  }
  for (const [i, a] of answers.entries()) {
    if (a.length < 12) return `an answer of ${a.length} bytes`;
    const h = parseHeader(a);
    if (!h.qr) return 'an answer without QR';
    const id = input.transport === 'udp' ? input.ids[0] : input.ids[i];
    if (h.id !== id) return `answer ${i} has ID ${h.id}, the request ${id}`;
  }
  return undefined;
}

/** The largest UDP answer/request size ratio seen (printed with the statistics). */
export const amplification = { ratio: 0, request: 0, answer: 0 };

/** A label for the statistics: the answers' RCODEs (TC marked), or `silent`. */
export function gatewayStatus(input: GatewayInput, outcome: GatewayOutcome): string[] {
  if (outcome.answers.length === 0) return ['silent'];
  if (input.transport === 'udp') {
    const ratio = outcome.answers[0]!.length / Math.max(1, input.chunks[0]!.length);
    if (ratio > amplification.ratio)
      Object.assign(amplification, { ratio, request: input.chunks[0]!.length, answer: outcome.answers[0]!.length });
  }
  return outcome.answers.map((a) => {
    if (a.length < 4) return 'short';
    const flags = a.readUInt16BE(2);
    return `rcode-${flags & 0xf}${flags & 0x200 ? '-TC' : ''}`;
  });
}

export const describeInput = (input: GatewayInput): string =>
  `${input.transport} ${input.chunks.map((c) => c.toString('hex')).join(' | ')}`;
