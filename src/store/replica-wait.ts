/**
 * redis.waitReplicas (docs/operators.md, "Redis failover"): a change is acknowledged only once
 * the replicas hold it. WAIT blocks the connection it is sent on (Redis reads nothing more of that
 * client until it returns), so the writes it must cover and the WAIT itself go over a connection
 * of their own, and one WAIT at a time covers every write answered before it was sent: under load
 * many changes share one WAIT, and nothing else waits behind a replica that is slow or gone.
 */
import type { Redis } from 'ioredis';
import { NotReplicatedError } from '../core/errors.js';
import { storeCall, type ReplicaWait } from './redis.js';

interface Round {
  /** The writes answered before this WAIT was sent: it covers them. */
  upTo: number;
  acked: number;
}

export class ReplicaWaiter {
  /** Writes on `redis` whose reply has arrived, counted. */
  private answered = 0;
  /** Writes known to have reached enough replicas. */
  private covered = 0;
  private current: Promise<Round> | undefined;

  constructor(
    /** The connection the writes were made on (WAIT covers only that client's writes). */
    private readonly redis: Redis,
    private readonly wait: ReplicaWait,
  ) {}

  /**
   * Resolves once a write on the connection, whose reply has just arrived, reached
   * `wait.replicas` replicas; StoreUnavailableError (911) when a WAIT that covers it saw fewer
   * within its time. The write itself stays on the primary: the client's retry finds it.
   */
  async replicated(operation: string): Promise<void> {
    const seq = ++this.answered;
    for (;;) {
      if (this.covered >= seq) return;
      // A WAIT sent before this write's reply arrived may not cover it: the next one does.
      const { upTo, acked } = await (this.current ?? this.start());
      if (upTo < seq) continue;
      if (acked < this.wait.replicas) {
        throw new NotReplicatedError(
          `redis: ${operation}: ${acked} of ${this.wait.replicas} replicas acknowledged the write within ${this.wait.timeoutMs} ms`,
        );
      }
      return;
    }
  }

  /**
   * The next WAIT, sent at the end of this turn: every update answered in the turn shares it
   * (it covers the writes answered before it is sent).
   */
  private start(): Promise<Round> {
    const round = new Promise<void>((resolve) => setImmediate(resolve)).then(async () => {
      const upTo = this.answered;
      const acked = await storeCall('wait for replicas', () =>
        this.redis.wait(this.wait.replicas, this.wait.timeoutMs),
      );
      if (acked >= this.wait.replicas) this.covered = Math.max(this.covered, upTo);
      return { upTo, acked };
    });
    this.current = round;
    const done = () => {
      if (this.current === round) this.current = undefined;
    };
    round.then(done, done);
    return round;
  }
}
