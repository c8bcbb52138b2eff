/** A PrometheusTelemetry driven through every method, shared by the unit and integration metrics tests. */
import { PrometheusTelemetry } from '../../src/metrics/index.js';

export const ZONE = 'dyn.example.test';
export const NOT_AFTER = 1_900_000_000;

/** The sample lines of a scrape (no # lines), for exact comparisons. */
export function samples(text: string): string[] {
  return text.split('\n').filter((l) => l !== '' && !l.startsWith('#'));
}

/** The samples of one metric (a histogram's _bucket, _sum and _count are metrics of their own). */
export function family(text: string, name: string): string[] {
  return samples(text).filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));
}

/** A telemetry driven through every method, as the adapters would. */
export function driven(opts: { processMetrics?: boolean } = { processMetrics: false }): PrometheusTelemetry {
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
