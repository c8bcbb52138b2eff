/**
 * The TCP transport against a real knotd through a relay that can turn the connections it
 * holds into black holes (a stateful firewall or NAT that lost their state: nothing passes,
 * no FIN, no RST), while new connections still get through.
 */
import { expect } from 'chai';
import net from 'node:net';
import type { HostChange } from '../../src/app/ports.js';
import type { ZoneConfig } from '../../src/config/schema.js';
import type { Logger } from '../../src/core/log.js';
import { emptyDnsState } from '../../src/core/types.js';
import { DnsPublisher } from '../../src/dns/index.js';
import { waitFor } from '../support/wait.js';
import {
  generateTsigKey,
  makeTempDir,
  removeDir,
  requireBinariesOrSkip,
  startNameServer,
  type NameServer,
} from '../../src/lab/index.js';

const ZONE = 'dyn.example.org';
const quiet: Logger = { debug() {}, info() {}, warn() {}, error() {} };

/** Relays to the primary; freeze() makes every connection open now a black hole. */
class FreezingRelay {
  accepted = 0;
  private readonly conns = new Set<{ client: net.Socket; up: net.Socket; frozen: boolean; held?: Buffer[] }>();
  private readonly server: net.Server;

  constructor(upstreamPort: number) {
    this.server = net.createServer((client) => {
      this.accepted++;
      const up = net.connect({ host: '127.0.0.1', port: upstreamPort });
      const c: { client: net.Socket; up: net.Socket; frozen: boolean; held?: Buffer[] } = { client, up, frozen: false };
      this.conns.add(c);
      up.on('error', () => {});
      // A reset drops what the sender's kernel still held; a normal close would still deliver it.
      client.on('error', (e: NodeJS.ErrnoException) => {
        if (e.code === 'ECONNRESET' && c.held) c.held.length = 0;
      });
      client.on('close', () => {
        this.conns.delete(c);
        if (c.held && c.held.length > 0) this.later.push({ up, bytes: c.held });
        else up.destroy();
      });
      // Once frozen, nothing passes either way: no data, no FIN, no reset.
      up.on('close', () => !c.frozen && client.destroy());
      up.on('end', () => !c.frozen && client.end());
      client.on('data', (d: Buffer) => {
        if (c.held) c.held.push(d);
        else if (!c.frozen) up.write(d);
      });
      up.on('data', (d) => !c.frozen && client.write(d));
    });
  }

  async listen(): Promise<number> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return (this.server.address() as net.AddressInfo).port;
  }

  freeze(): void {
    for (const c of this.conns) c.frozen = true;
  }

  /** Bytes of closed connections still to be delivered (a retransmission after a lost segment). */
  private readonly later: Array<{ up: net.Socket; bytes: Buffer[] }> = [];

  /**
   * Hold what the connections open now send towards the primary (a lost segment: the primary
   * answers nothing); a connection closed normally gets it delivered by release(), one reset
   * loses it, as TCP does.
   */
  hold(): void {
    for (const c of this.conns) c.held = [];
  }

  /** Delivers what closed connections held; resolves once the primary answered each (or closed it). */
  async release(): Promise<void> {
    const delivered = this.later.splice(0).map(({ up, bytes }) => {
      let answered = false;
      up.once('data', () => (answered = true)).once('close', () => (answered = true));
      for (const b of bytes) up.write(b);
      return waitFor(() => answered, { what: 'the primary to answer what was delivered late', timeoutMs: 5000 });
    });
    await Promise.all(delivered);
  }

  close(): void {
    for (const c of this.conns) {
      c.client.destroy();
      c.up.destroy();
    }
    this.server.close();
  }
}

const change = (label: string, ipv4: string): HostChange => ({
  fqdn: `${label}.${ZONE}`,
  zone: ZONE,
  previous: emptyDnsState(),
  target: { ipv4, ipv6: null, wildcard: false, mx: null, backmx: false, offline: false },
});

describe('dns transport against knotd through a relay', function () {
  this.timeout(30_000);
  let dir: string | undefined;
  let server: NameServer | undefined;
  let relay: FreezingRelay | undefined;
  let publisher: DnsPublisher | undefined;

  before(async function () {
    requireBinariesOrSkip(this, ['knotd', 'dig']);
    dir = await makeTempDir('dns-transport-');
    const key = generateTsigKey('ddns-key', 'hmac-sha256');
    server = await startNameServer('knot', { dir, zone: ZONE, key });
    relay = new FreezingRelay(server.port);
    const zone: ZoneConfig = {
      name: ZONE,
      primary: { host: '127.0.0.1', port: await relay.listen() },
      key: { name: key.name, algorithm: key.algorithm, secret: Buffer.from(key.secret, 'base64') },
      staticNames: [],
    };
    // 3 s: each attempt gets 1.5 s (knotd 3.2 now and then holds an update ~0.7 s).
    publisher = new DnsPublisher(
      [zone],
      { ttl: 60, timeoutMs: 3000, maxInFlight: 4, fudge: 300, clockOffsetSeconds: 0 },
      quiet,
    );
  });

  after(async () => {
    await publisher?.close();
    relay?.close();
    await server?.stop();
    if (dir) await removeDir(dir);
  });

  it('a connection that goes silent for good is replaced: the next updates are applied over a new one', async () => {
    await publisher!.publish(change('stale', '192.0.2.1'));
    expect(relay!.accepted).to.equal(1);
    relay!.freeze();
    // The first attempt goes into the dead connection; the retry (within dns.timeout) reconnects.
    await publisher!.publish(change('stale', '192.0.2.2'));
    expect(await server!.query(`stale.${ZONE}`, 'A')).to.deep.equal(['192.0.2.2']);
    await publisher!.publish(change('stale', '192.0.2.3'));
    expect(await server!.query(`stale.${ZONE}`, 'A')).to.deep.equal(['192.0.2.3']);
    expect(relay!.accepted).to.equal(2);
  });

  it('what a replaced connection still held never lands after a newer change: it is reset, not closed', async () => {
    await publisher!.publish(change('late', '192.0.2.11'));
    const before = relay!.accepted;
    relay!.hold();
    await publisher!.publish(change('late', '192.0.2.12')); // first attempt held; the retry on a new connection
    await publisher!.publish(change('late', '192.0.2.13'));
    expect(relay!.accepted).to.equal(before + 1);
    // A kernel retransmitting the first attempt after all: nothing, when the connection was reset.
    await relay!.release();
    expect(await server!.query(`late.${ZONE}`, 'A')).to.deep.equal(['192.0.2.13']);
  });
});
