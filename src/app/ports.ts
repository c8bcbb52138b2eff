/**
 * What the use cases need from the outside world. The store, dns and auth adapters implement
 * these (metrics implements core/telemetry.ts's Telemetry); http and admin take a few types.
 * The composition wires them: cli/compose.ts, cli/admin-service.ts, cli/admin-listener.ts and
 * the check, drift and backup commands (docs/architecture.md). Every method may throw
 * StoreUnavailableError (→ 911); Publisher.publish may throw DnsUpdateError (→ dnserr).
 */
import type { AdmitRejection, GuardCheck, LinkSkip } from '../core/admission.js';
import type { TsigAlgorithm } from '../core/tsig.js';
import type { TokenRecord } from '../core/update-tokens.js';
import type {
  Account,
  AddressFamilies,
  HostDnsState,
  HostLink,
  HostRecord,
  HostState,
  HostType,
  SettableHostState,
  TargetState,
} from '../core/types.js';

// The admission's words are defined once, in core, with the lists the store checks replies against.
export type { AdmitKind, AdmitRejection, GuardCheck, LinkSkip } from '../core/admission.js';

/** The authenticated account as the use cases see it. */
export interface AccountView {
  name: string;
  donator: boolean;
}

export interface Credentials {
  /** '' only from `Authorization: Token` or a query `password` without `username`: the token alone (no user). */
  user: string;
  password: string;
}

export type AuthResult =
  /** `login`: what the credentials were verified against (for the admission's AdmitGuard). */
  | { ok: true; account: AccountView; login: VerifiedLogin }
  /** `refused`: `proceed` said no; nothing was checked or counted. */
  | { ok: false; reason: 'unknown-user' | 'bad-password' | 'throttled' | 'refused' };

/** Credentials as last verified: the account view and which stored hash they matched. */
export interface VerifiedLogin {
  account: AccountView;
  /**
   * SHA-1 hex of the stored password hash (Redis can recompute it; the hash stays out of memory).
   * '' (unverifiedLogin): nobody verified these credentials; the admission's guard refuses them
   * as 'stale' after the same checks (docs/security.md, "No password oracle").
   */
  hashDigest: string;
}

/**
 * The login the fast path sends when the cache does not know the credentials: the same guarded
 * admission as a cached login, so a right and a wrong password cost the same command until every
 * login check passed; it never passes the password check ('stale').
 */
export function unverifiedLogin(user: string): VerifiedLogin {
  return { account: { name: user, donator: false }, hashDigest: '' };
}

export interface Authenticator {
  /**
   * Verify credentials from `sourceIp`; counts failures and applies the cool-down. The
   * account lookup starts at once, but nothing is decided, verified or counted before
   * `proceed` resolves true (the caller's earlier check, e.g. the User-Agent gate).
   */
  authenticate(credentials: Credentials, sourceIp: string, proceed?: Promise<boolean>): Promise<AuthResult>;
  /** A malformed or missing Authorization counts as a failure from `sourceIp`. */
  recordMalformed(sourceIp: string): Promise<void>;
  /**
   * These exact credentials as verified within the cache TTL, without I/O; undefined when
   * not remembered. Not a verdict: the caller must still check, in Redis, that the account
   * holds the same hash and that no cool-down applies (AdmitGuard).
   */
  recall(credentials: Credentials): VerifiedLogin | undefined;
  /**
   * The admission's guard passed for credentials recall() offered: counts the cache hit (once
   * per request). Not counted before: a hit during a cool-down would tell a right password from
   * a wrong one on /metrics.
   */
  recalledAndAdmitted(credentials: Credentials): void;
}

/**
 * A scoped update token's login as the update path sees it: from the token cache, or one
 * Redis read. It updates `fqdn` only, for `account`.
 */
export interface TokenLogin {
  id: string;
  /** The token's keyed hash: the store finds the token by it (the token is never kept). */
  hash: string;
  fqdn: string;
  account: AccountView;
  /** CIDR blocks it may be used from; empty: anywhere. */
  from: readonly string[];
  /** It may set and clear the host's ACME TXT values and nothing else (docs/security.md, "Update tokens"). */
  acmeOnly?: boolean;
  /** A gateway TSIG key: its algorithm (the HTTP paths never find one: its hash is not a token's). */
  tsig?: TsigAlgorithm;
}

