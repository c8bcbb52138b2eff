import { expect } from 'chai';
import { createSocket } from 'node:dgram';
import { readFile } from 'node:fs/promises';
import { connect, createServer } from 'node:net';
import path from 'node:path';
import {
  DAEMONS,
  freePort,
  generateTsigKey,
  LAB_KINDS,
  makeTempDir,
  removeDir,
  requireBinariesOrSkip,
  serverBinaries,
  startNameServer,
  startRedis,
  writeKeyFile,
  redisPing,
  type NameServer,
  type RedisServer,
  type TsigKey,
} from '../../src/lab/index.js';
import { onFreePort, PortInUseError } from '../../src/lab/process.js';
import { nsupdate } from '../support/nsupdate.js';

/** One inline Redis command over a raw socket; resolves with the first reply line. */
function redisCommand(port: number, command: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    let reply = '';
    socket.on('error', reject);
    socket.on('connect', () => socket.write(`${command}\r\n`));
    socket.on('data', (d) => {
      reply += d.toString('latin1');
      const lines = reply.split('\r\n');
      // bulk strings ($n) carry the value on the next line
      if (lines[0]!.startsWith('$') && lines[0] !== '$-1' ? lines.length >= 3 : lines.length >= 2) {
        socket.destroy();
        resolve(lines[0]!.startsWith('$') && lines[0] !== '$-1' ? lines[1]! : lines[0]!);
      }
    });
  });
}

describe('lab: freePort', () => {
  it('hands out ports below the ephemeral range, skipping one in use on TCP or UDP', async () => {
    // Outgoing connections take their source port from ip_local_port_range: a port below it cannot be
    // taken by one between freePort() and the server's bind (the EADDRINUSE of stop 36's CI).
    const [ephemeralFirst] = (await readFile('/proc/sys/net/ipv4/ip_local_port_range', 'utf8')).trim().split(/\s+/);
    const ports: number[] = [];
    for (let i = 0; i < 50; i++) ports.push(await freePort());
    for (const p of ports) expect(p).to.be.within(1024, Number(ephemeralFirst) - 1);

    // The next port in line held on TCP, then on UDP: each is passed over.
    let held = await freePort();
    while (held > 31_990) held = await freePort(); // past the wrap to the range's start
    // (Either may be held already by a test process alongside: in use all the same.)
    const tcp = createServer();
    await new Promise<void>((r) => tcp.once('error', () => r()).listen({ host: '127.0.0.1', port: held + 1 }, r));
    const udp = createSocket('udp4');
    await new Promise<void>((r) => udp.once('error', () => r()).bind({ address: '127.0.0.1', port: held + 2 }, r));
    try {
      const next = await freePort();
      expect(next).to.not.be.oneOf([held + 1, held + 2]);
      expect(next).to.be.within(held + 3, held + 200);
    } finally {
      tcp.close();
      try {
        udp.close();
      } catch {
        // never bound: nothing to close
      }
    }
  });
});

describe('lab: onFreePort', () => {
  it('a lost race for a free port gets another port, twice at most; a fixed port or another error is not retried', async () => {
    const tried: number[] = [];
    const loseTwice = async (port: number) => {
      tried.push(port);
      if (tried.length < 3) throw new PortInUseError('taken');
      return port;
    };
    expect(await onFreePort(undefined, loseTwice)).to.equal(tried[2]);
    expect(tried).to.have.length(3);
    for (const p of tried) expect(p).to.be.within(1024, 65535);

    tried.length = 0;
    const alwaysTaken = async (port: number) => {
      tried.push(port);
      throw new PortInUseError(`taken ${tried.length}`);
    };
    let err: unknown;
    await onFreePort(undefined, alwaysTaken).catch((e: unknown) => (err = e));
    expect((err as Error).message).to.equal('taken 3');

    tried.length = 0;
    err = undefined;
    await onFreePort(5353, alwaysTaken).catch((e: unknown) => (err = e));
    expect(tried).to.deep.equal([5353]);
    expect(err).to.be.instanceOf(PortInUseError);

    tried.length = 0;
    const broken = async (port: number) => {
      tried.push(port);
      throw new Error('no such binary');
    };
    err = undefined;
    await onFreePort(undefined, broken).catch((e: unknown) => (err = e));
    expect(tried).to.have.length(1);
    expect((err as Error).message).to.equal('no such binary');
  });
});

