/**
 * The Telemetry port in prom-client metrics, on a registry of their own (never prom-client's
 * global one). Names, labels and their meaning: docs/operators.md, "Metrics". Each metric
 * names its cluster aggregator (cluster.ts): counters, histograms and per-process gauges are
 * summed over the workers; a gauge every worker reads from the same shared state is not.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { RCODE_LIST } from '../core/dns-wire.js';
import { HOST_TOKENS, REQUEST_TOKENS } from '../core/tokens.js';
import type { SampledGauge, Sampler, Telemetry } from '../core/telemetry.js';

const PREFIX = 'ddns_bridge_';

/** Request latency: a cached login takes a millisecond or two, a password check ~50 ms, DNS up to dns.timeout. */
export const HTTP_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** UPDATE latency: a primary on the same network answers in a millisecond or so; failures wait up to dns.timeout. */
export const DNS_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Hosts per UPDATE message: 1 when idle, up to maxHostsPerMessage (50 by default) under load. */
export const HOSTS_BUCKETS = [1, 2, 5, 10, 20, 50, 100];
/** Redis round trips: a fraction of a millisecond on loopback, up to redis.commandTimeout. */
export const REDIS_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 2.5];

/** Propagation to a secondary: NOTIFY and IXFR on a LAN take about a second; a lagging one minutes. */
export const PROPAGATION_BUCKETS = [0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600];

/** A sampled gauge that takes longer than this at a scrape is left out of that scrape. */
export const SAMPLE_TIMEOUT_MS = 2000;

/** prom-client process metrics left out: gauges whose per-`type` series (kept) add up to them. */
const LINT_FAILING_PROCESS_METRICS = [
  'nodejs_active_handles_total',
  'nodejs_active_requests_total',
  'nodejs_active_resources_total',
];

type Aggregator = 'sum' | 'max' | 'min';

/** The gauges read at scrape time, their labels, and how the workers' values add up. */
const SAMPLED: Readonly<Record<SampledGauge, { help: string; labelNames: readonly string[]; aggregator: Aggregator }>> =
  {
    dns_messages_in_flight: {
      help: 'UPDATE messages sent to the zone primary and not answered yet.',
      labelNames: ['zone'],
      aggregator: 'sum',
    },
    dns_changes_queued: {
      help: 'Host changes waiting for a free message slot towards the zone primary.',
      labelNames: ['zone'],
      aggregator: 'sum',
    },
    password_checks_waiting: {
      help: 'Password checks (scrypt) waiting for a free hash slot.',
      labelNames: [],
      aggregator: 'sum',
    },
    // A count in Redis every worker reads alike: the largest, never the sum.
    repairs_due: {
      help: 'Hosts whose interrupted change is due to be published again from Redis.',
      labelNames: [],
      aggregator: 'max',
    },
    // Counted by the last quiet-host sweep and read from Redis: every worker reads the same.
    quiet_hosts: {
      help: 'Hosts with no request counted for at least quiet_for (1d, 7d, 30d, 90d), as the last sweep found them.',
      labelNames: ['quiet_for'],
      aggregator: 'max',
    },
    // Every worker reads the same files; just after a reload the earliest is the one to watch.
    tls_certificate_expiry_seconds: {
      help: "The HTTPS listener's certificate notAfter, in seconds since the epoch.",
      labelNames: ['listener'],
      aggregator: 'min',
    },
  };

const TOKENS: ReadonlySet<string> = new Set<string>([...HOST_TOKENS, ...REQUEST_TOKENS]);
/** The gateway's label values: a bounded set, whatever a message carries. */
const GATEWAY_OPCODES: ReadonlySet<string> = new Set(['QUERY', 'UPDATE', 'other']);
const GATEWAY_ANSWERS: ReadonlySet<string> = new Set([...RCODE_LIST, 'BADKEY', 'BADSIG', 'BADTIME', 'dropped']);

/** The routes of src/http: the update path, the echo, the ACME client APIs (lego httpreq, acme-dns), the dialects. */
const ROUTES: ReadonlySet<string> = new Set([
  'update',
  'echo',
  'acme-present',
  'acme-cleanup',
  'acme-dns',
  'dynv6',
  'duckdns',
]);

