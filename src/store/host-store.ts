/**
 * Hosts in Redis: the update path's gate (admit → commit | release, each one Lua script run; admissions
 * and commits of one event-loop turn share one call, batch.ts)
 * and the operator's view (add, remove, list, state changes).
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type {
  Admission,
  AdmitRequest,
  CommitOutcome,
  DnsRepair,
  HostAdmin,
  HostGate,
  Lease,
  Reclaimed,
  TokenGuard,
} from '../app/ports.js';
import { ConflictError, HostStateConflictError, InvalidInputError, NotFoundError } from '../core/errors.js';
import type { Logger } from '../core/log.js';
import { ancestorsOf, namesBetween, normalizeHostname, zoneOf } from '../core/names.js';
import {
  HOST_TYPES,
  SETTABLE_HOST_STATES,
  type HostRecord,
  type HostState,
  type HostType,
  type SettableHostState,
  type TargetState,
} from '../core/types.js';
import { decodeFamilies, decodeHost } from './codec.js';
import { HOST_FIELDS, Keys, TOKEN_FIELDS } from './keys.js';
import { execPipeline, storeCall } from './redis.js';
import type { ReplicaWaiter } from './replica-wait.js';
import { runScript } from './script.js';
import { ScriptBatcher } from './batch.js';
import { abandonerOf, takingLease, type LeaseAbandoner } from './abandon.js';
import { HOST_ADD, HOST_REMOVE, HOST_SET_STATE } from './scripts/hosts.js';
import {
  ADMIT,
  ADMIT_GUARDED,
  ADMIT_TOKEN,
  COMMIT,
  HOST_CLAIM,
  NO_COUNT_UNDO,
  POSTPONE,
  RECLAIM,
  RELEASE,
  STALE,
  type AdmitArgs,
  type AdmitReply,
  type CommitArgs,
  type GuardedAdmitArgs,
  type GuardedAdmitKeys,
  type LeaseKeys,
  type TokenAdmitArgs,
  type CountUndo,
  type TokenGuardKeys,
} from './scripts/lease.js';

/**
 * The lease handed out with a `change` admission. Besides the token it remembers the
 * frequency fields as they were before this request, so release() can undo its count.
 */
export class HostLease implements Lease {
  constructor(
    readonly fqdn: string,
    readonly token: string,
    /** What commit and release need to undo this request's count (NO_COUNT_UNDO: none). */
    readonly undo: CountUndo,
    /** The address families its holder writes in full, as the scripts take them ('4', '6', '46', ''). */
    readonly families: string,
    /** Those of an interrupted change whose expired lease it took over ('' when none). */
    readonly takenOver: string,
    /** Its request was noted as the host's last (AdmitRequest.note): commit and release record its reply. */
    readonly noted = false,
  ) {}
}

const SCAN_BATCH = 1000;
/** Lease tokens taken by reclaim start with this: repairOf tells a repair in progress by it. */
const REPAIR_TOKEN_PREFIX = 'r:';
/** The lease of an operator's change (host remove). */
const ADMIN_TOKEN_PREFIX = 'a:';

export class RedisHostStore implements HostGate, HostAdmin {
  constructor(
    private readonly redis: Redis,
    private readonly keys: Keys,
    private readonly logger: Logger,
    /**
     * redis.waitReplicas: good and nochg once the state reached the replicas (docs/operators.md, "Redis failover"):
     * admissions and commits go over the waiter's own connection, and it waits for them.
     */
    private readonly replicas?: { writes: Redis; waiter: ReplicaWaiter },
  ) {
    this.writes = replicas?.writes ?? redis;
    // The update path's scripts, batched per turn of the event loop (batch.ts).
    this.admitPlain = new ScriptBatcher(this.writes, ADMIT, 'admit');
    this.admitGuarded = new ScriptBatcher(this.writes, ADMIT_GUARDED, 'admit');
    this.admitToken = new ScriptBatcher(this.writes, ADMIT_TOKEN, 'admit');
    this.commits = new ScriptBatcher(this.writes, COMMIT, 'commit');
    this.abandoner = abandonerOf(this.writes);
  }

  /** Ends the leases of admissions and commits that failed (abandon.ts), on the connection they went out on. */
  private readonly abandoner: LeaseAbandoner;

