/**
 * The error hierarchy. Every error the service raises on purpose carries a stable
 * `code`; which reply an error becomes on the update protocol is core/outcomes.ts
 * (outcomeOfError), on the admin listener ERROR_CATALOG below.
 * Messages never contain secrets (passwords, TSIG keys): callers pass names, not values.
 */

/**
 * Every error code, with the HTTP status and the public text the admin listener answers it
 * with (admin/server.ts) and its OpenAPI document describes it by (admin/openapi.ts). The
 * text is the reply's message where the server has nothing more precise to say. The codes
 * of the HTTP exchange itself (ERR_UNAUTHORIZED, …, ERR_INTERNAL) are here too: one list.
 */
export const ERROR_CATALOG = {
  ERR_CONFIG: { status: 500, text: 'the configuration is invalid' },
  ERR_STORE_UNAVAILABLE: { status: 503, text: 'Redis did not answer' },
  ERR_DNS_TIMEOUT: { status: 502, text: 'the primary did not answer the DNS change in time' },
  ERR_DNS_CONNECTION: { status: 502, text: 'the primary could not be reached' },
  ERR_DNS_RCODE: { status: 502, text: 'the primary refused the DNS change' },
  ERR_DNS_TSIG: { status: 502, text: 'the TSIG signature of the DNS change or of its answer did not verify' },
  ERR_DNS_PROTOCOL: { status: 502, text: 'the primary did not answer with a valid DNS message' },
  ERR_NOT_FOUND: { status: 404, text: 'no such account, host, token, pattern or path' },
  ERR_CONFLICT: { status: 409, text: 'it exists already, or its state forbids the change' },
  ERR_INVALID_INPUT: { status: 400, text: 'invalid input: a field, the JSON or the path' },
  ERR_UNAUTHORIZED: { status: 401, text: 'a valid admin bearer token is required' },
  ERR_METHOD_NOT_ALLOWED: { status: 405, text: 'method not allowed here' },
  ERR_PAYLOAD_TOO_LARGE: { status: 413, text: 'the body is too large' },
  ERR_UNSUPPORTED_MEDIA_TYPE: { status: 415, text: 'expected a JSON body (Content-Type: application/json)' },
  ERR_INTERNAL: { status: 500, text: 'internal error' },
} as const satisfies Record<string, { status: number; text: string }>;

export type ErrorCode = keyof typeof ERROR_CATALOG;

/** The codes of an HTTP exchange with the admin listener, not of an error the service raises. */
export type ExchangeErrorCode =
  | 'ERR_UNAUTHORIZED'
  | 'ERR_METHOD_NOT_ALLOWED'
  | 'ERR_PAYLOAD_TOO_LARGE'
  | 'ERR_UNSUPPORTED_MEDIA_TYPE'
  | 'ERR_INTERNAL';

/** The codes of the errors the service raises (BridgeError). */
export type ServiceErrorCode = Exclude<ErrorCode, ExchangeErrorCode>;

export class BridgeError extends Error {
  readonly code: ServiceErrorCode;
  constructor(code: ServiceErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }
}

/** The configuration is invalid; `key` names the offending setting (e.g. `zones[0].key.secret`). */
export class ConfigError extends BridgeError {
  readonly key: string;
  constructor(key: string, message: string) {
    super('ERR_CONFIG', `config: ${key}: ${message}`);
    this.key = key;
  }
}

/** Redis (the state store) cannot be reached or did not answer in time: reply `911`. */
export class StoreUnavailableError extends BridgeError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('ERR_STORE_UNAVAILABLE', message, options);
  }
}

/**
 * redis.waitReplicas: the write is recorded on the primary, but too few replicas acknowledged
 * it in time, so it is not acknowledged to the client (`911`); its retry finds it stored.
 */
export class NotReplicatedError extends StoreUnavailableError {}

export type DnsFailureCode =
  'ERR_DNS_TIMEOUT' | 'ERR_DNS_CONNECTION' | 'ERR_DNS_RCODE' | 'ERR_DNS_TSIG' | 'ERR_DNS_PROTOCOL';

/**
 * An UPDATE was not applied (or we cannot prove it was). `retryable` marks failures
 * worth one more attempt (timeout, connection loss, SERVFAIL). `maybeApplied` marks an
 * outcome we do not know: the message reached the primary and no trustworthy answer came
 * back (a timeout, a connection lost after sending, a NOERROR that failed verification),
 * so the primary may still apply it; a primary that answered an error did not.
 */
export class DnsUpdateError extends BridgeError {
  declare readonly code: DnsFailureCode;
  readonly zone: string;
  readonly rcode: string | undefined;
  readonly retryable: boolean;
  readonly maybeApplied: boolean;
  /** The primary answered with an RCODE in a response signed with our key (the key works). */
  readonly signedAnswer: boolean;
  /** The message without its zone prefix. */
  private readonly detail: string;
  constructor(
    code: DnsFailureCode,
    zone: string,
    message: string,
    opts: { rcode?: string; retryable?: boolean; maybeApplied?: boolean; signedAnswer?: boolean; cause?: unknown } = {},
  ) {
    super(code, `zone ${zone}: ${message}`, { cause: opts.cause });
    this.zone = zone;
    this.detail = message;
    this.rcode = opts.rcode;
    this.retryable = opts.retryable ?? false;
    this.maybeApplied = opts.maybeApplied ?? false;
    this.signedAnswer = opts.signedAnswer ?? false;
  }

  /** The same failure, for a message that may have been applied (see `maybeApplied`). */
  asMaybeApplied(): DnsUpdateError {
    if (this.maybeApplied) return this;
    const { rcode, retryable, signedAnswer, cause } = this;
    return new DnsUpdateError(this.code, this.zone, this.detail, {
      rcode,
      retryable,
      maybeApplied: true,
      signedAnswer,
      cause,
    });
  }
}

/** An operator command named something that does not exist (account, host). */
export class NotFoundError extends BridgeError {
  constructor(message: string) {
    super('ERR_NOT_FOUND', message);
  }
}

/** An operator command would overwrite something that exists. */
export class ConflictError extends BridgeError {
  constructor(message: string) {
    super('ERR_CONFLICT', message);
  }
}

/** A change a host's current state forbids (block a closed host); `current` is that state. */
export class HostStateConflictError extends ConflictError {
  constructor(
    message: string,
    readonly current: string,
  ) {
    super(message);
  }
}

/**
 * An operator gave a value that does not validate (host name, type, import line). `field`
 * names the value where one was given by name (the CLI shows it as a flag, the API as a
 * JSON field): the message is then `field: detail`.
 */
export class InvalidInputError extends BridgeError {
  readonly field: string | undefined;
  readonly detail: string;
  constructor(detail: string, field?: string) {
    super('ERR_INVALID_INPUT', field === undefined ? detail : `${field}: ${detail}`);
    this.field = field;
    this.detail = detail;
  }
}
