/**
 * The RFC 2136 gateway's pure parts: reading messages, the key's scope and what the updates mean, prerequisites,
 * key derivation, the per-source rate, and the listener's answer() over fake use cases (no socket).
 */
import { expect } from 'chai';
import { TsigKeyring, tsigKeyHash, tsigKeyId, tsigKeyName } from '../../src/auth/tsig-keys.js';
import { tokenHash } from '../../src/auth/update-token.js';
import { checkPrerequisites } from '../../src/core/prerequisites.js';
import type { HostRecord } from '../../src/core/types.js';
import { decodeRequest } from '../../src/gateway/message.js';
import { rcodeOf } from '../../src/gateway/rcodes.js';
import { scopeOf, zoneOf } from '../../src/gateway/scope.js';
import { DnsGateway } from '../../src/gateway/server.js';
import { SourceRate } from '../../src/gateway/source-rate.js';
import type { GatewayChange, KeyLookup } from '../../src/app/gateway.js';
import type { TokenLogin } from '../../src/app/ports.js';
import { NO_TELEMETRY } from '../../src/core/telemetry.js';
import { a, aaaa, buildMessage, CLASS, readAnswer, sign, txt, TYPE, type Rr } from '../support/gateway-client.js';

const ZONE = 'dyn.example.test';
const HOST = `h.${ZONE}`;
const ACME = `_acme-challenge.${HOST}`;
const KEY = { fqdn: HOST, acmeOnly: false };

const del = (name: string, type: number): Rr => ({ name, type, klass: CLASS.ANY });
const add = (name: string, type: number, rdata: Buffer): Rr => ({ name, type, klass: CLASS.IN, ttl: 60, rdata });
const delValue = (name: string, type: number, rdata: Buffer): Rr => ({ name, type, klass: CLASS.NONE, rdata });

/** The scope verdict of a message with these updates (and prerequisites). */
function scope(updates: Rr[], prerequisites: Rr[] = [], key = KEY) {
  const req = decodeRequest(buildMessage({ zone: [{ name: ZONE }], prerequisites, updates }));
  return scopeOf(ZONE, req.answers, req.authorities, key);
}
const change = (v: ReturnType<typeof scope>): GatewayChange => {
  if ('rcode' in v) throw new Error(`refused: ${v.rcode} ${v.why}`);
  return v.change;
};

describe('gateway: reading messages', () => {
  it('reads every section, names lowercase, OPT as the UDP size, TSIG only as the last record', () => {
    const req = decodeRequest(
      buildMessage({
        zone: [{ name: 'DYN.Example.TEST' }],
        updates: [add('H.dyn.example.test', TYPE.A, a('192.0.2.1'))],
        additional: [{ name: '', type: 41, klass: 1232 }],
      }),
    );
    expect(req.questions).to.deep.equal([{ name: ZONE, type: TYPE.SOA, klass: CLASS.IN }]);
    expect(req.authorities[0]!.name).to.equal(HOST);
    expect(req.udpSize).to.equal(1232);
    expect(req.signed).to.equal(false);
    const tsigFirst = buildMessage({
      zone: [{ name: ZONE }],
      additional: [
        { name: 'k', type: 250, klass: 255, rdata: Buffer.alloc(0) },
        { name: '', type: 41, klass: 512 },
      ],
    });
    expect(() => decodeRequest(tsigFirst)).to.throw('TSIG record is not the last record');
  });

  it('refuses compression loops, records past the end, trailing bytes and two OPT records', () => {
    const loop = Buffer.concat([buildMessage({}).subarray(0, 12), Buffer.from([0xc0, 12, 0, 6, 0, 1])]);
    loop.writeUInt16BE(1, 4);
    expect(() => decodeRequest(loop)).to.throw();
    const short = buildMessage({ zone: [{ name: ZONE }], updates: [add(HOST, TYPE.A, a('192.0.2.1'))] });
    expect(() => decodeRequest(short.subarray(0, short.length - 1))).to.throw();
    expect(() => decodeRequest(Buffer.concat([short, Buffer.from([0])]))).to.throw('trailing');
    const opts = buildMessage({
      additional: [
        { name: '', type: 41, klass: 512 },
        { name: '', type: 41, klass: 512 },
      ],
    });
    expect(() => decodeRequest(opts)).to.throw('OPT');
    // Names it could not write back (fuzz): a dot inside a label, more than 255 bytes.
    const dotted = Buffer.concat([buildMessage({}).subarray(0, 12), Buffer.from([2, 0x2e, 0x2e, 0, 0, 6, 0, 1])]);
    dotted.writeUInt16BE(1, 4);
    expect(() => decodeRequest(dotted)).to.throw('a label with a dot');
    const labels = ['a', 'b', 'c', 'd'].map((c) => Buffer.concat([Buffer.from([63]), Buffer.alloc(63, c)]));
    const long = Buffer.concat([buildMessage({}).subarray(0, 12), ...labels, Buffer.from([0, 0, 6, 0, 1])]);
    long.writeUInt16BE(1, 4);
    expect(() => decodeRequest(long)).to.throw('longer than 255 bytes');
  });
});

