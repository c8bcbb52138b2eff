/**
 * The gateway's messages on the wire (RFC 1035 §4, RFC 2136 §2, RFC 6891 for the OPT size): every section of a
 * request read into records, and the answers built. Names are compared lowercase without the final dot.
 */
import { RCODE_LIST, readName, WireFormatError, type RcodeName } from '../core/dns-wire.js';

export const HEADER_LENGTH = 12;
export const TYPE_OPT = 41;
export const TYPE_TSIG = 250;
export const TYPE_ANY = 255;

export const RCODES = Object.fromEntries(RCODE_LIST.map((name, code) => [name, code])) as Record<RcodeName, number>;
export type { RcodeName };

export interface Question {
  /** Lowercase, no final dot. */
  name: string;
  type: number;
  klass: number;
}

export interface WireRecord {
  name: string;
  type: number;
  klass: number;
  ttl: number;
  rdata: Buffer;
}

export interface Request {
  id: number;
  opcode: number;
  /** Recursion desired: echoed in the answer. */
  rd: boolean;
  /** The question section (UPDATE: the zone section). */
  questions: Question[];
  /** Where the question section ends: the answer copies it. */
  questionEnd: number;
  /** Answer section (UPDATE: prerequisites). */
  answers: WireRecord[];
  /** Authority section (UPDATE: updates). */
  authorities: WireRecord[];
  /** Additional records other than OPT and TSIG. */
  additionals: WireRecord[];
  /** The largest UDP answer the client takes (RFC 6891: at least 512). */
  udpSize: number;
  /** A TSIG record is the last record (core/tsig verifies it). */
  signed: boolean;
  /** The TSIG record's key name (lowercase, no final dot). */
  keyName?: string;
  algorithm?: string;
}

/** The header fields of any 12 bytes: enough to answer FORMERR, or to stay silent for a response. */
export function peekHeader(buf: Buffer): { id: number; qr: boolean; opcode: number; rd: boolean } | undefined {
  if (buf.length < HEADER_LENGTH) return undefined;
  const flags = buf.readUInt16BE(2);
  return {
    id: buf.readUInt16BE(0),
    qr: (flags & 0x8000) !== 0,
    opcode: (flags >> 11) & 0xf,
    rd: (flags & 0x100) !== 0,
  };
}

function readRecord(buf: Buffer, pos: number): { record: WireRecord; next: number } {
  const { name, next: afterName } = readName(buf, pos);
  if (afterName + 10 > buf.length) throw new WireFormatError('record header runs past the end of the message');
  const rdlength = buf.readUInt16BE(afterName + 8);
  const start = afterName + 10;
  if (start + rdlength > buf.length) throw new WireFormatError('RDATA runs past the end of the message');
  return {
    record: {
      name: name.toLowerCase(),
      type: buf.readUInt16BE(afterName),
      klass: buf.readUInt16BE(afterName + 2),
      ttl: buf.readUInt32BE(afterName + 4),
      rdata: buf.subarray(start, start + rdlength),
    },
    next: start + rdlength,
  };
}