/** Label values from a fixed set: anything else is `other` (a label's values must stay few). */
function routeLabel(route: string): string {
  return ROUTES.has(route) ? route : 'other';
}

function tokenLabel(token: string): string {
  return TOKENS.has(token) ? token : 'other';
}

function statusLabel(status: number): string {
  return Number.isInteger(status) && status >= 100 && status <= 599 ? String(status) : 'other';
}

/** An rcode mnemonic (NOERROR, REFUSED) or failure kind (TIMEOUT); the DNS adapter bounds the set. */
function rcodeLabel(rcode: string): string {
  return /^[A-Z][A-Z0-9]{0,15}$/.test(rcode) ? rcode : 'OTHER';
}

/** A time as observed: never negative or NaN (prom-client would throw on the request path). */
function duration(seconds: number): number {
  return Number.isFinite(seconds) && seconds > 0 ? seconds : 0;
}

interface Sampling {
  labels: Record<string, string>;
  read: Sampler;
}

export interface PrometheusTelemetryOptions {
  /** prom-client's process and Node.js metrics (CPU, memory, event loop, GC); default true. */
  processMetrics?: boolean;
}

export class PrometheusTelemetry implements Telemetry {
  readonly registry = new Registry();
  private readonly httpRequests: Counter<'route' | 'token' | 'status'>;
  private readonly httpDuration: Histogram<'route'>;
  private readonly gatewayRequests: Counter<'opcode' | 'rcode'>;
  private readonly gatewayDuration: Histogram<'opcode'>;
  private readonly dnsDuration: Histogram<'zone' | 'rcode'>;
  private readonly dnsHosts: Histogram<'zone'>;
  private readonly redisDuration: Histogram<'operation'>;
  private readonly redisErrors: Counter<'operation'>;
  private readonly refusedAddresses: Counter<'class'>;
  private readonly repairs: Counter<'outcome'>;
  private readonly propagation: Histogram<'zone' | 'secondary'>;
  private readonly secondaryBehind: Gauge<'zone' | 'secondary'>;
  private readonly secondaryUp: Gauge<'zone' | 'secondary'>;
  private readonly secondarySerial: Gauge<'zone' | 'secondary'>;
  private readonly secondaryWaits: Histogram<'zone' | 'outcome'>;
  private readonly credentialLookups: Counter<'result'>;
  /** Per gauge, its samplers by their labels' key. */
  private readonly samplers = new Map<SampledGauge, Map<string, Sampling>>();

