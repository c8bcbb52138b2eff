/**
 * Hosts in Redis: the update path's gate (admit → commit | release, each one Lua call)
 * and the operator's view (add, remove, list, state changes).
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { ADMIT_REJECTIONS, type AdmitRejection } from '../app/ports.js';
import type { Admission, AdmitRequest, CommitOutcome, DnsRepair, HostAdmin, HostGate, Lease, Reclaimed, TokenGuard } from '../app/ports.js';
import { ConflictError, InvalidInputError, NotFoundError } from '../core/errors.js';
import type { Logger } from '../core/log.js';
import { ancestorsOf, namesBetween, normalizeHostname, zoneOf } from '../core/names.js';
import { HOST_TYPES, flag, type HostRecord, type HostType, type TargetState } from '../core/types.js';
import { decodeFamilies, decodeHost, encodeExpectations, encodeWrittenFamilies, fieldsFromFlat } from './codec.js';
import { HOST_FIELDS, Keys, TOKEN_FIELDS } from './keys.js';
import { scriptsFor, type StoreScripts } from './lua.js';
import { execPipeline, storeCall } from './redis.js';

/**
 * The lease handed out with a `change` admission. Besides the token it remembers the
 * frequency fields as they were before this request, so release() can undo its count.
 */
export class HostLease implements Lease {
  constructor(
    readonly fqdn: string,
    readonly token: string,
    /** `fl` and `fc` before this request ('' = absent) and the `fs` it was counted as. */
    readonly previousLastRequest: string,
    readonly previousFrequentCount: string,
    readonly sequence: string,
    /** The `fl` it wrote (Redis time of the admit): tells this host from one added again since. */
    readonly countedAt: string,
    /** The address families its holder writes in full, as the scripts take them ('4', '6', '46', ''). */
    readonly families: string,
    /** Those of an interrupted change whose expired lease it took over ('' when none). */
    readonly takenOver: string,
  ) {}
}

const SCAN_BATCH = 1000;
/** Lease tokens taken by reclaim start with this: repairOf tells a repair in progress by it. */
const REPAIR_TOKEN_PREFIX = 'r:';
/** The lease of an operator's change (host remove). */
const ADMIN_TOKEN_PREFIX = 'a:';

export class RedisHostStore implements HostGate, HostAdmin {
  private readonly scripts: StoreScripts;

  constructor(
    private readonly redis: Redis,
    private readonly keys: Keys,
    private readonly logger: Logger,
  ) {
    this.scripts = scriptsFor(redis);
  }

  // ---- HostGate (the update path) ----

  async admit(req: AdmitRequest): Promise<Admission> {
    const args: (string | number)[] = [
      req.account,
      Math.max(0, Math.floor(req.minIntervalMs)),
      req.maxFrequent,
      Math.max(1, Math.floor(req.leaseMs)),
      randomUUID(),
      req.expect === null ? 'count' : 'expect',
      encodeWrittenFamilies(req.expect),
    ];
    if (req.expect !== null) args.push(...encodeExpectations(req.expect));
    const token = String(args[4]);
    const hostKey = this.keys.host(req.fqdn);
    const { guard } = req;
    if (guard === undefined) {
      const reply = await storeCall('admit', () => this.scripts.admit(hostKey, this.keys.pendingChanges(), args));
      return this.admissionFromReply(req.fqdn, reply, token);
    }
    if ('token' in guard) {
      const tokenArgs = [guard.token.hash, flag(guard.token.account.donator), ...args];
      const reply = await storeCall('admit', () =>
        this.scripts.admitToken(hostKey, this.keys.pendingChanges(), tokenGuardKeys(this.keys, guard), tokenArgs),
      );
      return this.admissionFromReply(req.fqdn, reply, token);
    }
    const { account, hashDigest } = guard.login;
    const guardKeys = [
      this.keys.junkBlock(guard.sourceIp, guard.userAgent),
      this.keys.cooldownBySource(guard.sourceIp),
      this.keys.cooldownByAccount(account.name),
      this.keys.account(account.name),
    ] as const;
    const reply = await storeCall('admit', () =>
      this.scripts.admitGuarded(hostKey, this.keys.pendingChanges(), guardKeys, [hashDigest, flag(account.donator), ...args]),
    );
    return this.admissionFromReply(req.fqdn, reply, token);
  }

