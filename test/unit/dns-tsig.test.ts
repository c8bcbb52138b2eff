import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { TSIG_ALGORITHMS, type TsigAlgorithm, type TsigKeyConfig } from '../../src/config/schema.js';
import {
  encodeTsigRecord,
  extractTsig,
  signMessage,
  signRequest,
  TSIG_ERRORS,
  verifyMessage,
} from '../../src/core/tsig.js';
import { encodeUpdate, type UpdateMessage } from '../../src/core/dns-wire.js';

const hex = (text: string): string => text.replace(/[\s|]/g, '');

const GOLDEN_SECRET = 'Z29sZGVuLXNlY3JldC1mb3ItZGRucy1icmlkZ2UtdGVzdHM='; // "golden-secret-for-ddns-bridge-tests"
const goldenKey: TsigKeyConfig = {
  name: 'golden-key',
  algorithm: 'hmac-sha256',
  secret: Buffer.from(GOLDEN_SECRET, 'base64'),
};

const update: UpdateMessage = {
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

function keyFor(algorithm: TsigAlgorithm, name = 'ddns-key'): TsigKeyConfig {
  return { name, algorithm, secret: randomBytes(64) };
}

/** A server's answer to `request`: same ID, QR set, opcode UPDATE, the given rcode. */
function responseTo(request: Buffer, rcode = 0): Buffer {
  const header = Buffer.alloc(12);
  header.writeUInt16BE(request.readUInt16BE(0), 0);
  header.writeUInt16BE(0x8000 | (5 << 11) | rcode, 2);
  header.writeUInt16BE(1, 4);
  return Buffer.concat([header, request.subarray(12, 12 + 'ex.org'.length + 2 + 4)]);
}

describe('dns tsig (RFC 8945)', () => {
  const T = 1_700_000_000;

  describe('golden vector', () => {
    it('signs the wire-test UPDATE with a fixed id, time and key to the exact MAC', () => {
      // Expected MAC computed independently with
      //   openssl dgst -sha256 -mac HMAC -macopt hexkey:<secret hex>
      // over the UPDATE bytes of dns-wire.test.ts (owner names compressed to the apex) followed
      // by the TSIG variables:
      //   0a "golden-key" 00 | class ANY 00ff | TTL 00000000 | 0b "hmac-sha256" 00 |
      //   time signed 0000 6553 f100 (1700000000) | fudge 012c | error 0000 | other len 0000
      const signed = signRequest(encodeUpdate(update), goldenKey, { timeSigned: T, fudge: 300 });
      expect(signed.mac.toString('hex')).to.equal('0c0617a759129fec73b4f48d162f578264f56f06bba232038d19a79fcc817a32');
      // The appended TSIG RR and the incremented ARCOUNT.
      expect(signed.message.readUInt16BE(10)).to.equal(1);
      expect(signed.message.subarray(encodeUpdate(update).length).toString('hex')).to.equal(
        hex(`
        0a 676f6c64656e2d6b6579 00 | 00fa | 00ff | 00000000 | 003d
        0b 686d61632d736861323536 00 | 0000 6553 f100 | 012c | 0020
        0c0617a759129fec73b4f48d162f578264f56f06bba232038d19a79fcc817a32
        1234 | 0000 | 0000
      `),
      );
    });

    it('matches a request captured from BIND nsupdate (compressed names) bit for bit', () => {
      // `nsupdate -k golden.key` (hmac-sha256, golden-key) with
      //   zone example.org / update delete h.example.org A / update add h.example.org 60 A 192.0.2.1
      // sent to a UDP socket; this is the datagram it sent.
      const captured = Buffer.from(
        '826828000001000000020001076578616d706c65036f726700000600010168c00c000100ff000000000000c01d000100010000003c0004c00002010a676f6c64656e2d6b65790000fa00ff00000000003d0b686d61632d7368613235360000006b0223ec012c00203ef3b5e801273fa2b403ab9ada023d7f2d3d7d7cf2cda711c9e91cb646d6cedb826800000000',
        'hex',
      );
      const extracted = extractTsig(captured)!;
      expect(extracted.tsig).to.include({
        keyName: 'golden-key',
        algorithm: 'hmac-sha256',
        fudge: 300,
        originalId: 0x8268,
        error: 0,
      });
      expect(verifyMessage(captured, goldenKey, { now: extracted.tsig.timeSigned }).ok).to.equal(true);
      const resigned = signRequest(extracted.unsigned, goldenKey, {
        timeSigned: extracted.tsig.timeSigned,
        fudge: 300,
      });
      expect(resigned.message.toString('hex')).to.equal(captured.toString('hex'));
      // ... and a verifier with a clock 301 s later refuses it.
      const late = verifyMessage(captured, goldenKey, { now: extracted.tsig.timeSigned + 301 });
      expect(late).to.include({ ok: false, reason: 'bad-time' });
    });
  });

  describe('request/response round trip', () => {
    for (const algorithm of TSIG_ALGORITHMS) {
      it(`${algorithm}: a response signed over the request MAC verifies`, () => {
        const key = keyFor(algorithm);
        const request = signRequest(encodeUpdate(update), key, { timeSigned: T, fudge: 300 });
        expect(verifyMessage(request.message, key, { now: T }).ok).to.equal(true);
        const response = signMessage(responseTo(request.message), key, {
          timeSigned: T + 1,
          fudge: 300,
          requestMac: request.mac,
        });
        const verdict = verifyMessage(response.message, key, { now: T + 2, requestMac: request.mac });
        expect(verdict.ok, JSON.stringify(verdict)).to.equal(true);
      });
    }

    it('uses the original ID from the TSIG record (a forwarder may rewrite the header ID)', () => {
      const key = keyFor('hmac-sha256');
      const request = signRequest(encodeUpdate(update), key, { timeSigned: T, fudge: 300 });
      const response = signMessage(responseTo(request.message), key, {
        timeSigned: T,
        fudge: 300,
        requestMac: request.mac,
      }).message;
      response.writeUInt16BE(0x4321, 0);
      expect(verifyMessage(response, key, { now: T, requestMac: request.mac }).ok).to.equal(true);
    });
  });

  describe('rejections', () => {
    const key = keyFor('hmac-sha256');
    const request = signRequest(encodeUpdate(update), key, { timeSigned: T, fudge: 300 });
    const signedResponse = (
      opts: { key?: TsigKeyConfig; time?: number; requestMac?: Buffer; rcode?: number } = {},
    ): Buffer =>
      signMessage(responseTo(request.message, opts.rcode), opts.key ?? key, {
        timeSigned: opts.time ?? T,
        fudge: 300,
        requestMac: opts.requestMac ?? request.mac,
      }).message;
    const verify = (response: Buffer, now = T) => verifyMessage(response, key, { now, requestMac: request.mac });

    it('a flipped MAC bit → bad-mac', () => {
      const response = signedResponse();
      const macAt = response.length - 6 - 32;
      response[macAt] = response[macAt]! ^ 1;
      expect(verify(response)).to.include({ ok: false, reason: 'bad-mac' });
    });

    it('a flipped message bit → bad-mac', () => {
      const response = signedResponse();
      response[3] = response[3]! ^ 0x80; // flags
      expect(verify(response)).to.include({ ok: false, reason: 'bad-mac' });
    });

    it('signed without our request MAC (an answer to another request) → bad-mac', () => {
      expect(verify(signedResponse({ requestMac: Buffer.alloc(32) }))).to.include({ ok: false, reason: 'bad-mac' });
    });

    it('a different key name → key-mismatch', () => {
      const other = { ...key, name: 'other-key' };
      expect(verify(signedResponse({ key: other }))).to.include({ ok: false, reason: 'key-mismatch' });
    });

    it('key names compare case-insensitively', () => {
      const upper = { ...key, name: 'DDNS-Key' };
      expect(verify(signedResponse({ key: upper })).ok).to.equal(true);
    });

    it('a different algorithm → algorithm-mismatch', () => {
      const other = { ...key, algorithm: 'hmac-sha512' as const };
      expect(verify(signedResponse({ key: other }))).to.include({ ok: false, reason: 'algorithm-mismatch' });
    });

    it('hmac-md5 is recognised by name and rejected', () => {
      const body = responseTo(request.message);
      const tsig = encodeTsigRecord({
        keyName: 'ddns-key',
        algorithm: 'hmac-md5.sig-alg.reg.int',
        timeSigned: T,
        fudge: 300,
        mac: Buffer.alloc(16, 7),
        originalId: body.readUInt16BE(0),
        error: 0,
        otherData: Buffer.alloc(0),
      });
      const response = Buffer.concat([body, tsig]);
      response.writeUInt16BE(1, 10);
      const verdict = verify(response);
      expect(verdict).to.include({ ok: false, reason: 'algorithm-mismatch' });
      expect(verdict.ok === false && verdict.detail).to.match(/hmac-md5/);
    });

    it('no TSIG → unsigned', () => {
      expect(verify(responseTo(request.message))).to.include({ ok: false, reason: 'unsigned' });
    });

    it('time signed outside the fudge → bad-time (either direction)', () => {
      expect(verify(signedResponse({ time: T - 301 }))).to.include({ ok: false, reason: 'bad-time' });
      expect(verify(signedResponse({ time: T + 301 }))).to.include({ ok: false, reason: 'bad-time' });
      expect(verify(signedResponse({ time: T - 300 })).ok).to.equal(true);
    });

    it('our configured fudge counts when larger than the one the answer carries (servers sign with their own, e.g. 300)', () => {
      const response = signedResponse({ time: T - 500 }); // signed with fudge 300
      expect(verifyMessage(response, key, { now: T, requestMac: request.mac, fudge: 1000 }).ok).to.equal(true);
      expect(
        verifyMessage(signedResponse({ time: T + 1000 }), key, { now: T, requestMac: request.mac, fudge: 1000 }).ok,
      ).to.equal(true);
      expect(
        verifyMessage(signedResponse({ time: T + 1001 }), key, { now: T, requestMac: request.mac, fudge: 1000 }),
      ).to.include({ ok: false, reason: 'bad-time' });
      expect(
        verifyMessage(response, key, { now: T, requestMac: request.mac, fudge: 100 }),
        "a smaller one does not narrow the answer's",
      ).to.include({ ok: false, reason: 'bad-time' });
      expect(
        verifyMessage(signedResponse({ time: T - 300 }), key, { now: T, requestMac: request.mac, fudge: 100 }).ok,
      ).to.equal(true);
    });

    it('a truncated MAC → truncated-mac', () => {
      const body = responseTo(request.message);
      const full = signMessage(body, key, { timeSigned: T, fudge: 300, requestMac: request.mac });
      const tsig = encodeTsigRecord({
        ...extractTsig(full.message)!.tsig,
        mac: full.mac.subarray(0, 16),
      });
      const response = Buffer.concat([body, tsig]);
      response.writeUInt16BE(1, 10);
      expect(verify(response)).to.include({ ok: false, reason: 'truncated-mac' });
    });

    /** An unsigned error answer as RFC 8945 §5.3.2 prescribes for BADSIG/BADKEY: empty MAC. */
    function errorAnswer(error: number, otherData = Buffer.alloc(0)): Buffer {
      const body = responseTo(request.message, 9);
      const tsig = encodeTsigRecord({
        keyName: 'ddns-key',
        algorithm: 'hmac-sha256',
        timeSigned: T,
        fudge: 300,
        mac: Buffer.alloc(0),
        originalId: body.readUInt16BE(0),
        error,
        otherData,
      });
      const response = Buffer.concat([body, tsig]);
      response.writeUInt16BE(1, 10);
      return response;
    }

    it('server-reported BADSIG / BADKEY → server-badsig / server-badkey', () => {
      expect(verify(errorAnswer(TSIG_ERRORS.BADSIG))).to.include({ ok: false, reason: 'server-badsig' });
      expect(verify(errorAnswer(TSIG_ERRORS.BADKEY))).to.include({ ok: false, reason: 'server-badkey' });
    });

    it('a signed server-reported BADTIME → server-badtime, naming the skew from Other Data', () => {
      const serverTime = Buffer.from('000065540f10', 'hex'); // T + 7696
      const body = responseTo(request.message, 9);
      const signed = signMessage(body, key, {
        timeSigned: T,
        fudge: 300,
        requestMac: request.mac,
        error: TSIG_ERRORS.BADTIME,
        otherData: serverTime,
      });
      const verdict = verify(signed.message);
      expect(verdict).to.include({ ok: false, reason: 'server-badtime', macVerified: true });
      expect(verdict.ok === false && verdict.skewSeconds).to.equal(-7696);
    });

    it('server-reported BADSIG / BADKEY carry no MAC: never verified', () => {
      expect(verify(errorAnswer(TSIG_ERRORS.BADSIG))).to.not.have.property('macVerified');
      expect(verify(errorAnswer(TSIG_ERRORS.BADKEY))).to.not.have.property('macVerified');
    });

    it('an unsigned or wrongly signed BADTIME is still server-badtime, but the clock it names is not believed', () => {
      const serverTime = Buffer.from('000065540f10', 'hex');
      const unsignedVerdict = verify(errorAnswer(TSIG_ERRORS.BADTIME, serverTime));
      expect(unsignedVerdict).to.include({ ok: false, reason: 'server-badtime' });
      expect(unsignedVerdict.ok === false && unsignedVerdict.skewSeconds).to.equal(undefined);
      expect(unsignedVerdict).to.not.have.property('macVerified');
      expect(unsignedVerdict.ok === false && unsignedVerdict.detail).to.match(/does not verify/);
      const body = responseTo(request.message, 9);
      const other = { ...key, secret: Buffer.alloc(32, 7) };
      const forged = signMessage(body, other, {
        timeSigned: T,
        fudge: 300,
        requestMac: request.mac,
        error: TSIG_ERRORS.BADTIME,
        otherData: serverTime,
      });
      const forgedVerdict = verify(forged.message);
      expect(forgedVerdict).to.include({ ok: false, reason: 'server-badtime' });
      expect(forgedVerdict.ok === false && forgedVerdict.skewSeconds).to.equal(undefined);
      expect(forgedVerdict).to.not.have.property('macVerified');
    });

    it('garbage after the header → malformed, never a throw', () => {
      const response = Buffer.concat([signedResponse(), Buffer.from([1, 2, 3])]);
      expect(verify(response)).to.include({ ok: false, reason: 'malformed' });
    });
  });
});
