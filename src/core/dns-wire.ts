/**
 * DNS wire format for what the bridge sends (RFC 1035 §4, RFC 2136 §2): names, the
 * records of an UPDATE message, and a minimal response parser. dns-packet cannot encode
 * class NONE / empty-RDATA deletes, so UPDATE bytes are built here.
 */
import { isIPv4, isIPv6 } from 'node:net';
import { addressBytes } from './addresses.js';

export const OPCODE_QUERY = 0;
export const OPCODE_UPDATE = 5;

export const CLASS_IN = 1;
/** RFC 2136: "RRset does not exist" prerequisites and "delete an RR" updates. */
export const CLASS_NONE = 254;
/** RFC 2136: "RRset exists" prerequisites and "delete an RRset" updates; TSIG records. */
export const CLASS_ANY = 255;

export const TYPE_CODES = { A: 1, NS: 2, CNAME: 5, SOA: 6, MX: 15, TXT: 16, AAAA: 28 } as const;
export const TYPE_TSIG = 250;

/** RCODE names by value, 0–10 (RFC 1035 §4.1.1, RFC 2136 §2.2): the gateway's answers, read by clients and metrics. */
export const RCODE_LIST = [
  'NOERROR',
  'FORMERR',
  'SERVFAIL',
  'NXDOMAIN',
  'NOTIMP',
  'REFUSED',
  'YXDOMAIN',
  'YXRRSET',
  'NXRRSET',
  'NOTAUTH',
  'NOTZONE',
] as const;
export type RcodeName = (typeof RCODE_LIST)[number];

/** The record types the bridge reads or writes. There is deliberately no `ANY`. */
export type RecordType = keyof typeof TYPE_CODES;

export type RecordData =
  | { type: 'A'; address: string }
  | { type: 'AAAA'; address: string }
  | { type: 'MX'; preference: number; exchange: string }
  | { type: 'CNAME'; target: string }
  /** One character-string (RFC 1035 §3.3.14): at most 255 bytes of ASCII. */
  | { type: 'TXT'; text: string };

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
/** The zone apex's name in every UPDATE: the zone section, right after the header. */
const ZONE_NAME_OFFSET = HEADER_LENGTH;
/** RFC 1035 §4.1.4: a compression pointer (top two bits set) to the zone apex. */
const POINTER_TO_ZONE = 0xc000 | ZONE_NAME_OFFSET;

/** A name's labels, checked (`a.b` or `a.b.`; `` or `.` is the root). */
function labelsOf(name: string): string[] {
  return splitLabels(name.endsWith('.') ? name.slice(0, -1) : name, name);
}

/** Labels of a name without its final dot (`` is the root); an empty label anywhere is an error. */
function splitLabels(text: string, name: string): string[] {
  if (text === '') return [];
  const labels = text.split('.');
  for (const label of labels) {
    if (label.length === 0 || label.length > 63)
      throw new WireFormatError(`bad label length in name ${JSON.stringify(name)}`);
  }
  return labels;
}

/** Wire length of labels followed by a terminator of `tail` bytes (1: root label, 2: pointer). */
function labelsLength(labels: readonly string[], tail: number): number {
  let length = tail;
  // 'ascii' writes one byte per UTF-16 unit, so a label's byte length is its string length.
  for (const label of labels) length += 1 + label.length;
  return length;
}

function writeLabels(buf: Buffer, pos: number, labels: readonly string[]): number {
  for (const label of labels) {
    buf[pos++] = label.length;
    pos += buf.write(label, pos, 'ascii');
  }
  return pos;
}

/** Uncompressed wire form of a name (`a.b` or `a.b.`; `` or `.` is the root). */
export function encodeName(name: string): Buffer {
  const labels = labelsOf(name);
  const length = labelsLength(labels, 1);
  if (length > 255) throw new WireFormatError(`name too long: ${JSON.stringify(name)}`);
  const out = Buffer.allocUnsafe(length);
  out[writeLabels(out, 0, labels)] = 0;
  return out;
}

/** Canonical wire form (RFC 4034 §6.2: lowercase, uncompressed), used inside TSIG MACs. */
export function encodeCanonicalName(name: string): Buffer {
  return encodeName(name.toLowerCase());
}

/** The zone apex of a message, as owner names are compared with it. */
interface Apex {
  /** Owner forms worked out so far: a host's records repeat two owner names. */
  owners: Map<string, OwnerForm>;
  /** As configured, no trailing dot; `` for the root. */
  text: string;
  /** Lowercase `text`. */
  name: string;
  /** Uncompressed wire length. */
  wireLength: number;
}

