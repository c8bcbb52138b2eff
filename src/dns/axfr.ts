/**
 * The ZoneTransfer port: a zone read whole from its primary (AXFR over TCP, RFC 5936), the request signed with the
 * zone's key and the answer's TSIG verified over the whole stream of messages (RFC 8945 §5.3.1): the first message as
 * any answer (request MAC included), each later signed one over the previous MAC, the messages since it and its
 * timers; at most 99 unsigned messages in a row, and the last one signed. Not TcpTransport: it matches one answer
 * per request, a transfer is many. docs/operators.md, "Drift".
 */
import { createHmac, randomInt, timingSafeEqual } from 'node:crypto';
import net from 'node:net';
import type { ZoneContents, ZoneRecord, ZoneRecordType, ZoneTransfer } from '../app/ports.js';
import type { Config, ZoneConfig } from '../config/schema.js';
import { canonicalIPv6 } from '../core/addresses.js';
import { DnsUpdateError } from '../core/errors.js';
import { connectionFailure, protocolFailure, rcodeName, responseFailure, timeoutFailure } from './rcode.js';
import { algorithmFromWireName, extractTsig, signRequest, verifyMessage } from '../core/tsig.js';
import { CLASS_IN, WireFormatError, encodeName, parseHeader, readName } from '../core/dns-wire.js';

const TYPE_AXFR = 252;
/** RFC 8945 §5.3.1: a client accepts up to 99 unsigned messages between two signed ones. */
const MAX_UNSIGNED_RUN = 99;
const HEADER_LENGTH = 12;

const TYPES: Readonly<Record<number, ZoneRecordType>> = { 1: 'A', 2: 'NS', 5: 'CNAME', 6: 'SOA', 15: 'MX', 28: 'AAAA' };

const GRANT_HINT =
  'grant the key zone transfers (Knot: an acl with action transfer; BIND: allow-transfer { key NAME; }; ' +
  'PowerDNS: the zone metadata TSIG-ALLOW-AXFR NAME; ' +
  'docs/operators.md, "Drift")';

/** The AXFR question for `zone`, with message ID `id`, unsigned. */
export function encodeAxfrQuery(id: number, zone: string): Buffer {
  const name = encodeName(zone);
  const buf = Buffer.alloc(HEADER_LENGTH + name.length + 4);
  buf.writeUInt16BE(id, 0);
  buf.writeUInt16BE(1, 4); // QDCOUNT; opcode QUERY, no flags
  name.copy(buf, HEADER_LENGTH);
  buf.writeUInt16BE(TYPE_AXFR, HEADER_LENGTH + name.length);
  buf.writeUInt16BE(CLASS_IN, HEADER_LENGTH + name.length + 2);
  return buf;
}

function u16(n: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(n);
  return b;
}

/**
 * Verifies the TSIG of each message of one answer stream, in order (RFC 8945 §5.3.1). Throws a DnsUpdateError at the
 * first message that fails; `finish` checks that the stream ended on a signed message.
 */
export class TsigStreamVerifier {
  private priorMac: Buffer | undefined;
  /** The unsigned messages since the last signed one: part of the next MAC's input. */
  private unsigned: Buffer[] = [];
  private readonly keyName: string;

  constructor(
    private readonly zone: ZoneConfig,
    private readonly requestMac: Buffer,
    private readonly now: () => number,
    private readonly fudge: number,
  ) {
    this.keyName = zone.key.name.toLowerCase().replace(/\.$/, '');
  }

