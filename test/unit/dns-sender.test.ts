import { randomBytes } from 'node:crypto';
/**
 * Transport and zone-sender behaviour that real servers cannot be made to show on demand
 * (out-of-order answers, silence, dropped connections, SERVFAIL once): a scripted TCP
 * peer on 127.0.0.1 that checks each request's TSIG and answers with a signed response.
 * The real-server behaviour is covered by test/integration/dns-publish.test.ts.
 */
import { expect } from 'chai';
import net from 'node:net';
import type { Config, ZoneConfig } from '../../src/config/schema.js';
import { DnsUpdateError } from '../../src/core/errors.js';
import type { HostPlan } from '../../src/dns/plan.js';
import { TcpTransport } from '../../src/dns/transport.js';
import { encodeTsigRecord, extractTsig, signMessage, TSIG_ERRORS, verifyMessage } from '../../src/core/tsig.js';
import { readName } from '../../src/core/dns-wire.js';
import { ZoneSender } from '../../src/dns/zone-sender.js';

interface SeenRequest {
  id: number;
  /** Owner names of the prerequisites: one per host in our plans. */
  hosts: string[];
  signedOk: boolean;
  /** Requests received and not answered yet when this one arrived (on any connection). */
  openAtArrival: number;
  /** The connection it came on: 1 for the first one accepted. */
  conn: number;
}

interface Action {
  rcode?: number;
  delayMs?: number;
  unsigned?: boolean;
  /** Never answer. */
  silent?: boolean;
  /** Close the connection instead of answering. */
  close?: boolean;
  /** The RCODE, decided when the answer is written (overrides rcode). */
  rcodeAtAnswer?: () => number;
  /** Answer NOTAUTH with an unsigned TSIG error BADKEY (how Knot answers an ACL denial). */
  badkey?: boolean;
  /** Answer NOTAUTH with TSIG error BADSIG and an empty MAC (RFC 8945 §5.3.2). */
  badsig?: boolean;
  /** Answer NOTAUTH with a signed TSIG error BADTIME naming the server's clock (RFC 8945 §5.2.3). */
  badtime?: boolean;
  /** Sign with another secret under our key name (a forger who does not know the key). */
  forgedMac?: boolean;
  /** Sign with another key (another name and secret). */
  otherKey?: boolean;
  /** The header's flags word (QR, opcode, RCODE) as sent, unsigned: for QR=0 / wrong-opcode answers. */
  flags?: number;
}

const key = { name: 'sender-key', algorithm: 'hmac-sha256' as const, secret: randomBytes(32) };

function prerequisiteOwners(msg: Buffer): string[] {
  let pos = readName(msg, 12).next + 4;
  const out: string[] = [];
  for (let i = 0; i < msg.readUInt16BE(6); i++) {
    const { name, next } = readName(msg, pos);
    out.push(name);
    pos = next + 10 + msg.readUInt16BE(next + 8);
  }
  return out;
}

