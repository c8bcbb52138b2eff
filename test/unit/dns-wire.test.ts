import { expect } from 'chai';
import {
  encodeName,
  encodeUpdate,
  parseMessage,
  readName,
  WireFormatError,
  type UpdateMessage,
} from '../../src/dns/wire.js';

/** Hex with whitespace and `|` separators removed, so the expected bytes can be laid out by field. */
const hex = (text: string): string => text.replace(/[\s|]/g, '');

describe('dns wire: UPDATE encoding (RFC 1035 §4.1, RFC 2136 §2)', () => {
  const message: UpdateMessage = {
    id: 0x1234,
    zone: 'ex.org',
    prerequisites: [{ kind: 'rrset-absent', name: 'h.ex.org', type: 'CNAME' }],
    updates: [
      { kind: 'delete-rrset', name: 'h.ex.org', type: 'A' },
      { kind: 'add', name: 'h.ex.org', ttl: 60, data: { type: 'A', address: '192.0.2.1' } },
      { kind: 'add', name: 'h.ex.org', ttl: 60, data: { type: 'AAAA', address: '2001:db8::1' } },
      { kind: 'add', name: 'h.ex.org', ttl: 60, data: { type: 'MX', preference: 10, exchange: 'mx.ex.org' } },
    ],
  };

  // owner name h.ex.org, uncompressed: 1 "h" 2 "ex" 3 "org" 0
  const H = '01 68 | 02 65 78 | 03 6f 72 67 | 00';
  const expected = hex(`
    12 34 | 28 00 | 00 01 | 00 01 | 00 04 | 00 00
    02 65 78 03 6f 72 67 00 | 00 06 | 00 01
    ${H} | 00 05 | 00 fe | 00 00 00 00 | 00 00
    ${H} | 00 01 | 00 ff | 00 00 00 00 | 00 00
    ${H} | 00 01 | 00 01 | 00 00 00 3c | 00 04 | c0 00 02 01
    ${H} | 00 1c | 00 01 | 00 00 00 3c | 00 10 | 20 01 0d b8 00 00 00 00 00 00 00 00 00 00 00 01
    ${H} | 00 0f | 00 01 | 00 00 00 3c | 00 0d | 00 0a | 02 6d 78 02 65 78 03 6f 72 67 00
  `);
  // Line by line:
  //  header: ID 0x1234 | QR=0 OPCODE=5 (0x2800) | ZOCOUNT 1 | PRCOUNT 1 | UPCOUNT 4 | ADCOUNT 0
  //  zone:   "ex.org" | ZTYPE SOA (6) | ZCLASS IN (1)
  //  prerequisite "RRset does not exist": h.ex.org CNAME (5) class NONE (254) TTL 0 RDLENGTH 0
  //  delete RRset: h.ex.org A (1) class ANY (255) TTL 0 RDLENGTH 0 — typed, never type ANY
  //  add: h.ex.org A IN TTL 60 RDLENGTH 4 192.0.2.1
  //  add: h.ex.org AAAA (28) IN TTL 60 RDLENGTH 16 2001:db8::1
  //  add: h.ex.org MX (15) IN TTL 60 RDLENGTH 13 PREFERENCE 10 EXCHANGE "mx.ex.org"

  it('encodes prerequisite, typed delete, A, AAAA and MX adds byte for byte', () => {
    expect(encodeUpdate(message).toString('hex')).to.equal(expected);
  });

  it('encodes a rrset-exists prerequisite with class ANY and an empty RDATA', () => {
    const bytes = encodeUpdate({ id: 1, zone: 'ex.org', prerequisites: [{ kind: 'rrset-exists', name: 'ex.org', type: 'SOA' }], updates: [] });
    expect(bytes.subarray(24).toString('hex')).to.equal(hex('02 65 78 03 6f 72 67 00 | 00 06 | 00 ff | 00 00 00 00 | 00 00'));
    expect(bytes.readUInt16BE(6)).to.equal(1);
    expect(bytes.readUInt16BE(8)).to.equal(0);
  });

  it('encodes a CNAME add and a wildcard owner', () => {
    const bytes = encodeUpdate({
      id: 1,
      zone: 'ex.org',
      prerequisites: [],
      updates: [{ kind: 'add', name: '*.h.ex.org', ttl: 1, data: { type: 'CNAME', target: 'h.ex.org' } }],
    });
    expect(bytes.subarray(24).toString('hex')).to.equal(hex(`01 2a | ${H} | 00 05 | 00 01 | 00 00 00 01 | 00 0a | ${H}`));
  });

  it('rejects names that cannot be encoded and addresses of the wrong family', () => {
    expect(() => encodeName('a..b')).to.throw(WireFormatError);
    expect(() => encodeName(`${'a'.repeat(64)}.org`)).to.throw(WireFormatError);
    expect(() => encodeName(Array(130).fill('ab').join('.'))).to.throw(WireFormatError);
    const bad = (data: { type: 'A' | 'AAAA'; address: string }) => () =>
      encodeUpdate({ id: 1, zone: 'ex.org', prerequisites: [], updates: [{ kind: 'add', name: 'h.ex.org', ttl: 60, data }] });
    expect(bad({ type: 'A', address: '2001:db8::1' })).to.throw(WireFormatError);
    expect(bad({ type: 'AAAA', address: '192.0.2.1' })).to.throw(WireFormatError);
  });

  it('encodes the root and a trailing dot', () => {
    expect(encodeName('').toString('hex')).to.equal('00');
    expect(encodeName('.').toString('hex')).to.equal('00');
    expect(encodeName('ex.org.').equals(encodeName('ex.org'))).to.equal(true);
  });
});