  accept(message: Buffer): void {
    const zone = this.zone.name;
    const rcode = parseHeader(message).rcode;
    if (this.priorMac === undefined) {
      const verdict = verifyMessage(message, this.zone.key, {
        now: this.now(),
        requestMac: this.requestMac,
        fudge: this.fudge,
      });
      if (verdict.ok && rcode !== 0) throw refused(zone, rcode, true);
      if (!verdict.ok && verdict.reason === 'unsigned' && rcode !== 0) throw refused(zone, rcode, false);
      const failure = responseFailure(zone, rcode, verdict);
      if (failure || !verdict.ok) throw failure ?? protocolFailure(zone, 'transfer answer failed verification');
      this.priorMac = verdict.tsig.mac;
      return;
    }
    let extracted: ReturnType<typeof extractTsig>;
    try {
      extracted = extractTsig(message);
    } catch (err) {
      throw protocolFailure(zone, `transfer message with a malformed TSIG: ${(err as Error).message}`, err);
    }
    if (!extracted) {
      if (rcode !== 0) throw refused(zone, rcode, false);
      this.unsigned.push(message);
      if (this.unsigned.length > MAX_UNSIGNED_RUN)
        throw tsigFailure(zone, `more than ${MAX_UNSIGNED_RUN} unsigned transfer messages in a row`);
      return;
    }
    const { tsig, unsigned } = extracted;
    if (tsig.keyName.toLowerCase().replace(/\.$/, '') !== this.keyName)
      throw tsigFailure(zone, `transfer message signed with key ${tsig.keyName}, expected ${this.zone.key.name}`);
    if (algorithmFromWireName(tsig.algorithm) !== this.zone.key.algorithm)
      throw tsigFailure(zone, `transfer message signed with ${tsig.algorithm}, expected ${this.zone.key.algorithm}`);
    if (tsig.error !== 0) throw tsigFailure(zone, `the primary reported TSIG error ${rcodeName(tsig.error)}`);
    // §5.3.1 "TSIG timers": Time Signed (48 bits) and Fudge only.
    const timers = Buffer.alloc(8);
    timers.writeUInt16BE(Math.floor(tsig.timeSigned / 2 ** 32), 0);
    timers.writeUInt32BE(tsig.timeSigned % 2 ** 32, 2);
    timers.writeUInt16BE(tsig.fudge, 6);
    const h = createHmac(this.zone.key.algorithm.slice('hmac-'.length), this.zone.key.secret);
    h.update(u16(this.priorMac.length)).update(this.priorMac);
    for (const m of this.unsigned) h.update(m);
    const expected = h.update(unsigned).update(timers).digest();
    if (tsig.mac.length !== expected.length || !timingSafeEqual(tsig.mac, expected))
      throw tsigFailure(zone, 'a transfer message failed TSIG verification: MAC does not match');
    const skew = Math.floor(this.now()) - tsig.timeSigned;
    const fudge = Math.max(tsig.fudge, this.fudge);
    if (Math.abs(skew) > fudge)
      throw tsigFailure(zone, `a transfer message was signed ${skew} s off our clock (fudge ${fudge} s)`);
    if (rcode !== 0) throw refused(zone, rcode, true);
    this.priorMac = tsig.mac;
    this.unsigned = [];
  }

  /** The stream is complete: its last message must have been signed. */
  finish(): void {
    if (this.priorMac === undefined || this.unsigned.length > 0)
      throw tsigFailure(this.zone.name, 'the last transfer message is not signed');
  }
}

function refused(zone: string, rcode: number, signed: boolean): DnsUpdateError {
  const name = rcodeName(rcode);
  const note = signed ? '' : ', unsigned';
  return new DnsUpdateError(
    'ERR_DNS_RCODE',
    zone,
    `the primary refused the zone transfer (${name}${note}): ${GRANT_HINT}`,
    {
      rcode: name,
      signedAnswer: signed,
    },
  );
}

function tsigFailure(zone: string, what: string): DnsUpdateError {
  return new DnsUpdateError('ERR_DNS_TSIG', zone, `${what}: the transfer is not trusted`);
}

/** The records of a message's answer section (the types in TYPES; others skipped). */
export function answerRecords(buf: Buffer): ZoneRecord[] {
  const header = parseHeader(buf);
  let pos = HEADER_LENGTH;
  for (let i = 0; i < header.qdcount; i++) pos = readName(buf, pos).next + 4;
  const out: ZoneRecord[] = [];
  for (let i = 0; i < header.ancount; i++) {
    const { name, next } = readName(buf, pos);
    if (next + 10 > buf.length) throw new WireFormatError('record header runs past the end of the message');
    const type = buf.readUInt16BE(next);
    const ttl = buf.readUInt32BE(next + 4);
    const start = next + 10;
    const length = buf.readUInt16BE(next + 8);
    if (start + length > buf.length) throw new WireFormatError('RDATA runs past the end of the message');
    pos = start + length;
    const known = TYPES[type];
    if (known === undefined || buf.readUInt16BE(next + 2) !== CLASS_IN) continue;
    out.push({ name: name.toLowerCase(), type: known, ttl, value: rdataText(buf, known, start, length) });
  }
  return out;
}

function rdataText(buf: Buffer, type: ZoneRecordType, start: number, length: number): string {
  const need = (n: number) => {
    if (length < n) throw new WireFormatError(`${type} RDATA of ${length} bytes`);
  };
  switch (type) {
    case 'A':
      need(4);
      return [...buf.subarray(start, start + 4)].join('.');
    case 'AAAA': {
      need(16);
      const groups: string[] = [];
      for (let i = 0; i < 16; i += 2) groups.push(buf.readUInt16BE(start + i).toString(16));
      return canonicalIPv6(groups.join(':'));
    }
    case 'MX':
      need(3);
      return `${buf.readUInt16BE(start)} ${readName(buf, start + 2).name.toLowerCase()}`;
    case 'NS':
    case 'CNAME':
    case 'SOA':
      // SOA: the primary's name (MNAME) comes first; the serial is read apart (soaSerial).
      return readName(buf, start).name.toLowerCase();
  }
}

/** The serial of the SOA record whose RDATA starts at `start`. */
function soaSerial(buf: Buffer, start: number): number {
  const afterRname = readName(buf, readName(buf, start).next).next;
  if (afterRname + 4 > buf.length) throw new WireFormatError('SOA RDATA truncated');
  return buf.readUInt32BE(afterRname);
}

