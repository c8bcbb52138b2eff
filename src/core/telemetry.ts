/**
 * What the service counts and times, as a port: adapters report events here and never see
 * the metrics library. The Prometheus names and labels are in src/metrics (docs/operators.md,
 * "Metrics"). Every method is cheap and synchronous: it is called on the request path.
 */

/** A value read when the metrics are scraped (a gauge), not counted as it happens. */
export type Sampler = () => number | Promise<number>;

export interface Telemetry {
  /** One HTTP request answered: its route (`update`, `echo`, `other`), reply token and status. */
  httpRequest(route: string, token: string, status: number, seconds: number): void;
  /**
   * One message to the RFC 2136 gateway: its opcode (`QUERY`, `UPDATE`, `other`) and what it got (an rcode name,
   * `BADKEY`/`BADSIG`/`BADTIME` for a TSIG error, `dropped` when unanswered: over the rate, or not a request).
   */
  gatewayRequest(opcode: string, rcode: string, seconds: number): void;
  /** One UPDATE message answered (or failed: rcode `TIMEOUT`, `CONNECTION`, `TSIG`, `PROTOCOL`). */
  dnsUpdate(zone: string, rcode: string, seconds: number, hosts: number): void;
  /** An update address ignored because its class is refused (`addresses.refuse`): a `myip` item or the client's. */
  addressRefused(klass: string): void;
  /** One Redis command (or script, or pipeline) and whether it failed. */
  redisCommand(operation: string, seconds: number, failed: boolean): void;
  /** A password login, once per request: the credential cache vouched for it (hit), or a password check runs (miss). */
  credentialCache(hit: boolean): void;
  /** A republish of a host's stored state: done or refused / unanswered. */
  repair(outcome: 'done' | 'failed'): void;
  /** A secondary served an update's serial `seconds` after the primary applied it (docs/operators.md). */
  secondaryPropagated(zone: string, secondary: string, seconds: number): void;
  /**
   * A secondary at its last SOA query: whether it answered, how many serials it is behind the primary, and the serial
   * it served (null: never answered).
   */
  secondaryState(zone: string, secondary: string, up: boolean, behind: number, serial: number | null): void;
  /** A secondary no longer listed (`auto` found it gone): its series go. */
  secondaryRemoved(zone: string, secondary: string): void;
  /** An answer waited for the secondaries to serve its record: they all did (`served`) or the bound passed. */
  secondaryWait(zone: string, outcome: 'served' | 'timeout', seconds: number): void;
  /**
   * A gauge read at scrape time; `labels` tell the series of one gauge apart (a zone, a
   * listener). Names: see src/metrics. Registering the same name and labels again replaces it.
   */
  sample(name: SampledGauge, labels: Record<string, string>, read: Sampler): void;
}

/** The gauges read at scrape time. */
export type SampledGauge =
  | 'dns_messages_in_flight'
  | 'dns_changes_queued'
  | 'password_checks_waiting'
  | 'repairs_due'
  | 'quiet_hosts'
  | 'tls_certificate_expiry_seconds';

/** Counts nothing: the default of every adapter, and what tests that do not look at metrics get. */
export const NO_TELEMETRY: Telemetry = {
  httpRequest() {},
  gatewayRequest() {},
  dnsUpdate() {},
  redisCommand() {},
  addressRefused() {},
  credentialCache() {},
  repair() {},
  secondaryPropagated() {},
  secondaryState() {},
  secondaryRemoved() {},
  secondaryWait() {},
  sample() {},
};
