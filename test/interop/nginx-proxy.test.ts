/**
 * The reverse-proxy alternative to the bridge's own HTTPS: the real nginx (Debian) in front of
 * the plain listener with the README's `proxy_set_header X-Forwarded-For
 * $proxy_add_x_forwarded_for;`, and the bridge trusting nginx's address (`trustedProxies`).
 * Proven with curl through nginx: an update without `myip` publishes the client's address as
 * nginx saw it, never an X-Forwarded-For the client made up.
 */
import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { findBinary, freePort } from '../../src/lab/index.js';
import { sleep, type BridgeEnv } from '../support/bridge.js';
import { clientDir, requireInterop, runCurl, startInteropEnv, uniqueHost } from './support.js';

const ALICE = { user: 'alice', password: 'alice-nginx-pw' };

/** The README's location block, with the bridge's plain listener as the upstream. */
function nginxConfig(dir: string, port: number, bridgePort: number): string {
  return `worker_processes 1;
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path ${dir}/client_body;
    proxy_temp_path ${dir}/proxy;
    fastcgi_temp_path ${dir}/fastcgi;
    uwsgi_temp_path ${dir}/uwsgi;
    scgi_temp_path ${dir}/scgi;
    server {
        listen 127.0.0.1:${port};
        location / {
            proxy_pass http://127.0.0.1:${bridgePort};
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
        }
    }
}
`;
}

class Nginx {
  private stderr = '';
  private constructor(
    readonly child: ChildProcess,
    readonly port: number,
  ) {
    child.stderr!.on('data', (d: Buffer) => (this.stderr += d.toString()));
    child.stdout!.resume();
  }

  /** nginx in the foreground with everything in `dir`; resolves once it accepts connections. */
  static async start(dir: string, bridgePort: number): Promise<Nginx> {
    await mkdir(dir, { recursive: true });
    const port = await freePort();
    const conf = path.join(dir, 'nginx.conf');
    await writeFile(conf, nginxConfig(dir, port, bridgePort));
    const binary = findBinary('nginx')!;
    const global = `daemon off; pid ${dir}/nginx.pid; error_log stderr;`;
    const child = spawn(binary, ['-p', dir, '-c', conf, '-e', 'stderr', '-g', global], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const nginx = new Nginx(child, port);
    const deadline = Date.now() + 10000;
    while (!(await accepts(port))) {
      if (child.exitCode !== null) throw new Error(`nginx exited (${child.exitCode}): ${nginx.stderr}`);
      if (Date.now() > deadline) throw new Error(`nginx did not listen within 10 s: ${nginx.stderr}`);
      await sleep(20);
    }
    return nginx;
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    this.child.kill('SIGTERM');
    await exited;
  }
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

describe('nginx (Debian) as the reverse proxy in front of the plain listener', function () {
  this.timeout(30000);
  let env: BridgeEnv;
  let nginx: Nginx;

  before(async function () {
    requireInterop(this, ['nginx', 'curl']);
    env = await startInteropEnv('knot', { trustedProxies: ['127.0.0.1/32'] });
    await env.addAccount(ALICE.user, ALICE.password);
    nginx = await Nginx.start(path.join(env.dir, 'nginx'), env.port);
  });
  after(async () => {
    await nginx?.stop();
    await env?.stop();
  });

  const through = (target: string): string => `http://127.0.0.1:${nginx.port}${target}`;

  it('an update without myip publishes the client address nginx saw, not the X-Forwarded-For it sent', async () => {
    const h = uniqueHost('nginx');
    await env.addHost(h, ALICE.user);
    // The client is 127.0.0.2 (untrusted); nginx (127.0.0.1, trusted) appends it to the made-up entry.
    const r = await runCurl(await clientDir(env, 'curl'), through(`/nic/update?hostname=${h}`), ALICE, [
      '--interface',
      '127.0.0.2',
      '-H',
      'X-Forwarded-For: 203.0.113.99',
    ]);
    expect(r.statusLine).to.equal('HTTP/1.1 200 OK');
    expect(r.body).to.equal('good 127.0.0.2\n');
    expect(await env.ns.query(h, 'A')).to.deep.equal(['127.0.0.2']);
  });

  it('behind a trusted proxy in front of nginx, the address that proxy passed on is published', async () => {
    const h = uniqueHost('nginx');
    await env.addHost(h, ALICE.user);
    // The client sits at 127.0.0.1, inside trustedProxies: a load balancer handing on its client's address.
    const r = await runCurl(await clientDir(env, 'curl'), through(`/nic/update?hostname=${h}`), ALICE, [
      '-H',
      'X-Forwarded-For: 198.51.100.77',
    ]);
    expect(r.body).to.equal('good 198.51.100.77\n');
    expect(await env.ns.query(h, 'A')).to.deep.equal(['198.51.100.77']);
  });

  it('the address echo through nginx answers the client address', async () => {
    const r = await runCurl(await clientDir(env, 'curl'), through('/checkip'), ALICE, [
      '--interface',
      '127.0.0.2',
      '-H',
      'X-Forwarded-For: 203.0.113.99',
    ]);
    expect(r.body).to.equal('Current IP Address: 127.0.0.2\n');
  });
});
