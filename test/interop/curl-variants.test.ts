/**
 * curl with preemptive Basic auth (credentials from a private netrc), reproducing the
 * requests of scripts and router firmware: GET and POST, raw and percent-encoded lists,
 * pfSense, OPNsense, FRITZ!Box and No-IP styles. Every test reads the records back from the
 * primary.
 */
import { expect } from 'chai';
import type { BridgeEnv } from '../support/bridge.js';
import { clientDir, redact, requireInterop, runCurl, startInteropEnv, uniqueHost, MAIL } from './support.js';

const ALICE = { user: 'alice', password: 'alice-curl-pw' };

describe('curl (preemptive auth) and router-style requests', function () {
  this.timeout(30000);
  let env: BridgeEnv;

  before(async function () {
    requireInterop(this, ['curl']);
    env = await startInteropEnv('knot');
    await env.addAccount(ALICE.user, ALICE.password);
  });
  after(async () => env?.stop());

  async function host(label = 'curl'): Promise<string> {
    const h = uniqueHost(label);
    await env.addHost(h, ALICE.user);
    return h;
  }
  const base = () => `http://127.0.0.1:${env.port}`;
  const curl = async (pathAndQuery: string, args: string[] = []) =>
    runCurl(await clientDir(env, 'curl'), base() + pathAndQuery, ALICE, args);
  const ok = (r: { statusLine: string; headers: Record<string, string> }) => {
    expect(r.statusLine).to.equal('HTTP/1.0 200 OK');
    expect(r.headers['content-type']).to.equal('text/plain; charset=utf-8');
  };

  it('GET /nic/update: credentials sent with the first request, one round trip', async () => {
    const h = await host();
    const r = await curl(`/nic/update?hostname=${h}&myip=192.0.2.101`, ['-v']);
    ok(r);
    expect(r.body).to.equal('good 192.0.2.101\n');
    const trace = redact(r.proc.stderr);
    expect(trace).to.match(/^> Authorization: Basic <redacted>/m);
    expect(trace.match(/^< HTTP\//gm), trace).to.have.length(1);
    expect(await env.ns.query(h, 'A')).to.deep.equal(['192.0.2.101']);
  });

  it('GET /dyndns/update with raw commas and colons: two names, dual stack', async () => {
    const a = await host();
    const b = await host();
    const r = await curl(`/dyndns/update?hostname=${a},${b}&myip=192.0.2.102,2001:db8::102`);
    ok(r);
    expect(r.body).to.equal('good 192.0.2.102,2001:db8::102\ngood 192.0.2.102,2001:db8::102\n');
    for (const h of [a, b]) {
      expect(await env.ns.query(h, 'A')).to.deep.equal(['192.0.2.102']);
      expect(await env.ns.query(h, 'AAAA')).to.deep.equal(['2001:db8::102']);
    }
  });

  it('GET with percent-encoded commas and colons (upper- and lowercase hex)', async () => {
    const a = await host();
    const b = await host();
    const r = await curl(`/dyndns/update?hostname=${a}%2C${b}&myip=192.0.2.103%2c2001%3Adb8%3a%3A103`);
    ok(r);
    expect(r.body).to.equal('good 192.0.2.103,2001:db8::103\ngood 192.0.2.103,2001:db8::103\n');
    expect(await env.ns.query(a, 'AAAA')).to.deep.equal(['2001:db8::103']);
    expect(await env.ns.query(b, 'A')).to.deep.equal(['192.0.2.103']);
  });

  it('POST form body on /dyndns/update, raw commas and colons', async () => {
    const a = await host();
    const b = await host();
    const r = await curl('/dyndns/update', ['--data', `hostname=${a},${b}&myip=192.0.2.104,2001:db8::104`]);
    ok(r);
    expect(r.body).to.equal('good 192.0.2.104,2001:db8::104\ngood 192.0.2.104,2001:db8::104\n');
    expect(await env.ns.query(b, 'AAAA')).to.deep.equal(['2001:db8::104']);
  });

  it('POST form body on /nic/update, percent-encoded (--data-urlencode)', async () => {
    const h = await host();
    const r = await curl('/nic/update', [
      '--data-urlencode',
      `hostname=${h}`,
      '--data-urlencode',
      'myip=192.0.2.105,2001:db8::105',
    ]);
    ok(r);
    expect(r.proc.stderr).to.equal('');
    expect(r.body).to.equal('good 192.0.2.105,2001:db8::105\n');
    expect(await env.ns.query(h, 'A')).to.deep.equal(['192.0.2.105']);
    expect(await env.ns.query(h, 'AAAA')).to.deep.equal(['2001:db8::105']);
  });

  it('POST with Expect: 100-continue (curl adds it itself only past 1 MiB): no interim line, curl sends the body after its own wait, one HTTP/1.0 reply', async () => {
    const h = await host();
    const r = await curl('/nic/update', [
      '-v',
      '-H',
      'Expect: 100-continue',
      '--data',
      `hostname=${h}&myip=192.0.2.107`,
    ]);
    expect(r.proc.stderr, 'curl sent the expectation').to.include('> Expect: 100-continue');
    expect(r.proc.stdout).to.not.include('100 Continue');
    ok(r);
    expect(r.body).to.equal('good 192.0.2.107\n');
    expect(await env.ns.query(h, 'A')).to.deep.equal(['192.0.2.107']);
  });

  it('POST with the parameters in the query string and an empty form body', async () => {
    const h = await host();
    const r = await curl(`/nic/update?hostname=${h}&myip=192.0.2.106`, ['--data', '']);
    ok(r);
    expect(r.body).to.equal('good 192.0.2.106\n');
    expect(await env.ns.query(h, 'A')).to.deep.equal(['192.0.2.106']);
  });

  it('pfSense style (system=dyndns, wildcard=OFF, empty mx, backmx=NO) clears wildcard and MX', async () => {
    const h = await host('pfsense');
    expect((await curl(`/nic/update?hostname=${h}&myip=192.0.2.107&wildcard=ON&mx=${MAIL}&backmx=YES`)).body).to.equal(
      'good 192.0.2.107\n',
    );
    expect(await env.ns.query(`www.${h}`, 'A')).to.deep.equal(['192.0.2.107']);
    const r = await curl(`/dyndns/update?system=dyndns&hostname=${h}&myip=192.0.2.108&wildcard=OFF&mx=&backmx=NO`);
    ok(r);
    expect(r.body).to.equal('good 192.0.2.108\n');
    expect(await env.ns.query(h, 'A')).to.deep.equal(['192.0.2.108']);
    expect(await env.ns.query(`www.${h}`, 'A')).to.deep.equal([]);
    expect(await env.ns.query(h, 'MX')).to.deep.equal([]);
  });

  it('OPNsense style (/nic/update, wildcard=NOCHG) keeps the wildcard; unchanged → nochg, serial still', async () => {
    const h = await host('opnsense');
    await curl(`/nic/update?hostname=${h}&myip=192.0.2.109&wildcard=ON`);
    const r = await curl(`/nic/update?system=dyndns&hostname=${h}&myip=192.0.2.110&wildcard=NOCHG`);
    ok(r);
    expect(r.body).to.equal('good 192.0.2.110\n');
    expect(await env.ns.query(`www.${h}`, 'A')).to.deep.equal(['192.0.2.110']);
    const serial = await env.ns.serial();
    expect((await curl(`/nic/update?system=dyndns&hostname=${h}&myip=192.0.2.110&wildcard=NOCHG`)).body).to.equal(
      'nochg 192.0.2.110\n',
    );
    expect(await env.ns.serial()).to.equal(serial);
    expect(await env.ns.query(`www.${h}`, 'A')).to.deep.equal(['192.0.2.110']);
  });

  // Dyn's documented "keep" values, sent by DNS-O-Matic clients and many scripts:
  // `wildcard=NOCHG&mx=NOCHG&backmx=NOCHG`. docs/protocol.md, "The update request" only defines wildcard=NOCHG; the
  // bridge extends the same "keep" meaning to mx and backmx (README, compatibility notes).
  it('Dyn style mx=NOCHG&backmx=NOCHG keeps the MX', async () => {
    const h = await host('dynnochg');
    await curl(`/nic/update?hostname=${h}&myip=192.0.2.115&mx=${MAIL}&backmx=YES`);
    const serial = await env.ns.serial();
    const r = await curl(`/nic/update?hostname=${h}&myip=192.0.2.115&wildcard=NOCHG&mx=NOCHG&backmx=NOCHG`);
    expect(r.body).to.equal('nochg 192.0.2.115\n');
    expect(await env.ns.serial()).to.equal(serial);
    expect(await env.ns.query(h, 'MX')).to.deep.equal([`10 ${h}.`, `20 ${MAIL}.`]);
  });

  it('FRITZ!Box style (myip=v4,v6,prefix/56): the prefix item is ignored and never published', async () => {
    const raw = await host('fritzbox');
    const r1 = await curl(`/nic/update?hostname=${raw}&myip=192.0.2.111,2001:db8:1200::111,2001:db8:1200::/56`);
    ok(r1);
    expect(r1.body).to.equal('good 192.0.2.111,2001:db8:1200::111\n');
    expect(await env.ns.query(raw, 'A')).to.deep.equal(['192.0.2.111']);
    expect(await env.ns.query(raw, 'AAAA')).to.deep.equal(['2001:db8:1200::111']);
    // percent-encoded, and with the prefix as the only IPv6 item: AAAA is left alone
    const enc = await host('fritzbox');
    const r2 = await curl(`/nic/update?hostname=${enc}&myip=192.0.2.112%2C2001%3Adb8%3A1200%3A%3A%2F56`);
    expect(r2.body).to.equal('good 192.0.2.112\n');
    expect(await env.ns.query(enc, 'A')).to.deep.equal(['192.0.2.112']);
    expect(await env.ns.query(enc, 'AAAA')).to.deep.equal([]);
  });

  it('No-IP style dual stack (myip=v4&myipv6=v6) → good v4,v6', async () => {
    const h = await host('noip');
    const r = await curl(`/nic/update?hostname=${h}&myip=192.0.2.113&myipv6=2001:db8::113`);
    ok(r);
    expect(r.body).to.equal('good 192.0.2.113,2001:db8::113\n');
    expect(await env.ns.query(h, 'A')).to.deep.equal(['192.0.2.113']);
    expect(await env.ns.query(h, 'AAAA')).to.deep.equal(['2001:db8::113']);
  });

  it('a wrong password: 401 with the Basic challenge and body badauth, nothing published', async () => {
    const h = await host();
    const r = await runCurl(await clientDir(env, 'curl'), `${base()}/nic/update?hostname=${h}&myip=192.0.2.114`, {
      user: ALICE.user,
      password: 'nope',
    });
    expect(r.statusLine).to.equal('HTTP/1.0 401 Unauthorized');
    expect(r.headers['www-authenticate']).to.equal('Basic realm="ddns-bridge"');
    expect(r.body).to.equal('badauth\n');
    expect(await env.ns.query(h, 'A')).to.deep.equal([]);
  });
});