describe('gateway: scope and meaning', () => {
  it('the zone section: one SOA entry of class IN naming a configured zone', () => {
    expect(zoneOf([{ name: ZONE, type: TYPE.SOA, klass: CLASS.IN }], [ZONE])).to.equal(ZONE);
    expect(zoneOf([], [ZONE])).to.include({ rcode: 'FORMERR' });
    expect(zoneOf([{ name: ZONE, type: TYPE.A, klass: CLASS.IN }], [ZONE])).to.include({ rcode: 'FORMERR' });
    expect(zoneOf([{ name: 'example.net', type: TYPE.SOA, klass: CLASS.IN }], [ZONE])).to.include({ rcode: 'NOTAUTH' });
    expect(zoneOf([{ name: ZONE, type: TYPE.SOA, klass: 3 }], [ZONE])).to.include({ rcode: 'NOTAUTH' });
  });

  it('addresses: set, replace, remove, remove-if-recorded; two adds REFUSED', () => {
    expect(change(scope([del(HOST, TYPE.A), add(HOST, TYPE.A, a('192.0.2.1'))])).addresses).to.deep.equal({
      ipv4: '192.0.2.1',
    });
    expect(change(scope([add(HOST, TYPE.AAAA, aaaa('2001:db8::1'))])).addresses).to.deep.equal({ ipv6: '2001:db8::1' });
    expect(change(scope([del(HOST, TYPE.AAAA)])).addresses).to.deep.equal({ ipv6: null });
    expect(change(scope([delValue(HOST, TYPE.A, a('192.0.2.9'))])).addresses).to.deep.equal({
      ipv4: { removeIf: '192.0.2.9' },
    });
    // Added then deleted in the same message: gone.
    const addDel = scope([add(HOST, TYPE.A, a('192.0.2.1')), delValue(HOST, TYPE.A, a('192.0.2.1'))]);
    expect(change(addDel).addresses).to.deep.equal({ ipv4: null });
    expect(scope([add(HOST, TYPE.A, a('192.0.2.1')), add(HOST, TYPE.A, a('192.0.2.2'))])).to.include({
      rcode: 'REFUSED',
    });
    expect(
      change(scope([add(HOST, TYPE.A, a('192.0.2.1')), add(HOST, TYPE.A, a('192.0.2.1'))])).addresses,
    ).to.deep.equal({ ipv4: '192.0.2.1' });
  });

  it("TXT at the ACME name: add, lego's delete-set + add, delete one, delete all; other sequences REFUSED", () => {
    expect(change(scope([add(ACME, TYPE.TXT, txt('v1'))])).txt).to.deep.equal({ op: 'set', value: 'v1' });
    expect(change(scope([del(ACME, TYPE.TXT), add(ACME, TYPE.TXT, txt('v2'))])).txt).to.deep.equal({
      op: 'set',
      value: 'v2',
    });
    expect(change(scope([delValue(ACME, TYPE.TXT, txt('v1'))])).txt).to.deep.equal({ op: 'remove', value: 'v1' });
    expect(change(scope([del(ACME, TYPE.TXT)])).txt).to.deep.equal({ op: 'clear' });
    expect(scope([add(ACME, TYPE.TXT, txt('v1')), add(ACME, TYPE.TXT, txt('v2'))])).to.include({ rcode: 'REFUSED' });
    expect(scope([add(ACME, TYPE.TXT, Buffer.from([2, 0x41, 0x01]))])).to.include({ rcode: 'REFUSED' });
    expect(scope([add(ACME, TYPE.TXT, txt('v1')), add(HOST, TYPE.A, a('192.0.2.1'))])).to.include({
      rcode: 'REFUSED',
    });
  });

  it('least privilege: other names, other types, TXT at the host, addresses with an ACME-only key', () => {
    const refused = (updates: Rr[], key = KEY) => expect(scope(updates, [], key)).to.include({ rcode: 'REFUSED' });
    refused([add(`b.${ZONE}`, TYPE.A, a('192.0.2.1'))]);
    refused([add(`x.${HOST}`, TYPE.A, a('192.0.2.1'))]);
    refused([add(HOST, TYPE.MX, Buffer.from([0, 10, 0]))]);
    refused([add(HOST, TYPE.NS, Buffer.from([0]))]);
    refused([add(HOST, TYPE.TXT, txt('v'))]);
    refused([add(ACME, TYPE.A, a('192.0.2.1'))]);
    refused([del(HOST, TYPE.ANY)]);
    refused([add(HOST, TYPE.A, a('192.0.2.1'))], { fqdn: HOST, acmeOnly: true });
    expect(change(scope([add(ACME, TYPE.TXT, txt('v'))], [], { fqdn: HOST, acmeOnly: true })).txt).to.deep.equal({
      op: 'set',
      value: 'v',
    });
  });

  it('form errors (FORMERR) and names outside the zone (NOTZONE) come before scope', () => {
    expect(scope([{ name: HOST, type: TYPE.A, klass: CLASS.ANY, ttl: 1 }])).to.include({ rcode: 'FORMERR' });
    expect(scope([{ name: HOST, type: TYPE.A, klass: CLASS.ANY, rdata: a('192.0.2.1') }])).to.include({
      rcode: 'FORMERR',
    });
    expect(scope([{ name: HOST, type: TYPE.ANY, klass: CLASS.NONE }])).to.include({ rcode: 'FORMERR' });
    expect(scope([add(HOST, TYPE.ANY, Buffer.alloc(0))])).to.include({ rcode: 'FORMERR' });
    expect(scope([add(HOST, TYPE.A, Buffer.from([1, 2, 3]))])).to.include({ rcode: 'FORMERR' });
    expect(scope([{ name: HOST, type: TYPE.A, klass: 3, rdata: a('192.0.2.1') }])).to.include({ rcode: 'FORMERR' });
    expect(scope([add('h.example.net', TYPE.A, a('192.0.2.1'))])).to.include({ rcode: 'NOTZONE' });
    expect(scope([], [{ name: HOST, type: TYPE.A, klass: CLASS.IN, ttl: 5, rdata: a('192.0.2.1') }])).to.include({
      rcode: 'FORMERR',
    });
  });
});

