/**
 * The update use case: agent → credentials → per host name: syntax, registry, ownership,
 * type, state, frequency → DNS → commit. Returns outcomes; the HTTP adapter writes bytes.
 */
import type { SecondaryWait } from './propagation.js';
import { DnsUpdateError, NotReplicatedError, StoreUnavailableError } from '../core/errors.js';
import type { Logger } from '../core/log.js';
import { formatAddresses, parseUpdateParams, type ParamMap, type UpdateParams } from '../core/params.js';
import { isJunk, outcomeOfError, type HostOutcome, type RequestOutcome } from '../core/outcomes.js';
import {
  emptyDnsState,
  expectationsFor,
  familiesToLeave,
  targetState,
  type RequestedSettings,
  type ResolvedMx,
  type TargetState,
  type AddressFamilies,
} from '../core/types.js';
import { parseAddress, type AddressPair } from '../core/addresses.js';
import { refusedClass, type AddressClass } from '../core/address-classes.js';
import type { Telemetry } from '../core/telemetry.js';
import { normalizeHostname } from '../core/names.js';
import { looksLikeToken } from '../core/update-tokens.js';
import { prefixExpectations, type Ipv6Prefix } from '../core/prefix.js';
import { PrefixFollowers } from './prefix-links.js';
import type {
  AccountView,
  AdmitGuard,
  GuardCheck,
  Admission,
  AdmitRequest,
  Authenticator,
  CommitOutcome,
  ClientPolicy,
  Credentials,
  HostAdmin,
  HostGate,
  HostLinks,
  Lease,
  MxResolver,
  Publisher,
  TokenAuthenticator,
  TokenGuard,
  TokenLogin,
} from './ports.js';
import { unverifiedLogin } from './ports.js';
import { TxtFault, type TxtService } from './txt.js';
import { storedTxt, type TxtAsk } from '../core/txt.js';

export interface UpdateRequest {
  /** Parsed Basic credentials, or why there are none. */
  credentials: Credentials | 'missing' | 'malformed';
  userAgent: string | undefined;
  /** The detected client address (peer, or X-Forwarded-For behind a trusted proxy). */
  clientIp: string;
  params: ParamMap;
  /**
   * What a dialect says of each family beyond its addresses (never set by `/nic/update`'s own parameters): `keep`
   * leaves the family as it is and never fills it with the client's address (deSEC's `preserve`); `remove` deletes
   * its record (dynv6's `-`, deSEC's empty value, DuckDNS's `clear=true`). docs/protocol.md, "Dialects".
   */
  families?: FamilyAsks;
  /**
   * Update tokens only, never an account's password (DuckDNS: docs/protocol.md, "DuckDNS"): credentials that are no
   * token are refused as malformed ones are (a failure counted against the source, no password checked).
   */
  tokensOnly?: boolean;
}

/** Per address family, a dialect's keep or remove (UpdateRequest.families). */
export type FamilyAsks = { readonly ipv4?: 'keep' | 'remove'; readonly ipv6?: 'keep' | 'remove' };

export interface HostLine {
  outcome: HostOutcome;
  /** For changed/unchanged: the addresses this request set, as the reply shows them. */
  addresses?: string;
}

export type UpdateReply = { kind: 'request'; outcome: RequestOutcome } | { kind: 'hosts'; lines: HostLine[] };

/**
 * A change of a key's own host, asked by another front door than HTTP (the RFC 2136 gateway, whose key the caller
 * verified): the addresses to set (null: remove that family's record), or one change of the ACME TXT set.
 */
export interface KeyChange {
  token: TokenLogin;
  clientIp: string;
  /** What the junk block is keyed by beside the address (the gateway has no User-Agent: GATEWAY_AGENT). */
  agent: string;
  addresses?: { ipv4?: string | null; ipv6?: string | null };
  txt?: Exclude<TxtAsk, { op: 'invalid' }>;
}

export interface FrequencySettings {
  minIntervalMs: number;
  donatorMinIntervalMs: number;
  maxFrequent: number;
}