  private readonly admitPlain: ScriptBatcher<LeaseKeys, AdmitArgs, AdmitReply>;
  private readonly admitGuarded: ScriptBatcher<GuardedAdmitKeys, GuardedAdmitArgs, AdmitReply>;
  private readonly admitToken: ScriptBatcher<TokenGuardKeys, TokenAdmitArgs, AdmitReply>;
  private readonly commits: ScriptBatcher<LeaseKeys, CommitArgs, 'ok' | 'lost' | 'gone'>;

  /** The connection of the writes a client is told about (admit, commit): WAIT covers only its own. */
  private readonly writes: Redis;

  // ---- HostGate (the update path) ----

  async admit(req: AdmitRequest): Promise<Admission> {
    const { guard } = req;
    // Every object here written out, none spread: on this path each `{ ...x, more }` cost V8 a copy of a fresh
    // object shape, about 2 KB per request (BENCHMARKS.md, "Where a nochg goes").
    const args: AdmitArgs = {
      account: req.account,
      minIntervalMs: req.minIntervalMs,
      maxFrequent: req.maxFrequent,
      leaseMs: req.leaseMs,
      leaseToken: randomUUID(),
      expect: req.expect,
      requestLog:
        req.note === undefined || guard === undefined
          ? undefined
          : { reply: req.note, source: guard.sourceIp, userAgent: guard.userAgent },
    };
    const lease = { host: this.keys.host(req.fqdn), pending: this.keys.pendingChanges() };
    let reply: AdmitReply;
    const sentOn = this.abandoner.connection();
    try {
      if (guard === undefined) {
        reply = await this.admitPlain.run(lease, args);
      } else if ('token' in guard) {
        const tokenArgs = { ...args, tokenHash: guard.token.hash, donator: guard.token.account.donator };
        reply = await this.admitToken.run(tokenGuardKeys(this.keys, guard, req.fqdn), tokenArgs);
      } else {
        const { account, hashDigest } = guard.login;
        const guardKeys = {
          host: lease.host,
          pending: lease.pending,
          junkBlock: this.keys.junkBlock(guard.sourceIp, guard.userAgent),
          sourceCooldown: this.keys.cooldownBySource(guard.sourceIp),
          accountCooldown: this.keys.cooldownByAccount(account.name),
          account: this.keys.account(account.name),
        };
        reply = await this.admitGuarded.run(guardKeys, {
          account: args.account,
          minIntervalMs: args.minIntervalMs,
          maxFrequent: args.maxFrequent,
          leaseMs: args.leaseMs,
          leaseToken: args.leaseToken,
          expect: args.expect,
          requestLog: args.requestLog,
          hashDigest,
          donator: account.donator,
          passwordOnly: guard.passwordOnly ?? false,
        });
      }
    } catch (err) {
      // It may still run once Redis answers (a stall): the lease it would take ends at once (abandon.ts).
      this.abandoner.abandon({ ...lease, token: args.leaseToken }, sentOn, true, err);
      throw err;
    }
    // nochg says the state is stored: it may be a change whose WAIT failed (911) and is retried.
    // Not for the echo's counting (expect null), which acknowledges nothing.
    if (reply.kind === 'nochg' && req.expect !== null && this.replicas) await this.waitForReplicas('admit');
    return admission(req.fqdn, reply, args.leaseToken, args.requestLog !== undefined);
  }

  /** WAIT for redis.waitReplicas (when set), right after the write's reply. */
  private async waitForReplicas(operation: string): Promise<void> {
    await this.replicas?.waiter.replicated(operation);
  }

