/**
 * The drift check on its own (docs/operators.md, "Drift"): the comparison of a transferred zone with the records
 * the publisher's plan leaves for each stored host, the rule for unknown names, the fix on in-memory ports, and the
 * TSIG verification of a multi-message transfer (RFC 8945 §5.3.1). Real primaries: test/integration/drift.test.ts.
 */
import { expect } from 'chai';
import { createHmac } from 'node:crypto';
import { compareZone, DriftCheck, storedChange, type Finding } from '../../src/app/drift.js';
import type {
  HostAdmin,
  HostChange,
  HostGate,
  Lease,
  Publisher,
  ZoneContents,
  ZoneRecord,
  ZoneTransfer,
} from '../../src/app/ports.js';
import type { ZoneConfig } from '../../src/config/schema.js';
import { DnsUpdateError } from '../../src/core/errors.js';
import type { HostRecord, TargetState } from '../../src/core/types.js';
import { answerRecords, encodeAxfrQuery, TsigStreamVerifier } from '../../src/dns/axfr.js';
import { DnsRecordPlanner } from '../../src/dns/published.js';
import { signMessage, signRequest } from '../../src/core/tsig.js';

const ZONE = 'dyn.example.org';
const planner = new DnsRecordPlanner(60);

function host(label: string, fields: Partial<HostRecord> = {}): HostRecord {
  return {
    fqdn: `${label}.${ZONE}`,
    account: 'acct',
    type: 'dynamic',
    state: 'active',
    updatedAt: 1,
    ipv4: null,
    ipv6: null,
    wildcard: false,
    mx: null,
    backmx: false,
    ...fields,
  };
}

const rec = (name: string, type: ZoneRecord['type'], value: string, ttl = 60): ZoneRecord => ({
  name: name === '@' ? ZONE : `${name}.${ZONE}`,
  type,
  ttl,
  value,
});

/** The apex records every zone has. */
const APEX = [rec('@', 'SOA', `ns.${ZONE}`, 3600), rec('@', 'NS', `ns.${ZONE}`, 3600), rec('ns', 'A', '192.0.2.53')];

function compare(records: ZoneRecord[], hosts: HostRecord[], staticNames: readonly string[] = []): Finding[] {
  const contents: ZoneContents = { zone: ZONE, serial: 1, records: [...APEX, ...records] };
  return compareZone(
    contents,
    hosts.map((h) => ({ fqdn: h.fqdn, published: planner.recordsOf(storedChange(h, ZONE)) })),
    staticNames,
  );
}

/** Findings as short strings: `kind name TYPE dns=… redis=…`. */
function short(findings: Finding[]): string[] {
  return findings.map(
    (f) =>
      `${f.kind} ${f.name.replace(`.${ZONE}`, '')} ${f.type} dns=${f.dns.join(',')} redis=${f.redis.join(',')}` +
      (f.ttl ? ` ttl=${f.ttl.dns}/${f.ttl.redis}` : ''),
  );
}