  async commit(lease: Lease, target: TargetState, opts: { republish?: boolean } = {}): Promise<CommitOutcome> {
    const own = asHostLease(lease);
    const args = [
      lease.token,
      target.ipv4 ?? '',
      target.ipv6 ?? '',
      target.wildcard ? '1' : '',
      target.mx ?? '',
      target.mx !== null && target.backmx ? '1' : '',
      flag(target.offline),
      flag(opts.republish ?? false),
      ...countUndo(own),
      own?.families ?? '46',
    ];
    const status = await storeCall('commit', () => this.scripts.commit(this.keys.host(lease.fqdn), this.keys.pendingChanges(), args));
    if (status === 'lost') {
      this.logger.warn('host lease ended before the commit: the change is not recorded, the stored state is published again', {
        host: lease.fqdn,
      });
      return 'lost';
    }
    if (status === 'gone') {
      this.logger.warn('host was removed while its update was in flight; DNS may still hold its records', {
        host: lease.fqdn,
      });
      return 'gone';
    }
    return 'committed';
  }

  async release(lease: Lease, opts: { republishInMs?: number; failedRepublish?: boolean; refused?: boolean } = {}): Promise<void> {
    const own = asHostLease(lease);
    // A failed republish is one the primary refused.
    const refused = opts.refused ?? opts.failedRepublish ?? false;
    await storeCall('release', () =>
      this.scripts.release(this.keys.host(lease.fqdn), this.keys.pendingChanges(), [
        lease.token,
        ...countUndo(own),
        opts.republishInMs === undefined ? '' : Math.max(0, Math.round(opts.republishInMs)),
        flag(opts.failedRepublish ?? false),
        (refused ? own?.takenOver : own?.families) ?? '46',
        flag(refused),
      ]),
    );
  }

  // Both on Redis's clock, as the leases are: a frontend whose clock runs ahead would
  // otherwise see leases in flight as ended.
  async postpone(fqdns: readonly string[], ms: number): Promise<void> {
    if (fqdns.length === 0) return;
    const hostKeys = fqdns.map((f) => this.keys.host(f));
    await storeCall('postpone', () => this.scripts.postpone(this.keys.pendingChanges(), Math.max(0, Math.round(ms)), hostKeys));
  }

  async staleLeases(limit: number): Promise<string[]> {
    const keys = (await storeCall('stale leases', () => this.scripts.stale(this.keys.pendingChanges(), limit))) as string[];
    return keys.map((k) => this.keys.fqdnOfHostKey(k)).filter((f): f is string => f !== undefined);
  }

