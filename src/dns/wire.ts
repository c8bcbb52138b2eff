/**
 * DNS wire format for what the bridge sends (RFC 1035 §4, RFC 2136 §2): names, the
 * records of an UPDATE message, and a minimal response parser. dns-packet cannot encode
 * class NONE / empty-RDATA deletes, so UPDATE bytes are built here, uncompressed.
 */
import { isIPv4, isIPv6 } from 'node:net';
import { addressBytes } from '../core/addresses.js';

export const OPCODE_QUERY = 0;
export const OPCODE_UPDATE = 5;

export const CLASS_IN = 1;
/** RFC 2136: "RRset does not exist" prerequisites and "delete an RR" updates. */
export const CLASS_NONE = 254;
/** RFC 2136: "RRset exists" prerequisites and "delete an RRset" updates; TSIG records. */
export const CLASS_ANY = 255;

export const TYPE_CODES = { A: 1, NS: 2, CNAME: 5, SOA: 6, MX: 15, AAAA: 28 } as const;
export const TYPE_TSIG = 250;

/** The record types the bridge reads or writes. There is deliberately no `ANY`. */
export type RecordType = keyof typeof TYPE_CODES;

export type RecordData =
  | { type: 'A'; address: string }
  | { type: 'AAAA'; address: string }
  | { type: 'MX'; preference: number; exchange: string }
  | { type: 'CNAME'; target: string };

/** RFC 2136 §2.4 prerequisites (only the two value-independent kinds are needed). */
export type Prerequisite =
  /** §2.4.3: class NONE, TTL 0, empty RDATA. */
  | { kind: 'rrset-absent'; name: string; type: RecordType }
  /** §2.4.1: class ANY, TTL 0, empty RDATA. */
  | { kind: 'rrset-exists'; name: string; type: RecordType };

/** RFC 2136 §2.5 updates: typed RRset deletes and adds. */
export type UpdateOperation =
  /** §2.5.2: class ANY, TTL 0, empty RDATA, a concrete type. */
  | { kind: 'delete-rrset'; name: string; type: RecordType }
  /** §2.5.1: class IN. */
  | { kind: 'add'; name: string; ttl: number; data: RecordData };

export interface UpdateMessage {
  id: number;
  /** Zone apex (ZNAME). */
  zone: string;
  prerequisites: readonly Prerequisite[];
  updates: readonly UpdateOperation[];
}

/** A malformed name, record or message (ours: a bug; theirs: a protocol error). */
export class WireFormatError extends Error {
  override name = 'WireFormatError';
}

const HEADER_LENGTH = 12;

/** Uncompressed wire form of a name (`a.b` or `a.b.`; `` or `.` is the root). */
export function encodeName(name: string): Buffer {
  const text = name.endsWith('.') ? name.slice(0, -1) : name;
  const labels = text === '' ? [] : text.split('.');
  // One allocation per name: it is encoded several times for every host of every UPDATE.
  // 'ascii' writes one byte per UTF-16 unit, so a label's byte length is its string length.
  let length = 1;
  for (const label of labels) {
    if (label.length === 0 || label.length > 63) throw new WireFormatError(`bad label length in name ${JSON.stringify(name)}`);
    length += 1 + label.length;
  }
  if (length > 255) throw new WireFormatError(`name too long: ${JSON.stringify(name)}`);
  const out = Buffer.allocUnsafe(length);
  let pos = 0;
  for (const label of labels) {
    out[pos++] = label.length;
    pos += out.write(label, pos, 'ascii');
  }
  out[pos] = 0;
  return out;
}

/** Canonical wire form (RFC 4034 §6.2: lowercase, uncompressed), used inside TSIG MACs. */
export function encodeCanonicalName(name: string): Buffer {
  return encodeName(name.toLowerCase());
}

function u16(value: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(value);
  return b;
}

function u32(value: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(value);
  return b;
}

export function encodeRdata(data: RecordData): Buffer {
  switch (data.type) {
    case 'A':
      if (!isIPv4(data.address)) throw new WireFormatError(`not an IPv4 address: ${data.address}`);
      return Buffer.from(addressBytes(data.address));
    case 'AAAA':
      if (!isIPv6(data.address)) throw new WireFormatError(`not an IPv6 address: ${data.address}`);
      return Buffer.from(addressBytes(data.address));
    case 'MX':
      return Buffer.concat([u16(data.preference), encodeName(data.exchange)]);
    case 'CNAME':
      return encodeName(data.target);
  }
}

/** One resource record: NAME TYPE CLASS TTL RDLENGTH RDATA. */
export function encodeRecord(name: string, type: number, klass: number, ttl: number, rdata: Buffer): Buffer {
  return Buffer.concat([encodeName(name), u16(type), u16(klass), u32(ttl), u16(rdata.length), rdata]);
}

const EMPTY = Buffer.alloc(0);

export function encodePrerequisite(p: Prerequisite): Buffer {
  const klass = p.kind === 'rrset-absent' ? CLASS_NONE : CLASS_ANY;
  return encodeRecord(p.name, TYPE_CODES[p.type], klass, 0, EMPTY);
}

export function encodeUpdateOperation(u: UpdateOperation): Buffer {
  if (u.kind === 'delete-rrset') return encodeRecord(u.name, TYPE_CODES[u.type], CLASS_ANY, 0, EMPTY);
  return encodeRecord(u.name, TYPE_CODES[u.data.type], CLASS_IN, u.ttl, encodeRdata(u.data));
}

/**
 * A complete UPDATE message without additional records (the TSIG is appended by the
 * signer, which increments ARCOUNT).
 */
