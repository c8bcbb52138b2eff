import { expect } from 'chai';
import { AggregatorRegistry } from 'prom-client';
import { NO_TELEMETRY } from '../../src/core/telemetry.js';
import { PrometheusTelemetry } from '../../src/metrics/index.js';
import { driven, family, NOT_AFTER, samples, ZONE } from '../support/metrics-fixture.js';

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

  it('counts refused addresses by class, and gateway messages by opcode and a bounded answer label', async () => {
    const t = new PrometheusTelemetry({ processMetrics: false });
    t.addressRefused('loopback');
    t.addressRefused('loopback');
    t.gatewayRequest('UPDATE', 'BADSIG', 0.001);
    t.gatewayRequest('weird', 'made-up', 0.001);
    const lines = samples(await t.render());
    expect(lines).to.include('ddns_bridge_addresses_refused_total{class="loopback"} 2');
    expect(lines).to.include('ddns_bridge_gateway_requests_total{opcode="UPDATE",rcode="BADSIG"} 1');
    expect(lines).to.include('ddns_bridge_gateway_requests_total{opcode="other",rcode="other"} 1');
    t.sample('quiet_hosts', { quiet_for: '30d' }, () => 3);
    expect(samples(await t.render())).to.include('ddns_bridge_quiet_hosts{quiet_for="30d"} 3');
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
  });
});