export interface TokenAuthenticator {
  /**
   * These credentials as a token login: the password is shaped like a token, the token exists
   * and has not expired, the user is its host or that host's account, and `sourceIp` lies in
   * its `from`. From memory (only a token whose user and `from` checks passed for this request
   * is taken from there), or one Redis read that also checks the junk block of (sourceIp,
   * userAgent) and the source's cool-down first ('agent', 'login': refused, nothing else read),
   * so a right token costs what a wrong one does. Not a verdict: the admission's TokenGuard
   * makes the login checks. undefined: not a token login; the password path decides (nothing
   * is counted here, so a wrong token costs what a wrong password costs).
   */
  login(
    credentials: Credentials,
    sourceIp: string,
    userAgent: string,
  ): Promise<TokenLogin | 'agent' | 'login' | undefined>;
  /** The TokenGuard's checks alone, for a reply or a lookup that must follow them (an mx, badsys). */
  check(guard: TokenGuard): Promise<'ok' | GuardCheck>;
  /** The token was revoked or has expired, or its account changed: look it up afresh. */
  forget(login: TokenLogin): void;
}

/** Update tokens in the store, as the login sees them. */
export interface TokenLookup {
  /**
   * The token with this hash, unless unknown or expired (Redis clock): one round trip, which
   * first refuses a junk-blocked (sourceIp, userAgent) pair ('agent') or a source in cool-down ('login').
   */
  find(hash: string, sourceIp: string, userAgent: string): Promise<TokenLogin | 'agent' | 'login' | undefined>;
  /** The TokenGuard's checks alone (before work that must follow them, e.g. an mx lookup). */
  check(guard: TokenGuard): Promise<'ok' | GuardCheck>;
}

/** Account records (used by the authenticator and the CLI). */
export interface AccountStore {
  get(name: string): Promise<Account | undefined>;
  create(account: Account): Promise<void>; // ConflictError if it exists
  setPasswordHash(name: string, passwordHash: string): Promise<void>; // NotFoundError
  setDonator(name: string, donator: boolean): Promise<void>;
  remove(name: string): Promise<void>; // NotFoundError; ConflictError while it owns hosts
  list(): Promise<Account[]>;
}

/** An account and whether the source or the account is in cool-down: one read. */
export interface LoginLookup {
  getForLogin(name: string, sourceIp: string): Promise<{ account: Account | undefined; throttled: boolean }>;
}

/** Failure counters for credential guessing (shared across frontends). */
export interface FailureCounter {
  /** Count one failure for both keys; starts the cool-down past the threshold. */
  recordFailure(sourceIp: string, account: string | undefined): Promise<void>;
}

/** User-Agent block list and junk blocking. */
export interface ClientPolicy {
  /** Block list (config + Redis) or a junk block on (sourceIp, userAgent). */
  isBlocked(userAgent: string, sourceIp: string): Promise<boolean>;
  /**
   * The block list's verdict from memory: 'unknown' when the Redis list is due for a
   * refresh. 'allowed' says nothing about junk blocks (AdmitGuard checks those).
   */
  listVerdict(userAgent: string): 'blocked' | 'allowed' | 'unknown';
  /** Count a malformed/failing request; past the threshold the pair is blocked for a while. */
  recordJunk(userAgent: string, sourceIp: string): Promise<void>;
}

/**
 * The settings a request asks for, as stored-field expectations: the request is `nochg`
 * when every one already holds. Field names are HostRecord's (`state`, `ipv4`, `ipv6`,
 * `wildcard`, `mx`, `backmx`); values are their stored text forms (see store/codec).
 */
export type Expectations = Readonly<Record<string, string>>;

/** An opaque per-host lease handed out with a change admission. */
export interface Lease {
  readonly fqdn: string;
  readonly token: string;
}

