import { expect } from 'chai';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { AggregatorRegistry } from 'prom-client';
import { requireBinariesOrSkip } from '../../src/lab/index.js';
import { NO_TELEMETRY } from '../../src/core/telemetry.js';
import { PrometheusTelemetry } from '../../src/metrics/index.js';
import { ROOT } from '../support/bridge.js';
import { promtoolCheck } from '../support/promtool.js';

const ZONE = 'dyn.example.test';
const NOT_AFTER = 1_900_000_000;

/** The sample lines of a scrape (no # lines), for exact comparisons. */
function samples(text: string): string[] {
  return text.split('\n').filter((l) => l !== '' && !l.startsWith('#'));
}

/** The samples of one metric (a histogram's _bucket, _sum and _count are metrics of their own). */
function family(text: string, name: string): string[] {
  return samples(text).filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));
}

/** A telemetry driven through every method, as the adapters would. */
function driven(opts: { processMetrics?: boolean } = { processMetrics: false }): PrometheusTelemetry {
  const t = new PrometheusTelemetry(opts);
  t.httpRequest('update', 'good', 200, 0.004);
  t.httpRequest('update', 'good', 200, 0.03);
  t.httpRequest('update', 'badauth', 401, 0.06);
  t.httpRequest('echo', 'Current', 200, 0.001); // the echo's address line: not a token
  t.httpRequest('/etc/passwd', 'not', 404, 0.0001); // no route
  t.dnsUpdate(ZONE, 'NOERROR', 0.003, 2);
  t.dnsUpdate(ZONE, 'TIMEOUT', 1.5, 1);
  t.dnsUpdate(ZONE, 'weird label', 0.01, 1);
  t.redisCommand('admit', 0.0004, false);
  t.redisCommand('admit', 0.002, true);
  t.credentialCache(true);
  t.credentialCache(true);
  t.credentialCache(false);
  t.repair('failed');
  t.repair('failed');
  t.sample('dns_messages_in_flight', { zone: ZONE }, () => 3);
  t.sample('dns_changes_queued', { zone: ZONE }, () => 7);
  t.sample('password_checks_waiting', {}, () => 2);
  t.sample('repairs_due', {}, async () => 5);
  t.sample('tls_certificate_expiry_seconds', { listener: 'listen[0].tls' }, () => NOT_AFTER);
  // A reading that fails (Redis away) is left out of the scrape, not the scrape's end.
  t.sample('tls_certificate_expiry_seconds', { listener: 'listen[1].tls' }, () => Promise.reject(new Error('down')));
  return t;
}