  async reclaim(fqdn: string, leaseMs: number): Promise<Reclaimed | undefined> {
    const token = REPAIR_TOKEN_PREFIX + randomUUID();
    const reply = await storeCall('reclaim', () =>
      this.scripts.reclaim(this.keys.host(fqdn), this.keys.pendingChanges(), token, Math.max(1, Math.floor(leaseMs))),
    );
    if (!Array.isArray(reply) || reply[0] !== 'reclaimed') return undefined;
    const fields = fieldsFromFlat(reply[1] as unknown[]);
    const families = String(reply[2]);
    return {
      host: decodeHost(fqdn, fields),
      families: decodeFamilies(families),
      // No frequency bookkeeping: releasing this lease leaves the counters as they are.
      lease: new HostLease(fqdn, token, '', '', '-', '-', families, families),
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
    const keys = [this.keys.host(name), this.keys.account(account), this.keys.nestIndex(name)] as const;
    const above = between.map((b) => ({ name: b, keys: [this.keys.host(b), this.keys.nestIndex(b)] as const }));
    const reply = await storeCall('host add', () => this.scripts.hostAdd(keys, above, account, type, name));
    if (!Array.isArray(reply)) throw new Error(`unexpected host add reply: ${JSON.stringify(reply)}`);
    const [result, other, owner] = reply.map(String);
    if (result === 'noaccount') throw new NotFoundError(`no such account: ${account}`);
    if (result === 'exists') throw new ConflictError(`host ${name} already exists`);
    if (result === 'below' || result === 'above') throw new ConflictError(shadowingMessage(name, result, other!, owner!));
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
        for (const name of zone === undefined ? [] : namesBetween(fqdn, zone)) pipeline.hset(this.keys.nestIndex(name), fqdn, owner);
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
      const [next, keys] = await storeCall('host scan', () => this.redis.scan(cursor, 'MATCH', this.keys.hostScanPattern(), 'COUNT', SCAN_BATCH));
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

  async claim(fqdn: string, leaseMs: number): Promise<{ host: HostRecord; lease: Lease; repairDue: boolean } | 'busy' | undefined> {
    const name = lookupName(fqdn);
    const token = ADMIN_TOKEN_PREFIX + randomUUID();
    const reply = await storeCall('host claim', () =>
      this.scripts.hostClaim(this.keys.host(name), this.keys.pendingChanges(), token, Math.max(1, Math.floor(leaseMs))),
    );
    if (!Array.isArray(reply)) throw new Error(`unexpected claim reply: ${JSON.stringify(reply)}`);
    if (reply[0] === 'gone') return undefined;
    if (reply[0] === 'busy') return 'busy';
    // No frequency bookkeeping: releasing this lease leaves the counters as they are.
    return { host: decodeHost(name, fieldsFromFlat(reply[1] as unknown[])), lease: new HostLease(name, token, '', '', '-', '-', '46', String(reply[3])), repairDue: reply[2] === '1' };
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
      const hostKeys = [hostKey, this.keys.account(owner), this.keys.pendingChanges(), tokensKey] as const;
      const nestIndexes = ancestorsOf(name).map((a) => this.keys.nestIndex(a));
      const args = { owner, lease: lease?.token ?? '', fqdn: name };
      const result = await storeCall('host remove', () => this.scripts.hostRemove(hostKeys, nestIndexes, args, tokens));
      if (result === 'ok') return;
      if (result === 'gone') throw new NotFoundError(`no such host: ${name}`);
      if (result === 'lost') throw new ConflictError(`host ${name}: the claim on it ended before the removal (a slow Redis?); try again`);
    }
    throw new ConflictError(`host ${name} changed owner while being removed; try again`);
  }

  /** The host's tokens, each with the keys of its record and index (for the removal). */
  private async tokensOf(tokensKey: string): Promise<{ id: string; keys: readonly [string, string] }[]> {
    const ids = await storeCall('host tokens', () => this.redis.smembers(tokensKey));
    if (ids.length === 0) return [];
    const pipeline = this.redis.pipeline();
    for (const id of ids) pipeline.hget(this.keys.token(id), TOKEN_FIELDS.hash);
    const hashes = await execPipeline('host tokens', pipeline);
    // A record already gone leaves its index key to nobody: only the set entry goes.
    return ids.map((id, i) => ({ id, keys: [this.keys.token(id), this.keys.tokenIndex(String(hashes[i] ?? ''))] as const }));
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

  async setState(fqdn: string, state: 'active' | 'blocked' | 'closed'): Promise<void> {
    if (state !== 'active' && state !== 'blocked' && state !== 'closed') {
      throw new InvalidInputError(`cannot set host state '${String(state)}'`);
    }
    const name = lookupName(fqdn);
    const found = await storeCall('host state', () => this.scripts.hostSetState(this.keys.host(name), state));
    if (found !== 1) throw new NotFoundError(`no such host: ${name}`);
  }

  private admissionFromReply(fqdn: string, reply: unknown, token: string): Admission {
    if (!Array.isArray(reply) || typeof reply[0] !== 'string') {
      throw new Error(`unexpected admit reply: ${JSON.stringify(reply)}`);
    }
    const kind = reply[0];
    switch (kind) {
      case 'rejected': {
        const outcome = reply[1];
        if (!(ADMIT_REJECTIONS as readonly unknown[]).includes(outcome)) throw new Error(`unexpected admit rejection: ${String(outcome)}`);
        return { kind, outcome: outcome as AdmitRejection };
      }
      case 'busy':
      case 'nochg':
        return { kind };
      case 'refused': {
        const check = reply[1];
        if (check !== 'agent' && check !== 'login' && check !== 'stale') throw new Error(`unexpected guard check: ${String(check)}`);
        return { kind, check };
      }
      case 'change': {
        const fields = fieldsFromFlat(reply[1] as unknown[]);
        const families = String(reply[6]);
        return {
          kind,
          host: decodeHost(fqdn, fields),
          lease: new HostLease(fqdn, token, String(reply[2]), String(reply[3]), String(reply[4]), fields[HOST_FIELDS.lastRequest] ?? '', families, String(reply[7])),
          repairDue: reply[5] === '1',
          families: decodeFamilies(families),
        };
      }
      default:
        throw new Error(`unexpected admit reply kind: ${kind}`);
    }
  }
}

/** The keys of a token login's checks (TOKEN_CHECKS in lua.ts). */
export function tokenGuardKeys(keys: Keys, guard: TokenGuard): readonly [string, string, string, string] {
  return [
    keys.junkBlock(guard.sourceIp, guard.userAgent),
    keys.cooldownBySource(guard.sourceIp),
    keys.token(guard.token.id),
    keys.account(guard.token.account.name),
  ];
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

/**
 * The commit and release scripts' count-undo arguments (prevFl, prevFc, seq). Without our
 * bookkeeping (a foreign Lease object, a reclaimed lease) seq '-' matches nothing: no undo.
 */
function countUndo(own: HostLease | undefined): [string, string, string, string] {
  return [own?.previousLastRequest ?? '', own?.previousFrequentCount ?? '', own?.sequence ?? '-', own?.countedAt ?? '-'];
}

/** Operator input: normalised when it is a valid name, else taken as given (→ not found). */
function lookupName(fqdn: string): string {
  return normalizeHostname(fqdn) ?? fqdn.trim().toLowerCase();
}