export interface UpdateServiceDeps {
  authenticator: Authenticator;
  tokens: TokenAuthenticator;
  clientPolicy: ClientPolicy;
  hosts: HostGate;
  registry: Pick<HostAdmin, 'get'>;
  /** Hosts that follow a parent's IPv6 prefix (docs/protocol.md, "IPv6 prefixes"); without, ipv6prefix is ignored. */
  links?: HostLinks;
  publisher: Publisher;
  mxResolver: MxResolver;
  /** Requests with `txt=` or `clear=` (docs/protocol.md, "ACME TXT records"); absent: they get `badsys`. */
  txt?: TxtService;
  frequency: FrequencySettings;
  /** Address classes refused as update addresses (`addresses.refuse`); read on every request (a reload changes it). */
  addresses?: { refuse: readonly AddressClass[] };
  /** Counts a refused address by class (docs/operators.md, "Metrics"); each wait for the secondaries. */
  telemetry?: Pick<Telemetry, 'addressRefused' | 'secondaryWait'>;
  /**
   * `update.waitForSecondaries`: `good` once every secondary serves the new addresses, at most `timeoutMs`
   * (acme.propagationTimeout); read on every request. Absent or off: no wait (docs/operators.md, "Secondaries").
   */
  waitForSecondaries?: { enabled: boolean; timeoutMs: number };
  secondaries?: SecondaryWait;
  /** How long a host lease may be held: the DNS budget plus a margin. */
  leaseMs: number;
  logger: Logger;
  sleep?: (ms: number) => Promise<void>;
}

/**
 * Raised inside the per-host flow when Redis fails (or a lease is lost): the whole reply
 * becomes `911` — except HostStayedBusy beside a changed host (see hostLines).
 */
class ServiceFault extends Error {}

/** Another request held the host past MAX_BUSY_WAIT_MS: nothing was sent, recorded or counted for it. */
class HostStayedBusy extends ServiceFault {}

/** The longest a request waits for another request of the same host to finish. */
export const MAX_BUSY_WAIT_MS = 2000;

/**
 * A login check failed at a host's admission after the full path had passed it (a password
 * changed, a cool-down or junk block that started meanwhile): the whole request is refused.
 */
class LoginRefused extends Error {
  constructor(readonly outcome: 'bad-credentials' | 'bad-agent') {
    super(`login refused at admission: ${outcome}`);
  }
}

/** A token's login check failed at its host's admission. */
class TokenRefused extends Error {
  constructor(readonly check: GuardCheck) {
    super(`token refused at admission: ${check}`);
  }
}

/** What the full path answers when a login check fails at the admission. */
function refusalOutcome(check: GuardCheck): 'bad-credentials' | 'bad-agent' {
  return check === 'agent' ? 'bad-agent' : 'bad-credentials';
}

const defaultSleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export class UpdateService {
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(private readonly deps: UpdateServiceDeps) {
    this.sleep = deps.sleep ?? defaultSleep;
  }

  async update(req: UpdateRequest): Promise<UpdateReply> {
    try {
      const reply = await this.run(req);
      // A request without credentials is the first half of a challenge-driven client's
      // normal exchange (wget, uclient-fetch): never junk.
      const ua = req.userAgent?.trim();
      if (isJunkReply(reply) && ua && req.credentials !== 'missing') {
        // Not awaited: counting junk must not delay (or fail) the reply. Counted under the
        // trimmed agent, the one the block is looked up by.
        this.deps.clientPolicy.recordJunk(ua, req.clientIp).catch(() => undefined);
      }
      return reply;
    } catch (err) {
      if (err instanceof LoginRefused) return { kind: 'request', outcome: err.outcome };
      return this.faultReply(err);
    }
  }

  private async run(req: UpdateRequest): Promise<UpdateReply> {
    const { authenticator, clientPolicy } = this.deps;
    const ua = req.userAgent?.trim();
    if (!ua) return { kind: 'request', outcome: 'bad-agent' };
    // Parsed once, when first needed: a fast path that falls back hands it on (with its MX check).
    let parsed: AskedChange | undefined;
    const asked = (): AskedChange => (parsed ??= this.askedOf(req));
    // tokenPath only for what looks like a token (it checks again): an async call is a promise and a frame.
    const tokenLike = typeof req.credentials === 'object' && looksLikeToken(req.credentials.password);
    const fast =
      (tokenLike ? await this.tokenPath(req, ua, asked) : undefined) ??
      (req.tokensOnly ? undefined : await this.fastPath(req, ua, asked));
    if (fast !== undefined) return fast;

    // The agent check and the account lookup go to Redis together; the authenticator
    // decides (verifies, counts) only once the agent is known to be allowed.
    const blocked = clientPolicy.isBlocked(ua, req.clientIp);
    const login =
      typeof req.credentials === 'object' && !req.tokensOnly
        ? authenticator.authenticate(
            req.credentials,
            req.clientIp,
            blocked.then(
              (b) => !b,
              () => false,
            ),
          )
        : undefined;
    login?.catch(() => undefined); // awaited below unless the agent is refused first
    if (await blocked) return { kind: 'request', outcome: 'bad-agent' };

    // A missing header is the normal first step of challenge-driven clients (wget,
    // uclient-fetch): answer the challenge without counting it as a failure.
    if (req.credentials === 'missing') return { kind: 'request', outcome: 'bad-credentials' };
    if (req.credentials === 'malformed' || req.tokensOnly) {
      await authenticator.recordMalformed(req.clientIp);
      return { kind: 'request', outcome: 'bad-credentials' };
    }
    const auth = await login!;
    if (!auth.ok) return { kind: 'request', outcome: 'bad-credentials' };
    // Checked just now: the admission re-checks only that the password still stands.
    const guard: AdmitGuard = { sourceIp: req.clientIp, userAgent: ua, login: auth.login, passwordOnly: true };

    const { params } = asked();
    if (params.tooManyHosts) return { kind: 'request', outcome: 'too-many-hosts' };
    if (params.hosts.length === 0) return { kind: 'hosts', lines: [{ outcome: 'invalid-name' }] };

    // Distinct names run in parallel. A repeated name is the same request for that host: it
    // gets its first occurrence's line (one admission, counted once by the frequency rule).
    const byName = new Map<string, Promise<HostLine>>();
    const lines = params.hosts.map(({ fqdn }) => {
      if (fqdn === undefined) return Promise.resolve<HostLine>({ outcome: 'invalid-name' });
      let line = byName.get(fqdn);
      if (line === undefined) {
        line = (async () => {
          const zone = this.deps.publisher.zoneFor(fqdn);
          if (zone === undefined) return { outcome: 'unknown-host' };
          const line = await this.updateHost(fqdn, zone, auth.account, asked(), guard);
          if ('refused' in line) throw new LoginRefused(refusalOutcome(line.refused));
          return line;
        })();
        byName.set(fqdn, line);
      }
      return line;
    });
    return { kind: 'hosts', lines: hostLines(await Promise.allSettled(lines), this.deps.logger) };
  }

  /** What the request asks, its refused addresses left out (docs/protocol.md, "Address classes"). */
  private askedOf(req: UpdateRequest): AskedChange {
    const params = parseUpdateParams(req.params, this.refusedItem());
    const named = params.addresses.ipv4 !== undefined || params.addresses.ipv6 !== undefined;
    // The client's address is looked at only when it would fill a family.
    const keepsOrRemoves = req.families?.ipv4 !== undefined || req.families?.ipv6 !== undefined;
    const clientIp = !named && !keepsOrRemoves && this.refusedClient(req.clientIp) ? '' : req.clientIp;
    return new AskedChange(params, clientIp, this.deps.mxResolver, undefined, req.families);
  }

  /** A predicate for the parser: an address of a refused class, counted (undefined: none refused). */
  private refusedItem(): ((address: string) => boolean) | undefined {
    const refuse = this.deps.addresses?.refuse ?? [];
    if (refuse.length === 0) return undefined;
    return (address) => {
      const klass = refusedClass(address, refuse);
      if (klass !== undefined) this.deps.telemetry?.addressRefused(klass);
      return klass !== undefined;
    };
  }

  /** The client's address is of a refused class: it fills no family (counted once, when it would have). */
  private refusedClient(clientIp: string): boolean {
    const refuse = this.deps.addresses?.refuse ?? [];
    if (refuse.length === 0) return false;
    const parsed = parseAddress(clientIp);
    const klass = parsed === undefined ? undefined : refusedClass(parsed.address, refuse);
    if (klass !== undefined) this.deps.telemetry?.addressRefused(klass);
    return klass !== undefined;
  }

  /**
   * A key's change of its own host (KeyChange): the token path's admission (TokenGuard), the frequency rule, the
   * host's state and lease, group commit and `good` only once published, as for an HTTP request. Wildcard, MX and
   * backup MX stay as they are.
   */
  async updateWithKey(req: KeyChange): Promise<UpdateReply> {
    const { token } = req;
    const zone = this.deps.publisher.zoneFor(token.fqdn);
    if (zone === undefined) return { kind: 'hosts', lines: [{ outcome: 'unknown-host' }] };
    // An address of a refused class (addresses.refuse) is not published through this door either: the message is
    // refused whole, since RFC 2136 has no "ignore one record" (docs/protocol.md, "RFC 2136 gateway").
    const refused = this.refusedItem();
    for (const a of [req.addresses?.ipv4, req.addresses?.ipv6])
      if (typeof a === 'string' && refused?.(a)) return { kind: 'hosts', lines: [{ outcome: 'not-dynamic' }] };
    const addresses: AddressPair = {};
    if (typeof req.addresses?.ipv4 === 'string') addresses.ipv4 = req.addresses.ipv4;
    if (typeof req.addresses?.ipv6 === 'string') addresses.ipv6 = req.addresses.ipv6;
    const params: UpdateParams = {
      hosts: [{ raw: token.fqdn, fqdn: token.fqdn }],
      tooManyHosts: false,
      addresses,
      wildcard: 'keep',
      mx: 'keep',
      backmx: 'keep',
      offline: false,
      systemSupported: true,
      ...(req.txt === undefined ? {} : { txt: req.txt }),
    };
    const asked = new AskedChange(params, req.clientIp, this.deps.mxResolver, req.addresses);
    const guard: TokenGuard = { sourceIp: req.clientIp, userAgent: req.agent, token };
    try {
      const line = await this.updateHost(token.fqdn, zone, token.account, asked, guard);
      if (!('refused' in line)) return { kind: 'hosts', lines: [line] };
      if (line.refused === 'stale') this.deps.tokens.forget(token);
      return { kind: 'request', outcome: refusalOutcome(line.refused) };
    } catch (err) {
      return this.faultReply(err);
    }
  }

  /** A store fault or a ServiceFault: `911`, logged; anything else is not ours to answer. */
  private faultReply(err: unknown): UpdateReply {
    if (err instanceof StoreUnavailableError) {
      this.deps.logger.warn('state store unavailable', { error: err.message });
      return { kind: 'request', outcome: 'unavailable' };
    }
    if (err instanceof ServiceFault) {
      this.deps.logger.warn('answered 911', { error: err.message });
      return { kind: 'request', outcome: 'unavailable' };
    }
    throw err;
  }

  /**
   * The common request in one Redis round trip: one host name in a configured zone,
   * credentials verified within the cache TTL, the agent block list fresh in memory. The
   * junk-block and login checks the full path makes first run in the admit script instead
   * (AdmitGuard), before anything else is read or written.
   *
   * Whether the password is right must cost nothing before those checks passed (see
   * docs/security.md, "No password oracle"): the admission is this path's first I/O, so a request
   * whose `mx` needs a lookup takes the full path, and a failed junk-block or cool-down check
   * answers here what the full path would, in the same one round trip. Credentials the cache
   * does not know send the same admission (unverifiedLogin, refused 'stale' at the password
   * check): a wrong password costs the command, the operation name and the time a right one
   * does. Only 'stale' (not verified, or the account changed since) goes on to the full path,
   * which checks the password. The cache hit is counted once the guard passed.
   */
  private async fastPath(req: UpdateRequest, ua: string, asked: () => AskedChange): Promise<UpdateReply | undefined> {
    const { credentials } = req;
    if (typeof credentials !== 'object') return undefined;
    const verdict = this.deps.clientPolicy.listVerdict(ua);
    if (verdict === 'blocked') return { kind: 'request', outcome: 'bad-agent' };
    if (verdict === 'unknown') return undefined;
    const { params, mx } = asked();
    const fqdn = params.hosts.length === 1 ? params.hosts[0]!.fqdn : undefined;
    if (params.tooManyHosts || fqdn === undefined || !params.systemSupported || mx.needsLookup) return undefined;
    const zone = this.deps.publisher.zoneFor(fqdn);
    if (zone === undefined) return undefined;
    const recalled = this.deps.authenticator.recall(credentials);
    const login = recalled ?? unverifiedLogin(credentials.user);
    const guard: AdmitGuard = { sourceIp: req.clientIp, userAgent: ua, login };
    const line = await this.updateHost(fqdn, zone, login.account, asked(), guard);
    if (!('refused' in line)) {
      if (recalled !== undefined) this.deps.authenticator.recalledAndAdmitted(credentials);
      return { kind: 'hosts', lines: [line] };
    }
    return line.refused === 'stale' ? undefined : { kind: 'request', outcome: refusalOutcome(line.refused) };
  }

  /**
   * A login with an update token (docs/security.md, "Update tokens"): one Redis round trip
   * once the process knows the token, like the fast path. The token updates its own host;
   * another name gets `!yours`; no `hostname` with the host as user means that host. Every
   * reply passes the token's login checks first: in the admission, or on their own (check)
   * when the reply or a lookup (mx) would come before it. No user at all (`Authorization: Token`)
   * counts as the host. undefined: not a token login (or a token revoked meanwhile): the full
   * path decides, as for a wrong password.
   */
  private async tokenPath(
    req: UpdateRequest,
    ua: string,
    asked: () => AskedChange,
    retried = false,
  ): Promise<UpdateReply | undefined> {
    const { credentials } = req;
    if (typeof credentials !== 'object' || !looksLikeToken(credentials.password)) return undefined;
    const { clientPolicy, tokens } = this.deps;
    // A password that merely looks like a token is looked up as one too, even when the cache
    // knows it: a wrong one must cost the same commands (docs/security.md, "No password oracle").
    const verdict = clientPolicy.listVerdict(ua);
    if (verdict === 'blocked' || (verdict === 'unknown' && (await clientPolicy.isBlocked(ua, req.clientIp)))) {
      return { kind: 'request', outcome: 'bad-agent' };
    }
    const token = await tokens.login(credentials, req.clientIp, ua);
    if (token === undefined) return undefined;
    if (token === 'agent' || token === 'login') return { kind: 'request', outcome: refusalOutcome(token) };
    const refuse = (check: GuardCheck) => this.tokenRefused(req, ua, asked, token, check, retried);
    const guard: TokenGuard = { sourceIp: req.clientIp, userAgent: ua, token };
    const { params, mx } = asked();
    // No `hostname`: the token's own host when the user names it, or when there is no user (the token alone).
    const userIsHost = credentials.user === '' || normalizeHostname(credentials.user) === token.fqdn;
    const names = params.hosts.length > 0 || !userIsHost ? params.hosts : [{ fqdn: token.fqdn }];
    const zone = this.deps.publisher.zoneFor(token.fqdn);
    // A TXT-only token changes nothing else of its host: `!yours` (docs/security.md, "Update tokens").
    const outOfScope = token.acmeOnly === true && params.txt === undefined;
    const ownAsked = names.some((h) => h.fqdn === token.fqdn) && !outOfScope;
    if (params.tooManyHosts || !ownAsked || zone === undefined || !params.systemSupported || mx.needsLookup) {
      const check = await tokens.check(guard);
      if (check !== 'ok') return refuse(check);
      if (params.tooManyHosts) return { kind: 'request', outcome: 'too-many-hosts' };
    }
    if (names.length === 0) return { kind: 'hosts', lines: [{ outcome: 'invalid-name' }] };
    const update = async (): Promise<HostLine> => {
      if (zone === undefined) return { outcome: 'unknown-host' };
      const line = await this.updateHost(token.fqdn, zone, token.account, asked(), guard);
      if ('refused' in line) throw new TokenRefused(line.refused);
      return line;
    };
    let own: Promise<HostLine> | undefined; // a name repeated is one admission, as on the full path
    const settled = await Promise.allSettled(
      names.map(({ fqdn }): Promise<HostLine> => {
        if (fqdn === undefined) return Promise.resolve({ outcome: 'invalid-name' });
        if (fqdn !== token.fqdn || outOfScope) return Promise.resolve({ outcome: 'not-owner' });
        return (own ??= update());
      }),
    );
    const refused = settled.find((r) => r.status === 'rejected' && r.reason instanceof TokenRefused);
    if (refused !== undefined) return refuse(((refused as PromiseRejectedResult).reason as TokenRefused).check);
    return { kind: 'hosts', lines: hostLines(settled, this.deps.logger) };
  }

  /**
   * A token's login check failed: the reply the full path gives. Stale (revoked, expired, or its
   * account's donator flag changed): looked up afresh once, which keeps a token whose account
   * changed working; still not a login then, the full path decides, as for a wrong password.
   */
  private tokenRefused(
    req: UpdateRequest,
    ua: string,
    asked: () => AskedChange,
    token: TokenLogin,
    check: GuardCheck,
    retried: boolean,
  ): Promise<UpdateReply | undefined> | UpdateReply | undefined {
    if (check !== 'stale') return { kind: 'request', outcome: refusalOutcome(check) };
    this.deps.tokens.forget(token);
    return retried ? undefined : this.tokenPath(req, ua, asked, true);
  }

  private async updateHost(
    fqdn: string,
    zone: string,
    account: AccountView,
    asked: AskedChange,
    guard: AdmitGuard,
  ): Promise<HostLine | { refused: GuardCheck }> {
    const { params, settings, addresses, mx } = asked;

    if (!params.systemSupported) {
      const host = await this.deps.registry.get(fqdn);
      if (!host) return { outcome: 'unknown-host' };
      return { outcome: host.account === account.name ? 'not-dynamic' : 'not-owner' };
    }
    if (params.txt !== undefined) return this.txtHost(fqdn, zone, account, asked, guard);

    const forbiddenOffline = settings.offline && !account.donator;
    // Awaited only for a lookup: every await on this path is a promise and a suspended frame per request.
    const resolvedMx = forbiddenOffline ? null : mx.needsLookup ? await mx.result() : mx.known();
    // A non-donator's offline request is still counted by the frequency rule (it passed
    // the abuse check) but never changes anything.
    const admitRequest: AdmitRequest = {
      fqdn,
      account: account.name,
      minIntervalMs: account.donator ? this.deps.frequency.donatorMinIntervalMs : this.deps.frequency.minIntervalMs,
      maxFrequent: this.deps.frequency.maxFrequent,
      leaseMs: this.deps.leaseMs,
      expect: forbiddenOffline ? null : this.expected(settings, resolvedMx, asked),
      guard,
      note: forbiddenOffline ? '!donator' : 'nochg',
    };
    // The store's admission awaited here, not through a helper: one async frame less per request.
    const startedAt = Date.now();
    const first = await this.deps.hosts.admit(admitRequest);
    const admission = first.kind === 'busy' ? await this.admitOnceFree(admitRequest, startedAt) : first;
    if (admission.kind === 'refused') return { refused: admission.check };
    if (admission.kind === 'rejected') return { outcome: admission.outcome };
    if (forbiddenOffline) return { outcome: 'offline-not-allowed' };

    const shown = formatAddresses(addresses);
    if (admission.kind === 'nochg') return { outcome: 'unchanged', addresses: shown };

    const target = targetState(admission.host, settings, resolvedMx);
    // A family nobody writes and the store does not know was not set by us (or is gone
    // already): leave it. The store says which ones this change writes (admit).
    const previous = admission.host;
    const leave = familiesToLeave(previous, admission.families);
    const followers = await this.prefixFollowers(fqdn, account.name, asked, admission.lease, admission.repairDue);
    try {
      // Taking over a due repair (an interrupted change, maybe of TXT): the stored TXT set goes out too.
      const change = { fqdn, zone, previous, target, leave, ...(admission.repairDue ? storedTxt(previous) : {}) };
      await (followers ? followers.publishWith(change) : this.deps.publisher.publish(change));
    } catch (err) {
      // dnserr promises the stored state untouched: if the count and lease cannot be undone,
      // say 911. When the primary may still apply what was sent, the stored state goes out
      // again at once (the reconciler), so DNS ends where Redis says. When this change took
      // over a repair that was due and the primary refused it, the repair stays due, after a
      // lease's time: asking again at once would most likely be refused too.
      const maybeApplied = err instanceof DnsUpdateError && err.maybeApplied;
      const republish = maybeApplied
        ? { republishInMs: 0 }
        : admission.repairDue
          ? { republishInMs: this.deps.leaseMs, refused: true }
          : {};
      const answered = outcomeOfError(err) === 'dns-failed' ? 'dnserr' : '911';
      await this.deps.hosts.release(admission.lease, { ...republish, answered }).catch((releaseErr: unknown) => {
        throw new ServiceFault(`release failed: ${(releaseErr as Error).message}`);
      });
      if (outcomeOfError(err) === 'dns-failed') return { outcome: 'dns-failed' };
      throw err;
    }
    let committed: CommitOutcome;
    try {
      const prefix = followers?.recorded;
      committed = await this.deps.hosts.commit(admission.lease, target, prefix === undefined ? {} : { prefix });
    } catch (err) {
      // Recorded on the primary, not yet on enough replicas: not acknowledged (911); the
      // client's retry finds it stored (docs/operators.md, "Redis failover").
      if (err instanceof NotReplicatedError) {
        this.deps.logger.warn('recorded but not yet replicated: not acknowledged', { fqdn, error: err.message });
        throw new ServiceFault('commit not replicated');
      }
      // Published but not recorded: the lease runs out, the reconciler republishes the
      // stored state, and the client's retry (911) makes the change again.
      this.deps.logger.error('published but could not record the new state', { fqdn, error: (err as Error).message });
      throw new ServiceFault('commit failed');
    }
    // The lease ran out before the commit (a stalled process or a slow Redis) and another
    // holder took over: not recorded, so not acknowledged — the store republishes its record.
    if (committed === 'lost') throw new ServiceFault(`lease on ${fqdn} ended before the commit`);
    if (committed !== 'gone' && !asked.viaKey) await this.untilSecondariesServe(fqdn, zone, target, leave);
    if (committed === 'gone') {
      // host remove took the lease over and deleted the host while this change was on its way:
      // what it published may have landed after the deletes. Take it away again; not good.
      await this.deps.publisher
        .publish({ fqdn, zone, previous: target, target: { ...emptyDnsState(), offline: false } })
        .catch((err: unknown) =>
          this.deps.logger.error('could not delete the records of a removed host', {
            fqdn,
            error: (err as Error).message,
          }),
        );
      return { outcome: 'unknown-host' };
    }
    return { outcome: 'changed', addresses: shown };
  }

  /** update.waitForSecondaries: every secondary serves the addresses just recorded, or the bound passed (logged). */
  private async untilSecondariesServe(
    fqdn: string,
    zone: string,
    target: TargetState,
    leave: AddressFamilies | undefined,
  ): Promise<void> {
    const { waitForSecondaries: setting, secondaries } = this.deps;
    if (!setting?.enabled || secondaries === undefined) return;
    const started = Date.now();
    const deadline = started + setting.timeoutMs;
    const outcomes = await Promise.all(
      (['A', 'AAAA'] as const).map(async (type) => {
        const value = target.offline ? null : type === 'A' ? target.ipv4 : target.ipv6;
        // A family this change left as DNS has it (not the bridge's): whatever is there is right.
        if (!value && leave?.[type === 'A' ? 'ipv4' : 'ipv6']) return 'none' as const;
        return secondaries.untilServed(zone, fqdn, type, { exactly: value ? [value] : [] }, deadline - Date.now());
      }),
    );
    if (outcomes.every((o) => o === 'none')) return;
    const outcome = outcomes.includes('timeout') ? 'timeout' : 'served';
    this.deps.telemetry?.secondaryWait(zone, outcome, (Date.now() - started) / 1000);
    if (outcome === 'timeout')
      this.deps.logger.warn('a secondary did not serve the new addresses in time: answered good anyway', {
        fqdn,
        zone,
      });
  }

  /** The prefix a host's update carries, when the bridge links hosts and the host does not go offline. */
  private prefixOf(asked: AskedChange): Ipv6Prefix | undefined {
    return this.deps.links && !asked.settings.offline ? asked.params.ipv6Prefix : undefined;
  }

  /**
   * What the admission compares with the stored host: the settings asked, and what an update with a prefix expects
   * stored besides (docs/protocol.md, "IPv6 prefixes").
   */
  private expected(settings: RequestedSettings, resolvedMx: ResolvedMx, asked: AskedChange): Record<string, string> {
    const expect = expectationsFor(settings, resolvedMx);
    const prefix = this.prefixOf(asked);
    return prefix ? Object.assign(expect, prefixExpectations(prefix)) : expect;
  }

  /** The hosts that follow the prefix of a change of `fqdn`, admitted; none without a prefix. A store failure: 911. */
  private async prefixFollowers(
    fqdn: string,
    account: string,
    asked: AskedChange,
    lease: Lease,
    repairDue: boolean,
  ): Promise<PrefixFollowers | undefined> {
    const prefix = this.prefixOf(asked);
    const { links, hosts, publisher, leaseMs, logger } = this.deps;
    if (prefix === undefined || links === undefined) return undefined;
    try {
      return await PrefixFollowers.admit({ links, hosts, publisher, leaseMs, logger }, fqdn, account, prefix);
    } catch (err) {
      // Nothing was sent: a repair that was due stays due.
      await hosts
        .release(lease, { ...(repairDue ? { republishInMs: 0 } : {}), answered: '911' })
        .catch(() => undefined);
      if (err instanceof StoreUnavailableError) throw err;
      throw new ServiceFault(`the hosts linked to ${fqdn}: ${(err as Error).message}`);
    }
  }

  /** A TXT change of one host (app/txt.ts): its store faults answer 911, as the address path's do. */
  private async txtHost(
    fqdn: string,
    zone: string,
    account: AccountView,
    asked: AskedChange,
    guard: AdmitGuard,
  ): Promise<HostLine | { refused: GuardCheck }> {
    if (this.deps.txt === undefined) return { outcome: 'not-dynamic' };
    try {
      // A key's change (the gateway) does not wait: RFC 2136 clients check propagation themselves.
      return await this.deps.txt.change(fqdn, zone, account, asked.params.txt!, guard, {
        waitForSecondaries: !asked.viaKey,
      });
    } catch (err) {
      if (err instanceof TxtFault) throw new ServiceFault(err.message);
      throw err;
    }
  }

  /**
   * The host was busy at its first admission (`startedAt`): ask again while another request holds the host's lease,
   * a little later each time, at most MAX_BUSY_WAIT_MS from the first: a lease whose holder died (a frontend killed, a
   * Redis failover) is held for a whole lease, and a client must get its `911` sooner than that (docs/operators.md,
   * "Redis failover").
   */
  private async admitOnceFree(req: AdmitRequest, startedAt: number): Promise<Exclude<Admission, { kind: 'busy' }>> {
    const deadline = startedAt + Math.min(req.leaseMs, MAX_BUSY_WAIT_MS);
    for (let attempt = 0; ; attempt++) {
      if (Date.now() > deadline) throw new HostStayedBusy(`host ${req.fqdn} stayed busy`);
      await this.sleep(Math.min(2 + attempt * 2, 25) + Math.random() * 3);
      const admission = await this.deps.hosts.admit(req);
      if (admission.kind !== 'busy') return admission;
    }
  }
}