export type Admission =
  | { kind: 'rejected'; outcome: AdmitRejection }
  /** A login check of the guard did not hold (GuardCheck says which); nothing was counted or changed. */
  | { kind: 'refused'; check: GuardCheck }
  /** Another request holds this host's lease: try again shortly. Nothing was counted. */
  | { kind: 'busy' }
  /** Every expectation already holds (counted by the frequency rule); nothing else to know. */
  | { kind: 'nochg' }
  /** A change: the caller holds the lease until commit() or release(). */
  /**
   * repairDue: the lease taken over had expired (an interrupted change, or a republish still
   * due), so DNS may hold what Redis does not: if this change fails, the repair stays due.
   * families: the address families the change must write in full — those the request
   * names, those an interrupted change it takes over wrote, both for a host back from
   * offline; the others it leaves where the store does not know them (familiesToLeave).
   */
  | { kind: 'change'; host: HostRecord; lease: Lease; repairDue: boolean; families: AddressFamilies };

export interface AdmitRequest {
  fqdn: string;
  account: string;
  /** Minimum interval for this account (donators have a shorter one). */
  minIntervalMs: number;
  maxFrequent: number;
  /** What the request asks; `null` = only apply the frequency rule (echo with hostname). */
  expect: Expectations | null;
  leaseMs: number;
  /** The request's agent and login checks, made again in the same atomic step. */
  guard?: AdmitGuard;
  /**
   * Record the request as the host's last, with the guard's source and User-Agent (core/request-log.ts): the reply
   * of a request counted without a change (`nochg`, or `!donator` when `expect` is null); absent: not recorded.
   */
  note?: 'nochg' | '!donator';
}

/**
 * Every login check, made again in the admission's atomic step, for a password or a token.
 * The fast path relies on it instead of its own reads; the full path uses it so that a
 * password changed after its check stops the request at once.
 */
export type AdmitGuard = PasswordGuard | TokenGuard;

/**
 * No junk block on (sourceIp, userAgent), no login cool-down of the source or the account,
 * and the account still holds `login`'s hash and donator flag.
 */
export interface PasswordGuard {
  sourceIp: string;
  userAgent: string;
  login: VerifiedLogin;
  /**
   * Only that the account still holds the hash: the full path made the other checks itself a
   * moment before, and a cool-down begun since by others' failures must not refuse a request
   * that logged in (and may already have changed another of its hosts).
   */
  passwordOnly?: boolean;
}

/**
 * No junk block on (sourceIp, userAgent), no login cool-down of the source (the account's does
 * not apply to tokens), the token still stands (not revoked, not expired) and its account's
 * donator flag is still `token.account.donator`. The admission records the token's last use.
 */
export interface TokenGuard {
  sourceIp: string;
  userAgent: string;
  token: TokenLogin;
}

/** What commit found: see HostGate.commit. */
export type CommitOutcome = 'committed' | 'lost' | 'gone';

/** An expired lease taken over by the reconciler, with the stored state to publish again. */
export interface Reclaimed {
  host: HostRecord;
  lease: Lease;
  /** The address families the interrupted change wrote (both when that is not known). */
  families: AddressFamilies;
  /** Republishes of this host that failed since DNS and Redis last agreed. */
  failedRepublishes: number;
}

/**
 * The host registry as the update path sees it. `admit` runs the checks from nohost to
 * abuse and the frequency rule atomically (one Redis Lua call, Redis TIME), after the
 * request's guard if it has one.
 */
