/**
 * `serve --workers N`: the workers count, the primary answers the scrape. The primary asks
 * every worker for its registry over the cluster's IPC channel (prom-client's
 * AggregatorRegistry) and adds them up by each metric's aggregator (prometheus.ts). The
 * primary's own process metrics are not in the answer: it serves no requests.
 */
import { AggregatorRegistry } from 'prom-client';
import type { PrometheusTelemetry } from './prometheus.js';

/** What the admin listener serves at /metrics: one process's metrics, or the workers' added up. */
export interface MetricsSource {
  readonly contentType: string;
  render(): Promise<string>;
}

/** In the primary: the workers' metrics, aggregated (rejects when a worker does not answer within 5 s). */
export class ClusterMetrics implements MetricsSource {
  private readonly aggregator = new AggregatorRegistry();

  get contentType(): string {
    return this.aggregator.contentType;
  }

  render(): Promise<string> {
    return this.aggregator.clusterMetrics();
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