describe('drift: compareZone', () => {
  const full = host('full', {
    ipv4: '192.0.2.1',
    ipv6: '2001:db8::1',
    wildcard: true,
    mx: 'mx.example.net',
    backmx: true,
  });
  const fullRecords = [
    rec('full', 'A', '192.0.2.1'),
    rec('full', 'AAAA', '2001:db8::1'),
    rec('*.full', 'A', '192.0.2.1'),
    rec('*.full', 'AAAA', '2001:db8::1'),
    rec('full', 'MX', `10 full.${ZONE}`),
    rec('full', 'MX', '20 mx.example.net'),
  ];

  it('agreement: what the plan of the stored state leaves is exactly in DNS', () => {
    expect(compare(fullRecords, [full])).to.deep.equal([]);
  });

  it('missing, extra and different RRsets, each once, sorted by host, name and type', () => {
    const records = [
      rec('full', 'A', '192.0.2.9'), // different
      rec('*.full', 'A', '192.0.2.1'),
      rec('*.full', 'AAAA', '2001:db8::1'),
      rec('full', 'MX', `10 full.${ZONE}`), // one of two: different
      rec('*.plain', 'A', '192.0.2.2'), // extra: plain has no wildcard
      rec('plain', 'MX', '10 mx.example.net'), // extra: plain has no MX
    ];
    const plain = host('plain', { ipv4: '192.0.2.2' });
    expect(short(compare(records, [plain, full]))).to.deep.equal([
      'different full A dns=192.0.2.9 redis=192.0.2.1',
      'missing full AAAA dns= redis=2001:db8::1',
      `different full MX dns=10 full.${ZONE} redis=10 full.${ZONE},20 mx.example.net`,
      'extra *.plain A dns=192.0.2.2 redis=',
      'missing plain A dns= redis=192.0.2.2',
      'extra plain MX dns=10 mx.example.net redis=',
    ]);
  });

  it('a TTL other than dns.ttl is a difference (with both TTLs), the values being the same', () => {
    const plain = host('plain', { ipv4: '192.0.2.2' });
    const [finding] = compare([rec('plain', 'A', '192.0.2.2', 3600)], [plain]);
    expect(finding).to.deep.equal({
      kind: 'different',
      zone: ZONE,
      name: `plain.${ZONE}`,
      type: 'A',
      host: `plain.${ZONE}`,
      dns: ['192.0.2.2'],
      redis: ['192.0.2.2'],
      ttl: { dns: 3600, redis: 60 },
    });
  });

  it('a family the store does not know is not compared at the host (the bridge never set it)', () => {
    const v6only = host('v6only', { ipv6: '2001:db8::6' });
    expect(compare([rec('v6only', 'AAAA', '2001:db8::6'), rec('v6only', 'A', '203.0.113.1')], [v6only])).to.deep.equal(
      [],
    );
    // ... but at *.host with wildcard off, both families go (docs/protocol.md, "What goes into DNS").
    expect(
      short(compare([rec('v6only', 'AAAA', '2001:db8::6'), rec('*.v6only', 'A', '203.0.113.1')], [v6only])),
    ).to.deep.equal(['extra *.v6only A dns=203.0.113.1 redis=']);
  });

  it('an offline host: no addresses anywhere, its MX as stored', () => {
    const off = host('off', { state: 'offline', wildcard: true, mx: 'mx.example.net' });
    expect(compare([rec('off', 'MX', '10 mx.example.net')], [off])).to.deep.equal([]);
    expect(short(compare([rec('off', 'A', '192.0.2.7'), rec('*.off', 'AAAA', '2001:db8::7')], [off]))).to.deep.equal([
      'extra *.off AAAA dns=2001:db8::7 redis=',
      'extra off A dns=192.0.2.7 redis=',
      'missing off MX dns= redis=10 mx.example.net',
    ]);
  });

  it('blocked and closed hosts keep their records: compared as stored', () => {
    const blocked = host('blk', { state: 'blocked', ipv4: '192.0.2.4' });
    expect(compare([rec('blk', 'A', '192.0.2.4')], [blocked])).to.deep.equal([]);
  });

  it('unknown: host-shaped names with addresses that Redis does not know; not the apex, nameservers or mail servers', () => {
    const plain = host('plain', { ipv4: '192.0.2.2', mx: `mail.${ZONE}` });
    const records = [
      rec('plain', 'A', '192.0.2.2'),
      rec('plain', 'MX', `10 mail.${ZONE}`),
      rec('@', 'A', '192.0.2.80'), // the apex
      rec('mail', 'A', '192.0.2.25'), // an MX target
      rec('ns2', 'A', '192.0.2.54'), // named below by NS
      rec('@', 'NS', `ns2.${ZONE}`),
      rec('rogue', 'A', '192.0.2.66'),
      rec('rogue', 'AAAA', '2001:db8::66'),
      rec('*.wild', 'A', '192.0.2.67'),
      rec('www.static', 'A', '192.0.2.68'), // two labels: no registered host has that shape
      rec('txtonly', 'MX', '10 mx.example.net'), // no address
    ];
    expect(short(compare(records, [plain]))).to.deep.equal([
      'unknown rogue A dns=192.0.2.66 redis=',
      'unknown rogue AAAA dns=2001:db8::66 redis=',
      'unknown *.wild A dns=192.0.2.67 redis=',
    ]);
    // A registered host two labels down makes two-label names host-shaped.
    const deep = host('h.sub', { ipv4: '192.0.2.3' });
    expect(short(compare([...records, rec('h.sub', 'A', '192.0.2.3')], [plain, deep]))).to.include(
      'unknown www.static A dns=192.0.2.68 redis=',
    );
  });

  it('static names are never findings, of any type; other unknown names still are', () => {
    const plain = host('plain', { ipv4: '192.0.2.2' });
    const records = [
      rec('plain', 'A', '192.0.2.2'),
      rec('www', 'A', '192.0.2.80'),
      rec('www', 'AAAA', '2001:db8::80'),
      rec('www', 'MX', '10 mx.example.net'),
      rec('pc.lab', 'A', '192.0.2.81'),
      rec('*.lab', 'A', '192.0.2.82'),
      rec('rogue', 'A', '192.0.2.66'),
    ];
    const withDeep = [plain, host('h.sub', { ipv4: '192.0.2.3' })];
    const all = [...records, rec('h.sub', 'A', '192.0.2.3')];
    expect(short(compare(all, withDeep))).to.deep.equal([
      'unknown *.lab A dns=192.0.2.82 redis=',
      'unknown pc.lab A dns=192.0.2.81 redis=',
      'unknown rogue A dns=192.0.2.66 redis=',
      'unknown www A dns=192.0.2.80 redis=',
      'unknown www AAAA dns=2001:db8::80 redis=',
    ]);
    expect(short(compare(all, withDeep, [`www.${ZONE}`, `*.lab.${ZONE}`]))).to.deep.equal([
      'unknown rogue A dns=192.0.2.66 redis=',
    ]);
  });

  it('a host registered at a static name, or whose wildcard name is one, has no finding there (check reports it)', () => {
    // lab was registered before *.lab was listed: its plan deletes *.lab, the operator's record there is no drift.
    const lab = host('lab', { ipv4: '192.0.2.5' });
    const www = host('www', { ipv4: '192.0.2.6' });
    const records = [rec('lab', 'A', '192.0.2.9'), rec('*.lab', 'A', '192.0.2.82'), rec('www', 'A', '192.0.2.80')];
    expect(short(compare(records, [lab, www]))).to.deep.equal([
      'extra *.lab A dns=192.0.2.82 redis=',
      'different lab A dns=192.0.2.9 redis=192.0.2.5',
      'different www A dns=192.0.2.80 redis=192.0.2.6',
    ]);
    expect(short(compare(records, [lab, www], [`www.${ZONE}`, `*.lab.${ZONE}`]))).to.deep.equal([
      'different lab A dns=192.0.2.9 redis=192.0.2.5',
    ]);
  });

  it('an MX deleted behind our back keeps its target from being taken for an unknown host', () => {
    const plain = host('plain', { ipv4: '192.0.2.2', mx: `mail.${ZONE}` });
    expect(short(compare([rec('plain', 'A', '192.0.2.2'), rec('mail', 'A', '192.0.2.25')], [plain]))).to.deep.equal([
      `missing plain MX dns= redis=10 mail.${ZONE}`,
    ]);
  });
});