export interface HostGate {
  admit(req: AdmitRequest): Promise<Admission>;
  /**
   * Persist the published state and drop the lease: 'committed'. 'lost': the lease was no
   * longer this caller's (it ended and was taken over): nothing is written, the request's
   * count is undone, and the store makes sure the recorded state is published again — the
   * caller must not acknowledge the change. 'gone': the host was removed meanwhile.
   */
  commit(lease: Lease, target: TargetState, opts?: { republish?: boolean; prefix?: string }): Promise<CommitOutcome>;
  /**
   * Undo this request's frequency count (dnserr / 911 do not count) and drop the lease. With
   * `republishInMs`, the primary may hold something Redis does not (what was sent may still
   * be applied): the lease is left expired instead, due in `staleLeases` after that delay,
   * so the stored state is published again (see `reclaim`); no request is answered nochg
   * meanwhile, and a request that changes the host republishes the stored state with its own
   * change (every family the interrupted change wrote: `Admission.families`). `failedRepublish`:
   * a republish of the stored state failed (counted: see `Reclaimed.failedRepublishes`; it
   * implies `refused`). `refused`: the primary answered and refused this change, so nothing
   * of it reached DNS: a repair it had taken over stays due for what the interrupted change
   * wrote, no more. `answered`: the reply of a request noted as the host's last (AdmitRequest.note).
   */
  release(
    lease: Lease,
    opts?: { republishInMs?: number; failedRepublish?: boolean; refused?: boolean; answered?: 'dnserr' | '911' },
  ): Promise<void>;
  /** Hosts whose change lease has expired: their holder died between DNS and Redis, or released it for republishing. */
  staleLeases(limit: number): Promise<string[]>;
  /** Look at these expired leases again in `ms` (their zone's primary is unreachable now). */
  postpone(fqdns: readonly string[], ms: number): Promise<void>;
  /** Take over an expired lease, with the stored state; undefined when there is none to take. */
  reclaim(fqdn: string, leaseMs: number): Promise<Reclaimed | undefined>;
}

/** Frequency rule for the address echo, per requesting address. */
export interface EchoGate {
  /** 'ok', or 'abuse' while the address is in cool-down (counting this request). */
  admit(sourceIp: string, minIntervalMs: number, maxFrequent: number, cooldownMs: number): Promise<'ok' | 'abuse'>;
}

/** Administrative access to hosts (CLI). */
/** A republish of a host's stored state that is due: DNS may hold what Redis does not. */
export interface DnsRepair {
  /**
   * Milliseconds since the epoch: when a reconciler takes it up (earlier if a request changes
   * the host); while an attempt is in progress, when that attempt's lease ends.
   */
  dueAt: number;
  /** Republishes of it that failed so far (each waits twice as long as the one before). */
  failedRepublishes: number;
  /** An attempt holds the host's lease now. */
  inProgress: boolean;
}

export interface HostAdmin {
  get(fqdn: string): Promise<HostRecord | undefined>;
  /**
   * The host's due repair, or the reconciler's attempt at it in progress; undefined when none
   * is (a client's change in flight is not one).
   */
  repairOf(fqdn: string): Promise<DnsRepair | undefined>;
  /**
   * `between`: the names between it and its zone's apex. ConflictError when it exists, or lies
   * below or above a host of another account (docs/security.md, "No shadowing"); NotFoundError (account).
   */
  add(fqdn: string, account: string, type: HostType, between?: readonly string[]): Promise<void>;
  /**
   * Hold the host's lease for an operator's change: 'busy' while a change is in flight,
   * undefined when there is no such host. Give it back with HostGate.release, or to remove().
   */
  claim(
    fqdn: string,
    leaseMs: number,
  ): Promise<{ host: HostRecord; lease: Lease; repairDue: boolean } | 'busy' | undefined>;
  /** NotFoundError; with a lease, ConflictError when that lease is no longer held. */
  remove(fqdn: string, lease?: Lease): Promise<void>;
  list(account?: string): Promise<HostRecord[]>;
  /**
   * Set state; unblock/reopen also reset the frequency counters. With `onlyFrom`, only from one
   * of those states (checked in the same step): ConflictError otherwise. NotFoundError.
   */
  setState(fqdn: string, state: SettableHostState, onlyFrom?: readonly HostState[]): Promise<void>;
  /** Index the names between existing hosts and their zones (hosts added before the index existed). */
  indexNesting(zones: readonly string[]): Promise<number>;
}

/** A host linked to a parent: it follows the parent's IPv6 prefix with this interface identifier. */
export interface LinkedHost {
  fqdn: string;
  iid: string;
}

export type LinkedAdmission =
  | { kind: 'skipped'; reason: LinkSkip }
  /** It has the address already. */
  | { kind: 'nochg' }
  /** Its lease is the caller's until commit() or release() (HostGate), as for an update's admission. */
  | { kind: 'change'; host: HostRecord; lease: Lease; repairDue: boolean; families: AddressFamilies };

