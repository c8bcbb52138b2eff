/** DnsMxResolver against a real nameserver (the lab's knotd, or named when knotd is missing). */
import { expect } from 'chai';
import { createSocket } from 'node:dgram';
import { DnsMxResolver } from '../../src/dns/index.js';
import type { MxZone } from '../../src/dns/resolver.js';
import {
  findBinary,
  freePort,
  generateTsigKey,
  makeTempDir,
  removeDir,
  requireBinariesOrSkip,
  startNameServer,
  type NameServer,
} from '../../src/lab/index.js';

const ZONE = 'dyn.example.org';

describe('dns mx resolver (node:dns against a real nameserver)', function () {
  this.timeout(30_000);
  let dir: string | undefined;
  let server: NameServer | undefined;

  before(async function () {
    const kind = findBinary('knotd') ? 'knot' : 'bind';
    requireBinariesOrSkip(this, [kind === 'knot' ? 'knotd' : 'named', 'dig']);
    dir = await makeTempDir('dns-resolver-');
    server = await startNameServer(kind, {
      dir,
      zone: ZONE,
      key: generateTsigKey(),
      records: [
        'mail4 60 IN A 192.0.2.25',
        'mail6 60 IN AAAA 2001:db8::25',
        'txtonly 60 IN TXT "no address"',
        'alias 60 IN CNAME mail4',
        'chain 60 IN CNAME alias',
        'sub 60 IN NS ns.elsewhere.example.',
      ],
    });
  });

  after(async () => {
    await server?.stop();
    if (dir) await removeDir(dir);
  });

  const resolver = (servers: string[], timeoutMs = 1000, zones: (string | MxZone)[] = [ZONE]) =>
    new DnsMxResolver(
      { resolvers: servers, timeoutMs },
      zones.map((z) => (typeof z === 'string' ? { name: z } : z)),
    );
  const primary = () => ({ name: ZONE, primary: { host: '127.0.0.1', port: server!.port } });

  it('true for a name with an A record, and for one with only AAAA', async () => {
    const r = resolver([`127.0.0.1:${server!.port}`]);
    expect(await r.resolves(`mail4.${ZONE}`)).to.equal(true);
    expect(await r.resolves(`mail6.${ZONE}`)).to.equal(true);
  });

  it('false for a missing name and for a name without addresses', async () => {
    const r = resolver([`127.0.0.1:${server!.port}`]);
    expect(await r.resolves(`nothere.${ZONE}`)).to.equal(false);
    expect(await r.resolves(`txtonly.${ZONE}`)).to.equal(false);
  });

  it('false for an alias (CNAME), even one whose target has an address: an MX must not name an alias (RFC 2181 §10.3; BIND refuses the update)', async () => {
    const r = resolver([`127.0.0.1:${server!.port}`]);
    expect(await r.resolves(`alias.${ZONE}`), 'alias → mail4').to.equal(false);
    expect(await r.resolves(`chain.${ZONE}`), 'chain → alias → mail4').to.equal(false);
    expect(await r.resolves(`mail4.${ZONE}`), 'the target itself').to.equal(true);
  });

  it('an alias outside our zones counts by its address (the primary cannot tell; docs/protocol.md, "The update request" asks for an address)', async () => {
    const r = resolver([`127.0.0.1:${server!.port}`], 1000, ['other.example']);
    expect(await r.resolves(`alias.${ZONE}`)).to.equal(true);
  });

  it('false, not a throw, within the timeout when no resolver answers', async () => {
    const port = await freePort(); // nothing listens there
    const started = Date.now();
    expect(await resolver([`127.0.0.1:${port}`], 300).resolves(`mail4.${ZONE}`)).to.equal(false);
    expect(Date.now() - started).to.be.lessThan(1000);
  });

  /** A UDP port on 127.0.0.1 that reads queries and never answers (a dead resolver). */
  async function deadResolver(): Promise<{ address: string; close(): void }> {
    const socket = createSocket('udp4');
    socket.on('message', () => {});
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
    return { address: `127.0.0.1:${socket.address().port}`, close: () => socket.close() };
  }

  /**
   * A scripted UDP resolver: `mail.example.net` has A 192.0.2.25, nothing else; `mode` says
   * what happens to CNAME queries (answered NODATA, dropped) and whether A is answered at all.
   */
  async function scriptedResolver(): Promise<{
    address: string;
    port: number;
    mode: { cname: 'answer' | 'drop'; a: 'answer' | 'drop'; silent: boolean };
    queries: () => number;
    close(): void;
  }> {
    const socket = createSocket('udp4');
    const mode = { cname: 'answer' as 'answer' | 'drop', a: 'answer' as 'answer' | 'drop', silent: false };
    let queries = 0;
    socket.on('message', (q, peer) => {
      queries++;
      if (mode.silent) return;
      let off = 12;
      while (q[off] !== 0) off += q[off]! + 1;
      const qtype = q.readUInt16BE(off + 1);
      if ((qtype === 5 && mode.cname === 'drop') || (qtype === 1 && mode.a === 'drop')) return;
      const header = Buffer.from(q.subarray(0, 12));
      header.writeUInt16BE(0x8180, 2); // a response, recursion desired and available, NOERROR
      header.writeUInt16BE(qtype === 1 ? 1 : 0, 6);
      header.writeUInt32BE(0, 8);
      const answer =
        qtype === 1 ? Buffer.from([0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 192, 0, 2, 25]) : Buffer.alloc(0);
      socket.send(Buffer.concat([header, q.subarray(12, off + 5), answer]), peer.port, peer.address);
    });
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
    return {
      address: `127.0.0.1:${socket.address().port}`,
      port: socket.address().port,
      mode,
      queries: () => queries,
      close: () => socket.close(),
    };
  }

  it('a CNAME query that goes unanswered does not count against an address found (in our zone)', async () => {
    const scripted = await scriptedResolver();
    try {
      scripted.mode.cname = 'drop';
      expect(await resolver([scripted.address], 500, ['example.net']).resolves('mail.example.net')).to.equal(true);
    } finally {
      scripted.close();
    }
  });

  it('a no that came from a timeout is not remembered: the next lookup asks again', async () => {
    const scripted = await scriptedResolver();
    try {
      const r = resolver([scripted.address], 300, []);
      scripted.mode.a = 'drop';
      expect(await r.resolves('mail.example.net'), 'A query lost').to.equal(false);
      scripted.mode.a = 'answer';
      expect(await r.resolves('mail.example.net'), 'asked again').to.equal(true);
    } finally {
      scripted.close();
    }
  });

  it('several resolvers are asked at once: a dead one, first or last, does not hide the answer of a working one', async () => {
    const dead = await deadResolver();
    try {
      const good = `127.0.0.1:${server!.port}`;
      expect(await resolver([dead.address, good]).resolves(`mail4.${ZONE}`), 'dead first').to.equal(true);
      expect(await resolver([good, dead.address]).resolves(`mail6.${ZONE}`), 'dead last').to.equal(true);
      expect(
        await resolver([dead.address, good]).resolves(`nothere.${ZONE}`),
        'a missing name is still missing',
      ).to.equal(false);
    } finally {
      dead.close();
    }
  });

  it("inside our zones the primary's answer wins over a resolver still holding a deleted address", async () => {
    const stale = await scriptedResolver(); // has an A for every name
    try {
      expect(await resolver([stale.address], 500, [ZONE]).resolves(`nothere.${ZONE}`), 'the resolver alone').to.equal(
        true,
      );
      expect(
        await resolver([stale.address], 500, [primary()]).resolves(`nothere.${ZONE}`),
        'with the primary',
      ).to.equal(false);
      expect(
        await resolver([stale.address], 500, [primary()]).resolves(`mail6.${ZONE}`),
        'an address the primary has',
      ).to.equal(true);
      expect(
        await resolver([stale.address], 500, [primary()]).resolves(`alias.${ZONE}`),
        'an alias at the primary',
      ).to.equal(false);
      expect(
        await resolver([stale.address], 500, [primary()]).resolves('mail.example.net'),
        'outside our zones',
      ).to.equal(true);
      // Below a delegation the primary holds nothing (it answers with a referral): the resolvers decide.
      expect(
        await resolver([stale.address], 500, [primary()]).resolves(`mail.sub.${ZONE}`),
        'below a delegation',
      ).to.equal(true);
    } finally {
      stale.close();
    }
  });

  it('inside our zones a primary that does not answer leaves it to the resolvers (no yes remembered), and is left alone a while', async () => {
    const flaky = await scriptedResolver(); // stands in for the primary
    try {
      const r = resolver([`127.0.0.1:${server!.port}`], 300, [
        { name: ZONE, primary: { host: '127.0.0.1', port: flaky.port } },
      ]);
      expect(await r.resolves(`nothere.${ZONE}`), 'the primary says yes').to.equal(true);
      flaky.mode.a = 'drop';
      expect(await r.resolves(`nothere.${ZONE}`), 'the A answer lost: the resolver says no').to.equal(false);
      flaky.mode.a = 'answer';
      expect(await r.resolves(`nothere.${ZONE}`), 'one lost answer does not quiet the primary').to.equal(true);
      flaky.mode.silent = true;
      expect(await r.resolves(`nothere.${ZONE}`), 'no answer at all: the resolver says no').to.equal(false);
      flaky.mode.silent = false;
      const asked = flaky.queries();
      expect(await r.resolves(`nothere.${ZONE}`), 'the quiet primary is not asked: the resolver decides').to.equal(
        false,
      );
      expect(flaky.queries(), 'queries to the quiet primary').to.equal(asked);
    } finally {
      flaky.close();
    }
  });

  it('a primary that cannot be reached (connect fails, or nothing answers) leaves it to the resolvers, no crash', async () => {
    const stale = await scriptedResolver();
    const dead = await deadResolver();
    try {
      // connect(2) to a broadcast address without SO_BROADCAST fails (EACCES): the error path.
      for (const host of ['255.255.255.255', '127.0.0.1']) {
        const port = host === '127.0.0.1' ? Number(dead.address.split(':')[1]) : 53;
        const r = resolver([stale.address], 300, [{ name: ZONE, primary: { host, port } }]);
        expect(await r.resolves(`nothere.${ZONE}`), host).to.equal(true);
      }
    } finally {
      stale.close();
      dead.close();
    }
  });

  it('false after config.mx.timeoutMs when the resolver swallows queries', async () => {
    const blackhole = createSocket('udp4');
    let queries = 0;
    blackhole.on('message', () => queries++);
    await new Promise<void>((resolve) => blackhole.bind(0, '127.0.0.1', resolve));
    try {
      const started = Date.now();
      expect(await resolver([`127.0.0.1:${blackhole.address().port}`], 300).resolves(`mail4.${ZONE}`)).to.equal(false);
      expect(Date.now() - started).to.be.within(250, 800);
      expect(queries).to.be.greaterThan(0);
    } finally {
      blackhole.close();
    }
  });
});