describe('drift: the fix, on in-memory ports', () => {
  const drifted = (fqdn: string): Finding => ({
    kind: 'missing',
    zone: ZONE,
    name: fqdn,
    type: 'A',
    host: fqdn,
    dns: [],
    redis: ['192.0.2.1'],
  });

  class Fake {
    readonly calls: string[] = [];
    readonly stored = new Map<string, HostRecord>();
    busy = new Map<string, number>();
    failing = new Map<string, DnsUpdateError>();
    hosts: HostAdmin & Pick<HostGate, 'commit' | 'release'> = {
      get: async () => undefined,
      repairOf: async () => undefined,
      add: async () => undefined,
      remove: async () => undefined,
      setState: async () => undefined,
      indexNesting: async () => 0,
      list: async () => [...this.stored.values()],
      claim: async (fqdn: string) => {
        const n = this.busy.get(fqdn) ?? 0;
        if (n > 0) {
          this.busy.set(fqdn, n - 1);
          this.calls.push(`busy ${fqdn}`);
          return 'busy' as const;
        }
        const h = this.stored.get(fqdn);
        this.calls.push(`claim ${fqdn}`);
        return h && { host: h, lease: { fqdn, token: `t-${fqdn}` }, repairDue: false };
      },
      commit: async (lease: Lease, target: TargetState, opts?: { republish?: boolean }) => {
        this.calls.push(`commit ${lease.fqdn} ${target.ipv4} offline=${target.offline} republish=${opts?.republish}`);
        return 'committed' as const;
      },
      release: async (lease: Lease, opts?: { republishInMs?: number }) => {
        this.calls.push(`release ${lease.fqdn} ${JSON.stringify(opts)}`);
      },
    };
    publisher: Publisher = {
      zoneFor: (fqdn) => (fqdn.endsWith(`.${ZONE}`) ? ZONE : undefined),
      recentlyUnreachable: () => false,
      publish: async (change: HostChange) => {
        this.calls.push(`publish ${change.fqdn} ${change.target.ipv4} leave=${JSON.stringify(change.leave)}`);
        const err = this.failing.get(change.fqdn);
        if (err) throw err;
      },
    };
    transfer: ZoneTransfer = { transfer: async (zone) => ({ zone, serial: 1, records: APEX }) };
    check = new DriftCheck({
      hosts: this.hosts,
      publisher: this.publisher,
      transfer: this.transfer,
      planner,
      leaseMs: 500,
    });
  }

  it('republishes the stored state read under the lease, then records it as a republish (not a client update)', async () => {
    const f = new Fake();
    f.stored.set(`a.${ZONE}`, host('a', { ipv4: '192.0.2.1' }));
    f.busy.set(`a.${ZONE}`, 1);
    const unknown: Finding = { ...drifted(`rogue.${ZONE}`), kind: 'unknown', host: undefined };
    const report = await f.check.fix([drifted(`a.${ZONE}`), drifted(`a.${ZONE}`), unknown]);
    expect(report).to.deep.equal({ republished: [`a.${ZONE}`], failed: [] });
    expect(f.calls).to.deep.equal([
      `busy a.${ZONE}`,
      `claim a.${ZONE}`,
      `publish a.${ZONE} 192.0.2.1 leave={"ipv4":false,"ipv6":true}`,
      `commit a.${ZONE} 192.0.2.1 offline=false republish=true`,
    ]);
  });

  it('a refused republish releases the lease and is reported; one that may be applied is due again at once', async () => {
    const f = new Fake();
    for (const l of ['r', 'm', 'gone']) if (l !== 'gone') f.stored.set(`${l}.${ZONE}`, host(l, { ipv4: '192.0.2.5' }));
    f.failing.set(
      `r.${ZONE}`,
      new DnsUpdateError('ERR_DNS_RCODE', ZONE, 'primary answered REFUSED', { rcode: 'REFUSED' }),
    );
    f.failing.set(
      `m.${ZONE}`,
      new DnsUpdateError('ERR_DNS_TIMEOUT', ZONE, 'no answer', { retryable: true, maybeApplied: true }),
    );
    const report = await f.check.fix([drifted(`r.${ZONE}`), drifted(`m.${ZONE}`), drifted(`gone.${ZONE}`)]);
    expect(report).to.deep.equal({
      republished: [],
      failed: [
        { host: `m.${ZONE}`, error: `zone ${ZONE}: no answer` },
        { host: `r.${ZONE}`, error: `zone ${ZONE}: primary answered REFUSED` },
      ],
    });
    expect(f.calls).to.include(`release m.${ZONE} {"republishInMs":0}`);
    expect(f.calls).to.include(`release r.${ZONE} {}`);
    expect(f.calls.filter((c) => c.startsWith('commit'))).to.deep.equal([]);
  });

  it("check leaves out each zone's own static names", async () => {
    const f = new Fake();
    f.transfer = {
      transfer: async (zone) => ({
        zone,
        serial: 1,
        records: [...APEX, rec('www', 'A', '192.0.2.80'), rec('rogue', 'A', '192.0.2.66')],
      }),
    };
    const check = (staticNames: Map<string, string[]>) =>
      new DriftCheck({
        hosts: f.hosts,
        publisher: f.publisher,
        transfer: f.transfer,
        planner,
        leaseMs: 500,
        staticNames,
      }).check([ZONE]);
    expect(short((await check(new Map([[ZONE, [`www.${ZONE}`]]]))).findings)).to.deep.equal([
      'unknown rogue A dns=192.0.2.66 redis=',
    ]);
    // Another zone's list does not apply here.
    expect((await check(new Map([['other.example', [`www.${ZONE}`]]]))).findings).to.have.length(2);
  });

  it('check compares every zone it is given with the hosts of that zone', async () => {
    const f = new Fake();
    f.stored.set(`a.${ZONE}`, host('a', { ipv4: '192.0.2.1' }));
    f.stored.set('b.elsewhere.example', { ...host('b'), fqdn: 'b.elsewhere.example', ipv4: '192.0.2.2' });
    const report = await f.check.check([ZONE]);
    expect(report.zones).to.deep.equal([{ zone: ZONE, serial: 1, hosts: 1 }]);
    expect(short(report.findings)).to.deep.equal(['missing a A dns= redis=192.0.2.1']);
  });
});