/** Read a request; WireFormatError when it is not a well-formed message (→ FORMERR). */
export function decodeRequest(buf: Buffer): Request {
  const header = peekHeader(buf);
  if (header === undefined) throw new WireFormatError('shorter than a header');
  const counts = [4, 6, 8, 10].map((o) => buf.readUInt16BE(o)) as [number, number, number, number];
  let pos = HEADER_LENGTH;
  const questions: Question[] = [];
  for (let i = 0; i < counts[0]; i++) {
    const { name, next } = readName(buf, pos);
    if (next + 4 > buf.length) throw new WireFormatError('question runs past the end of the message');
    questions.push({ name: name.toLowerCase(), type: buf.readUInt16BE(next), klass: buf.readUInt16BE(next + 2) });
    pos = next + 4;
  }
  const questionEnd = pos;
  const sections: WireRecord[][] = [[], [], []];
  let udpSize = 512;
  let signed = false;
  let tsigName: string | undefined;
  let algorithm: string | undefined;
  let opts = 0;
  for (let s = 0; s < 3; s++) {
    for (let i = 0; i < counts[s + 1]!; i++) {
      const { record, next } = readRecord(buf, pos);
      pos = next;
      const last = s === 2 && i === counts[3] - 1;
      if (record.type === TYPE_TSIG) {
        if (!last) throw new WireFormatError('TSIG record is not the last record');
        signed = true;
        tsigName = record.name;
        algorithm = readName(buf, next - record.rdata.length).name.toLowerCase();
        continue;
      }
      if (record.type === TYPE_OPT) {
        if (s !== 2 || ++opts > 1 || record.name !== '') throw new WireFormatError('misplaced OPT record');
        udpSize = Math.max(512, record.klass);
        continue;
      }
      sections[s]!.push(record);
    }
  }
  if (pos !== buf.length) throw new WireFormatError(`${buf.length - pos} trailing bytes after the last record`);
  return {
    id: header.id,
    opcode: header.opcode,
    rd: header.rd,
    questions,
    questionEnd,
    answers: sections[0]!,
    authorities: sections[1]!,
    additionals: sections[2]!,
    udpSize,
    signed,
    ...(tsigName === undefined ? {} : { keyName: tsigName, algorithm }),
  };
}

/** A name in wire form, uncompressed. */
export function encodeName(name: string): Buffer {
  const parts: Buffer[] = [];
  for (const label of name === '' ? [] : name.split('.')) {
    const bytes = Buffer.from(label, 'latin1');
    parts.push(Buffer.from([bytes.length]), bytes);
  }
  parts.push(Buffer.from([0]));
  return Buffer.concat(parts);
}

export interface SoaData {
  zone: string;
  mname: string;
  rname: string;
  serial: number;
  refresh: number;
  retry: number;
  expire: number;
  minimum: number;
  ttl: number;
}

/** An SOA record (the zone discovery's answer). */
export function encodeSoa(soa: SoaData): Buffer {
  const owner = encodeName(soa.zone);
  const rdata = Buffer.concat([encodeName(soa.mname), encodeName(soa.rname), Buffer.alloc(20)]);
  const tail = rdata.length - 20;
  [soa.serial, soa.refresh, soa.retry, soa.expire, soa.minimum].forEach((v, i) =>
    rdata.writeUInt32BE(v >>> 0, tail + i * 4),
  );
  const fixed = Buffer.alloc(10);
  fixed.writeUInt16BE(6, 0);
  fixed.writeUInt16BE(1, 2);
  fixed.writeUInt32BE(soa.ttl, 4);
  fixed.writeUInt16BE(rdata.length, 8);
  return Buffer.concat([owner, fixed, rdata]);
}

export interface AnswerParts {
  id: number;
  opcode: number;
  rcode: RcodeName;
  rd?: boolean;
  /** Authoritative answer (zone discovery). */
  aa?: boolean;
  /** The request's question section, copied (RFC 2136 §3.8 allows the zone section copied or left out). */
  question?: { bytes: Buffer; count: number };
  answers?: readonly Buffer[];
  authorities?: readonly Buffer[];
}

/** An answer without TSIG (core/tsig signs or appends its record). */
export function encodeAnswer(p: AnswerParts): Buffer {
  const header = Buffer.alloc(HEADER_LENGTH);
  header.writeUInt16BE(p.id, 0);
  const flags = 0x8000 | ((p.opcode & 0xf) << 11) | (p.aa ? 0x400 : 0) | (p.rd ? 0x100 : 0) | RCODES[p.rcode];
  header.writeUInt16BE(flags, 2);
  header.writeUInt16BE(p.question?.count ?? 0, 4);
  header.writeUInt16BE(p.answers?.length ?? 0, 6);
  header.writeUInt16BE(p.authorities?.length ?? 0, 8);
  return Buffer.concat([header, p.question?.bytes ?? Buffer.alloc(0), ...(p.answers ?? []), ...(p.authorities ?? [])]);
}
