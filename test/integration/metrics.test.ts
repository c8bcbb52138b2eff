/**
 * The metrics of a real bridge (built in this process with a PrometheusTelemetry, as `serve`
 * builds it) in front of real redis-server and knotd: updates through its HTTP and HTTPS
 * listeners move the counters by exactly what was sent, the UPDATE message is counted by zone
 * and rcode, Redis operations are timed, the certificate's expiry follows a reload, and
 * `promtool check metrics` accepts the scrape.
 */
import { expect } from 'chai';
import { X509Certificate } from 'node:crypto';
import { copyFile, readFile } from 'node:fs/promises';
import path from 'node:path';
import { requireBinariesOrSkip } from '../../src/lab/index.js';
import { loadConfig } from '../../src/config/load.js';
import { buildBridge, type Bridge } from '../../src/cli/compose.js';
import { PrometheusTelemetry } from '../../src/metrics/index.js';
import { BridgeEnv, ZONE, sleep } from '../support/bridge.js';
import { RecordingLogger } from '../support/store-server.js';
import { TestCa } from '../support/test-ca.js';
import { promtoolCheck } from '../support/promtool.js';

const UA = 'metrics-tests/1.0 tests@example.test';
/** A zone whose primary nobody answers (nothing listens on port 1). */
const DOWN_ZONE = 'down.example.test';

/** Every sample of a scrape by its series (`name{labels}`). */
function parse(text: string): Map<string, number> {
  const series = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const space = line.lastIndexOf(' ');
    series.set(line.slice(0, space), Number(line.slice(space + 1)));
  }
  return series;
}

async function notAfterOf(certFile: string): Promise<number> {
  return new Date(new X509Certificate(await readFile(certFile)).validTo).getTime() / 1000;
}