/** The first answer record's RDATA offset when it is a SOA (for the serial). */
function firstSoaRdata(buf: Buffer): number | undefined {
  const header = parseHeader(buf);
  let pos = HEADER_LENGTH;
  for (let i = 0; i < header.qdcount; i++) pos = readName(buf, pos).next + 4;
  if (header.ancount === 0) return undefined;
  const { next } = readName(buf, pos);
  return buf.readUInt16BE(next) === 6 ? next + 10 : undefined;
}

export interface TransferOptions {
  /** Seconds since the epoch (before dns.clockOffsetSeconds); tests inject one. */
  clock?: () => number;
}

/**
 * Transfer `zone` from its primary. Waits at most dns.timeout for the connection and then for each message
 * (a large zone takes longer as a whole). Rejects with a DnsUpdateError.
 */
export function transferZone(zone: ZoneConfig, dns: Config['dns'], opts: TransferOptions = {}): Promise<ZoneContents> {
  const clock = opts.clock ?? (() => Date.now() / 1000);
  const now = () => clock() + dns.clockOffsetSeconds;
  const { host, port } = zone.primary;
  const id = randomInt(0, 0x10000);
  const signed = signRequest(encodeAxfrQuery(id, zone.name), zone.key, {
    timeSigned: Math.floor(now()),
    fudge: dns.fudge,
  });
  const verifier = new TsigStreamVerifier(zone, signed.mac, now, dns.fudge);

  return new Promise<ZoneContents>((resolve, reject) => {
    const records: ZoneRecord[] = [];
    let serial: number | undefined;
    let soas = 0;
    let settled = false;
    let buffered = Buffer.alloc(0);
    const socket = net.connect({ host, port, noDelay: true });
    const settle = (err: DnsUpdateError | undefined, contents?: ZoneContents): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      if (err) reject(err);
      else resolve(contents!);
    };
    let timer = setTimeout(() => settle(timeoutFailure(zone.name, dns.timeoutMs)), dns.timeoutMs);
    const idle = () => {
      clearTimeout(timer);
      timer = setTimeout(() => settle(timeoutFailure(zone.name, dns.timeoutMs)), dns.timeoutMs);
    };

    const onMessage = (message: Buffer): boolean => {
      const header = parseHeader(message);
      if (header.id !== id) throw protocolFailure(zone.name, `transfer message with ID ${header.id}, expected ${id}`);
      if (!header.qr) throw protocolFailure(zone.name, 'transfer message is not a response');
      verifier.accept(message);
      if (serial === undefined) {
        const at = firstSoaRdata(message);
        if (at === undefined) throw protocolFailure(zone.name, 'the transfer does not start with the SOA record');
        serial = soaSerial(message, at);
      }
      for (const r of answerRecords(message)) {
        if (r.type === 'SOA' && ++soas === 2) {
          verifier.finish();
          return true; // the closing SOA: the transfer is complete
        }
        records.push(r);
      }
      return false;
    };

    socket.on('error', (err) =>
      settle(connectionFailure(zone.name, `zone transfer from ${host}:${port}: ${err.message}`, err)),
    );
    socket.on('close', () =>
      settle(
        connectionFailure(zone.name, `the primary ${host}:${port} closed the connection before the transfer ended`),
      ),
    );
    socket.on('connect', () => {
      idle();
      const frame = Buffer.alloc(2 + signed.message.length);
      frame.writeUInt16BE(signed.message.length, 0);
      signed.message.copy(frame, 2);
      socket.write(frame);
    });
    socket.on('data', (chunk: Buffer) => {
      idle();
      buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
      try {
        while (!settled && buffered.length >= 2 && buffered.length >= 2 + buffered.readUInt16BE(0)) {
          const length = buffered.readUInt16BE(0);
          const message = Buffer.from(buffered.subarray(2, 2 + length));
          buffered = buffered.subarray(2 + length);
          if (onMessage(message)) settle(undefined, { zone: zone.name, serial: serial!, records });
        }
      } catch (err) {
        settle(
          err instanceof DnsUpdateError
            ? err
            : protocolFailure(zone.name, `unreadable transfer message: ${(err as Error).message}`, err),
        );
      }
    });
  });
}

/** The ZoneTransfer port over the configured zones. */
export class DnsZoneTransfer implements ZoneTransfer {
  private readonly zones: Map<string, ZoneConfig>;

  constructor(
    zones: readonly ZoneConfig[],
    private readonly dns: Config['dns'],
    private readonly opts: TransferOptions = {},
  ) {
    this.zones = new Map(zones.map((z) => [z.name, z]));
  }

  transfer(zone: string): Promise<ZoneContents> {
    const config = this.zones.get(zone);
    if (!config) return Promise.reject(protocolFailure(zone, 'not a configured zone'));
    return transferZone(config, this.dns, this.opts);
  }
}
