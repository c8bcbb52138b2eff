/**
 * A raw RFC 2136 client for the gateway's tests: any record of any class in any section (what nsupdate cannot be
 * made to send: class NONE prerequisites with data, wrong counts, bad signatures), signed with core/tsig, over UDP or
 * TCP, and the answer read back (rcode, TSIG error, whether its MAC verifies).
 */
import dgram from 'node:dgram';
import net from 'node:net';
import { encodeName, RCODE_LIST } from '../../src/core/dns-wire.js';
import { extractTsig, signMessage, verifyMessage, type TsigKeyConfig } from '../../src/core/tsig.js';

export const CLASS = { IN: 1, NONE: 254, ANY: 255 } as const;
export const TYPE = { A: 1, NS: 2, SOA: 6, MX: 15, TXT: 16, AAAA: 28, ANY: 255 } as const;
export const RCODE_NAMES: readonly string[] = RCODE_LIST;

export interface Rr {
  name: string;
  type: number;
  klass: number;
  ttl?: number;
  rdata?: Buffer;
}

export const a = (address: string): Buffer => Buffer.from(address.split('.').map(Number));
export function aaaa(address: string): Buffer {
  const [head, tail = ''] = address.split('::');
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = address.includes('::') ? [...h, ...Array(8 - h.length - t.length).fill('0'), ...t] : h;
  const out = Buffer.alloc(16);
  groups.forEach((g, i) => out.writeUInt16BE(parseInt(g, 16), i * 2));
  return out;
}
export const txt = (value: string): Buffer => Buffer.concat([Buffer.from([value.length]), Buffer.from(value)]);

function record(r: Rr): Buffer {
  const fixed = Buffer.alloc(10);
  const rdata = r.rdata ?? Buffer.alloc(0);
  fixed.writeUInt16BE(r.type, 0);
  fixed.writeUInt16BE(r.klass, 2);
  fixed.writeUInt32BE(r.ttl ?? 0, 4);
  fixed.writeUInt16BE(rdata.length, 8);
  return Buffer.concat([encodeName(r.name), fixed, rdata]);
}

export interface MessageParts {
  id?: number;
  opcode?: number;
  flags?: number;
  /** Zone section entries (UPDATE) or questions: name, type, class. */
  zone?: { name: string; type?: number; klass?: number }[];
  prerequisites?: Rr[];
  updates?: Rr[];
  additional?: Rr[];
}

/** An unsigned message. */
export function buildMessage(p: MessageParts): Buffer {
  const header = Buffer.alloc(12);
  header.writeUInt16BE(p.id ?? Math.floor(Math.random() * 65536), 0);
  header.writeUInt16BE(p.flags ?? (p.opcode ?? 5) << 11, 2);
  const zone = p.zone ?? [];
  header.writeUInt16BE(zone.length, 4);
  header.writeUInt16BE(p.prerequisites?.length ?? 0, 6);
  header.writeUInt16BE(p.updates?.length ?? 0, 8);
  header.writeUInt16BE(p.additional?.length ?? 0, 10);
  const questions = zone.map((z) => {
    const tail = Buffer.alloc(4);
    tail.writeUInt16BE(z.type ?? TYPE.SOA, 0);
    tail.writeUInt16BE(z.klass ?? CLASS.IN, 2);
    return Buffer.concat([encodeName(z.name), tail]);
  });
  return Buffer.concat([
    header,
    ...questions,
    ...(p.prerequisites ?? []).map(record),
    ...(p.updates ?? []).map(record),
    ...(p.additional ?? []).map(record),
  ]);
}

export interface Signed {
  message: Buffer;
  mac: Buffer;
}

export function sign(message: Buffer, key: TsigKeyConfig, timeSigned = Math.floor(Date.now() / 1000)): Signed {
  return signMessage(message, key, { timeSigned, fudge: 300 });
}

export interface Answer {
  raw: Buffer;
  id: number;
  rcode: string;
  aa: boolean;
  tc: boolean;
  counts: [number, number, number, number];
  /** The TSIG record's error field, when the answer has one. */
  tsigError?: number;
  /** The answer's MAC is empty (an unsigned error answer). */
  unsignedTsig?: boolean;
  /** Verified with the key over the request's MAC. */
  verified?: boolean;
}

export function readAnswer(raw: Buffer, key?: TsigKeyConfig, requestMac?: Buffer): Answer {
  const flags = raw.readUInt16BE(2);
  const counts = [4, 6, 8, 10].map((o) => raw.readUInt16BE(o)) as Answer['counts'];
  const answer: Answer = {
    raw,
    id: raw.readUInt16BE(0),
    rcode: RCODE_NAMES[flags & 0xf] ?? String(flags & 0xf),
    aa: (flags & 0x400) !== 0,
    tc: (flags & 0x200) !== 0,
    counts,
  };
  const tsig = counts[3] > 0 ? extractTsig(raw) : undefined;
  if (tsig !== undefined) {
    answer.tsigError = tsig.tsig.error;
    answer.unsignedTsig = tsig.tsig.mac.length === 0;
    if (key !== undefined && requestMac !== undefined && !answer.unsignedTsig) {
      const verdict = verifyMessage(raw, key, { now: Math.floor(Date.now() / 1000), requestMac, fudge: 300 });
      answer.verified = verdict.ok || verdict.macVerified === true;
    }
  }
  return answer;
}

/** Send over UDP and wait for one answer (rejects after `timeoutMs`: no answer). */
export function udp(port: number, message: Buffer, timeoutMs = 3000): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = dgram.createSocket('udp4');
    const timer = setTimeout(() => {
      socket.close();
      reject(new Error('no answer'));
    }, timeoutMs);
    socket.once('message', (msg) => {
      clearTimeout(timer);
      socket.close();
      resolve(msg);
    });
    socket.send(message, port, '127.0.0.1');
  });
}

/** Send over TCP (2-byte length framing) and read one answer. */
export function tcp(port: number, message: Buffer, timeoutMs = 3000): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let buf = Buffer.alloc(0);
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error('no answer'));
    }, timeoutMs);
    socket.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      if (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
        clearTimeout(timer);
        socket.destroy();
        resolve(buf.subarray(2, 2 + buf.readUInt16BE(0)));
      }
    });
    socket.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    const frame = Buffer.alloc(2 + message.length);
    frame.writeUInt16BE(message.length, 0);
    message.copy(frame, 2);
    socket.write(frame);
  });
}

/** A key from `token add --tsig` output. */
export function keyFromOutput(out: string): TsigKeyConfig & { id: string; line: string } {
  const line = out.split('\n').find((l) => /^hmac-[a-z0-9]+:/.test(l));
  if (line === undefined) throw new Error(`no key in: ${out}`);
  const [algorithm, name, secret] = line.split(':') as [string, string, string];
  return {
    name,
    algorithm: algorithm as TsigKeyConfig['algorithm'],
    secret: Buffer.from(secret, 'base64'),
    id: name.split('.')[0]!,
    line,
  };
}