/** A host linked to `parent` to be given `ipv6` (HostLinks.admitLinked). */
export interface LinkedAdmitRequest {
  fqdn: string;
  parent: string;
  account: string;
  iid: string;
  ipv6: string;
  leaseMs: number;
}

/** Hosts that follow another's IPv6 prefix (docs/protocol.md, "IPv6 prefixes"). */
export interface HostLinks {
  /** The hosts linked to `parent`. */
  linkedTo(parent: string): Promise<LinkedHost[]>;
  /**
   * Take the lease of a host linked to `parent` (whose lease the caller holds) to give it `ipv6`: not counted by the
   * frequency rule. Skipped when it is gone, no longer linked to `parent` with `iid`, not of `account`, not dynamic,
   * not active, or busy with a change of its own.
   */
  admitLinked(req: LinkedAdmitRequest): Promise<LinkedAdmission>;
  /**
   * Link `fqdn` to `parent` (or move it to another parent, or change its iid). NotFoundError: either host;
   * ConflictError: another account's, not dynamic, a chain (the parent follows one, or the host has followers), or
   * `maxLinks` reached.
   */
  link(fqdn: string, parent: string, iid: string, maxLinks: number): Promise<void>;
  /** Remove the link; returns the former parent. NotFoundError: no such host, or not linked. */
  unlink(fqdn: string): Promise<string>;
  /** A host was removed: drop it from its parent's links, and the links of the hosts that followed it. */
  forget(fqdn: string, parent: string | undefined): Promise<void>;
}

/** A new token as the store records it; the id and hash are made by the caller (auth). */
export interface NewToken {
  id: string;
  hash: string;
  fqdn: string;
  expiresInMs?: number;
  from: readonly string[];
  note: string;
  acmeOnly?: boolean;
  tsig?: TsigAlgorithm;
}

/** Update tokens as the operator manages them (the login's lookup is TokenLookup). */
export interface TokenAdmin {
  /** NotFoundError without such a host; ConflictError when the id is taken. */
  add(token: NewToken): Promise<TokenRecord>;
  /** Every token, or one host's; sorted by host, then creation. */
  list(fqdn?: string): Promise<TokenRecord[]>;
  /** NotFoundError when there is no such token. */
  remove(id: string): Promise<TokenRecord>;
}

/** The User-Agent block list held in Redis (the config file's is fixed). */
export interface AgentBlocks {
  /** False when the pattern was listed already. */
  block(pattern: string): Promise<boolean>;
  /** False when the pattern was not listed. */
  unblock(pattern: string): Promise<boolean>;
  list(): Promise<string[]>;
}

/** A host's change as handed to DNS. */
export interface HostChange {
  fqdn: string;
  zone: string;
  previous: HostDnsState;
  target: TargetState;
  /**
   * Address families to leave as the primary has them: the change does not write them and the store does not know
   * them, e.g. a host registered over records another provider set (docs/protocol.md, "The update request": "the
   * other family's records stay as they are"); see familiesToLeave. Absent: none — everything is rewritten.
   */
  leave?: AddressFamilies;
  /**
   * The ACME TXT values to publish at `_acme-challenge.<fqdn>`, replacing the set there; absent: that name is left
   * alone (docs/protocol.md, "ACME TXT records").
   */
  txt?: readonly string[];
  /** Only the TXT set: the addresses and MX are left as the primary has them. */
  txtOnly?: boolean;
}

export interface Publisher {
  /** The configured zone a name belongs to (longest suffix), or undefined. */
  zoneFor(fqdn: string): string | undefined;
  /** Resolves once the primary answered NOERROR with a valid TSIG; else DnsUpdateError. */
  publish(change: HostChange): Promise<void>;
  /**
   * Several hosts' changes, each settling as `publish` does: those of one zone go out together in one UPDATE message
   * (a parent and the hosts that follow its prefix). Absent: each is published on its own.
   */
  publishTogether?(changes: readonly HostChange[]): Promise<void>[];
  /** The zone's primary timed out or dropped the connection within the last `ms`, with no answer since. */
  recentlyUnreachable(zone: string, ms: number): boolean;
}