describe('dns wire: response parsing', () => {
  it('reads compressed names and finds the last additional record', () => {
    // A response: header (QR, opcode 5, AA, rcode 0, QD 1, AR 1), zone ex.org SOA IN,
    // then an additional record owned by a pointer to offset 12 (ex.org), type 250.
    const bytes = Buffer.from(
      hex(`
      ab cd | ac 00 | 00 01 | 00 00 | 00 00 | 00 01
      02 65 78 03 6f 72 67 00 | 00 06 | 00 01
      03 6b 65 79 c0 0c | 00 fa | 00 ff | 00 00 00 00 | 00 02 | 01 02
    `),
      'hex',
    );
    const parsed = parseMessage(bytes);
    expect(parsed.header).to.include({ id: 0xabcd, qr: true, opcode: 5, aa: true, rcode: 0, qdcount: 1, arcount: 1 });
    expect(parsed.lastAdditional).to.include({ start: 24, name: 'key.ex.org', type: 250, klass: 255, ttl: 0, rdataLength: 2 });
    expect(readName(bytes, 24)).to.deep.equal({ name: 'key.ex.org', next: 30 });
  });

  it('rejects pointer loops, truncation and trailing bytes', () => {
    const loop = Buffer.from(hex('0000 8000 0001 0000 0000 0000 | c0 0c | 0006 0001'), 'hex');
    expect(() => parseMessage(loop)).to.throw(WireFormatError, /loop/);
    const truncated = Buffer.from(hex('0000 8000 0001 0000 0000 0000 | 02 65'), 'hex');
    expect(() => parseMessage(truncated)).to.throw(WireFormatError);
    const trailing = Buffer.from(hex('0000 8000 0000 0000 0000 0000 | ff'), 'hex');
    expect(() => parseMessage(trailing)).to.throw(WireFormatError, /trailing/);
    expect(() => parseMessage(Buffer.alloc(5))).to.throw(WireFormatError, /header/);
  });

  it('rejects a TSIG that is not the last record', () => {
    const bytes = Buffer.from(
      hex(`
      0000 8000 0000 0000 0000 0002
      00 | 00 fa | 00 ff | 00 00 00 00 | 00 00
      00 | 00 01 | 00 01 | 00 00 00 00 | 00 00
    `),
      'hex',
    );
    expect(() => parseMessage(bytes)).to.throw(WireFormatError, /TSIG/);
  });
});
