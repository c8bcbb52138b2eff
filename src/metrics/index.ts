/**
 * The metrics for GET /metrics (docs/operators.md, "Metrics"), one factory per role:
 *
 *   one process:  const t = processMetrics();  buildBridge(config, logger, { telemetry: t }); serve t
 *   a worker:     buildBridge(config, logger, { telemetry: workerMetrics() })
 *   the primary:  serve primaryMetrics()
 *
 * What the admin listener serves is a MetricsSource (contentType, render()).
 */
import { answerPrimary, ClusterMetrics, type MetricsSource } from './cluster.js';
import { PrometheusTelemetry } from './prometheus.js';

export { ClusterMetrics, answerPrimary, type MetricsSource } from './cluster.js';
export { PrometheusTelemetry, type PrometheusTelemetryOptions } from './prometheus.js';

/** A process that serves on its own: it counts, and its admin listener renders the same object. */
export function processMetrics(): PrometheusTelemetry {
  return new PrometheusTelemetry();
}

/** A cluster worker: it counts, and answers the primary's requests for its metrics. */
export function workerMetrics(): PrometheusTelemetry {
  const telemetry = new PrometheusTelemetry();
  answerPrimary(telemetry);
  return telemetry;
}

/** The cluster primary: renders the workers' metrics, added up. Create it once. */
export function primaryMetrics(): MetricsSource {
  return new ClusterMetrics();
}