describe('gateway: prerequisites (RFC 2136 §2.4, §3.2)', () => {
  const host = (h: Partial<HostRecord>): HostRecord => ({
    fqdn: HOST,
    account: 'a',
    type: 'dynamic',
    state: 'active',
    ipv4: null,
    ipv6: null,
    wildcard: false,
    mx: null,
    backmx: false,
    updatedAt: 0,
    ...h,
  });
  const prereqs = (records: Rr[]) => change(scope([], records)).prerequisites;

  it('name in use and not in use: an address or an MX at the host, a TXT value at the ACME name', () => {
    const inUse = prereqs([{ name: HOST, type: TYPE.ANY, klass: CLASS.ANY }]);
    const notInUse = prereqs([{ name: HOST, type: TYPE.ANY, klass: CLASS.NONE }]);
    expect(checkPrerequisites(inUse, host({ ipv4: '192.0.2.1' }))).to.equal('ok');
    expect(checkPrerequisites(inUse, host({ mx: 'mail.example.org' }))).to.equal('ok');
    expect(checkPrerequisites(inUse, host({}))).to.equal('NXDOMAIN');
    expect(checkPrerequisites(inUse, undefined)).to.equal('NXDOMAIN');
    expect(checkPrerequisites(notInUse, host({ ipv6: '2001:db8::1' }))).to.equal('YXDOMAIN');
    const acme = prereqs([{ name: ACME, type: TYPE.ANY, klass: CLASS.ANY }]);
    expect(checkPrerequisites(acme, host({ txt: ['v'] }))).to.equal('ok');
    expect(checkPrerequisites(acme, host({ txt: [] }))).to.equal('NXDOMAIN');
  });

  it('RRset exists, with and without values, and does not exist', () => {
    const exists = prereqs([{ name: HOST, type: TYPE.A, klass: CLASS.ANY }]);
    const absent = prereqs([{ name: HOST, type: TYPE.AAAA, klass: CLASS.NONE }]);
    const equals = prereqs([
      { name: ACME, type: TYPE.TXT, klass: CLASS.IN, rdata: txt('v2') },
      { name: ACME, type: TYPE.TXT, klass: CLASS.IN, rdata: txt('v1') },
    ]);
    expect(checkPrerequisites(exists, host({ ipv4: '192.0.2.1' }))).to.equal('ok');
    expect(checkPrerequisites(exists, host({}))).to.equal('NXRRSET');
    expect(checkPrerequisites(absent, host({}))).to.equal('ok');
    expect(checkPrerequisites(absent, host({ ipv6: '2001:db8::1' }))).to.equal('YXRRSET');
    expect(checkPrerequisites(equals, host({ txt: ['v1', 'v2'] }))).to.equal('ok');
    expect(checkPrerequisites(equals, host({ txt: ['v1'] }))).to.equal('NXRRSET');
    expect(checkPrerequisites(equals, host({ txt: ['v1', 'v2', 'v3'] }))).to.equal('NXRRSET');
  });

  it("prerequisites name only the key's two names, with types it may see", () => {
    expect(scope([], [{ name: `b.${ZONE}`, type: TYPE.ANY, klass: CLASS.ANY }])).to.include({ rcode: 'REFUSED' });
    expect(scope([], [{ name: HOST, type: TYPE.MX, klass: CLASS.ANY }])).to.include({ rcode: 'REFUSED' });
    expect(scope([], [{ name: HOST, type: TYPE.TXT, klass: CLASS.ANY }])).to.include({ rcode: 'REFUSED' });
  });
});