  async commit(
    lease: Lease,
    target: TargetState,
    opts: { republish?: boolean; prefix?: string } = {},
  ): Promise<CommitOutcome> {
    const own = asHostLease(lease);
    const keys = { host: this.keys.host(lease.fqdn), pending: this.keys.pendingChanges() };
    const sentOn = this.abandoner.connection();
    let status: 'ok' | 'lost' | 'gone';
    try {
      status = await this.commits.run(keys, {
        token: lease.token,
        target,
        republish: opts.republish ?? false,
        undo: own?.undo ?? NO_COUNT_UNDO,
        families: own?.families ?? '46',
        // Absent as undefined (kept), not spread in: a spread mid-literal costs a copy into a fresh shape per change.
        prefix: opts.prefix,
        noted: !opts.republish && (own?.noted ?? false),
      });
    } catch (err) {
      // Not recorded, as far as we know: the lease ends now (abandon.ts), not at its end, unless the commit ran
      // first; the reconciler republishes the record, the client's retry (911) makes the change again.
      this.abandoner.abandon({ ...keys, token: lease.token }, sentOn, false, err);
      throw err;
    }
    if (status === 'lost') {
      this.logger.warn(
        'host lease ended before the commit: the change is not recorded, the stored state is published again',
        {
          host: lease.fqdn,
        },
      );
      return 'lost';
    }
    if (status === 'gone') {
      this.logger.warn('host was removed while its update was in flight; DNS may still hold its records', {
        host: lease.fqdn,
      });
      return 'gone';
    }
    // Only what a client is told (good); a reconciler's republish acknowledges nothing.
    if (!opts.republish) await this.waitForReplicas('commit');
    return 'committed';
  }

  async release(
    lease: Lease,
    opts: { republishInMs?: number; failedRepublish?: boolean; refused?: boolean; answered?: 'dnserr' | '911' } = {},
  ): Promise<void> {
    const own = asHostLease(lease);
    // A failed republish is one the primary refused.
    const refused = opts.refused ?? opts.failedRepublish ?? false;
    await runScript(
      this.redis,
      RELEASE,
      { host: this.keys.host(lease.fqdn), pending: this.keys.pendingChanges() },
      {
        token: lease.token,
        undo: own?.undo ?? NO_COUNT_UNDO,
        ...(opts.republishInMs === undefined ? {} : { republishInMs: opts.republishInMs }),
        failedRepublish: opts.failedRepublish ?? false,
        families: (refused ? own?.takenOver : own?.families) ?? '46',
        refused,
        answered: own?.noted === true ? (opts.answered ?? '911') : '',
      },
      'release',
    );
  }

  // Both on Redis's clock, as the leases are: a frontend whose clock runs ahead would
  // otherwise see leases in flight as ended.
  async postpone(fqdns: readonly string[], ms: number): Promise<void> {
    if (fqdns.length === 0) return;
    const hostKeys = fqdns.map((f) => this.keys.host(f));
    await runScript(this.redis, POSTPONE, { pending: this.keys.pendingChanges() }, { ms, hostKeys }, 'postpone');
  }

  async staleLeases(limit: number): Promise<string[]> {
    const keys = await runScript(this.redis, STALE, { pending: this.keys.pendingChanges() }, { limit }, 'stale leases');
    return keys.map((k) => this.keys.fqdnOfHostKey(k)).filter((f): f is string => f !== undefined);
  }

  async reclaim(fqdn: string, leaseMs: number): Promise<Reclaimed | undefined> {
    const token = REPAIR_TOKEN_PREFIX + randomUUID();
    const keys = { host: this.keys.host(fqdn), pending: this.keys.pendingChanges() };
    const reply = await takingLease(abandonerOf(this.redis), keys, token, () =>
      runScript(this.redis, RECLAIM, keys, { token, leaseMs }, 'reclaim'),
    );
    if (reply.kind !== 'reclaimed') return undefined;
    const { host: fields, families } = reply;
    return {
      host: decodeHost(fqdn, fields),
      families: decodeFamilies(families),
      // No frequency bookkeeping: releasing this lease leaves the counters as they are.
      lease: new HostLease(fqdn, token, NO_COUNT_UNDO, families, families),
      failedRepublishes: Math.max(0, Number(fields[HOST_FIELDS.republishFailures] ?? 0) || 0),
    };
  }

  // ---- HostAdmin (the CLI) ----

  async get(fqdn: string): Promise<HostRecord | undefined> {
    const name = lookupName(fqdn);
    const fields = await storeCall('host get', () => this.redis.hgetall(this.keys.host(name)));
    return fields[HOST_FIELDS.owner] === undefined ? undefined : decodeHost(name, fields);
  }