// ---- TSIG over a multi-message answer (RFC 8945 §5.3.1) ------------------------------------

const KEY = { name: 'ddns-key', algorithm: 'hmac-sha256' as const, secret: Buffer.alloc(32, 9) };
const ZONE_CONFIG: ZoneConfig = { name: ZONE, primary: { host: '127.0.0.1', port: 53 }, key: KEY, staticNames: [] };
const NOW = 1_700_000_000;

/** A response message (QR set) with one A record in the answer section. */
function answer(id: number, address: string): Buffer {
  const query = encodeAxfrQuery(id, ZONE);
  const owner = Buffer.from([0xc0, 12]); // the question's name
  const rr = Buffer.alloc(owner.length + 14);
  owner.copy(rr, 0);
  rr.writeUInt16BE(1, 2); // A
  rr.writeUInt16BE(1, 4); // IN
  rr.writeUInt32BE(60, 6);
  rr.writeUInt16BE(4, 10);
  Buffer.from(address.split('.').map(Number)).copy(rr, 12);
  const msg = Buffer.concat([query, rr]);
  msg.writeUInt16BE(0x8400, 2); // QR, AA
  msg.writeUInt16BE(1, 6); // ANCOUNT
  return msg;
}

/** The server's side of §5.3.1, written out here: the MAC of a later message over the prior MAC, messages, timers. */
function signLater(message: Buffer, priorMac: Buffer, unsignedBefore: Buffer[], time = NOW): Buffer {
  const timers = Buffer.alloc(8);
  timers.writeUInt32BE(time, 2);
  timers.writeUInt16BE(300, 6);
  const len = Buffer.alloc(2);
  len.writeUInt16BE(priorMac.length);
  const h = createHmac('sha256', KEY.secret).update(len).update(priorMac);
  for (const m of unsignedBefore) h.update(m);
  const mac = h.update(message).update(timers).digest();
  // The TSIG record: owner ddns-key, type 250, class ANY, TTL 0.
  const owner = Buffer.from('\x08ddns-key\x00', 'latin1');
  const alg = Buffer.from('\x0bhmac-sha256\x00', 'latin1');
  const rdata = Buffer.alloc(alg.length + 16 + mac.length);
  alg.copy(rdata, 0);
  let p = alg.length;
  p = rdata.writeUInt16BE(0, p);
  p = rdata.writeUInt32BE(time, p);
  p = rdata.writeUInt16BE(300, p);
  p = rdata.writeUInt16BE(mac.length, p);
  p += mac.copy(rdata, p);
  p = rdata.writeUInt16BE(message.readUInt16BE(0), p);
  p = rdata.writeUInt16BE(0, p);
  rdata.writeUInt16BE(0, p);
  const head = Buffer.alloc(10);
  head.writeUInt16BE(250, 0);
  head.writeUInt16BE(255, 2);
  head.writeUInt16BE(rdata.length, 8);
  const out = Buffer.concat([message, owner, head, rdata]);
  out.writeUInt16BE(out.readUInt16BE(10) + 1, 10);
  return out;
}