class ScriptedPrimary {
  readonly seen: SeenRequest[] = [];
  readonly sockets = new Set<net.Socket>();
  connections = 0;
  /** Connection numbers whose socket closed. */
  private readonly closedConns = new Set<number>();
  private readonly closeWaiters: Array<() => void> = [];
  private open = 0;
  script: (req: SeenRequest, index: number) => Action = () => ({});
  private server = net.createServer((socket) => this.onConnection(socket));
  port = 0;

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise((resolve) => this.server.close(resolve));
  }

  /** Resolves once connection number `conn` has closed (the test's own timeout bounds it). */
  async closed(conn: number): Promise<void> {
    while (!this.closedConns.has(conn)) await new Promise<void>((wake) => this.closeWaiters.push(wake));
  }

  private onConnection(socket: net.Socket): void {
    const conn = ++this.connections;
    this.sockets.add(socket);
    socket.on('close', () => {
      this.sockets.delete(socket);
      this.closedConns.add(conn);
      for (const wake of this.closeWaiters.splice(0)) wake();
    });
    socket.on('error', () => {});
    let buf = Buffer.alloc(0);
    socket.on('data', (chunk) => {
      buf = Buffer.concat([buf, chunk]);
      while (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
        const msg = buf.subarray(2, 2 + buf.readUInt16BE(0));
        buf = buf.subarray(2 + msg.length);
        this.answer(socket, Buffer.from(msg), conn);
      }
    });
  }

  private answer(socket: net.Socket, msg: Buffer, conn: number): void {
    const req: SeenRequest = {
      conn,
      id: msg.readUInt16BE(0),
      hosts: prerequisiteOwners(msg),
      signedOk: verifyMessage(msg, key, { now: Date.now() / 1000 }).ok,
      openAtArrival: this.open,
    };
    const index = this.seen.push(req) - 1;
    const action = this.script(req, index);
    if (action.silent) return;
    if (action.close) {
      socket.destroy();
      return;
    }
    this.open++;
    setTimeout(() => {
      this.open--;
      const zoneEnd = readName(msg, 12).next + 4;
      const body = Buffer.from(msg.subarray(0, zoneEnd));
      const rcode =
        action.badkey || action.badsig || action.badtime ? 9 : (action.rcodeAtAnswer?.() ?? action.rcode ?? 0);
      body.writeUInt16BE(action.flags ?? 0x8000 | (5 << 11) | rcode, 2);
      body.writeUInt32BE(0, 6); // PRCOUNT, UPCOUNT
      body.writeUInt16BE(0, 10);
      const requestMac = extractTsig(msg)!.tsig.mac;
      let reply: Buffer;
      if (action.badkey || action.badsig) {
        const error = action.badkey ? TSIG_ERRORS.BADKEY : TSIG_ERRORS.BADSIG;
        const tsig = { ...extractTsig(msg)!.tsig, mac: Buffer.alloc(0), error, otherData: Buffer.alloc(0) };
        reply = Buffer.concat([body, encodeTsigRecord(tsig)]);
        reply.writeUInt16BE(1, 10); // ARCOUNT
      } else if (action.badtime) {
        const serverTime = Buffer.alloc(6);
        serverTime.writeUInt32BE(Math.floor(Date.now() / 1000) + 3600, 2);
        const opts = {
          timeSigned: Date.now() / 1000 + 3600,
          fudge: 300,
          requestMac,
          error: TSIG_ERRORS.BADTIME,
          otherData: serverTime,
        };
        reply = signMessage(body, key, opts).message;
      } else if (action.forgedMac || action.otherKey) {
        const forger = { ...key, secret: Buffer.alloc(32, 7), ...(action.otherKey ? { name: 'other-key' } : {}) };
        reply = signMessage(body, forger, { timeSigned: Date.now() / 1000, fudge: 300, requestMac }).message;
      } else if (action.flags !== undefined) {
        reply = body;
      } else {
        reply = action.unsigned
          ? body
          : signMessage(body, key, { timeSigned: Date.now() / 1000, fudge: 300, requestMac }).message;
      }
      socket.write(Buffer.concat([Buffer.from([reply.length >> 8, reply.length & 255]), reply]));
    }, action.delayMs ?? 0);
  }
}

const ZONE = 'dyn.example.org';
const dnsConfig = (over: Partial<Config['dns']> = {}): Config['dns'] => ({
  ttl: 60,
  timeoutMs: 1000,
  maxInFlight: 4,
  fudge: 300,
  clockOffsetSeconds: 0,
  ...over,
});

function plan(label: string): HostPlan {
  const fqdn = `${label}.${ZONE}`;
  return {
    fqdn,
    zone: ZONE,
    prerequisites: [{ kind: 'rrset-absent', name: fqdn, type: 'CNAME' }],
    updates: [
      { kind: 'delete-rrset', name: fqdn, type: 'A' },
      { kind: 'add', name: fqdn, ttl: 60, data: { type: 'A', address: '192.0.2.1' } },
    ],
  };
}

async function rejection(p: Promise<unknown>): Promise<DnsUpdateError> {
  try {
    await p;
  } catch (err) {
    expect(err).to.be.instanceOf(DnsUpdateError);
    return err as DnsUpdateError;
  }
  throw new Error('expected a DnsUpdateError, got success');
}

