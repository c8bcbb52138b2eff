import { expect } from 'chai';
import {
  encodedLength,
  encodeName,
  encodeUpdate,
  parseMessage,
  readName,
  WireFormatError,
  type UpdateMessage,
} from '../../src/core/dns-wire.js';

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

  // owner name h.ex.org: 1 "h", then a pointer (top bits 11) to offset 12, where the zone
  // section spells "ex.org" (RFC 1035 §4.1.4)
  const H = '01 68 | c0 0c';
  // the same name whole, as RDATA names are written: 1 "h" 2 "ex" 3 "org" 0
  const H_WHOLE = '01 68 | 02 65 78 | 03 6f 72 67 | 00';
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
  //  zone:   "ex.org" (offset 12) | ZTYPE SOA (6) | ZCLASS IN (1)
  //  prerequisite "RRset does not exist": h.ex.org CNAME (5) class NONE (254) TTL 0 RDLENGTH 0
  //  delete RRset: h.ex.org A (1) class ANY (255) TTL 0 RDLENGTH 0 — typed, never type ANY
  //  add: h.ex.org A IN TTL 60 RDLENGTH 4 192.0.2.1
  //  add: h.ex.org AAAA (28) IN TTL 60 RDLENGTH 16 2001:db8::1
  //  add: h.ex.org MX (15) IN TTL 60 RDLENGTH 13 PREFERENCE 10 EXCHANGE "mx.ex.org"

  it('encodes prerequisite, typed delete, A, AAAA and MX adds byte for byte', () => {
    expect(encodeUpdate(message).toString('hex')).to.equal(expected);
  });

  it('encodes a rrset-exists prerequisite with class ANY and an empty RDATA', () => {
    const bytes = encodeUpdate({
      id: 1,
      zone: 'ex.org',
      prerequisites: [{ kind: 'rrset-exists', name: 'ex.org', type: 'SOA' }],
      updates: [],
    });
    // The apex itself as owner: just the pointer to the zone section's name.
    expect(bytes.subarray(24).toString('hex')).to.equal(hex('c0 0c | 00 06 | 00 ff | 00 00 00 00 | 00 00'));
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
    expect(bytes.subarray(24).toString('hex')).to.equal(
      hex(`01 2a | ${H} | 00 05 | 00 01 | 00 00 00 01 | 00 0a | ${H_WHOLE}`),
    );
  });

  it('points only at the zone apex on a label boundary, whatever the case; other owners are written whole', () => {
    const ownerBytes = (zone: string, name: string) =>
      encodeUpdate({ id: 1, zone, prerequisites: [{ kind: 'rrset-absent', name, type: 'A' }], updates: [] })
        .subarray(12 + encodeName(zone).length + 4)
        .subarray(0, -10)
        .toString('hex');
    expect(ownerBytes('ex.org', 'H.EX.ORG.')).to.equal(hex('01 48 | c0 0c'));
    expect(ownerBytes('Ex.Org.', 'a.b.ex.org')).to.equal(hex('01 61 01 62 | c0 0c'));
    // "hex.org" ends with the text "ex.org" but not with the zone's labels.
    expect(ownerBytes('ex.org', 'hex.org')).to.equal(hex('03 68 65 78 | 03 6f 72 67 | 00'));
    expect(ownerBytes('ex.org', 'h.other.org')).to.equal(hex('01 68 | 05 6f 74 68 65 72 | 03 6f 72 67 | 00'));
    // The root zone: nothing to point at.
    expect(ownerBytes('.', 'h.ex.org')).to.equal(hex(H_WHOLE));
  });

  it('reads back: every record parses and each owner expands to its full name', () => {
    const bytes = encodeUpdate(message);
    // The UPDATE sections sit where a query's are: ZO/PR/UP/AD as QD/AN/NS/AR.
    expect(() => parseMessage(bytes)).not.to.throw();
    let pos = 12 + encodeName('ex.org').length + 4;
    const owners: string[] = [];
    for (let i = 0; i < 5; i++) {
      const { name, next } = readName(bytes, pos);
      owners.push(name);
      pos = next + 8;
      pos += 2 + bytes.readUInt16BE(pos);
    }
    expect(owners).to.deep.equal(Array(5).fill('h.ex.org'));
    expect(pos).to.equal(bytes.length);
  });

  it('sizes a plan exactly as encodeUpdate writes it', () => {
    const prerequisites = message.prerequisites;
    const updates = [
      ...message.updates,
      { kind: 'add' as const, name: '*.h.ex.org', ttl: 1, data: { type: 'CNAME' as const, target: 'x.other.org' } },
    ];
    const whole = encodeUpdate({ id: 7, zone: 'ex.org', prerequisites, updates });
    expect(encodedLength('ex.org', prerequisites, updates)).to.equal(
      whole.length - 12 - (encodeName('ex.org').length + 4),
    );
    expect(encodedLength('ex.org.', [], [])).to.equal(0);
  });

  it('rejects names that cannot be encoded and addresses of the wrong family', () => {
    expect(() => encodeName('a..b')).to.throw(WireFormatError);
    expect(() => encodeName(`${'a'.repeat(64)}.org`)).to.throw(WireFormatError);
    expect(() => encodeName(Array(130).fill('ab').join('.'))).to.throw(WireFormatError);
    // An empty label stays an error where the owner meets the apex, and a second final dot too.
    for (const name of ['a..ex.org', 'a.ex.org..', '.ex.org']) {
      const owner = () =>
        encodeUpdate({
          id: 1,
          zone: 'ex.org',
          prerequisites: [{ kind: 'rrset-absent', name, type: 'A' }],
          updates: [],
        });
      expect(owner, name).to.throw(WireFormatError, /bad label length/);
    }
    // Compressed, an owner must still fit 255 bytes once the reader expands the pointer.
    const zone = Array(40).fill('abc').join('.'); // 161 bytes on the wire
    const tooLong = `${Array(24).fill('abc').join('.')}.${zone}`; // 96 more
    expect(() =>
      encodeUpdate({ id: 1, zone, prerequisites: [{ kind: 'rrset-absent', name: tooLong, type: 'A' }], updates: [] }),
    ).to.throw(WireFormatError, /too long/);
    const fits = `${Array(23).fill('abc').join('.')}.${zone}`; // 92 more: 253
    expect(() =>
      encodeUpdate({ id: 1, zone, prerequisites: [{ kind: 'rrset-absent', name: fits, type: 'A' }], updates: [] }),
    ).not.to.throw();
    const bad = (data: { type: 'A' | 'AAAA'; address: string }) => () =>
      encodeUpdate({
        id: 1,
        zone: 'ex.org',
        prerequisites: [],
        updates: [{ kind: 'add', name: 'h.ex.org', ttl: 60, data }],
      });
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
    expect(parsed.lastAdditional).to.include({
      start: 24,
      name: 'key.ex.org',
      type: 250,
      klass: 255,
      ttl: 0,
      rdataLength: 2,
    });
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
