/**
 * The hosts' ACME TXT sets in Redis (docs/protocol.md, "ACME TXT records"): admitted and recorded under the host's
 * lease, one Lua call each (scripts/txt.ts); the lease is released by the host store's release.
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { CommitOutcome, Lease } from '../app/ports.js';
import type { TxtAdmission, TxtAdmitRequest, TxtGate } from '../app/txt.js';
import type { Logger } from '../core/log.js';
import { decodeFamilies, decodeHost } from './codec.js';
import { HostLease, tokenGuardKeys } from './host-store.js';
import { Keys } from './keys.js';
import type { ReplicaWaiter } from './replica-wait.js';
import { runScript } from './script.js';
import { abandonerOf, takingLease } from './abandon.js';
import { NO_COUNT_UNDO } from './scripts/lease.js';
import { TXT_ADMIT, TXT_ADMIT_GUARDED, TXT_ADMIT_TOKEN, TXT_COMMIT, type TxtAdmitReply } from './scripts/txt.js';

export class RedisTxtStore implements TxtGate {
  /** The connection of the writes a client is told about (as the host store's). */
  private readonly writes: Redis;

  constructor(
    redis: Redis,
    private readonly keys: Keys,
    private readonly logger: Logger,
    private readonly replicas?: { writes: Redis; waiter: ReplicaWaiter },
  ) {
    this.writes = replicas?.writes ?? redis;
  }

  async admitTxt(req: TxtAdmitRequest): Promise<TxtAdmission> {
    const args = {
      account: req.account,
      op: req.ask.op,
      value: req.ask.op === 'clear' ? '' : req.ask.value,
      keep: req.keep,
      limit: req.limit,
      windowMs: req.windowMs,
      leaseMs: req.leaseMs,
      leaseToken: randomUUID(),
    };
    const lease = { host: this.keys.host(req.fqdn), pending: this.keys.pendingChanges() };
    const { guard } = req;
    // A failure ends the lease it may still take once Redis answers (abandon.ts).
    const reply: TxtAdmitReply = await takingLease(abandonerOf(this.writes), lease, args.leaseToken, () => {
      if (guard === undefined) return runScript(this.writes, TXT_ADMIT, lease, args, 'txt admit');
      if ('token' in guard) {
        const keys = tokenGuardKeys(this.keys, guard, req.fqdn);
        const tokenArgs = { ...args, tokenHash: guard.token.hash, donator: guard.token.account.donator };
        return runScript(this.writes, TXT_ADMIT_TOKEN, keys, tokenArgs, 'txt admit');
      }
      const { account, hashDigest } = guard.login;
      const keys = {
        ...lease,
        junkBlock: this.keys.junkBlock(guard.sourceIp, guard.userAgent),
        sourceCooldown: this.keys.cooldownBySource(guard.sourceIp),
        accountCooldown: this.keys.cooldownByAccount(account.name),
        account: this.keys.account(account.name),
      };
      const guarded = { ...args, hashDigest, donator: account.donator, passwordOnly: guard.passwordOnly ?? false };
      return runScript(this.writes, TXT_ADMIT_GUARDED, keys, guarded, 'txt admit');
    });
    // nochg says the set is stored: it may be a change whose WAIT failed (911) and is retried.
    if (reply.kind === 'nochg') await this.replicas?.waiter.replicated('txt admit');
    if (reply.kind !== 'change') return reply;
    return {
      kind: 'change',
      host: decodeHost(req.fqdn, reply.host),
      // No frequency bookkeeping to undo: the TXT rate rule counts every admitted request.
      lease: new HostLease(req.fqdn, args.leaseToken, NO_COUNT_UNDO, reply.takenOver, reply.takenOver),
      values: reply.values,
      repairDue: reply.repairDue,
      families: decodeFamilies(reply.takenOver),
    };
  }

  async commitTxt(lease: Lease, values: readonly string[]): Promise<CommitOutcome> {
    const families = lease instanceof HostLease ? lease.families : '46';
    const keys = { host: this.keys.host(lease.fqdn), pending: this.keys.pendingChanges() };
    const abandoner = abandonerOf(this.writes);
    const sentOn = abandoner.connection();
    let status: 'ok' | 'lost' | 'gone';
    try {
      status = await runScript(this.writes, TXT_COMMIT, keys, { token: lease.token, values, families }, 'txt commit');
    } catch (err) {
      // As the host store's commit: the lease ends now, unless the commit ran first (abandon.ts).
      abandoner.abandon({ ...keys, token: lease.token }, sentOn, false, err);
      throw err;
    }
    if (status === 'lost') {
      this.logger.warn('host lease ended before the TXT commit: the stored state is published again', {
        host: lease.fqdn,
      });
      return 'lost';
    }
    if (status === 'gone') return 'gone';
    await this.replicas?.waiter.replicated('txt commit');
    return 'committed';
  }
}