describe('lab: real redis-server', function () {
  let dir: string;
  let redis: RedisServer | undefined;

  before(async function () {
    requireBinariesOrSkip(this, ['redis-server']);
    dir = await makeTempDir('lab-redis-');
  });
  after(async () => {
    await redis?.stop();
    if (dir) await removeDir(dir);
  });

  it('answers PING on its own loopback port, stops, starts again, and dies on kill', async () => {
    redis = await startRedis({ dir, appendonly: true });
    expect(redis.port).to.not.equal(6379);
    expect(redis.url).to.equal(`redis://127.0.0.1:${redis.port}/0`);
    expect(await redisPing(redis.host, redis.port)).to.equal(true);
    await redis.stop();
    expect(await redisPing(redis.host, redis.port)).to.equal(false);
    await redis.start();
    expect(await redisPing(redis.host, redis.port)).to.equal(true);
    await redis.kill();
    expect(await redisPing(redis.host, redis.port)).to.equal(false);
  });

  it('does not mistake another redis-server on the port for itself', async () => {
    const r = redis!;
    await r.start();
    const otherDir = await makeTempDir('lab-redis-taken-');
    try {
      const err = await startRedis({ dir: otherDir, port: r.port }).then(
        async (other) => {
          await other.kill();
          return undefined;
        },
        (e: Error) => e,
      );
      expect(err, 'a second redis started on a taken port').to.be.instanceOf(Error);
      expect(err!.message).to.match(/in use|another process answers/);
    } finally {
      await r.stop();
      await removeDir(otherDir);
    }
  });

  it('with appendonly, a write acknowledged before SIGKILL is there after start()', async () => {
    const r = redis!;
    await r.start();
    expect(await redisCommand(r.port, 'SET lab:durable yes')).to.equal('+OK');
    await r.kill();
    await r.start();
    expect(await redisCommand(r.port, 'GET lab:durable')).to.equal('yes');
  });

  it('without appendonly: stop()/start() keeps the data (SHUTDOWN SAVE), kill() loses it', async () => {
    const volatileDir = await makeTempDir('lab-redis-volatile-');
    const v = await startRedis({ dir: volatileDir });
    try {
      expect(await redisCommand(v.port, 'SET lab:kept yes')).to.equal('+OK');
      await v.stop();
      expect(await redisPing(v.host, v.port)).to.equal(false);
      await v.start();
      expect(await redisCommand(v.port, 'GET lab:kept')).to.equal('yes');
      expect(await redisCommand(v.port, 'SET lab:volatile yes')).to.equal('+OK');
      await v.kill();
      await v.start();
      expect(await redisCommand(v.port, 'GET lab:volatile')).to.equal('$-1');
    } finally {
      await v.stop();
      await removeDir(volatileDir);
    }
  });
});