describe('dns transport and zone sender (scripted TCP peer)', () => {
  let primary: ScriptedPrimary;
  let zone: ZoneConfig;
  const closers: Array<() => unknown> = [];

  beforeEach(async () => {
    primary = new ScriptedPrimary();
    await primary.start();
    zone = { name: ZONE, primary: { host: '127.0.0.1', port: primary.port }, key, staticNames: [] };
  });
  afterEach(async () => {
    for (const close of closers.splice(0)) await close();
    await primary.stop();
  });

  function sender(over: Partial<Config['dns']> = {}, opts = {}): ZoneSender {
    const s = new ZoneSender(zone, dnsConfig(over), opts);
    closers.push(() => s.close());
    return s;
  }

  describe('TcpTransport', () => {
    function transport(maxInFlight = 4, port = primary.port): TcpTransport {
      const t = new TcpTransport({ zone: ZONE, host: '127.0.0.1', port, maxInFlight });
      closers.push(() => t.close());
      return t;
    }
    /** A tiny "request": a header with the chosen ID, QR=0, opcode 5, plus a zone and a TSIG so the peer can answer. */
    const build = (id: number): Buffer => {
      const header = Buffer.from([id >> 8, id & 255, 0x28, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
      const zoneSection = Buffer.from('0364796e076578616d706c65036f72670000060001', 'hex');
      return signMessage(Buffer.concat([header, zoneSection]), key, { timeSigned: Date.now() / 1000, fudge: 300 })
        .message;
    };

    it('matches pipelined answers to requests by ID, out of order, on one connection', async () => {
      primary.script = (_req, i) => ({ delayMs: i === 0 ? 150 : 0 });
      const t = transport();
      const [a, b, c] = await Promise.all([t.request(build, 1000), t.request(build, 1000), t.request(build, 1000)]);
      expect(primary.connections).to.equal(1);
      expect(primary.seen.map((s) => s.id)).to.deep.equal([a.readUInt16BE(0), b.readUInt16BE(0), c.readUInt16BE(0)]);
      expect(new Set(primary.seen.map((s) => s.id)).size).to.equal(3);
    });

    it('keeps at most maxInFlight requests outstanding; the rest wait in FIFO order', async () => {
      primary.script = () => ({ delayMs: 100 });
      const t = transport(2);
      const order: number[] = [];
      const all = [0, 1, 2, 3, 4].map((i) => t.request(build, 2000).then(() => order.push(i)));
      await new Promise((r) => setTimeout(r, 50));
      expect(primary.seen.length).to.equal(2);
      expect(t.activeCount).to.equal(2);
      await Promise.all(all);
      expect(primary.seen.length).to.equal(5);
      expect(order).to.deep.equal([0, 1, 2, 3, 4]);
    });

    it('fails requests of a dropped connection as retryable, then reconnects on demand', async () => {
      primary.script = (_r, i) => (i === 0 ? { close: true } : {});
      const t = transport();
      const err = await rejection(t.request(build, 1000));
      expect(err).to.include({ code: 'ERR_DNS_CONNECTION', retryable: true });
      await t.request(build, 1000);
      expect(primary.connections).to.equal(2);
    });

    it('times out a silent request as retryable and ignores its late answer', async () => {
      // The second request is answered at once: the connection is alive, so it is kept.
      primary.script = (_r, i) => (i === 0 ? { delayMs: 300 } : {});
      const t = transport();
      const started = Date.now();
      const [slow] = await Promise.allSettled([t.request(build, 100), t.request(build, 1000)]);
      const err = (slow as PromiseRejectedResult).reason as DnsUpdateError;
      expect(err).to.include({ code: 'ERR_DNS_TIMEOUT', retryable: true });
      expect(Date.now() - started).to.be.within(90, 250);
      await new Promise((r) => setTimeout(r, 300)); // the late answer arrives: no crash, no mismatch
      const ok = await t.request(build, 1000);
      expect(ok.readUInt16BE(0)).to.not.equal(primary.seen[0]!.id);
      expect(primary.connections).to.equal(1);
    });

    it('a connection that went silent is replaced: after a timeout with nothing read since the write, the next request goes on a new connection', async () => {
      // The first connection answers its first request, then nothing ever again (a firewall
      // that lost its state); every new connection is answered.
      primary.script = (r) =>
        r.conn === 1 && primary.seen.filter((s) => s.conn === 1).length > 1 ? { silent: true } : {};
      const t = transport();
      await t.request(build, 1000);
      expect(await rejection(t.request(build, 100))).to.include({ code: 'ERR_DNS_TIMEOUT', maybeApplied: true });
      const ok = await t.request(build, 1000);
      expect(ok.readUInt16BE(0)).to.equal(primary.seen.at(-1)!.id);
      expect(primary.seen.map((s) => s.conn)).to.deep.equal([1, 1, 2]);
    });

    it('a silent connection is reset at once: a request still on it fails as maybe applied (retryable); nothing sent on the new one is affected', async () => {
      primary.script = (r) => (r.conn === 1 ? { silent: true } : {});
      const t = transport();
      const first = t.request(build, 100);
      const second = t.request(build, 1000); // written to the same dead connection
      expect(await rejection(first)).to.include({ code: 'ERR_DNS_TIMEOUT', maybeApplied: true });
      // Reset, not left to time out: a copy the kernel keeps retransmitting could land after a
      // newer change sent on the next connection.
      expect(await rejection(second)).to.include({ code: 'ERR_DNS_CONNECTION', maybeApplied: true, retryable: true });
      await primary.closed(1);
      await t.request(build, 1000);
      expect(primary.seen.map((s) => s.conn)).to.deep.equal([1, 1, 2]);
      expect(primary.sockets.size).to.equal(1);
    });

    it('a primary that only stalled is reset the same way: the request waiting there fails retryable and maybe applied, the next one goes on a new connection', async () => {
      primary.script = (r) => (r.conn === 1 ? { delayMs: 300 } : {});
      const t = transport();
      const first = t.request(build, 100);
      const second = t.request(build, 2000);
      expect(await rejection(first)).to.include({ code: 'ERR_DNS_TIMEOUT', maybeApplied: true });
      expect(await rejection(second)).to.include({ code: 'ERR_DNS_CONNECTION', maybeApplied: true, retryable: true });
      const answer = await t.request(build, 2000);
      expect(answer.readUInt16BE(0)).to.equal(primary.seen[2]!.id);
      expect(primary.seen.map((s) => s.conn)).to.deep.equal([1, 1, 2]);
    });

    it('reports a refused connection as retryable, without crashing the process', async () => {
      await primary.stop();
      const t = transport(4, primary.port);
      const err = await rejection(t.request(build, 1000));
      expect(err).to.include({ code: 'ERR_DNS_CONNECTION', retryable: true });
      expect(err.message).to.match(/ECONNREFUSED/);
      primary = new ScriptedPrimary();
      await primary.start();
    });

    it('close() fails outstanding and later requests', async () => {
      primary.script = () => ({ silent: true });
      const t = transport();
      const pending = t.request(build, 1000);
      await new Promise((r) => setTimeout(r, 50));
      t.close();
      expect(await rejection(pending)).to.include({ code: 'ERR_DNS_CONNECTION' });
      expect(await rejection(t.request(build, 1000))).to.include({ code: 'ERR_DNS_CONNECTION' });
    });
  });

  describe('ZoneSender', () => {
    it('signs every request with the zone key and resolves on a signed NOERROR', async () => {
      await sender().send(plan('a'));
      expect(primary.seen).to.have.length(1);
      expect(primary.seen[0]).to.include({ signedOk: true });
      expect(primary.seen[0]!.hosts).to.deep.equal([`a.${ZONE}`]);
    });

    it('retries a SERVFAIL once and succeeds', async () => {
      primary.script = (_r, i) => ({ rcode: i === 0 ? 2 : 0 });
      await sender().send(plan('a'));
      expect(primary.seen).to.have.length(2);
    });

    it('SERVFAIL twice → retryable DnsUpdateError rcode SERVFAIL after exactly two attempts', async () => {
      primary.script = () => ({ rcode: 2 });
      const err = await rejection(sender().send(plan('a')));
      expect(err).to.include({ code: 'ERR_DNS_RCODE', rcode: 'SERVFAIL', retryable: true, zone: ZONE });
      expect(primary.seen).to.have.length(2);
    });

    it('REFUSED is final: no retry, a hint in the message', async () => {
      primary.script = () => ({ rcode: 5 });
      const err = await rejection(sender().send(plan('a')));
      expect(err).to.include({ code: 'ERR_DNS_RCODE', rcode: 'REFUSED', retryable: false });
      expect(err.message).to.match(/update-policy/);
      expect(primary.seen).to.have.length(1);
    });

    it('dns.fudge applies to answers too: with fudge 1000 and our clock 500 s off, an answer signed with fudge 300 is accepted', async () => {
      await sender({ fudge: 1000, clockOffsetSeconds: 500 }).send(plan('a'));
      await sender({ fudge: 1000, clockOffsetSeconds: -500 }).send(plan('b'));
      expect(primary.seen.map((r) => r.signedOk)).to.deep.equal([true, true]);
    });

    it('an unsigned NOERROR is a failure (ERR_DNS_TSIG), an unsigned error answer keeps its rcode', async () => {
      primary.script = () => ({ unsigned: true });
      expect(await rejection(sender().send(plan('a')))).to.include({ code: 'ERR_DNS_TSIG', retryable: false });
      primary.script = () => ({ unsigned: true, rcode: 1 });
      expect(await rejection(sender().send(plan('b')))).to.include({ code: 'ERR_DNS_RCODE', rcode: 'FORMERR' });
    });

    it('a silent primary → ERR_DNS_TIMEOUT within timeoutMs, after two attempts', async () => {
      primary.script = () => ({ silent: true });
      const started = Date.now();
      const err = await rejection(sender({ timeoutMs: 400 }).send(plan('a')));
      expect(err).to.include({ code: 'ERR_DNS_TIMEOUT', retryable: true });
      expect(Date.now() - started).to.be.within(380, 550);
      expect(primary.seen).to.have.length(2);
    });

    it('group commit: sends at once when idle, batches what queues while busy (cap per message)', async () => {
      primary.script = (_r, i) => ({ delayMs: i === 0 ? 100 : 0 });
      const s = sender({ maxInFlight: 1 }, { maxHostsPerMessage: 3 });
      const labels = ['a', 'b', 'c', 'd', 'e', 'f', 'g'];
      await Promise.all(labels.map((l) => s.send(plan(l))));
      expect(primary.seen.map((r) => r.hosts.map((h) => h.split('.')[0]).join(''))).to.deep.equal(['a', 'bcd', 'efg']);
      expect(s.stats).to.deep.equal({ messagesSent: 3, hostsSent: 7, largestMessageHosts: 3 });
    });

    it("a zone's own maxInFlight overrides dns.maxInFlight (BIND: one message at a time, bigger batches)", async () => {
      primary.script = () => ({ delayMs: 50 });
      const labels = ['a', 'b', 'c', 'd', 'e', 'f', 'g'];
      const solo = new ZoneSender({ ...zone, maxInFlight: 1 }, dnsConfig({ maxInFlight: 16 }));
      closers.push(() => solo.close());
      await Promise.all(labels.map((l) => solo.send(plan(l))));
      // Idle: 'a' goes alone; the rest queue behind it and go together.
      expect(primary.seen.map((r) => r.hosts.map((h) => h.split('.')[0]).join(''))).to.deep.equal(['a', 'bcdefg']);

      primary.seen.length = 0;
      const wide = new ZoneSender(zone, dnsConfig({ maxInFlight: 16 }));
      closers.push(() => wide.close());
      await Promise.all(labels.map((l) => wide.send(plan(`w${l}`))));
      // Without the override 16 slots are free: one host per message.
      expect(primary.seen).to.have.length(7);
    });

    it('sendGroup: a group goes in one message, whole even past the host cap, never split over two', async () => {
      primary.script = (_r, i) => ({ delayMs: i === 0 ? 100 : 0 });
      const s = sender({ maxInFlight: 1 }, { maxHostsPerMessage: 3 });
      const first = s.send(plan('a'));
      // While 'a' is out: a single host, a group of four (past the cap of 3), another single host.
      const queued = [s.send(plan('b')), ...s.sendGroup(['p', 'q', 'r', 's'].map(plan)), s.send(plan('c'))];
      await Promise.all([first, ...queued]);
      expect(primary.seen.map((r) => r.hosts.map((h) => h.split('.')[0]).join(''))).to.deep.equal([
        'a',
        'b',
        'pqrs',
        'c',
      ]);
    });

    it('sendGroup: a group that fits joins the message being filled; a refused member fails alone', async () => {
      // YXRRSET whenever the message holds q (as if q had a CNAME).
      primary.script = (r, i) => ({ delayMs: i === 0 ? 100 : 0, rcode: r.hosts.includes(`q.${ZONE}`) ? 7 : 0 });
      const s = sender({ maxInFlight: 1 }, { maxHostsPerMessage: 5 });
      const first = s.send(plan('a'));
      const queued = [s.send(plan('b')), ...s.sendGroup(['p', 'q'].map(plan)), s.send(plan('c'))];
      const results = await Promise.allSettled([first, ...queued]);
      expect(results.map((r) => r.status)).to.deep.equal([
        'fulfilled',
        'fulfilled',
        'fulfilled',
        'rejected',
        'fulfilled',
      ]);
      const messages = primary.seen.map((r) => r.hosts.map((h) => h.split('.')[0]).join(''));
      expect(messages.slice(0, 2)).to.deep.equal(['a', 'bpqc']);
      // Then each host of the refused message on its own.
      expect([...messages.slice(2)].sort()).to.deep.equal(['b', 'c', 'p', 'q']);
    });

    it('group commit respects the byte cap', async () => {
      primary.script = (_r, i) => ({ delayMs: i === 0 ? 100 : 0 });
      // Three records, each owner "x" and a pointer to the zone apex (1 + 1 + 2 bytes), 10
      // fixed bytes each, and one A RDATA.
      const onePlanBytes = 3 * (1 + 1 + 2) + 3 * 10 + 4;
      const s = sender({ maxInFlight: 1 }, { maxMessageBytes: onePlanBytes * 2 });
      await Promise.all(['a', 'b', 'c', 'd', 'e'].map((l) => s.send(plan(l))));
      expect(primary.seen.map((r) => r.hosts.length)).to.deep.equal([1, 2, 2]);
    });

    it('a failed multi-host message is retried host by host: only the guilty host fails', async () => {
      // YXRRSET whenever the message holds c (as if c had a CNAME).
      primary.script = (r, i) => ({ delayMs: i === 0 ? 100 : 0, rcode: r.hosts.includes(`c.${ZONE}`) ? 7 : 0 });
      const s = sender({ maxInFlight: 1 });
      const results = await Promise.allSettled(['a', 'b', 'c', 'd'].map((l) => s.send(plan(l))));
      expect(results.map((r) => r.status)).to.deep.equal(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
      const failed = results[2] as PromiseRejectedResult;
      expect(failed.reason).to.include({ code: 'ERR_DNS_RCODE', rcode: 'YXRRSET', retryable: false });
      expect(primary.seen.map((r) => r.hosts.length)).to.deep.equal([1, 3, 1, 1, 1]);
    });

    it('after a SERVFAIL the hosts go out one at a time, none beside another message (Knot 3.2 fails a merged bulk together)', async () => {
      // As Knot 3.2: the updates that arrive while a bulk is open (20 ms) are applied together,
      // and when one of them fails every one of them is answered SERVFAIL.
      let bulk: { guilty: boolean } | undefined;
      primary.script = (r, i) => {
        if (i < 2) return { delayMs: 100 }; // x and y hold both slots while the rest queue
        if (!bulk) {
          const opened = { guilty: false };
          bulk = opened;
          setTimeout(() => (bulk = bulk === opened ? undefined : bulk), 20);
        }
        const mine = bulk;
        if (r.hosts.includes(`bad.${ZONE}`)) mine.guilty = true;
        return { delayMs: 20, rcodeAtAnswer: () => (mine.guilty ? 2 : 0) };
      };
      const s = sender({ maxInFlight: 2 });
      const labels = ['x', 'y', 'bad', 'g1', 'g2', 'g3'];
      const results = await Promise.allSettled(labels.map((l) => s.send(plan(l))));
      expect(results.map((r) => r.status)).to.deep.equal([
        'fulfilled',
        'fulfilled',
        'rejected',
        'fulfilled',
        'fulfilled',
        'fulfilled',
      ]);
      expect((results[2] as PromiseRejectedResult).reason).to.include({ rcode: 'SERVFAIL' });
      const retries = primary.seen.filter(
        (r) => r.hosts.length === 1 && !['x', 'y'].includes(r.hosts[0]!.split('.')[0]!),
      );
      expect(retries.map((r) => r.hosts[0]!.split('.')[0]).sort()).to.deep.equal(['bad', 'g1', 'g2', 'g3']);
      expect(
        retries.map((r) => r.openAtArrival),
        'nothing else in flight beside a retry',
      ).to.deep.equal([0, 0, 0, 0]);
    });

    it('a BADKEY answer to a multi-host message is split: Knot answers an ACL denial of one name that way', async () => {
      primary.script = (r, i) => ({ delayMs: i === 0 ? 100 : 0, badkey: r.hosts.includes(`denied.${ZONE}`) });
      const s = sender({ maxInFlight: 1 });
      const results = await Promise.allSettled(['a', 'b', 'denied', 'c'].map((l) => s.send(plan(l))));
      expect(results.map((r) => r.status)).to.deep.equal(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
      // Knot's BADKEY answer carries no MAC: it cannot be told from a forged one, so maybe applied.
      expect((results[2] as PromiseRejectedResult).reason).to.include({
        code: 'ERR_DNS_TSIG',
        rcode: 'BADKEY',
        maybeApplied: true,
      });
      expect(primary.seen.map((r) => r.hosts.length)).to.deep.equal([1, 3, 1, 1, 1]);
    });

    it('after no answer the hosts are retried side by side: one update the primary drops does not hold up the others', async () => {
      // The primary never answers a message holding 'lost' (timeout 1000 ms: the merged
      // message is given up at ~500, each host then has ~500 left).
      // x and y hold both slots, so lost and the g's go out merged.
      primary.script = (r, i) => ({ delayMs: i < 2 ? 100 : 0, silent: r.hosts.includes(`lost.${ZONE}`) });
      const s = sender({ maxInFlight: 2 });
      const labels = ['x', 'y', 'lost', 'g1', 'g2', 'g3'];
      const results = await Promise.allSettled(labels.map((l) => s.send(plan(l))));
      expect(results.map((r) => r.status)).to.deep.equal([
        'fulfilled',
        'fulfilled',
        'rejected',
        'fulfilled',
        'fulfilled',
        'fulfilled',
      ]);
      expect((results[2] as PromiseRejectedResult).reason).to.include({ code: 'ERR_DNS_TIMEOUT' });
      expect(primary.seen.map((r) => r.hosts.length).slice(0, 3)).to.deep.equal([1, 1, 4]);
    });

    it('a BADKEY while the primary has not lately accepted our key is zone-wide: the message is not split', async () => {
      primary.script = (_r, i) => ({ delayMs: i === 0 ? 100 : 0, badkey: true });
      const s = sender({ maxInFlight: 1 });
      const results = await Promise.allSettled(['a', 'b', 'c', 'd'].map((l) => s.send(plan(l))));
      expect(results.map((r) => r.status)).to.deep.equal(['rejected', 'rejected', 'rejected', 'rejected']);
      expect(
        primary.seen.map((r) => r.hosts.length),
        'a wrong key name costs no message per host',
      ).to.deep.equal([1, 3]);
    });

    it('an unsigned error answer does not count as our key accepted: a later BADKEY is still zone-wide', async () => {
      primary.script = (_r, i) =>
        i === 0 ? { unsigned: true, rcode: 5 } : { delayMs: i === 1 ? 100 : 0, badkey: true };
      const s = sender({ maxInFlight: 1 });
      await rejection(s.send(plan('x')));
      const results = await Promise.allSettled(['a', 'b', 'c', 'd'].map((l) => s.send(plan(l))));
      expect(results.map((r) => r.status)).to.deep.equal(['rejected', 'rejected', 'rejected', 'rejected']);
      expect(primary.seen.map((r) => r.hosts.length)).to.deep.equal([1, 1, 3]);
    });

    it('a signed error answer shows our key works: a later BADKEY of a merged message is split', async () => {
      primary.script = (r, i) =>
        i === 0 ? { delayMs: 100, rcode: 5 } : { badkey: r.hosts.includes(`denied.${ZONE}`) };
      const s = sender({ maxInFlight: 1 });
      const results = await Promise.allSettled(['x', 'a', 'denied', 'c'].map((l) => s.send(plan(l))));
      expect(results.map((r) => r.status)).to.deep.equal(['rejected', 'fulfilled', 'rejected', 'fulfilled']);
      expect(primary.seen.map((r) => r.hosts.length)).to.deep.equal([1, 3, 1, 1, 1]);
    });

    it('only a BADKEY the answer reports is split: an error answer signed with another key is zone-wide, even while our key is accepted', async () => {
      primary.script = (_r, i) => (i === 0 ? { delayMs: 100, rcode: 5 } : { otherKey: true, rcode: 9 });
      const s = sender({ maxInFlight: 1 });
      const results = await Promise.allSettled(['x', 'a', 'b', 'c'].map((l) => s.send(plan(l))));
      expect(results.map((r) => r.status)).to.deep.equal(['rejected', 'rejected', 'rejected', 'rejected']);
      expect((results[1] as PromiseRejectedResult).reason).to.include({ code: 'ERR_DNS_TSIG', maybeApplied: true });
      expect(primary.seen.map((r) => r.hosts.length)).to.deep.equal([1, 3]);
    });

    it("a merged message waits as long as its youngest host may: an older host's nearer deadline does not cut it short", async () => {
      // timeout 1000 ms; 'old' queues at 0 behind x (answered at 450), 'fresh' at 400; their
      // message goes at ~450 and is answered at ~800, before either deadline (1000, 1400).
      // Timed from the older host alone, it would have been given up at ~725.
      primary.script = (_r, i) => ({ delayMs: i === 0 ? 450 : 350 });
      const s = sender({ maxInFlight: 1 });
      const x = s.send(plan('x'));
      const old = s.send(plan('old'));
      await new Promise((resolve) => setTimeout(resolve, 400));
      const fresh = s.send(plan('fresh'));
      const results = await Promise.allSettled([x, old, fresh]);
      expect(results.map((r) => (r.status === 'rejected' ? String(r.reason) : r.status))).to.deep.equal([
        'fulfilled',
        'fulfilled',
        'fulfilled',
      ]);
      expect(
        primary.seen.map((r) => r.hosts.length),
        'no abandoned message, no retries',
      ).to.deep.equal([1, 2]);
    });

    it('a plan that cannot be encoded fails its own host at once (ERR_DNS_PROTOCOL), nothing is sent', async () => {
      const s = sender();
      const long = plan('a'.repeat(63));
      long.updates.push({
        kind: 'delete-rrset',
        name: `*.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(63)}.${'e'.repeat(45)}.${ZONE}`,
        type: 'A',
      });
      const err = await rejection(s.send(long));
      expect(err).to.include({ code: 'ERR_DNS_PROTOCOL', maybeApplied: false });
      expect(err.message).to.include('cannot encode the update of');
      await s.send(plan('ok'));
      expect(primary.seen.map((r) => r.hosts.length)).to.deep.equal([1]);
    });

    it('a TSIG failure of a multi-host message fails every host without splitting', async () => {
      primary.script = (_r, i) => ({ delayMs: i === 0 ? 100 : 0, unsigned: i > 0 });
      const s = sender({ maxInFlight: 1 });
      const results = await Promise.allSettled(['a', 'b', 'c'].map((l) => s.send(plan(l))));
      expect(results.map((r) => r.status)).to.deep.equal(['fulfilled', 'rejected', 'rejected']);
      expect(primary.seen.map((r) => r.hosts.length)).to.deep.equal([1, 2]);
    });

    it('a connection that goes silent for good is replaced: the update is retried on a new connection and applied', async () => {
      primary.script = (r) => (r.conn === 1 && primary.seen.length > 1 ? { silent: true } : {});
      const s = sender({ timeoutMs: 600 });
      await s.send(plan('a'));
      await s.send(plan('b')); // its first attempt goes into the dead connection
      await s.send(plan('c'));
      expect(primary.seen.map((r) => `${r.hosts[0]!.split('.')[0]}@${r.conn}`)).to.deep.equal([
        'a@1',
        'b@1',
        'b@2',
        'c@2',
      ]);
    });

    it('survives the primary closing the connection mid-batch (retry on a new connection)', async () => {
      primary.script = (_r, i) => (i === 0 ? { close: true } : {});
      await sender().send(plan('a'));
      expect(primary.connections).to.equal(2);
    });

    describe('maybeApplied: whether the primary may still apply a failed update', () => {
      it('an error answer signed with our key is final and known: REFUSED, SERVFAIL twice, a signed BADTIME → false', async () => {
        primary.script = () => ({ rcode: 5 });
        expect(await rejection(sender().send(plan('a')))).to.include({ rcode: 'REFUSED', maybeApplied: false });
        primary.script = () => ({ rcode: 2 });
        expect(await rejection(sender().send(plan('b')))).to.include({ rcode: 'SERVFAIL', maybeApplied: false });
        primary.script = () => ({ badtime: true });
        expect(await rejection(sender().send(plan('c')))).to.include({
          code: 'ERR_DNS_TSIG',
          rcode: 'BADTIME',
          maybeApplied: false,
        });
      });

      it('an error answer whose MAC does not verify may hide a NOERROR (anyone on the path can send one) → true', async () => {
        const cases: Array<[Action, Record<string, unknown>]> = [
          [
            { unsigned: true, rcode: 5 },
            { code: 'ERR_DNS_RCODE', rcode: 'REFUSED' },
          ],
          [
            { unsigned: true, rcode: 1 },
            { code: 'ERR_DNS_RCODE', rcode: 'FORMERR' },
          ],
          [
            { forgedMac: true, rcode: 5 },
            { code: 'ERR_DNS_TSIG', rcode: 'BADSIG' },
          ],
          [{ badsig: true }, { code: 'ERR_DNS_TSIG', rcode: 'BADSIG' }],
          [{ badkey: true }, { code: 'ERR_DNS_TSIG', rcode: 'BADKEY' }],
        ];
        for (const [i, [action, expected]] of cases.entries()) {
          primary.script = () => action;
          const err = await rejection(sender().send(plan(`h${i}`)));
          expect(err, JSON.stringify(action)).to.include({ ...expected, maybeApplied: true });
        }
      });

      it('a message with our ID that is no answer to an UPDATE (QR=0, another opcode) → true', async () => {
        for (const [i, flags] of [(5 << 11) | 5, 0x8000 | (0 << 11) | 5].entries()) {
          primary.script = () => ({ flags });
          expect(await rejection(sender().send(plan(`q${i}`)))).to.include({
            code: 'ERR_DNS_PROTOCOL',
            maybeApplied: true,
          });
        }
      });

      it('a NOERROR that fails verification may stand in for a real one → true', async () => {
        primary.script = () => ({ unsigned: true });
        expect(await rejection(sender().send(plan('a')))).to.include({ code: 'ERR_DNS_TSIG', maybeApplied: true });
      });

      it('no answer, or the connection lost after sending → true', async () => {
        primary.script = () => ({ silent: true });
        const silent = await rejection(sender({ timeoutMs: 300 }).send(plan('a')));
        expect(silent).to.include({ code: 'ERR_DNS_TIMEOUT', maybeApplied: true, retryable: true, zone: ZONE });
        // The flagged copy keeps the message as it was (one zone prefix).
        expect(silent.message).to.match(
          new RegExp(`^zone ${ZONE.replace(/\./g, '\\.')}: no answer from the primary within \\d+ ms`),
        );
        primary.script = () => ({ close: true });
        expect(await rejection(sender({ timeoutMs: 300 }).send(plan('b')))).to.include({
          code: 'ERR_DNS_CONNECTION',
          maybeApplied: true,
        });
      });

      it('a timeout marks the primary unreachable for a while; any answer clears it', async () => {
        const s = sender({ timeoutMs: 300 });
        expect(s.unreachableWithin(60_000)).to.equal(false);
        primary.script = () => ({ silent: true });
        await rejection(s.send(plan('a')));
        expect(s.unreachableWithin(60_000)).to.equal(true);
        expect(s.unreachableWithin(0)).to.equal(false);
        primary.script = () => ({ rcode: 5 });
        await rejection(s.send(plan('b')));
        expect(s.unreachableWithin(60_000), 'it answered (REFUSED)').to.equal(false);
      });

      it('an unknown first attempt stays unknown when the retry is refused → true', async () => {
        primary.script = (_r, i) => (i === 0 ? { close: true } : { rcode: 5 });
        expect(await rejection(sender().send(plan('a')))).to.include({ rcode: 'REFUSED', maybeApplied: true });
        expect(primary.seen).to.have.length(2);
      });

      it('the budget ends while the message is out → true; never sent (no primary listening) → false', async () => {
        primary.script = () => ({ delayMs: 600 });
        expect(await rejection(sender({ timeoutMs: 250 }).send(plan('a')))).to.include({
          code: 'ERR_DNS_TIMEOUT',
          maybeApplied: true,
        });
        const closed = net.createServer();
        await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
        const port = (closed.address() as net.AddressInfo).port;
        await new Promise((r) => closed.close(r));
        zone = { ...zone, primary: { host: '127.0.0.1', port } };
        expect(await rejection(sender({ timeoutMs: 300 }).send(plan('b')))).to.include({
          code: 'ERR_DNS_CONNECTION',
          maybeApplied: false,
        });
      });
    });

    it('close() waits for outstanding updates, then refuses new ones', async () => {
      primary.script = () => ({ delayMs: 100 });
      const s = new ZoneSender(zone, dnsConfig());
      const pending = s.send(plan('a'));
      await s.close();
      await pending;
      expect(await rejection(s.send(plan('b')))).to.include({ code: 'ERR_DNS_CONNECTION' });
    });
  });
});