function apexOf(zone: string): Apex {
  const text = zone.endsWith('.') ? zone.slice(0, -1) : zone;
  const wireLength = labelsLength(labelsOf(text), 1);
  if (wireLength > 255) throw new WireFormatError(`name too long: ${JSON.stringify(zone)}`);
  return { text, name: text.toLowerCase(), wireLength, owners: new Map() };
}

/**
 * An owner name as written: its labels above the zone apex and a pointer to the apex's name
 * in the zone section, or every label and the root when the name is outside the zone (or the
 * zone is the root). Every owner of an UPDATE is in its zone, so this is most of the saving.
 */
interface OwnerForm {
  labels: string[];
  toApex: boolean;
}

function ownerForm(name: string, apex: Apex): OwnerForm {
  let form = apex.owners.get(name);
  if (form === undefined) {
    form = splitOwner(name, apex);
    apex.owners.set(name, form);
  }
  return form;
}

function splitOwner(name: string, apex: Apex): OwnerForm {
  const text = name.endsWith('.') ? name.slice(0, -1) : name;
  const lower = text.toLowerCase();
  let prefix: string | undefined;
  if (apex.name !== '') {
    if (lower === apex.name) prefix = '';
    // At least one character and a dot before the apex: ".ex.org" is no name under ex.org.
    else if (
      lower.length > apex.name.length + 1 &&
      lower.endsWith(apex.name) &&
      lower[lower.length - apex.name.length - 1] === '.'
    ) {
      prefix = text.slice(0, text.length - apex.name.length - 1);
    }
  }
  if (prefix === undefined) {
    const labels = splitLabels(text, name);
    if (labelsLength(labels, 1) > 255) throw new WireFormatError(`name too long: ${JSON.stringify(name)}`);
    return { labels, toApex: false };
  }
  const labels = splitLabels(prefix, name);
  // The whole name, as a reader expands it, must still fit the 255-byte limit.
  if (labelsLength(labels, 0) + apex.wireLength > 255)
    throw new WireFormatError(`name too long: ${JSON.stringify(name)}`);
  return { labels, toApex: true };
}

function ownerLength(form: OwnerForm): number {
  return labelsLength(form.labels, form.toApex ? 2 : 1);
}

function writeOwner(buf: Buffer, pos: number, form: OwnerForm): number {
  pos = writeLabels(buf, pos, form.labels);
  if (form.toApex) return buf.writeUInt16BE(POINTER_TO_ZONE, pos);
  buf[pos] = 0;
  return pos + 1;
}

/** RDATA names (CNAME target, MX exchange) are written uncompressed. */
function rdataNameLength(name: string): number {
  const length = labelsLength(labelsOf(name), 1);
  if (length > 255) throw new WireFormatError(`name too long: ${JSON.stringify(name)}`);
  return length;
}

function writeRdataName(buf: Buffer, pos: number, name: string): number {
  pos = writeLabels(buf, pos, labelsOf(name));
  buf[pos] = 0;
  return pos + 1;
}

function rdataLength(data: RecordData): number {
  switch (data.type) {
    case 'A':
      if (!isIPv4(data.address)) throw new WireFormatError(`not an IPv4 address: ${data.address}`);
      return 4;
    case 'AAAA':
      if (!isIPv6(data.address)) throw new WireFormatError(`not an IPv6 address: ${data.address}`);
      return 16;
    case 'MX':
      return 2 + rdataNameLength(data.exchange);
    case 'CNAME':
      return rdataNameLength(data.target);
    case 'TXT':
      // eslint-disable-next-line no-control-regex
      if (data.text.length > 255 || /[^\x00-\x7f]/.test(data.text))
        throw new WireFormatError('a TXT string must be at most 255 bytes of ASCII');
      return 1 + data.text.length;
  }
}

function writeRdata(buf: Buffer, pos: number, data: RecordData): number {
  switch (data.type) {
    case 'A':
    case 'AAAA': {
      const bytes = addressBytes(data.address);
      buf.set(bytes, pos);
      return pos + bytes.length;
    }
    case 'MX':
      pos = buf.writeUInt16BE(data.preference, pos);
      return writeRdataName(buf, pos, data.exchange);
    case 'CNAME':
      return writeRdataName(buf, pos, data.target);
    case 'TXT':
      buf[pos] = data.text.length;
      return pos + 1 + buf.write(data.text, pos + 1, 'latin1');
  }
}

/** NAME TYPE CLASS TTL RDLENGTH: 10 bytes after the owner name. */
const RECORD_FIXED = 10;

/** One record of a message, with the owner's form worked out once for sizing and writing. */
interface RecordPlan {
  owner: OwnerForm;
  type: number;
  klass: number;
  ttl: number;
  /** Undefined: empty RDATA. */
  data: RecordData | undefined;
  length: number;
}