describe('metrics of a real bridge (Knot, Redis)', function () {
  this.timeout(60000);
  let env: BridgeEnv;
  let bridge: Bridge | undefined;
  let telemetry: PrometheusTelemetry;
  let port: number;
  let ca: TestCa;
  const auth: [string, string] = ['alice', 'alice-metrics-pw'];
  const host = `metrics-${process.pid}.${ZONE}`;
  const downHost = `metrics-${process.pid}.${DOWN_ZONE}`;
  const tlsCert = (): string => path.join(env.dir, 'listener.pem');
  const tlsKey = (): string => path.join(env.dir, 'listener.key');

  before(async function () {
    requireBinariesOrSkip(this, ['redis-server', 'knotd', 'openssl', 'promtool']);
    env = await BridgeEnv.start({
      serves: 0,
      config: { frequency: { minInterval: 0.05, donatorMinInterval: 0.05 }, dns: { timeout: 2 } },
    });
    // A second zone, on a primary that refuses connections (same key: never used).
    const zone = (env.config['zones'] as Record<string, unknown>[])[0]!;
    await env.writeConfig({ zones: [zone, { ...zone, name: DOWN_ZONE, primary: '127.0.0.1:1' }] });
    await env.addAccount(...auth);
    await env.addHost(host, auth[0]);
    await env.addHost(downHost, auth[0]);
    ca = await TestCa.create(env.dir);
    const first = await ca.issue('first', { days: 10 });
    await copyFile(first.certFile, tlsCert());
    await copyFile(first.keyFile, tlsKey());
    telemetry = new PrometheusTelemetry();
    bridge = buildBridge(await loadConfig(env.configPath, {}), new RecordingLogger(), { telemetry });
    port = await bridge.http.listen('127.0.0.1', 0);
    await bridge.http.listen('127.0.0.1', 0, {
      tls: { certFile: tlsCert(), keyFile: tlsKey(), setting: 'listen[1].tls' },
    });
  });
  after(async () => {
    await bridge?.close();
    await env?.stop();
  });

  const update = (query: string, creds: [string, string] = auth) =>
    env.get(`/nic/update?${query}`, { auth: creds, ua: UA, port });

  it('counts good, nochg and badauth by exactly what was sent, with the UPDATE message and the Redis calls', async () => {
    const before = parse(await telemetry.render());
    expect((await update(`hostname=${host}&myip=192.0.2.10`)).body).to.equal('good 192.0.2.10\n');
    await sleep(100); // past frequency.minInterval
    expect((await update(`hostname=${host}&myip=192.0.2.10`)).body).to.equal('nochg 192.0.2.10\n');
    expect((await update(`hostname=${host}&myip=192.0.2.11`, [auth[0], 'wrong-password'])).body).to.equal('badauth\n');
    expect(await env.ns.query(host, 'A')).to.deep.equal(['192.0.2.10']);
    const text = await telemetry.render();
    const after = parse(text);
    const moved = (series: string): number => (after.get(series) ?? 0) - (before.get(series) ?? 0);

    expect(moved('ddns_bridge_http_requests_total{route="update",token="good",status="200"}')).to.equal(1);
    expect(moved('ddns_bridge_http_requests_total{route="update",token="nochg",status="200"}')).to.equal(1);
    expect(moved('ddns_bridge_http_requests_total{route="update",token="badauth",status="401"}')).to.equal(1);
    expect(moved('ddns_bridge_http_request_duration_seconds_count{route="update"}')).to.equal(3);
    // One UPDATE (nochg and badauth send none), carrying one host, answered NOERROR by Knot.
    expect(moved(`ddns_bridge_dns_update_duration_seconds_count{zone="${ZONE}",rcode="NOERROR"}`)).to.equal(1);
    expect(moved(`ddns_bridge_dns_update_duration_seconds_bucket{le="10",zone="${ZONE}",rcode="NOERROR"}`)).to.equal(1);
    expect(moved(`ddns_bridge_dns_update_hosts_sum{zone="${ZONE}"}`)).to.equal(1);
    // The first login and the wrong password need a password check; nochg is the cache's.
    expect(moved('ddns_bridge_credential_cache_lookups_total{result="miss"}')).to.equal(2);
    expect(moved('ddns_bridge_credential_cache_lookups_total{result="hit"}')).to.equal(1);
    // Every request is admitted and the change committed by a Redis script, each one timed.
    expect(moved('ddns_bridge_redis_command_duration_seconds_count{operation="admit"}')).to.be.at.least(2);
    expect(moved('ddns_bridge_redis_command_duration_seconds_count{operation="commit"}')).to.equal(1);
    expect(after.get('ddns_bridge_redis_command_duration_seconds_sum{operation="commit"}')).to.be.above(0);
    expect([...after.keys()].filter((s) => s.startsWith('ddns_bridge_redis_command_errors_total'))).to.deep.equal([]);
    // The gauges, read now: nothing in flight, nothing due.
    expect(after.get(`ddns_bridge_dns_messages_in_flight{zone="${ZONE}"}`)).to.equal(0);
    expect(after.get(`ddns_bridge_dns_changes_queued{zone="${ZONE}"}`)).to.equal(0);
    expect(after.get('ddns_bridge_password_checks_waiting')).to.equal(0);
    expect(after.get('ddns_bridge_repairs_due')).to.equal(0);

    const lint = await promtoolCheck(text);
    expect(lint.output).to.equal('');
    expect(lint.code).to.equal(0);
  });

  it('counts an UPDATE that could not reach its primary by its failure, and the dnserr reply', async () => {
    const before = parse(await telemetry.render());
    expect((await update(`hostname=${downHost}&myip=192.0.2.20`)).body).to.equal('dnserr\n');
    const after = parse(await telemetry.render());
    const moved = (series: string): number => (after.get(series) ?? 0) - (before.get(series) ?? 0);
    expect(moved('ddns_bridge_http_requests_total{route="update",token="dnserr",status="200"}')).to.equal(1);
    // The message and its one retry, each refused a connection.
    expect(moved(`ddns_bridge_dns_update_duration_seconds_count{zone="${DOWN_ZONE}",rcode="CONNECTION"}`)).to.equal(2);
    expect(moved(`ddns_bridge_dns_update_hosts_count{zone="${DOWN_ZONE}"}`)).to.equal(2);
  });

  it("reports each HTTPS listener's certificate expiry, and the new one after a reload", async () => {
    const series = 'ddns_bridge_tls_certificate_expiry_seconds{listener="listen[1].tls"}';
    expect(parse(await telemetry.render()).get(series)).to.equal(await notAfterOf(tlsCert()));
    const second = await ca.issue('second', { days: 20 });
    await copyFile(second.certFile, tlsCert());
    await copyFile(second.keyFile, tlsKey());
    expect(await bridge!.http.reloadTls()).to.deep.equal([{ setting: 'listen[1].tls', ok: true }]);
    const expiry = parse(await telemetry.render()).get(series);
    expect(expiry).to.equal(await notAfterOf(second.certFile));
    expect(expiry! - Date.now() / 1000).to.be.within(19 * 86400, 21 * 86400);
  });
});