describe('gateway: keys derived from the master secret', () => {
  const ring = new TsigKeyring(Buffer.alloc(32, 1));

  it('one secret per id and algorithm, as long as the MAC, the same every time', () => {
    expect(ring.secret('0123456789ab', 'hmac-sha256')).to.have.length(32);
    expect(ring.secret('0123456789ab', 'hmac-sha512')).to.have.length(64);
    expect(ring.secret('0123456789ab', 'hmac-sha1')).to.have.length(20);
    expect(ring.secret('0123456789ab', 'hmac-sha256').equals(ring.secret('0123456789ab', 'hmac-sha256'))).to.equal(
      true,
    );
    expect(ring.secret('0123456789ab', 'hmac-sha256').equals(ring.secret('0123456789ac', 'hmac-sha256'))).to.equal(
      false,
    );
    const other = new TsigKeyring(Buffer.alloc(32, 2));
    expect(other.secret('0123456789ab', 'hmac-sha256').equals(ring.secret('0123456789ab', 'hmac-sha256'))).to.equal(
      false,
    );
    expect(() => new TsigKeyring(Buffer.alloc(31))).to.throw('at least 32 bytes');
  });

  it("key names carry the id; the stored hash is never an HTTP token's", () => {
    expect(tsigKeyName('0123456789ab', HOST)).to.equal(`0123456789ab.${HOST}`);
    expect(tsigKeyId(`0123456789AB.${HOST}`)).to.equal('0123456789ab');
    expect(tsigKeyId(HOST)).to.equal(undefined);
    expect(tsigKeyHash('0123456789ab')).to.equal(tokenHash('tsig:0123456789ab'));
  });
});

describe('gateway: per-source rate', () => {
  it('a burst of twice the rate, then the rate; sources apart', () => {
    let now = 0;
    const rate = new SourceRate(10, () => now);
    let granted = 0;
    for (let i = 0; i < 100; i++) if (rate.take('192.0.2.1')) granted++;
    expect(granted).to.equal(20);
    expect(rate.take('192.0.2.2')).to.equal(true);
    now += 500;
    granted = 0;
    for (let i = 0; i < 100; i++) if (rate.take('192.0.2.1')) granted++;
    expect(granted).to.equal(5);
    rate.stop();
  });
});

