/**
 * The store's Redis client on a real redis-server:
 * - it sends the commands issued in one turn of the event loop in one write (requests that
 *   arrive together share a syscall here and in redis-server). Observed on the server: its
 *   count of socket reads (INFO stats total_reads_processed) grows by about one for a burst,
 *   not by one per command; every reply still reaches its own command;
 * - a command in flight when its connection is lost fails at once (the request answers 911),
 *   not at the command timeout, and the client connects again.
 */
import { expect } from 'chai';
import { Redis } from 'ioredis';
import { silentLogger } from '../../src/core/log.js';
import { makeTempDir, removeDir, requireBinariesOrSkip, startRedis, type RedisServer } from '../../src/lab/index.js';
import { createRedis } from '../../src/store/redis.js';

async function readsProcessed(admin: Redis): Promise<number> {
  const stats = await admin.info('stats');
  const m = /^total_reads_processed:(\d+)/m.exec(stats);
  if (!m) throw new Error('INFO stats has no total_reads_processed');
  return Number(m[1]);
}

/**
 * The before / after hooks of the enclosing describe: a redis-server in a temp dir, the
 * store's client on it (with this command timeout) and a plain client for looking.
 */
function useClient(name: string, commandTimeoutMs: number): { client(): Redis; admin(): Redis } {
  let dir: string | undefined;
  let server: RedisServer | undefined;
  let client: Redis | undefined;
  let admin: Redis | undefined;
  before(async function () {
    requireBinariesOrSkip(this, ['redis-server']);
    dir = await makeTempDir(`${name}-`);
    server = await startRedis({ dir });
    client = createRedis({ url: server.url, keyPrefix: 'ddns:', commandTimeoutMs }, silentLogger);
    admin = new Redis(server.url);
    await Promise.all([client.ping(), admin.ping()]);
  });
  after(async () => {
    client?.disconnect();
    admin?.disconnect();
    await server?.stop();
    if (dir) await removeDir(dir);
  });
  return { client: () => client!, admin: () => admin! };
}

describe('redis: commands issued together leave in one write', function () {
  this.timeout(20000);
  const lab = useClient('redis-writes', 2000);

  it('50 commands of one turn: redis-server reads them at once (not 50 times); each gets its own reply, in order', async () => {
    const before = await readsProcessed(lab.admin());
    const replies = await Promise.all(Array.from({ length: 50 }, () => lab.client().incr('burst')));
    const after = await readsProcessed(lab.admin());
    expect(replies).to.deep.equal(Array.from({ length: 50 }, (_, i) => i + 1));
    // The admin's second INFO is one read; the burst one, two if the kernel split it.
    expect(after - before, 'socket reads by redis-server for the burst (plus the INFO)').to.be.at.most(3);
  });

  it('a command on its own is written at the end of its turn (held back for good, it would time out)', async () => {
    for (let i = 0; i < 20; i++) expect(await lab.client().set(`alone:${i}`, String(i))).to.equal('OK');
    expect(await lab.admin().get('alone:19')).to.equal('19');
  });

  it('a burst split across two turns: every command of both answered, each turn written in order', async () => {
    const first = Array.from({ length: 10 }, (_, i) => lab.client().set(`split:${i}`, 'a'));
    await new Promise<void>((resolve) => setImmediate(resolve));
    const second = Array.from({ length: 10 }, (_, i) => lab.client().set(`split:${i + 10}`, 'b'));
    expect(await Promise.all([...first, ...second])).to.deep.equal(Array(20).fill('OK'));
    expect(await lab.admin().mget(['split:0', 'split:19'])).to.deep.equal(['a', 'b']);
  });
});

describe('redis: a connection lost with a command in flight', function () {
  this.timeout(10000);
  // A command timeout far beyond the test's own: only a failure at once passes.
  const lab = useClient('redis-lost', 60_000);

  it('fails at once with "redis connection lost"; the client connects again and works', async () => {
    const inFlight = lab
      .client()
      .blpop('never-filled', 0)
      .then(
        () => 'answered',
        (err: Error) => err.message,
      );
    // BLPOP is in redis-server's hands once the server lists it as blocked.
    for (let i = 0; i < 100 && !/cmd=blpop/.test(String(await lab.admin().client('LIST'))); i++)
      await new Promise((r) => setTimeout(r, 20));
    expect(await lab.admin().client('KILL', 'USER', 'default', 'SKIPME', 'yes')).to.be.at.least(1);
    expect(await inFlight).to.equal('redis connection lost');
    let pong = '';
    for (let i = 0; i < 100 && pong !== 'PONG'; i++) {
      pong = await lab
        .client()
        .ping()
        .catch(() => '');
      if (pong !== 'PONG') await new Promise((r) => setTimeout(r, 50));
    }
    expect(pong).to.equal('PONG');
  });
});