describe('drift: the transfer TSIG stream (RFC 8945 §5.3.1)', () => {
  function stream(): { verifier: TsigStreamVerifier; first: Buffer; firstMac: Buffer } {
    const request = signRequest(encodeAxfrQuery(7, ZONE), KEY, { timeSigned: NOW, fudge: 300 });
    const first = signMessage(answer(7, '192.0.2.1'), KEY, { timeSigned: NOW, fudge: 300, requestMac: request.mac });
    return {
      verifier: new TsigStreamVerifier(ZONE_CONFIG, request.mac, () => NOW, 300),
      first: first.message,
      firstMac: first.mac,
    };
  }

  it('accepts signed messages and unsigned ones between them, the last one signed', () => {
    const { verifier, first, firstMac } = stream();
    verifier.accept(first);
    const u1 = answer(7, '192.0.2.2');
    const u2 = answer(7, '192.0.2.3');
    verifier.accept(u1);
    verifier.accept(u2);
    verifier.accept(signLater(answer(7, '192.0.2.4'), firstMac, [u1, u2]));
    verifier.finish();
    expect(answerRecords(u1)).to.deep.equal([{ name: ZONE, type: 'A', ttl: 60, value: '192.0.2.2' }]);
  });

  it('an unsigned message altered on the way fails the next signed one', () => {
    const { verifier, first, firstMac } = stream();
    verifier.accept(first);
    const u1 = answer(7, '192.0.2.2');
    verifier.accept(answer(7, '192.0.2.99'));
    expect(() => verifier.accept(signLater(answer(7, '192.0.2.4'), firstMac, [u1]))).to.throw(
      DnsUpdateError,
      /MAC does not match/,
    );
  });

  it('a stream ending on an unsigned message is not trusted', () => {
    const { verifier, first } = stream();
    verifier.accept(first);
    verifier.accept(answer(7, '192.0.2.2'));
    expect(() => verifier.finish()).to.throw(DnsUpdateError, /last transfer message is not signed/);
  });

  it('at most 99 unsigned messages in a row', () => {
    const { verifier, first } = stream();
    verifier.accept(first);
    for (let i = 0; i < 99; i++) verifier.accept(answer(7, '192.0.2.2'));
    expect(() => verifier.accept(answer(7, '192.0.2.2'))).to.throw(DnsUpdateError, /more than 99 unsigned/);
  });

  it('a later message signed outside the fudge is refused', () => {
    const { verifier, first, firstMac } = stream();
    verifier.accept(first);
    expect(() => verifier.accept(signLater(answer(7, '192.0.2.4'), firstMac, [], NOW - 1000))).to.throw(
      DnsUpdateError,
      /signed 1000 s off our clock/,
    );
  });

  it('an unsigned first message is refused', () => {
    const { verifier } = stream();
    expect(() => verifier.accept(answer(7, '192.0.2.1'))).to.throw(DnsUpdateError, /TSIG/);
  });
});