export function encodeUpdate(msg: UpdateMessage): Buffer {
  const header = Buffer.alloc(HEADER_LENGTH);
  header.writeUInt16BE(msg.id, 0);
  header.writeUInt16BE(OPCODE_UPDATE << 11, 2); // QR=0, opcode, all other flags 0
  header.writeUInt16BE(1, 4); // ZOCOUNT
  header.writeUInt16BE(msg.prerequisites.length, 6); // PRCOUNT
  header.writeUInt16BE(msg.updates.length, 8); // UPCOUNT
  header.writeUInt16BE(0, 10); // ADCOUNT
  const zone = Buffer.concat([encodeName(msg.zone), u16(TYPE_CODES.SOA), u16(CLASS_IN)]);
  return Buffer.concat([
    header,
    zone,
    ...msg.prerequisites.map(encodePrerequisite),
    ...msg.updates.map(encodeUpdateOperation),
  ]);
}

/** Bytes the prerequisites and updates of a plan add to a message (for size caps). */
export function encodedLength(prerequisites: readonly Prerequisite[], updates: readonly UpdateOperation[]): number {
  let n = 0;
  for (const p of prerequisites) n += encodePrerequisite(p).length;
  for (const u of updates) n += encodeUpdateOperation(u).length;
  return n;
}

// ---------------------------------------------------------------------------------------
// Parsing (responses)

export interface MessageHeader {
  id: number;
  qr: boolean;
  opcode: number;
  aa: boolean;
  tc: boolean;
  /** The 4-bit header RCODE (no EDNS is sent, so there is no extended part). */
  rcode: number;
  qdcount: number;
  ancount: number;
  nscount: number;
  arcount: number;
}

/** The last record of the additional section, located but not decoded. */
export interface RecordLocation {
  /** Offset of the record's owner name: the message without it is `buf.subarray(0, start)`. */
  start: number;
  name: string;
  type: number;
  klass: number;
  ttl: number;
  rdataStart: number;
  rdataLength: number;
}

export interface ParsedMessage {
  header: MessageHeader;
  lastAdditional: RecordLocation | undefined;
}

export function parseHeader(buf: Buffer): MessageHeader {
  if (buf.length < HEADER_LENGTH) throw new WireFormatError(`message shorter than a header (${buf.length} bytes)`);
  const flags = buf.readUInt16BE(2);
  return {
    id: buf.readUInt16BE(0),
    qr: (flags & 0x8000) !== 0,
    opcode: (flags >> 11) & 0xf,
    aa: (flags & 0x0400) !== 0,
    tc: (flags & 0x0200) !== 0,
    rcode: flags & 0xf,
    qdcount: buf.readUInt16BE(4),
    ancount: buf.readUInt16BE(6),
    nscount: buf.readUInt16BE(8),
    arcount: buf.readUInt16BE(10),
  };
}

/**
 * Read a possibly compressed name at `offset`. Returns the name (lowercase-preserving,
 * no trailing dot, `` for the root) and the offset just past it in the original position.
 */
export function readName(buf: Buffer, offset: number): { name: string; next: number } {
  const labels: string[] = [];
  let pos = offset;
  let next = -1;
  let jumps = 0;
  for (;;) {
    if (pos >= buf.length) throw new WireFormatError('name runs past the end of the message');
    const len = buf[pos]!;
    if (len === 0) {
      if (next < 0) next = pos + 1;
      break;
    }
    if ((len & 0xc0) === 0xc0) {
      if (pos + 1 >= buf.length) throw new WireFormatError('truncated compression pointer');
      if (++jumps > 64) throw new WireFormatError('compression pointer loop');
      if (next < 0) next = pos + 2;
      pos = ((len & 0x3f) << 8) | buf[pos + 1]!;
      continue;
    }
    if ((len & 0xc0) !== 0) throw new WireFormatError(`unsupported label type 0x${len.toString(16)}`);
    if (pos + 1 + len > buf.length) throw new WireFormatError('label runs past the end of the message');
    labels.push(buf.toString('latin1', pos + 1, pos + 1 + len));
    pos += 1 + len;
  }
  return { name: labels.join('.'), next };
}

function readRecord(buf: Buffer, offset: number): RecordLocation & { next: number } {
  const { name, next: afterName } = readName(buf, offset);
  if (afterName + 10 > buf.length) throw new WireFormatError('record header runs past the end of the message');
  const rdataLength = buf.readUInt16BE(afterName + 8);
  const rdataStart = afterName + 10;
  if (rdataStart + rdataLength > buf.length) throw new WireFormatError('RDATA runs past the end of the message');
  return {
    start: offset,
    name,
    type: buf.readUInt16BE(afterName),
    klass: buf.readUInt16BE(afterName + 2),
    ttl: buf.readUInt32BE(afterName + 4),
    rdataStart,
    rdataLength,
    next: rdataStart + rdataLength,
  };
}

/**
 * Walk a message: header, question/zone section, then every record, returning the last
 * additional record (where a TSIG must be). A TSIG anywhere else is a format error.
 */
export function parseMessage(buf: Buffer): ParsedMessage {
  const header = parseHeader(buf);
  let pos = HEADER_LENGTH;
  for (let i = 0; i < header.qdcount; i++) {
    pos = readName(buf, pos).next + 4;
    if (pos > buf.length) throw new WireFormatError('question runs past the end of the message');
  }
  const total = header.ancount + header.nscount + header.arcount;
  let last: RecordLocation | undefined;
  for (let i = 0; i < total; i++) {
    const { next, ...record } = readRecord(buf, pos);
    if (record.type === TYPE_TSIG && i !== total - 1) throw new WireFormatError('TSIG record is not the last record');
    pos = next;
    if (i === total - 1 && header.arcount > 0) last = record;
  }
  if (pos !== buf.length) throw new WireFormatError(`${buf.length - pos} trailing bytes after the last record`);
  return { header, lastAdditional: last };
}