  constructor(options: PrometheusTelemetryOptions = {}) {
    const registers = [this.registry];
    this.httpRequests = new Counter({
      name: `${PREFIX}http_requests_total`,
      help: 'HTTP requests answered, by route, reply token (the first word of the body) and status.',
      labelNames: ['route', 'token', 'status'],
      registers,
      aggregator: 'sum',
    });
    this.httpDuration = new Histogram({
      name: `${PREFIX}http_request_duration_seconds`,
      help: 'Time from the request read to its reply written, by route.',
      labelNames: ['route'],
      buckets: HTTP_BUCKETS,
      registers,
      aggregator: 'sum',
    });
    this.gatewayRequests = new Counter({
      name: `${PREFIX}gateway_requests_total`,
      help: 'Messages to the RFC 2136 gateway by opcode and answer (rcode, TSIG error, or dropped).',
      labelNames: ['opcode', 'rcode'],
      registers,
      aggregator: 'sum',
    });
    this.gatewayDuration = new Histogram({
      name: `${PREFIX}gateway_request_duration_seconds`,
      help: 'Time from a gateway message read to its answer sent, by opcode.',
      labelNames: ['opcode'],
      buckets: HTTP_BUCKETS,
      registers,
      aggregator: 'sum',
    });
    this.dnsDuration = new Histogram({
      name: `${PREFIX}dns_update_duration_seconds`,
      help: 'UPDATE messages to a zone primary by outcome (rcode, or TIMEOUT, CONNECTION, TSIG, PROTOCOL) and time.',
      labelNames: ['zone', 'rcode'],
      buckets: DNS_BUCKETS,
      registers,
      aggregator: 'sum',
    });
    this.dnsHosts = new Histogram({
      name: `${PREFIX}dns_update_hosts`,
      help: 'Host changes carried per UPDATE message.',
      labelNames: ['zone'],
      buckets: HOSTS_BUCKETS,
      registers,
      aggregator: 'sum',
    });
    this.redisDuration = new Histogram({
      name: `${PREFIX}redis_command_duration_seconds`,
      help: 'Redis commands, pipelines and scripts by operation, and their time (failed ones too).',
      labelNames: ['operation'],
      buckets: REDIS_BUCKETS,
      registers,
      aggregator: 'sum',
    });
    this.redisErrors = new Counter({
      name: `${PREFIX}redis_command_errors_total`,
      help: 'Redis operations that failed (connection lost, timeout, an error reply).',
      labelNames: ['operation'],
      registers,
      aggregator: 'sum',
    });
    this.refusedAddresses = new Counter({
      name: `${PREFIX}addresses_refused_total`,
      help: 'Update addresses ignored because their class is refused (addresses.refuse), by class.',
      labelNames: ['class'],
      registers,
      aggregator: 'sum',
    });
    this.repairs = new Counter({
      name: `${PREFIX}repairs_total`,
      help: 'Republishes of an interrupted change: done, or failed (refused or unanswered by the primary).',
      labelNames: ['outcome'],
      registers,
      aggregator: 'sum',
    });
    this.credentialLookups = new Counter({
      name: `${PREFIX}credential_cache_lookups_total`,
      help: 'Password logins answered by the credential cache (hit) or needing a password check (miss).',
      labelNames: ['result'],
      registers,
      aggregator: 'sum',
    });
    this.propagation = new Histogram({
      name: `${PREFIX}propagation_seconds`,
      help: 'Time from an UPDATE applied by the zone primary to a secondary serving its serial, by secondary.',
      labelNames: ['zone', 'secondary'],
      buckets: PROPAGATION_BUCKETS,
      registers,
      aggregator: 'sum',
    });
    // Every worker follows its own updates to the same secondaries: the worst view, never a sum.
    this.secondaryBehind = new Gauge({
      name: `${PREFIX}secondary_serial_behind`,
      help: 'Serials a secondary was behind the primary at its last SOA query (0: current).',
      labelNames: ['zone', 'secondary'],
      registers,
      aggregator: 'max',
    });
    // The serial it serves: a secondary behind whose serial does not move is stuck; one behind a busy primary is not.
    this.secondarySerial = new Gauge({
      name: `${PREFIX}secondary_serial`,
      help: 'The SOA serial a secondary served at its last answered query.',
      labelNames: ['zone', 'secondary'],
      registers,
      aggregator: 'max',
    });
    this.secondaryUp = new Gauge({
      name: `${PREFIX}secondary_up`,
      help: 'Whether a secondary answered its last SOA query (1) or not (0).',
      labelNames: ['zone', 'secondary'],
      registers,
      aggregator: 'min',
    });
    this.secondaryWaits = new Histogram({
      name: `${PREFIX}secondary_wait_seconds`,
      help: 'Answers that waited for every secondary to serve their record (ACME TXT, update.waitForSecondaries).',
      labelNames: ['zone', 'outcome'],
      buckets: PROPAGATION_BUCKETS,
      registers,
      aggregator: 'sum',
    });
    for (const outcome of ['done', 'failed']) this.repairs.inc({ outcome }, 0);
    for (const result of ['hit', 'miss']) this.credentialLookups.inc({ result }, 0);
    for (const [gauge, { help, labelNames, aggregator }] of Object.entries(SAMPLED) as [
      SampledGauge,
      (typeof SAMPLED)[SampledGauge],
    ][]) {
      const samplings = new Map<string, Sampling>();
      this.samplers.set(gauge, samplings);
      new Gauge({
        name: PREFIX + gauge,
        help,
        labelNames,
        registers,
        aggregator,
        async collect() {
          this.reset();
          const read = [...samplings.values()].map(async ({ labels, read }) => {
            const value = await withTimeout(read(), SAMPLE_TIMEOUT_MS);
            if (Number.isFinite(value)) this.set(labels, value);
          });
          // A reading that fails (Redis away) leaves its series out of this scrape; the rest is served.
          await Promise.allSettled(read);
        },
      });
    }
    if (options.processMetrics ?? true) {
      collectDefaultMetrics({ register: this.registry });
      // Gauges named like counters (promtool's lint refuses them): the sum of the same gauge without `_total`.
      for (const name of LINT_FAILING_PROCESS_METRICS) this.registry.removeSingleMetric(name);
    }
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** The metrics in the Prometheus text format. */
  render(): Promise<string> {
    return this.registry.metrics();
  }

  httpRequest(route: string, token: string, status: number, seconds: number): void {
    const r = routeLabel(route);
    this.httpRequests.inc({ route: r, token: tokenLabel(token), status: statusLabel(status) });
    this.httpDuration.observe({ route: r }, duration(seconds));
  }

  gatewayRequest(opcode: string, rcode: string, seconds: number): void {
    const op = GATEWAY_OPCODES.has(opcode) ? opcode : 'other';
    this.gatewayRequests.inc({ opcode: op, rcode: GATEWAY_ANSWERS.has(rcode) ? rcode : 'other' });
    this.gatewayDuration.observe({ opcode: op }, duration(seconds));
  }

  dnsUpdate(zone: string, rcode: string, seconds: number, hosts: number): void {
    this.dnsDuration.observe({ zone, rcode: rcodeLabel(rcode) }, duration(seconds));
    this.dnsHosts.observe({ zone }, hosts);
  }

  redisCommand(operation: string, seconds: number, failed: boolean): void {
    this.redisDuration.observe({ operation }, duration(seconds));
    if (failed) this.redisErrors.inc({ operation });
  }

  addressRefused(klass: string): void {
    this.refusedAddresses.inc({ class: klass });
  }

  credentialCache(hit: boolean): void {
    this.credentialLookups.inc({ result: hit ? 'hit' : 'miss' });
  }

  repair(outcome: 'done' | 'failed'): void {
    this.repairs.inc({ outcome });
  }

  secondaryPropagated(zone: string, secondary: string, seconds: number): void {
    this.propagation.observe({ zone, secondary }, duration(seconds));
  }

  secondaryWait(zone: string, outcome: 'served' | 'timeout', seconds: number): void {
    this.secondaryWaits.observe({ zone, outcome }, duration(seconds));
  }

  secondaryState(zone: string, secondary: string, up: boolean, behind: number, serial: number | null): void {
    this.secondaryUp.set({ zone, secondary }, up ? 1 : 0);
    this.secondaryBehind.set({ zone, secondary }, behind);
    if (serial !== null) this.secondarySerial.set({ zone, secondary }, serial);
  }

  secondaryRemoved(zone: string, secondary: string): void {
    for (const g of [this.secondaryUp, this.secondaryBehind, this.secondarySerial]) g.remove({ zone, secondary });
  }

  sample(name: SampledGauge, labels: Record<string, string>, read: Sampler): void {
    const expected = [...SAMPLED[name].labelNames].sort().join(',');
    const given = Object.keys(labels).sort().join(',');
    if (given !== expected) throw new Error(`gauge ${name}: labels [${given}], expected [${expected}]`);
    const key = JSON.stringify(
      Object.keys(labels)
        .sort()
        .map((k) => [k, labels[k]]),
    );
    this.samplers.get(name)!.set(key, { labels: { ...labels }, read });
  }
}

function withTimeout(value: number | Promise<number>, ms: number): Promise<number> {
  if (typeof value === 'number') return Promise.resolve(value);
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<number>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no reading within ${ms} ms`)), ms);
  });
  return Promise.race([value, timeout]).finally(() => clearTimeout(timer));
}