  async repairOf(fqdn: string): Promise<DnsRepair | undefined> {
    const key = this.keys.host(lookupName(fqdn));
    // One moment, on Redis's clock (the leases' clock).
    const [clock, lease, due] = await storeCall('host repair', async () => {
      const replies = await this.redis
        .multi()
        .time()
        .hmget(key, HOST_FIELDS.leaseToken, HOST_FIELDS.leaseUntil, HOST_FIELDS.republishFailures)
        .zscore(this.keys.pendingChanges(), key)
        .exec();
      for (const [err] of replies ?? []) if (err) throw err;
      return replies!.map(([, value]) => value) as [[string, string], (string | null)[], string | null];
    });
    const now = Number(clock[0]) * 1000 + Math.floor(Number(clock[1]) / 1000);
    const [token, until, failed] = lease;
    if (!token) return undefined;
    const failedRepublishes = Number(failed ?? 0) || 0;
    const leaseEnd = Number(until ?? 0);
    if (leaseEnd > now) {
      // A lease in flight: a reconciler's republish (its token says so), else a client's change.
      const repairing = token.startsWith(REPAIR_TOKEN_PREFIX) || failedRepublishes > 0;
      return repairing ? { dueAt: leaseEnd, failedRepublishes, inProgress: true } : undefined;
    }
    return { dueAt: due === null ? now : Number(due), failedRepublishes, inProgress: false };
  }

  async add(fqdn: string, account: string, type: HostType, between: readonly string[] = []): Promise<void> {
    const name = normalizeHostname(fqdn);
    if (name === undefined) throw new InvalidInputError(`not a valid host name: ${JSON.stringify(fqdn)}`);
    if (!(HOST_TYPES as readonly string[]).includes(type)) {
      throw new InvalidInputError(`unknown host type '${type}' (expected one of ${HOST_TYPES.join(', ')})`);
    }
    const keys = {
      host: this.keys.host(name),
      account: this.keys.account(account),
      nestIndex: this.keys.nestIndex(name),
      between: between.map((b) => ({ host: this.keys.host(b), nestIndex: this.keys.nestIndex(b) })),
    };
    const reply = await runScript(
      this.redis,
      HOST_ADD,
      keys,
      { owner: account, type, fqdn: name, between },
      'host add',
    );
    if (reply.kind === 'noaccount') throw new NotFoundError(`no such account: ${account}`);
    if (reply.kind === 'exists') throw new ConflictError(`host ${name} already exists`);
    if (reply.kind === 'below' || reply.kind === 'above')
      throw new ConflictError(shadowingMessage(name, reply.kind, reply.name, reply.owner));
  }

  /**
   * Record every host in the nest index of the names between it and its zone's apex (NESTING in
   * lua.ts), once per keyspace: hosts registered before the index existed. Idempotent.
   * Returns how many hosts it recorded (0 when it was done already).
   */
  async indexNesting(zones: readonly string[]): Promise<number> {
    if ((await storeCall('schema', () => this.redis.hget(this.keys.schema(), 'nesting'))) === '1') return 0;
    let recorded = 0;
    for await (const batch of this.scanHosts()) {
      const pipeline = this.redis.pipeline();
      for (const { fqdn, owner } of batch) {
        const zone = zoneOf(fqdn, zones);
        for (const name of zone === undefined ? [] : namesBetween(fqdn, zone))
          pipeline.hset(this.keys.nestIndex(name), fqdn, owner);
      }
      if (pipeline.length > 0) {
        await execPipeline('nest index', pipeline);
        recorded += batch.length;
      }
    }
    await storeCall('schema', () => this.redis.hset(this.keys.schema(), 'nesting', '1'));
    return recorded;
  }

  /** Every host name and owner, a SCAN batch at a time. */
  private async *scanHosts(): AsyncGenerator<{ fqdn: string; owner: string }[]> {
    let cursor = '0';
    do {
      const [next, keys] = await storeCall('host scan', () =>
        this.redis.scan(cursor, 'MATCH', this.keys.hostScanPattern(), 'COUNT', SCAN_BATCH),
      );
      cursor = next;
      if (keys.length === 0) continue;
      const pipeline = this.redis.pipeline();
      for (const key of keys) pipeline.hget(key, HOST_FIELDS.owner);
      const owners = await execPipeline('host scan', pipeline);
      const batch = keys.flatMap((key, i) => {
        const fqdn = this.keys.fqdnOfHostKey(key);
        const owner = owners[i];
        return fqdn === undefined || typeof owner !== 'string' ? [] : [{ fqdn, owner }];
      });
      if (batch.length > 0) yield batch;
    } while (cursor !== '0');
  }

