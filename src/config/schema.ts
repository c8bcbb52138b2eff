/**
 * The validated, frozen configuration. `load.ts` builds it from one JSON file; every
 * other module receives (a slice of) this object and never reads files or env itself.
 * Durations are in milliseconds here (the file uses seconds, fractions allowed).
 */

import type { AddressClass } from '../core/address-classes.js';
export { TSIG_ALGORITHMS, type TsigAlgorithm, type TsigKeyConfig } from '../core/tsig.js';
import type { TsigKeyConfig } from '../core/tsig.js';

export interface ZoneConfig {
  /** Zone apex, normalised (lowercase, no trailing dot). */
  name: string;
  primary: { host: string; port: number };
  key: TsigKeyConfig;
  /**
   * UPDATE messages in flight to this primary at most (overrides dns.maxInFlight). BIND
   * applies messages one after another, so 1–2 lets the group commit merge more hosts per
   * message; Knot commits whatever queued per journal cycle and likes a few in flight.
   */
  maxInFlight?: number;
  /**
   * The zone's secondaries the bridge follows after each update (docs/operators.md, "Secondaries"): `servers` as
   * configured (`host:port`), and with `auto` the zone's NS names resolved through the primary's own records.
   * Absent: none, and nothing is watched.
   */
  secondaries?: { servers: readonly { host: string; port: number }[]; auto: boolean };
  /**
   * Names the operator keeps in this zone beside the hosts (www, mail), never drift findings nor hosts: lower-case
   * FQDNs, or `*.` and one for every name below it (core/static-names.ts). Empty when none are configured.
   */
  staticNames: readonly string[];
}

/** A PEM certificate (chain allowed) and its PEM private key; absolute paths, read when listening and on SIGHUP. */
export interface TlsFilesConfig {
  certFile: string;
  keyFile: string;
}

export interface ListenConfig {
  host: string;
  port: number;
  /** HTTPS on this address; absent: plain HTTP. */
  tls?: TlsFilesConfig;
}

/** The admin listener (docs/operators.md, "The admin listener"). */
export interface AdminConfig {
  listen: readonly { host: string; port: number }[];
  /** The bearer token every /v1 request must carry. A secret: never logged. */
  token: string;
  /** Open connections per address; more are refused (the timeouts are http.*'s). */
  maxConnections: number;
}

/** The RFC 2136 gateway (docs/protocol.md, "RFC 2136 gateway"). */
export interface GatewayConfig {
  /** UDP and TCP on each address. */
  listen: readonly { host: string; port: number }[];
  /** The master secret every gateway key's secret is derived from (`gateway.keyFile`). Never logged. */
  masterSecret: Buffer;
  /** Messages per second one source address may send (a burst of twice as many); more are dropped. */
  ratePerSource: number;
  /** Open TCP connections per address; more are closed at once. */
  maxConnections: number;
}

export interface DialectsConfig {
  /** `GET /update`: single labels in `domains` are names in `zone` (a configured zone); absent: refused. */
  duckdns?: { zone?: string };
}

export interface Config {
  listen: readonly ListenConfig[];
  /** Absent: no admin listener. */
  admin?: AdminConfig;
  /** Absent: no RFC 2136 gateway. */
  gateway?: GatewayConfig;
  /** Settings of the client dialects (docs/protocol.md, "DuckDNS"); absent: their defaults. */
  dialects?: DialectsConfig;
  /** Prefix of the update path, e.g. `` or `/ddns` (no trailing slash). */
  basePath: string;
  /** CIDR blocks whose X-Forwarded-For is believed. */
  trustedProxies: readonly string[];
  http: {
    realm: string;
    maxBodyBytes: number;
    headersTimeoutMs: number;
    requestTimeoutMs: number;
    keepAliveTimeoutMs: number;
    maxHeaderBytes: number;
    maxConnections: number;
    /** `username=` / `password=` in the query string are credentials (off: URLs end up in proxy and access logs). */
    queryCredentials: boolean;
  };
  redis: {
    url: string;
    /** From redis.passwordFile or passwordEnv (else the URL's own, if any). A secret: never logged. */
    password?: string;
    keyPrefix: string;
    /** A command that takes longer fails the request with 911. */
    commandTimeoutMs: number;
    /** Redis Sentinels asked for the primary of `sentinelName` (url then gives only db and password). */
    sentinels?: readonly { host: string; port: number }[];
    sentinelName?: string;
    /** `good`/`nochg` only once the update reached this many replicas (WAIT); absent or 0: off. */
    waitReplicas?: number;
  };
  zones: readonly ZoneConfig[];
  dns: {
    ttl: number;
    /** Budget for one update including the one retry; past it: dnserr. */
    timeoutMs: number;
    /** Messages in flight per zone (BIND's update-quota drops excess silently). */
    maxInFlight: number;
    /** TSIG fudge in seconds. */
    fudge: number;
    /** Added to the local clock when signing (tests use it to provoke BADTIME). */
    clockOffsetSeconds: number;
  };
  frequency: {
    minIntervalMs: number;
    donatorMinIntervalMs: number;
    /** More than this many frequent requests in a row blocks the host. */
    maxFrequent: number;
    echoMinIntervalMs: number;
    echoCooldownMs: number;
    /** ACME TXT requests per host and window; more get `abuse` (TXT only). */
    txtLimit: number;
    txtWindowMs: number;
  };
  mx: {
    /** The resolvers that check an `mx` target: an IP address, `address:port` or `[IPv6]:port`. */
    resolvers: readonly string[];
    timeoutMs: number;
  };
  agents: {
    /** Exact User-Agent strings or `*` globs refused with badagent. */
    blocked: readonly string[];
  };
  junk: {
    threshold: number;
    windowMs: number;
    blockMs: number;
  };
  credentials: {
    /** Failures per source address or per account within the window before cool-down. */
    maxFailures: number;
    windowMs: number;
    cooldownMs: number;
    cacheTtlMs: number;
    cacheSize: number;
  };
  log: { level: 'debug' | 'info' | 'warn' | 'error' };
  /** Address classes never published: a `myip` item of one is ignored, the client's fills nothing. */
  addresses: { refuse: readonly AddressClass[] };
  /** Quiet hosts (docs/operators.md, "Quiet hosts"): the sweep's interval, and closing them (undefined: never). */
  hosts: { quietSweepIntervalMs: number; closeQuietAfterMs?: number };
  /** ACME TXT answers wait for every secondary to serve the value, this long at most (docs/operators.md). */
  acme: { propagationTimeoutMs: number };
  /** `good` waits for the secondaries too (off by default; the same bound as acme.propagationTimeout). */
  update: { waitForSecondaries: boolean };
}
