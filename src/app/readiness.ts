/**
 * Whether this frontend should get traffic (`GET /readyz`): Redis answers now, and every zone's
 * primary answered a signed probe within the DNS timeout in the last READY_WINDOW_MS. Zones
 * are probed in the background every PROBE_INTERVAL_MS, so a load balancer's check costs one
 * Redis PING and no DNS (docs/operators.md, "Health and readiness").
 */
import type { Logger } from '../core/log.js';
import type { SecondaryStatus } from './propagation.js';

/** A zone is ready while its last answered probe is at most this old. */
export const READY_WINDOW_MS = 30_000;
/** How often each zone's primary is probed: three chances per window. */
export const PROBE_INTERVAL_MS = 10_000;

export interface ReadinessDeps {
  /** Round trip to Redis; throws when it does not answer. */
  pingStore(): Promise<void>;
  zones: readonly string[];
  /** One signed probe of the zone's primary: resolves ok or with the reason it failed. */
  probeZone(zone: string): Promise<{ ok: true } | { ok: false; reason: string }>;
  /** The DNS timeout: a probe that takes longer does not count. */
  timeoutMs: number;
  /**
   * The zones' secondaries asked once (app/propagation.ts), with each probe round: reported, never a failed check
   * (a lagging secondary must not take the update service out of its load balancer).
   */
  secondaries?: () => Promise<SecondaryStatus[]>;
  logger: Logger;
  now?: () => number;
}

export interface CheckResult {
  ok: boolean;
  /** Why not, when not. */
  reason?: string;
  /** When the zone's primary last answered a probe (ISO time), if ever. */
  lastAnswered?: string;
}

export interface ReadinessReport {
  ready: boolean;
  /** The names of the checks that failed: `redis`, `zone <name>`. */
  failed: string[];
  checks: Record<string, CheckResult>;
  /** The secondaries as the last round found them (docs/operators.md, "Secondaries"); they do not decide `ready`. */
  secondaries?: { zone: string; secondary: string; up: boolean; serial: number | null; behind: number }[];
  /** Secondaries silent or behind, one sentence each. */
  warnings?: string[];
}

export class ReadinessMonitor {
  private readonly lastAnswered = new Map<string, number>();
  private readonly lastFailure = new Map<string, string>();
  private timer: NodeJS.Timeout | undefined;
  private round: Promise<void> = Promise.resolve();
  private readonly now: () => number;
  /** Whether the last report found Redis failing (its change of state is logged). */
  private redisFailing = false;

  constructor(private readonly deps: ReadinessDeps) {
    this.now = deps.now ?? Date.now;
  }

  /** Probe at once, then every PROBE_INTERVAL_MS. */
  start(intervalMs = PROBE_INTERVAL_MS): void {
    const run = () => {
      this.round = this.probeAll();
    };
    run();
    this.timer = setInterval(run, intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.round;
  }

  async probeAll(): Promise<void> {
    const secondaries = this.deps.secondaries?.().then(
      (s) => {
        this.secondaryStatuses = s;
      },
      () => undefined,
    );
    await Promise.all([...this.deps.zones.map((zone) => this.probe(zone)), secondaries]);
  }

  private secondaryStatuses: SecondaryStatus[] | undefined;

  private async probe(zone: string): Promise<void> {
    const started = this.now();
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<{ ok: false; reason: string }>((resolve) => {
      timer = setTimeout(
        () => resolve({ ok: false, reason: `no answer within ${this.deps.timeoutMs} ms` }),
        this.deps.timeoutMs,
      );
    });
    const result = await Promise.race([
      this.deps.probeZone(zone).catch((err: unknown) => ({ ok: false as const, reason: (err as Error).message })),
      late,
    ]);
    clearTimeout(timer);
    if (result.ok) {
      this.lastAnswered.set(zone, started);
      if (this.lastFailure.has(zone)) this.deps.logger.info('readiness probe answered again', { zone });
      this.lastFailure.delete(zone);
    } else {
      if (this.lastFailure.get(zone) !== result.reason)
        this.deps.logger.warn('readiness probe failed', { zone, reason: result.reason });
      this.lastFailure.set(zone, result.reason);
    }
  }

  async report(): Promise<ReadinessReport> {
    const checks: Record<string, CheckResult> = {};
    try {
      await this.deps.pingStore();
      checks.redis = { ok: true };
      if (this.redisFailing) this.deps.logger.info('readiness check passed again', { check: 'redis' });
      this.redisFailing = false;
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      checks.redis = { ok: false, reason };
      // Once per change, not per probe: a load balancer asks every few seconds.
      if (!this.redisFailing) this.deps.logger.warn('readiness check failed', { check: 'redis', reason });
      this.redisFailing = true;
    }
    const now = this.now();
    for (const zone of this.deps.zones) {
      const at = this.lastAnswered.get(zone);
      const fresh = at !== undefined && now - at <= READY_WINDOW_MS;
      const lastAnswered = at === undefined ? {} : { lastAnswered: new Date(at).toISOString() };
      checks[`zone ${zone}`] = fresh
        ? { ok: true, ...lastAnswered }
        : {
            ok: false,
            reason: `no signed answer from the primary in the last ${READY_WINDOW_MS / 1000} s${
              this.lastFailure.has(zone) ? `: ${this.lastFailure.get(zone)}` : ''
            }`,
            ...lastAnswered,
          };
    }
    const failed = Object.entries(checks)
      .filter(([, c]) => !c.ok)
      .map(([name]) => name);
    const report: ReadinessReport = { ready: failed.length === 0, failed, checks };
    if (this.secondaryStatuses !== undefined) {
      report.secondaries = this.secondaryStatuses.map(({ zone, secondary, up, serial, behind }) => ({
        zone,
        secondary,
        up,
        serial,
        behind,
      }));
      report.warnings = this.secondaryStatuses
        .filter((s) => !s.up || s.behind > 0)
        .map((s) =>
          s.up
            ? `zone ${s.zone} secondary ${s.secondary} is ${s.behind} serial(s) behind the primary`
            : `zone ${s.zone} secondary ${s.secondary} does not answer`,
        );
    }
    return report;
  }
}