for (const kind of LAB_KINDS) {
  describe(`lab: real ${DAEMONS[kind]}`, function () {
    const zone = 'dyn.example.test';
    let dir: string;
    let key: TsigKey;
    let keyFile: string;
    let ns: NameServer | undefined;

    before(async function () {
      requireBinariesOrSkip(this, [...serverBinaries(kind), 'nsupdate']);
      dir = await makeTempDir(`lab-${kind}-`);
      key = generateTsigKey('ddns-key', 'hmac-sha256');
      keyFile = await writeKeyFile(path.join(dir, 'client.key'), key);
      ns = await startNameServer(kind, {
        dir,
        zone: `${zone}.`,
        key,
        records: ['alias 60 IN CNAME target.example.'],
      });
    });
    after(async () => {
      await ns?.stop();
      if (dir) await removeDir(dir);
    });

    const update = (file: string, line: string) =>
      nsupdate(file, `server 127.0.0.1 ${ns!.port}\nzone ${zone}\n${line}\nsend\n`);

    it('serves the zone from the template: SOA serial 1, negative TTL 60, NS, extra records', async () => {
      expect(ns!.zone).to.equal(zone);
      const soa = await ns!.query(zone, 'SOA');
      expect(soa).to.deep.equal([`ns.${zone}. hostmaster.${zone}. 1 3600 600 604800 60`]);
      expect(await ns!.serial()).to.equal(1);
      expect(await ns!.query(zone, 'NS')).to.deep.equal([`ns.${zone}.`]);
      expect(await ns!.query(`alias.${zone}`, 'CNAME')).to.deep.equal(['target.example.']);
    });

    it('applies an UPDATE signed with the key; query() shows it sorted', async () => {
      const r = await update(
        keyFile,
        `update add home.${zone} 60 A 192.0.2.20\nupdate add home.${zone} 60 A 192.0.2.3`,
      );
      expect(r.code, r.output).to.equal(0);
      expect(await ns!.query(`home.${zone}`, 'A')).to.deep.equal(['192.0.2.20', '192.0.2.3']);
      expect(await ns!.serial()).to.be.greaterThan(1);
    });

    it('keeps the update across stop/start (journal; PowerDNS: its database) on the same port', async () => {
      const port = ns!.port;
      await ns!.stop();
      await ns!.query(zone, 'SOA').then(
        () => expect.fail('server still answers after stop()'),
        (err: Error) => expect(err.message).to.match(/failed/),
      );
      await ns!.start();
      expect(ns!.port).to.equal(port);
      expect(await ns!.query(`home.${zone}`, 'A')).to.deep.equal(['192.0.2.20', '192.0.2.3']);
    });

    it('refuses an UPDATE signed with a wrong key', async () => {
      const wrong = { ...generateTsigKey('ddns-key', 'hmac-sha256') };
      const wrongFile = await writeKeyFile(path.join(dir, 'wrong.key'), wrong);
      const r = await update(wrongFile, `update add intruder.${zone} 60 A 192.0.2.66`);
      expect(r.code).to.not.equal(0);
      expect(r.output).to.match(/BADSIG|BADKEY|NOTAUTH|REFUSED|tsig/i);
      expect(await ns!.query(`intruder.${zone}`, 'A')).to.deep.equal([]);
    });

    it('does not mistake another server on the port for itself', async () => {
      const otherDir = await makeTempDir(`lab-${kind}-taken-`);
      try {
        const err = await startNameServer(kind, { dir: otherDir, zone, key, port: ns!.port }).then(
          async (other) => {
            await other.stop();
            return undefined;
          },
          (e: Error) => e,
        );
        expect(err, 'a second server started on a taken port').to.be.instanceOf(Error);
        expect(err!.message).to.match(/in use|another process answers/);
        expect(err!.message).to.not.include(key.secret);
        expect(await ns!.serial()).to.be.greaterThan(0); // the first one is unharmed
      } finally {
        await removeDir(otherDir);
      }
    });

    it('refuses record types outside the policy (A AAAA MX TXT only; PowerDNS grants its key every type)', async () => {
      const r = await update(keyFile, `update add caa.${zone} 60 CAA 0 issue "nope"`);
      if (kind === 'pdns') {
        // TSIG-ALLOW-DNSUPDATE names a key, not types (docs/operators.md, "PowerDNS").
        expect(r.code, r.output).to.equal(0);
        expect(await ns!.query(`caa.${zone}`, 'CAA')).to.deep.equal(['0 issue "nope"']);
      } else {
        expect(r.code).to.not.equal(0);
        expect(await ns!.query(`caa.${zone}`, 'CAA')).to.deep.equal([]);
      }
      const mx = await update(keyFile, `update add home.${zone} 60 MX 10 mail.example.`);
      expect(mx.code, mx.output).to.equal(0);
      expect(await ns!.query(`home.${zone}`, 'MX')).to.deep.equal(['10 mail.example.']);
    });
  });
}
