/**
 * `serve --workers N`: the workers count, the primary answers the scrape. The primary asks
 * every worker for its registry over the cluster's IPC channel (prom-client's
 * AggregatorRegistry) and adds them up by each metric's aggregator (prometheus.ts). The
 * primary's own process metrics are not in the answer: it serves no requests.
 */
import { performance } from 'node:perf_hooks';
import { AggregatorRegistry } from 'prom-client';
import type { PrometheusTelemetry } from './prometheus.js';

/** What the admin listener serves at /metrics: one process's metrics, or the workers' added up. */
export interface MetricsSource {
  readonly contentType: string;
  render(): Promise<string>;
}

/** How old an aggregate may be when a scrape is answered from it. */
export const AGGREGATE_MAX_AGE_MS = 1000;

/** The primary's own counter, appended to the workers' metrics: aggregations made (docs/operators.md, "Metrics"). */
const AGGREGATIONS = 'ddns_bridge_metrics_aggregations_total';

/**
 * In the primary: the workers' metrics, aggregated (rejects when a worker does not answer within 5 s).
 * Each aggregation sends one message to every worker, and /metrics needs no token: a scrape is
 * answered from the last aggregate while it is at most AGGREGATE_MAX_AGE_MS old, and scrapes that
 * come while one is being made share it, so a flood of scrapes costs at most one per second.
 */
export class ClusterMetrics implements MetricsSource {
  private readonly aggregator = new AggregatorRegistry();
  private last: { startedAt: number; text: string } | undefined;
  private inFlight: Promise<string> | undefined;
  private aggregations = 0;

  constructor(private readonly now: () => number = () => performance.now()) {}

  get contentType(): string {
    return this.aggregator.contentType;
  }

  render(): Promise<string> {
    if (this.last && this.now() - this.last.startedAt <= AGGREGATE_MAX_AGE_MS) return Promise.resolve(this.last.text);
    this.inFlight ??= this.aggregate().finally(() => (this.inFlight = undefined));
    return this.inFlight;
  }

  private async aggregate(): Promise<string> {
    const startedAt = this.now();
    const count = ++this.aggregations;
    const workers = await this.aggregator.clusterMetrics();
    // A failed aggregation is not kept: the next scrape tries again.
    const text =
      workers +
      `# HELP ${AGGREGATIONS} Aggregations of the workers' metrics the primary made (each asks every worker once).\n` +
      `# TYPE ${AGGREGATIONS} counter\n${AGGREGATIONS} ${count}\n`;
    this.last = { startedAt, text };
    return text;
  }
}

/**
 * In a worker: answer the primary's requests with this telemetry's registry. prom-client
 * listens for them once an AggregatorRegistry exists in the process, and answers with the
 * registries set here (by default its global one, which we do not use).
 */
export function answerPrimary(telemetry: PrometheusTelemetry): void {
  AggregatorRegistry.setRegistries([telemetry.registry]);
  new AggregatorRegistry();
}