  /**
   * Pairs of hosts of different accounts where one lies below the other (registered before
   * `host add` refused them): the upper one's wildcard can answer for the lower one's name.
   */
  async shadowingPairs(): Promise<{ upper: string; upperOwner: string; lower: string; lowerOwner: string }[]> {
    const owners = new Map<string, string>();
    for await (const batch of this.scanHosts()) for (const { fqdn, owner } of batch) owners.set(fqdn, owner);
    const pairs: { upper: string; upperOwner: string; lower: string; lowerOwner: string }[] = [];
    for (const [lower, lowerOwner] of owners) {
      for (const upper of ancestorsOf(lower)) {
        const upperOwner = owners.get(upper);
        if (upperOwner !== undefined && upperOwner !== lowerOwner) pairs.push({ upper, upperOwner, lower, lowerOwner });
      }
    }
    return pairs.sort((a, b) => (a.lower < b.lower ? -1 : a.lower > b.lower ? 1 : 0));
  }

  async claim(
    fqdn: string,
    leaseMs: number,
  ): Promise<{ host: HostRecord; lease: Lease; repairDue: boolean } | 'busy' | undefined> {
    const name = lookupName(fqdn);
    const token = ADMIN_TOKEN_PREFIX + randomUUID();
    const keys = { host: this.keys.host(name), pending: this.keys.pendingChanges() };
    const reply = await takingLease(abandonerOf(this.redis), keys, token, () =>
      runScript(this.redis, HOST_CLAIM, keys, { token, leaseMs }, 'host claim'),
    );
    if (reply.kind === 'gone') return undefined;
    if (reply.kind === 'busy') return 'busy';
    // No frequency bookkeeping: releasing this lease leaves the counters as they are. The
    // removal deletes every record: both families.
    return {
      host: decodeHost(name, reply.host),
      lease: new HostLease(name, token, NO_COUNT_UNDO, '46', reply.takenOver),
      repairDue: reply.repairDue,
    };
  }

  async remove(fqdn: string, lease?: Lease): Promise<void> {
    const name = lookupName(fqdn);
    const hostKey = this.keys.host(name);
    const tokensKey = this.keys.hostTokens(name);
    // The owner's host count lives in the account hash, and the host's tokens go with it: read
    // the owner and the tokens, then remove atomically if both are still those (retry if not).
    for (let attempt = 0; attempt < 5; attempt++) {
      const owner = await storeCall('host remove', () => this.redis.hget(hostKey, HOST_FIELDS.owner));
      if (owner === null) throw new NotFoundError(`no such host: ${name}`);
      const tokens = await this.tokensOf(tokensKey);
      const nestIndexes = ancestorsOf(name).map((a) => this.keys.nestIndex(a));
      const keys = {
        host: hostKey,
        account: this.keys.account(owner),
        pending: this.keys.pendingChanges(),
        hostTokens: tokensKey,
        nestIndexes,
        tokens,
      };
      const args = {
        owner,
        leaseToken: lease?.token ?? '',
        fqdn: name,
        ancestors: nestIndexes.length,
        tokenIds: tokens.map((t) => t.id),
      };
      const result = await runScript(this.redis, HOST_REMOVE, keys, args, 'host remove');
      if (result === 'ok') return;
      if (result === 'gone') throw new NotFoundError(`no such host: ${name}`);
      if (result === 'lost')
        throw new ConflictError(`host ${name}: the claim on it ended before the removal (a slow Redis?); try again`);
    }
    throw new ConflictError(`host ${name} changed owner while being removed; try again`);
  }

