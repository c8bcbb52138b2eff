/**
 * A node:cluster run for test/integration/metrics-processes.test.ts: the primary forks two workers (with the
 * IPC serialization serve uses), each counts through its own PrometheusTelemetry
 * (workerMetrics) and reads the same shared gauges, then the primary renders the aggregate
 * (primaryMetrics) and prints it on stdout.
 */
import cluster from 'node:cluster';
import { primaryMetrics, workerMetrics } from '../../src/metrics/index.js';

/** The TLS certificate's notAfter each worker reports (seconds since the epoch). */
export const NOT_AFTER = 1_900_000_000;
const WORKERS = 2;

if (cluster.isPrimary) {
  cluster.setupPrimary({ serialization: 'advanced' });
  const metrics = primaryMetrics();
  let ready = 0;
  for (let i = 0; i < WORKERS; i++) cluster.fork({ METRICS_WORKER: String(i) });
  cluster.on('message', (_worker, m: { kind?: string }) => {
    if (m?.kind !== 'counted' || ++ready < WORKERS) return;
    // Three scrapes at once: one aggregation, shared (the text says how many were made).
    Promise.all([metrics.render(), metrics.render(), metrics.render()]).then(
      ([text, ...others]) => {
        if (others.some((o) => o !== text)) throw new Error('concurrent scrapes got different answers');
        process.stdout.write(`content-type: ${metrics.contentType}\n\n${text}`);
        for (const w of Object.values(cluster.workers ?? {})) w?.kill();
      },
      (err: unknown) => {
        process.stderr.write(`render failed: ${(err as Error).message}\n`);
        process.exit(1);
      },
    );
  });
} else {
  const i = Number(process.env['METRICS_WORKER']);
  const telemetry = workerMetrics();
  for (let n = 0; n <= i; n++) telemetry.httpRequest('update', 'good', 200, 0.002);
  telemetry.httpRequest('update', 'badauth', 401, 0.06);
  telemetry.dnsUpdate('dyn.example.test', 'NOERROR', 0.003, 1);
  telemetry.redisCommand('admit', 0.0003, false);
  telemetry.sample('repairs_due', {}, async () => 4);
  telemetry.sample('tls_certificate_expiry_seconds', { listener: 'listen[0].tls' }, () => NOT_AFTER);
  telemetry.sample('dns_messages_in_flight', { zone: 'dyn.example.test' }, () => i + 1);
  telemetry.sample('password_checks_waiting', {}, () => 3);
  process.send!({ kind: 'counted' });
}
