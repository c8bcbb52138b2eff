/** DnsMxResolver against a real nameserver (the lab's knotd, or named when knotd is missing). */
import { expect } from 'chai';
import { createSocket } from 'node:dgram';
import { DnsMxResolver } from '../../src/dns/index.js';
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
      ],
    });
  });

  after(async () => {
    await server?.stop();
    if (dir) await removeDir(dir);
  });

  const resolver = (servers: string[], timeoutMs = 1000) => new DnsMxResolver({ resolvers: servers, timeoutMs });

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

  it('several resolvers are asked at once: a dead one, first or last, does not hide the answer of a working one', async () => {
    const dead = await deadResolver();
    try {
      const good = `127.0.0.1:${server!.port}`;
      expect(await resolver([dead.address, good]).resolves(`mail4.${ZONE}`), 'dead first').to.equal(true);
      expect(await resolver([good, dead.address]).resolves(`mail6.${ZONE}`), 'dead last').to.equal(true);
      expect(await resolver([dead.address, good]).resolves(`nothere.${ZONE}`), 'a missing name is still missing').to.equal(false);
    } finally {
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