export interface MxResolver {
  /** True when `name` has an A or AAAA record (within the configured timeout). */
  resolves(name: string): Promise<boolean>;
}

/** The record types the drift check reads from a zone (docs/operators.md, "Drift"). */
export type ZoneRecordType = 'A' | 'AAAA' | 'MX' | 'NS' | 'CNAME' | 'SOA';

/** One record of a zone as a transfer gives it. Names lowercase, no final dot. */
export interface ZoneRecord {
  name: string;
  type: ZoneRecordType;
  ttl: number;
  /** A, AAAA: the address (IPv6 canonical); MX: `preference exchange`; NS, CNAME: the target; SOA: its MNAME. */
  value: string;
}

/** A zone read whole from its primary. */
export interface ZoneContents {
  zone: string;
  serial: number;
  /** Every record of the types in ZoneRecordType; others are left out. */
  records: ZoneRecord[];
}

export interface ZoneTransfer {
  /** The zone as its primary holds it (a signed, verified transfer); DnsUpdateError when refused or unverifiable. */
  transfer(zone: string): Promise<ZoneContents>;
}

/** What DNS holds once a change is published: the RRsets it rewrites, and their records. */
export interface PublishedRecords {
  rrsets: { name: string; type: 'A' | 'AAAA' | 'MX' }[];
  records: ZoneRecord[];
}

export interface RecordPlanner {
  /** The records publishing `change` leaves (the same plan the publisher sends). */
  recordsOf(change: HostChange): PublishedRecords;
}

/** An update token as the store holds it: its record and keyed hash (never the token itself). */
export interface StoredToken extends TokenRecord {
  hash: string;
}

/**
 * What a backup copies, read from the store in batches (docs/operators.md, "Backups"): each
 * record whole, in one read; one written while the reading goes on may or may not be in it.
 */
export interface BackupSource {
  accounts(): AsyncIterable<readonly Account[]>;
  /** The host records, without leases, repairs or frequency counts. */
  hosts(): AsyncIterable<readonly HostRecord[]>;
  tokens(): AsyncIterable<readonly StoredToken[]>;
  /** The block list held in Redis (`agent block`), not the config file's. */
  agentBlocks(): Promise<string[]>;
}

export type HostRestore =
  | { kind: 'ok' | 'noaccount' }
  | { kind: 'exists'; existing: HostRecord }
  /** It would lie below or above `name`, a host of another account (docs/security.md, "No shadowing"). */
  | { kind: 'below' | 'above'; name: string; owner: string };

export type TokenRestore =
  | { kind: 'ok' | 'nohost' | 'hash-taken' }
  /** The host belongs to another account. */
  | { kind: 'not-owner'; owner: string }
  /** A token of that id exists: its hash. */
  | { kind: 'exists'; hash: string };

/**
 * Where a backup is restored: each record written as the add paths write it (with its indexes
 * and the owner's counts), never over one that exists.
 */
export interface BackupTarget {
  /** The key of an account, host, token or agent block list in the keyspace; undefined when it holds none. */
  firstRecord(): Promise<string | undefined>;
  /** Index the hosts registered already (HostAdmin.indexNesting), before hosts are added beside them. */
  indexNesting(zones: readonly string[]): Promise<void>;
  restoreAccount(account: Account): Promise<'ok' | { existing: Account }>;
  /** `between`: the names between it and its zone's apex; `checkNesting`: refuse shadowing as `host add` does. */
  restoreHost(host: HostRecord, between: readonly string[], checkNesting: boolean): Promise<HostRestore>;
  restoreToken(token: StoredToken): Promise<TokenRestore>;
  /** False when the pattern was listed already. */
  restoreAgentBlock(pattern: string): Promise<boolean>;
  /** Link a restored host to its parent as `host link` does (same account, no chains). */
  restoreLink(fqdn: string, link: HostLink): Promise<'ok' | { conflict: string }>;
}
