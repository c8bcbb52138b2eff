/**
 * Process-level promises: a graceful stop answers what is in flight and refuses new
 * connections; no password or TSIG secret ever reaches a log line or CLI output.
 */
import { expect } from 'chai';
import net from 'node:net';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { BridgeEnv, ZONE } from '../support/bridge.js';
import { waitFor } from '../support/wait.js';
import { requireBinariesOrSkip } from '../../src/lab/index.js';

const UA = 'lifecycle-tests/1.0';

describe('graceful stop (SIGTERM)', function () {
  this.timeout(60000);
  let env: BridgeEnv;
  let blackHole: net.Server;
  const sockets: net.Socket[] = [];
  /** Host changes the silent primary has received: UPDATEs (opcode 5) with an update section. */
  let updates = 0;

  before(async function () {
    requireBinariesOrSkip(this, ['redis-server', 'knotd', 'dig']);
    // A "primary" that accepts TCP and never answers: updates stay in flight for dns.timeout.
    blackHole = net.createServer((s) => {
      sockets.push(s.on('error', () => undefined));
      s.on('data', (d: Buffer) => {
        // TCP DNS: a 2-byte length, then the header (opcode in its third byte, UPCOUNT at 8).
        const msg = d.subarray(2);
        if (msg.length >= 12 && ((msg[2]! >> 3) & 0xf) === 5 && msg.readUInt16BE(8) > 0) updates++;
      });
    });
    await new Promise<void>((r) => blackHole.listen(0, '127.0.0.1', r));
    const port = (blackHole.address() as net.AddressInfo).port;
    env = await BridgeEnv.start({
      kind: 'knot',
      config: {
        dns: { timeout: 2 },
        zones: [
          {
            name: ZONE,
            primary: `127.0.0.1:${port}`,
            key: { name: 'ddns-key', algorithm: 'hmac-sha256', secretFile: 'tsig.secret' },
          },
        ],
      },
    });
    await env.addAccount('gina', 'gina-pw');
    await env.addHost(`slow.${ZONE}`, 'gina');
  });
  after(async () => {
    for (const s of sockets) s.destroy();
    blackHole?.close();
    await env?.stop();
  });

  it('answers the request in flight, then refuses new connections and exits 0', async () => {
    const serve = env.serves[0]!;
    const port = env.port;
    const sent = updates;
    let answered = false;
    const inFlight = env
      .get(`/nic/update?hostname=slow.${ZONE}&myip=192.0.2.1`, { auth: ['gina', 'gina-pw'], ua: UA })
      .finally(() => (answered = true));
    // The request is waiting on the silent primary once its UPDATE got there.
    await waitFor(() => updates > sent, { what: 'the UPDATE to reach the silent primary', timeoutMs: 5000 });
    const exited = new Promise<number | null>((r) => serve.once('exit', (code) => r(code)));
    serve.kill('SIGTERM');
    const refused = () =>
      new Promise<boolean>((resolve) => {
        const s = net.connect({ host: '127.0.0.1', port });
        s.on('connect', () => {
          s.destroy();
          resolve(false);
        });
        s.on('error', () => resolve(true));
      });
    // Bounded well below the in-flight request's dns.timeout (2 s): the listener closes first.
    await waitFor(refused, { what: 'a new connection after SIGTERM to be refused', timeoutMs: 1000 });
    expect(answered, 'the request is still in flight when new connections are refused').to.equal(false);
    const reply = await inFlight;
    expect(reply.body).to.equal('dnserr\n');
    expect(await exited).to.equal(0);
  });
});

describe('secrets never reach logs or CLI output', function () {
  this.timeout(60000);
  let env: BridgeEnv;

  before(async function () {
    requireBinariesOrSkip(this, ['redis-server', 'knotd', 'dig']);
    env = await BridgeEnv.start({ kind: 'knot' });
  });
  after(async () => env?.stop());

  it('passwords and the TSIG secret appear nowhere, even when things fail', async () => {
    const secret = (await readFile(path.join(env.dir, 'tsig.secret'), 'utf8')).trim();
    const passwords = ['hunter2-correct-horse', 'wrong-battery-staple', 'new-password-xyzzy'];
    const outputs: string[] = [];
    const cli = async (args: string[], stdin?: string) => {
      const r = await env.cli(args, stdin);
      outputs.push(r.stdout, r.stderr);
      return r;
    };
    await cli(['account', 'add', 'sam'], passwords[0] + '\n');
    await cli(['account', 'add', 'sam'], passwords[0] + '\n'); // duplicate: an error path
    await cli(['host', 'add', `s.${ZONE}`, '--account', 'sam']);
    await env.get(`/nic/update?hostname=s.${ZONE}&myip=192.0.2.9`, { auth: ['sam', passwords[0]!], ua: UA });
    await env.get(`/nic/update?hostname=s.${ZONE}&myip=192.0.2.9`, { auth: ['sam', passwords[1]!], ua: UA });
    await env.get(`/nic/update?hostname=s.${ZONE}&myip=192.0.2.9`, { auth: ['nobody', passwords[1]!], ua: UA });
    await cli(['account', 'passwd', 'sam'], passwords[2] + '\n');
    await cli(['account', 'show', 'sam', '--json']);
    await cli(['host', 'show', `s.${ZONE}`, '--json']);
    await cli(['check']);
    // a failing DNS path: the primary is down
    await env.ns.stop();
    await env.get(`/nic/update?hostname=s.${ZONE}&myip=192.0.2.10`, { auth: ['sam', passwords[2]!], ua: UA });
    await cli(['check']);
    await env.ns.start();
    await env.stopServes('SIGTERM');
    const all = env.logs.join('') + outputs.join('');
    expect(all.length).to.be.above(200);
    for (const s of [...passwords, secret, Buffer.from(secret, 'base64').toString('hex')]) {
      expect(all.includes(s), `secret ${s.slice(0, 4)}… found in output`).to.equal(false);
    }
    // the DNS failure was logged, naming the zone (and still without the secret, checked above)
    expect(all).to.match(/"dns update failed[^"]*zone dyn\.example\.test/);
  });
});