  /** The host's tokens, each with the keys of its record and index (for the removal). */
  private async tokensOf(tokensKey: string): Promise<{ id: string; record: string; index: string }[]> {
    const ids = await storeCall('host tokens', () => this.redis.smembers(tokensKey));
    if (ids.length === 0) return [];
    const pipeline = this.redis.pipeline();
    for (const id of ids) pipeline.hget(this.keys.token(id), TOKEN_FIELDS.hash);
    const hashes = await execPipeline('host tokens', pipeline);
    // A record already gone leaves its index key to nobody: only the set entry goes.
    return ids.map((id, i) => ({
      id,
      record: this.keys.token(id),
      index: this.keys.tokenIndex(String(hashes[i] ?? '')),
    }));
  }

  async list(account?: string): Promise<HostRecord[]> {
    const hosts: HostRecord[] = [];
    let cursor = '0';
    do {
      const [next, keys] = await storeCall('host list', () =>
        this.redis.scan(cursor, 'MATCH', this.keys.hostScanPattern(), 'COUNT', SCAN_BATCH),
      );
      cursor = next;
      if (keys.length === 0) continue;
      const pipeline = this.redis.pipeline();
      for (const key of keys) pipeline.hgetall(key);
      const replies = await execPipeline('host list', pipeline);
      keys.forEach((key, i) => {
        const fqdn = this.keys.fqdnOfHostKey(key);
        if (fqdn === undefined) return;
        const record = (replies[i] ?? {}) as Record<string, string>;
        if (record[HOST_FIELDS.owner] === undefined) return; // removed since the SCAN
        if (account !== undefined && record[HOST_FIELDS.owner] !== account) return;
        hosts.push(decodeHost(fqdn, record));
      });
    } while (cursor !== '0');
    return hosts.sort((a, b) => (a.fqdn < b.fqdn ? -1 : a.fqdn > b.fqdn ? 1 : 0));
  }

  async setState(fqdn: string, state: SettableHostState, onlyFrom: readonly HostState[] = []): Promise<void> {
    if (!(SETTABLE_HOST_STATES as readonly string[]).includes(state)) {
      throw new InvalidInputError(`cannot set host state '${String(state)}'`);
    }
    const name = lookupName(fqdn);
    const outcome = await runScript(
      this.redis,
      HOST_SET_STATE,
      { host: this.keys.host(name) },
      { state, onlyFrom },
      'host state',
    );
    if (outcome === 'gone') throw new NotFoundError(`no such host: ${name}`);
    if (outcome !== 'set')
      throw new HostStateConflictError(`host ${name} is ${outcome.refused}: cannot make it ${state}`, outcome.refused);
  }
}

/** The admission of a decoded admit reply; `token` is the lease token the request asked for. */
function admission(fqdn: string, reply: AdmitReply, token: string, noted: boolean): Admission {
  if (reply.kind !== 'change') return reply;
  return {
    kind: 'change',
    host: decodeHost(fqdn, reply.host),
    lease: new HostLease(fqdn, token, reply.undo, reply.families, reply.takenOver, noted),
    repairDue: reply.repairDue,
    families: decodeFamilies(reply.families),
  };
}

/** The keys of a token login's checks (TOKEN_CHECKS in lua.ts), beside those of the host `fqdn`. */
export function tokenGuardKeys(keys: Keys, guard: TokenGuard, fqdn: string): TokenGuardKeys {
  return {
    host: keys.host(fqdn),
    pending: keys.pendingChanges(),
    junkBlock: keys.junkBlock(guard.sourceIp, guard.userAgent),
    sourceCooldown: keys.cooldownBySource(guard.sourceIp),
    token: keys.token(guard.token.id),
    account: keys.account(guard.token.account.name),
  };
}

/** Why a name cannot be registered beside a host of another account. */
export function shadowingMessage(name: string, relation: 'below' | 'above', other: string, owner: string): string {
  return relation === 'below'
    ? `host ${name} would lie below ${other} of account ${owner}: that host's wildcard would answer for it`
    : `host ${name} would lie above ${other} of account ${owner}: its wildcard would answer for that host`;
}

function asHostLease(lease: Lease): HostLease | undefined {
  return lease instanceof HostLease ? lease : undefined;
}

/** Operator input: normalised when it is a valid name, else taken as given (→ not found). */
function lookupName(fqdn: string): string {
  return normalizeHostname(fqdn) ?? fqdn.trim().toLowerCase();
}