describe('metrics/prometheus', () => {
  it('counts requests by route, token and status; anything outside the fixed sets is other', async () => {
    const text = await driven().render();
    expect(family(text, 'ddns_bridge_http_requests_total')).to.have.members([
      'ddns_bridge_http_requests_total{route="update",token="good",status="200"} 2',
      'ddns_bridge_http_requests_total{route="update",token="badauth",status="401"} 1',
      'ddns_bridge_http_requests_total{route="echo",token="other",status="200"} 1',
      'ddns_bridge_http_requests_total{route="other",token="other",status="404"} 1',
    ]);
    expect(samples(text)).to.include.members([
      'ddns_bridge_http_request_duration_seconds_bucket{le="0.005",route="update"} 1',
      'ddns_bridge_http_request_duration_seconds_bucket{le="0.05",route="update"} 2',
      'ddns_bridge_http_request_duration_seconds_bucket{le="0.1",route="update"} 3',
      'ddns_bridge_http_request_duration_seconds_count{route="update"} 3',
    ]);
  });

  it('times UPDATE messages by zone and rcode, and counts their hosts', async () => {
    const text = await driven().render();
    expect(samples(text)).to.include.members([
      `ddns_bridge_dns_update_duration_seconds_count{zone="${ZONE}",rcode="NOERROR"} 1`,
      `ddns_bridge_dns_update_duration_seconds_sum{zone="${ZONE}",rcode="NOERROR"} 0.003`,
      `ddns_bridge_dns_update_duration_seconds_bucket{le="0.0025",zone="${ZONE}",rcode="NOERROR"} 0`,
      `ddns_bridge_dns_update_duration_seconds_bucket{le="0.005",zone="${ZONE}",rcode="NOERROR"} 1`,
      `ddns_bridge_dns_update_duration_seconds_count{zone="${ZONE}",rcode="TIMEOUT"} 1`,
      `ddns_bridge_dns_update_duration_seconds_count{zone="${ZONE}",rcode="OTHER"} 1`,
      `ddns_bridge_dns_update_hosts_bucket{le="1",zone="${ZONE}"} 2`,
      `ddns_bridge_dns_update_hosts_bucket{le="2",zone="${ZONE}"} 3`,
      `ddns_bridge_dns_update_hosts_sum{zone="${ZONE}"} 4`,
    ]);
  });

  it('times Redis operations and counts their errors; repairs and cache lookups start at 0', async () => {
    const text = await driven().render();
    expect(samples(text)).to.include.members([
      'ddns_bridge_redis_command_duration_seconds_count{operation="admit"} 2',
      'ddns_bridge_redis_command_duration_seconds_bucket{le="0.0005",operation="admit"} 1',
      'ddns_bridge_redis_command_errors_total{operation="admit"} 1',
      'ddns_bridge_repairs_total{outcome="done"} 0',
      'ddns_bridge_repairs_total{outcome="failed"} 2',
      'ddns_bridge_credential_cache_lookups_total{result="hit"} 2',
      'ddns_bridge_credential_cache_lookups_total{result="miss"} 1',
    ]);
  });

  it('reads the sampled gauges at the scrape; a failing reading is left out', async () => {
    const t = driven();
    let inFlight = 3;
    t.sample('dns_messages_in_flight', { zone: ZONE }, () => inFlight); // replaces the first
    const first = samples(await t.render());
    expect(first).to.include.members([
      `ddns_bridge_dns_messages_in_flight{zone="${ZONE}"} 3`,
      `ddns_bridge_dns_changes_queued{zone="${ZONE}"} 7`,
      'ddns_bridge_password_checks_waiting 2',
      'ddns_bridge_repairs_due 5',
      `ddns_bridge_tls_certificate_expiry_seconds{listener="listen[0].tls"} ${NOT_AFTER}`,
    ]);
    expect(first.filter((l) => l.includes('listen[1].tls'))).to.deep.equal([]);
    inFlight = 1;
    expect(samples(await t.render())).to.include(`ddns_bridge_dns_messages_in_flight{zone="${ZONE}"} 1`);
  });

  it('refuses a sampled gauge with other labels than its own', () => {
    const t = new PrometheusTelemetry({ processMetrics: false });
    expect(() => t.sample('repairs_due', { zone: ZONE }, () => 1)).to.throw(
      /repairs_due: labels \[zone\], expected \[\]/,
    );
    expect(() => t.sample('dns_changes_queued', {}, () => 1)).to.throw(/expected \[zone\]/);
  });

  it("serves the text format, with prom-client's process metrics", async () => {
    const t = new PrometheusTelemetry();
    expect(t.contentType).to.match(/^text\/plain; version=0\.0\.4/);
    const text = await t.render();
    expect(text).to.match(/^process_cpu_seconds_total \d/m);
    expect(text).to.match(/^nodejs_heap_size_used_bytes \d/m);
    expect(text).to.include('# TYPE ddns_bridge_http_requests_total counter');
    expect(text).to.include('# HELP ddns_bridge_repairs_due ');
  });

  it('NO_TELEMETRY takes every event', () => {
    NO_TELEMETRY.httpRequest('update', 'good', 200, 0);
    NO_TELEMETRY.sample('repairs_due', {}, () => 1);
  });

  describe('promtool check metrics', () => {
    before(function () {
      requireBinariesOrSkip(this, ['promtool']);
    });

    it('passes, with no lint problem, on a scrape with every metric and the process metrics', async () => {
      const r = await promtoolCheck(await driven({ processMetrics: true }).render());
      expect(r.output).to.equal('');
      expect(r.code).to.equal(0);
    });

    it('passes on the aggregate of two workers', async () => {
      const workers = [driven({ processMetrics: true }), driven({ processMetrics: true })];
      const all = await Promise.all(workers.map((w) => w.registry.getMetricsAsJSON()));
      const r = await promtoolCheck(await AggregatorRegistry.aggregate(all).metrics());
      expect(r.output).to.equal('');
      expect(r.code).to.equal(0);
    });
  });

  describe('cluster aggregation', () => {
    it('sums counters, histograms and per-worker gauges; shared gauges are not doubled', async () => {
      const workers = [driven(), driven()];
      let inFlight = 0;
      workers[1]!.sample('dns_messages_in_flight', { zone: ZONE }, () => ++inFlight);
      workers[1]!.sample('repairs_due', {}, () => 6); // read a moment later: the larger
      workers[1]!.sample('tls_certificate_expiry_seconds', { listener: 'listen[0].tls' }, () => NOT_AFTER + 100);
      const all = await Promise.all(workers.map((w) => w.registry.getMetricsAsJSON()));
      const text = await AggregatorRegistry.aggregate(all).metrics();
      expect(samples(text)).to.include.members([
        'ddns_bridge_http_requests_total{route="update",token="good",status="200"} 4',
        'ddns_bridge_http_request_duration_seconds_count{route="update"} 6',
        'ddns_bridge_http_request_duration_seconds_bucket{le="0.005",route="update"} 2',
        `ddns_bridge_dns_update_hosts_sum{zone="${ZONE}"} 8`,
        'ddns_bridge_redis_command_errors_total{operation="admit"} 2',
        'ddns_bridge_credential_cache_lookups_total{result="hit"} 4',
        `ddns_bridge_dns_messages_in_flight{zone="${ZONE}"} 4`,
        'ddns_bridge_password_checks_waiting 4',
        'ddns_bridge_repairs_due 6',
        `ddns_bridge_tls_certificate_expiry_seconds{listener="listen[0].tls"} ${NOT_AFTER}`,
      ]);
    });

    it('a node:cluster primary renders what two forked workers counted', async () => {
      const script = path.join(ROOT, 'dist/test/support/metrics-cluster.js');
      const { stdout } = await promisify(execFile)(process.execPath, [script], { timeout: 20_000 });
      const [head, text] = splitOnce(stdout);
      expect(head).to.match(/^content-type: text\/plain; version=0\.0\.4/);
      expect(samples(text)).to.include.members([
        'ddns_bridge_http_requests_total{route="update",token="good",status="200"} 3',
        'ddns_bridge_http_requests_total{route="update",token="badauth",status="401"} 2',
        `ddns_bridge_dns_update_duration_seconds_count{zone="${ZONE}",rcode="NOERROR"} 2`,
        'ddns_bridge_redis_command_duration_seconds_count{operation="admit"} 2',
        `ddns_bridge_dns_messages_in_flight{zone="${ZONE}"} 3`,
        'ddns_bridge_password_checks_waiting 6',
        'ddns_bridge_repairs_due 4',
        `ddns_bridge_tls_certificate_expiry_seconds{listener="listen[0].tls"} ${NOT_AFTER}`,
      ]);
      // prom-client's own choice for the process metrics: CPU summed, the start time left out.
      expect(text).to.match(/^process_cpu_seconds_total \d/m);
      expect(text).not.to.match(/^process_start_time_seconds/m);
    });
  });
});

/** The script's header line(s) and the scrape after the first empty line. */
function splitOnce(text: string): [string, string] {
  const i = text.indexOf('\n\n');
  if (i === -1) return [text, ''];
  return [text.slice(0, i), text.slice(i + 2)];
}
