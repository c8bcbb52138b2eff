/**
 * The OpenWrt ddns-scripts flow (3322-style URL fetched by wget/uclient-fetch): the client
 * sends credentials only after a 401 challenge. Real GNU wget reproduces it.
 */
import { expect } from 'chai';
import type { BridgeEnv } from '../support/bridge.js';
import { clientDir, redact, requireInterop, runWget, startInteropEnv, uniqueHost, wgetStatusLines } from './support.js';

const ALICE = { user: 'alice', password: 'alice-wget-pw' };

describe('OpenWrt-style wget (credentials after the 401 challenge)', function () {
  this.timeout(30000);
  let env: BridgeEnv;

  before(async function () {
    requireInterop(this, ['wget']);
    env = await startInteropEnv('knot');
    await env.addAccount(ALICE.user, ALICE.password);
  });
  after(async () => env?.stop());

  const url = (e: BridgeEnv, h: string, ip: string) =>
    `http://127.0.0.1:${e.port}/dyndns/update?system=dyndns&hostname=${h}&myip=${ip}`;

  it('401 challenge, then the authenticated request: body "good IP", record on the primary', async () => {
    const h = uniqueHost('openwrt');
    await env.addHost(h, ALICE.user);
    const r = await runWget(await clientDir(env, 'wget'), url(env, h, '198.51.100.31'), ALICE.user, ALICE.password);
    const log = redact(r.stderr);
    expect(r.code, log).to.equal(0);
    expect(wgetStatusLines(r.stderr), log).to.deep.equal(['HTTP/1.0 401 Unauthorized', 'HTTP/1.0 200 OK']);
    expect(log).to.include('Authentication selected: Basic realm="ddns-bridge"');
    expect(r.stdout).to.equal('good 198.51.100.31\n');
    expect(await env.ns.query(h, 'A')).to.deep.equal(['198.51.100.31']);
  });

  it('a wrong password: 401 twice, wget exits 6 (authentication failed), DNS unchanged', async () => {
    const h = uniqueHost('openwrt');
    await env.addHost(h, ALICE.user);
    const r = await runWget(await clientDir(env, 'wget'), url(env, h, '198.51.100.32'), ALICE.user, 'not-the-password');
    const log = redact(r.stderr);
    expect(r.code, log).to.equal(6);
    expect(wgetStatusLines(r.stderr), log).to.deep.equal(['HTTP/1.0 401 Unauthorized', 'HTTP/1.0 401 Unauthorized']);
    expect(log).to.include('Username/Password Authentication Failed.');
    expect(r.stdout).to.equal('');
    expect(await env.ns.query(h, 'A')).to.deep.equal([]);
  });

  // The unauthenticated first request of every challenge-driven update is a normal step, not
  // junk: a router (or several behind one NAT) updating many names must never be blocked for it.
  it('many successful challenge-driven updates never get the client blocked as junk', async () => {
    const strict = await startInteropEnv('knot', { junk: { threshold: 3, window: 300, block: 3600 } });
    try {
      await strict.addAccount(ALICE.user, ALICE.password);
      const bodies: string[] = [];
      const names: string[] = [];
      for (let i = 0; i < 5; i++) {
        const h = uniqueHost('openwrt-many');
        await strict.addHost(h, ALICE.user);
        names.push(h);
        bodies.push(
          (
            await runWget(
              await clientDir(strict, 'wget'),
              url(strict, h, `198.51.100.${40 + i}`),
              ALICE.user,
              ALICE.password,
            )
          ).stdout,
        );
      }
      expect(bodies).to.deep.equal([40, 41, 42, 43, 44].map((n) => `good 198.51.100.${n}\n`));
      expect(await strict.ns.query(names[4]!, 'A')).to.deep.equal(['198.51.100.44']);
    } finally {
      await strict.stop();
    }
  });
});