/** The families the request names, else the detected client address. */
export function requestedAddresses(params: UpdateParams, clientIp: string, families: FamilyAsks = {}): AddressPair {
  const given = { ...params.addresses };
  // A family a dialect keeps or removes takes no address from the request.
  for (const f of ['ipv4', 'ipv6'] as const) if (families[f] !== undefined) delete given[f];
  if (given.ipv4 !== undefined || given.ipv6 !== undefined) return given;
  // The client's address fills its family, unless the request named any family at all (kept or removed too).
  if (families.ipv4 !== undefined || families.ipv6 !== undefined) return {};
  const detected = parseAddress(clientIp);
  if (!detected) return {};
  return detected.family === 4 ? { ipv4: detected.address } : { ipv6: detected.address };
}

/** What a request asks of each of its hosts (shared by the hosts of one request). */
class AskedChange {
  readonly addresses: AddressPair;
  readonly settings: RequestedSettings;
  readonly mx: MxCheck;
  /** A key's change (the RFC 2136 gateway): answered without waiting for the secondaries. */
  readonly viaKey: boolean;
  constructor(
    readonly params: UpdateParams,
    clientIp: string,
    resolver: MxResolver,
    /** A key's change: exactly these families (null: remove), never the client's address. */
    exact?: { ipv4?: string | null; ipv6?: string | null },
    /** A dialect's keep or remove per family (UpdateRequest.families). */
    asks: FamilyAsks = {},
  ) {
    this.addresses = exact === undefined ? requestedAddresses(params, clientIp, asks) : params.addresses;
    this.viaKey = exact !== undefined;
    // Written out, not spread: on the update path every `{ ...x, more }` cost V8 a copy of a fresh object shape,
    // about 2 KB per request (BENCHMARKS.md, "Where a nochg goes"). An absent family is undefined: left as it is.
    const families = exact ?? {
      ipv4: asks.ipv4 === 'remove' ? null : this.addresses.ipv4,
      ipv6: asks.ipv6 === 'remove' ? null : this.addresses.ipv6,
    };
    this.settings = {
      ipv4: families.ipv4,
      ipv6: families.ipv6,
      wildcard: params.wildcard,
      backmx: params.backmx,
      offline: params.offline,
    };
    this.mx = new MxCheck(params, resolver);
  }
}