describe('gateway: answers without a socket (fake use cases)', () => {
  const ring = new TsigKeyring(Buffer.alloc(32, 3));
  const login: TokenLogin = {
    id: '0123456789ab',
    hash: 'h',
    fqdn: HOST,
    account: { name: 'a', donator: false },
    from: [],
    tsig: 'hmac-sha256',
  };
  const key = ring.key(login.id, HOST, 'hmac-sha256');
  function gateway(lookup: KeyLookup, failures: string[] = []) {
    return new DnsGateway({
      listen: [],
      zones: [ZONE],
      ratePerSource: 10,
      maxConnections: 10,
      service: {
        lookup: () => Promise.resolve(lookup),
        failed: (ip: string) => {
          failures.push(ip);
          return Promise.resolve();
        },
        apply: () => Promise.resolve({ kind: 'update', reply: { kind: 'hosts', lines: [{ outcome: 'changed' }] } }),
      },
      keys: { idOf: tsigKeyId, nameOf: tsigKeyName, secretOf: (id, alg) => ring.secret(id, alg) },
      telemetry: NO_TELEMETRY,
      logger: { debug() {}, info() {}, warn() {}, error() {} },
    });
  }
  const message = () =>
    sign(buildMessage({ id: 7, zone: [{ name: ZONE }], updates: [add(HOST, TYPE.A, a('192.0.2.1'))] }), key);

  it('a verified key: NOERROR signed over the request MAC; the zone section copied', async () => {
    const { message: m, mac } = message();
    const answer = readAnswer((await gateway(login).answer(m, '192.0.2.9', 'udp'))!, key, mac);
    expect([answer.rcode, answer.verified, answer.id, answer.counts]).to.deep.equal(['NOERROR', true, 7, [1, 0, 0, 1]]);
  });

  it('REFUSED (cool-down, --from) is unsigned and the same for a wrong secret; BADKEY and BADSIG are counted', async () => {
    const wrongKey = { ...key, secret: Buffer.alloc(32, 9) };
    const time = 1_800_000_000;
    const right = sign(buildMessage({ id: 1, zone: [{ name: ZONE }] }), key, time).message;
    const wrong = sign(buildMessage({ id: 1, zone: [{ name: ZONE }] }), wrongKey, time).message;
    const refusedRight = await gateway('refused').answer(right, '192.0.2.9', 'udp');
    const refusedWrong = await gateway('refused').answer(wrong, '192.0.2.9', 'udp');
    expect(refusedRight!.equals(refusedWrong!)).to.equal(true);
    expect(readAnswer(refusedRight!).rcode).to.equal('REFUSED');
    const failures: string[] = [];
    const badkey = readAnswer((await gateway('unknown', failures).answer(right, '192.0.2.9', 'tcp'))!);
    const badsig = readAnswer((await gateway(login, failures).answer(wrong, '192.0.2.9', 'tcp'))!);
    expect([badkey.rcode, badkey.tsigError, badsig.rcode, badsig.tsigError]).to.deep.equal([
      'NOTAUTH',
      17,
      'NOTAUTH',
      16,
    ]);
    expect(failures).to.deep.equal(['192.0.2.9', '192.0.2.9']);
    // Over UDP the same answers, not counted: a UDP source can be forged.
    const overUdp = readAnswer((await gateway(login, failures).answer(wrong, '192.0.2.9', 'udp'))!);
    expect([overUdp.rcode, overUdp.tsigError]).to.deep.equal(['NOTAUTH', 16]);
    expect(failures).to.have.length(2);
  });

  it('a fault in the use case answers SERVFAIL, and the result table maps every outcome', async () => {
    expect(rcodeOf({ kind: 'update', reply: { kind: 'request', outcome: 'unavailable' } })).to.equal('SERVFAIL');
    expect(rcodeOf({ kind: 'update', reply: { kind: 'hosts', lines: [{ outcome: 'dns-failed' }] } })).to.equal(
      'SERVFAIL',
    );
    expect(rcodeOf({ kind: 'update', reply: { kind: 'hosts', lines: [{ outcome: 'abuse' }] } })).to.equal('REFUSED');
    expect(rcodeOf({ kind: 'prerequisite', failure: 'YXRRSET' })).to.equal('YXRRSET');
    expect(rcodeOf({ kind: 'nothing', host: 'refused' })).to.equal('REFUSED');
    const broken = gateway(login);
    (broken as unknown as { opts: { service: { apply: () => Promise<never> } } }).opts.service.apply = () =>
      Promise.reject(new Error('boom'));
    const { message: m } = message();
    const errors: unknown[] = [];
    (broken as unknown as { opts: { logger: { error: (...a: unknown[]) => void } } }).opts.logger.error = (...args) =>
      errors.push(args);
    expect(readAnswer((await broken.answer(m, '192.0.2.9', 'udp'))!).rcode).to.equal('SERVFAIL');
    expect(errors).to.have.length(1);
  });
});
