/**
 * The metrics checked by real processes: promtool's linter on a scrape, and a node:cluster
 * primary rendering what two forked workers counted (test/unit/metrics.test.ts has the rest).
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { AggregatorRegistry } from 'prom-client';
import { requireBinariesOrSkip } from '../../src/lab/index.js';
import { ROOT } from '../support/bridge.js';
import { driven, NOT_AFTER, samples, ZONE } from '../support/metrics-fixture.js';
import { promtoolCheck } from '../support/promtool.js';

describe('metrics/prometheus with real processes', () => {
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
        // Three concurrent scrapes shared one aggregation.
        'ddns_bridge_metrics_aggregations_total 1',
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