/** Resolve the `mx` parameter at most once per request, only when a host needs it. */
class MxCheck {
  private pending: Promise<ResolvedMx> | undefined;
  constructor(
    private readonly params: UpdateParams,
    private readonly resolver: MxResolver,
  ) {}
  /** The request names an MX target that must be resolved (a DNS query the request causes). */
  get needsLookup(): boolean {
    return this.params.mx !== undefined && this.params.mx !== 'keep';
  }

  /** Without a lookup (needsLookup false): the answer at once, with no promise to wait for. */
  known(): ResolvedMx {
    return this.params.mx === 'keep' ? 'keep' : null;
  }

  result(): Promise<ResolvedMx> {
    const mx = this.params.mx;
    if (mx === undefined) return Promise.resolve(null);
    if (mx === 'keep') return Promise.resolve('keep');
    this.pending ??= this.resolver.resolves(mx).then(
      (ok) => (ok ? mx : null),
      () => null,
    );
    return this.pending;
  }
}

/**
 * The per-host lines once every host is done. A store fault makes the request `911`, except
 * a host another frontend held past a lease (nothing was sent, recorded or counted for it)
 * beside a host that was changed: `911` would hide that change, so each host gets its own
 * line and the held one `dnserr`.
 */
function hostLines(settled: PromiseSettledResult<HostLine>[], logger: Logger): HostLine[] {
  const faults = settled.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
  // A refused login refuses the whole request, whatever the other hosts got.
  const refused = faults.find((e) => e instanceof LoginRefused);
  if (refused !== undefined) throw refused;
  const unexpected = faults.find((e) => !(e instanceof ServiceFault || e instanceof StoreUnavailableError));
  if (unexpected !== undefined) throw unexpected;
  const lines = settled.map((r) => (r.status === 'fulfilled' ? r.value : undefined));
  const onlyHeld = faults.every((e) => e instanceof HostStayedBusy);
  if (faults.length > 0 && !(onlyHeld && lines.some((l) => l?.outcome === 'changed'))) throw faults[0];
  for (const e of faults)
    logger.warn('answered dnserr for a host held by another request', { error: (e as Error).message });
  return lines.map((l) => l ?? { outcome: 'dns-failed' });
}

function isJunkReply(reply: UpdateReply): boolean {
  if (reply.kind === 'request') return isJunk(reply.outcome);
  return reply.lines.some((l) => isJunk(l.outcome));
}