function planPrerequisite(p: Prerequisite, apex: Apex): RecordPlan {
  const owner = ownerForm(p.name, apex);
  // §2.4.3 "RRset does not exist": class NONE; §2.4.1 "RRset exists": class ANY; TTL 0, no RDATA.
  const klass = p.kind === 'rrset-absent' ? CLASS_NONE : CLASS_ANY;
  return { owner, type: TYPE_CODES[p.type], klass, ttl: 0, data: undefined, length: ownerLength(owner) + RECORD_FIXED };
}

function planUpdate(u: UpdateOperation, apex: Apex): RecordPlan {
  const owner = ownerForm(u.name, apex);
  if (u.kind === 'delete-rrset')
    return {
      owner,
      type: TYPE_CODES[u.type],
      klass: CLASS_ANY,
      ttl: 0,
      data: undefined,
      length: ownerLength(owner) + RECORD_FIXED,
    };
  return {
    owner,
    type: TYPE_CODES[u.data.type],
    klass: CLASS_IN,
    ttl: u.ttl,
    data: u.data,
    length: ownerLength(owner) + RECORD_FIXED + rdataLength(u.data),
  };
}

function writeRecord(buf: Buffer, pos: number, r: RecordPlan): number {
  pos = writeOwner(buf, pos, r.owner);
  pos = buf.writeUInt16BE(r.type, pos);
  pos = buf.writeUInt16BE(r.klass, pos);
  pos = buf.writeUInt32BE(r.ttl, pos);
  const lengthAt = pos;
  pos = r.data === undefined ? pos + 2 : writeRdata(buf, pos + 2, r.data);
  buf.writeUInt16BE(pos - lengthAt - 2, lengthAt);
  return pos;
}

/**
 * A complete UPDATE message without additional records (the TSIG is appended by the
 * signer, which increments ARCOUNT), in one allocation. Owner names point at the zone
 * apex in the zone section (RFC 1035 §4.1.4), as nsupdate's do; RDATA names are whole.
 */
export function encodeUpdate(msg: UpdateMessage): Buffer {
  const apex = apexOf(msg.zone);
  const records = [
    ...msg.prerequisites.map((p) => planPrerequisite(p, apex)),
    ...msg.updates.map((u) => planUpdate(u, apex)),
  ];
  let length = HEADER_LENGTH + apex.wireLength + 4;
  for (const r of records) length += r.length;
  const buf = Buffer.allocUnsafe(length);
  buf.writeUInt16BE(msg.id, 0);
  buf.writeUInt16BE(OPCODE_UPDATE << 11, 2); // QR=0, opcode, all other flags 0
  buf.writeUInt16BE(1, 4); // ZOCOUNT
  buf.writeUInt16BE(msg.prerequisites.length, 6); // PRCOUNT
  buf.writeUInt16BE(msg.updates.length, 8); // UPCOUNT
  buf.writeUInt16BE(0, 10); // ADCOUNT
  let pos = writeRdataName(buf, ZONE_NAME_OFFSET, apex.text);
  pos = buf.writeUInt16BE(TYPE_CODES.SOA, pos);
  pos = buf.writeUInt16BE(CLASS_IN, pos);
  for (const r of records) pos = writeRecord(buf, pos, r);
  if (pos !== length) throw new WireFormatError(`encoded ${pos} bytes, planned ${length}`);
  return buf;
}

/** Bytes the prerequisites and updates of a plan add to an UPDATE for `zone` (for size caps). */
export function encodedLength(
  zone: string,
  prerequisites: readonly Prerequisite[],
  updates: readonly UpdateOperation[],
): number {
  const apex = apexOf(zone);
  let n = 0;
  for (const p of prerequisites) n += planPrerequisite(p, apex).length;
  for (const u of updates) n += planUpdate(u, apex).length;
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

/** RFC 1035 §2.3.4: a name is at most 255 bytes on the wire, the root's zero byte included. */
const MAX_NAME_WIRE_LENGTH = 255;

/**
 * Read a possibly compressed name at `offset`. Returns the name (lowercase-preserving,
 * no trailing dot, `` for the root) and the offset just past it in the original position.
 * WireFormatError for a name over 255 bytes or with a dot inside a label.
 */
export function readName(buf: Buffer, offset: number): { name: string; next: number } {
  const labels: string[] = [];
  let wireLength = 1;
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
    const label = buf.toString('latin1', pos + 1, pos + 1 + len);
    // As text a dot inside a label would read as two labels: such a name cannot be written back (nor compared).
    if (label.includes('.')) throw new WireFormatError('a label with a dot in it');
    wireLength += 1 + len;
    if (wireLength > MAX_NAME_WIRE_LENGTH) throw new WireFormatError('name longer than 255 bytes');
    labels.push(label);
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
