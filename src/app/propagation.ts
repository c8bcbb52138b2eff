/**
 * Following the secondaries (docs/operators.md, "Secondaries"): after each published UPDATE message the watcher asks
 * the zone's primary which serial it serves now (one SOA query, coalesced while one is in flight), then polls each
 * configured secondary's SOA until it serves that serial (RFC 1982, core/serial.ts), with back-off and a bound. It
 * runs beside the update path and never delays a reply. Between updates a periodic check keeps `up` and `behind`
 * true for alerts. Nothing runs for a zone without secondaries.
 */
import { serialReached, serialsBehind } from '../core/serial.js';
import type { Telemetry } from '../core/telemetry.js';

/** One secondary of a zone, as configured (`host:port`) or found from the zone's NS records (`auto`). */
export interface Secondary {
  /** `host:port`, the metrics' `secondary` label. */
  name: string;
  host: string;
  port: number;
}

/** SOA serials as servers serve them (src/dns/serials.ts); every method rejects when the server does not answer. */
export interface SerialProbe {
  primarySerial(zone: string): Promise<number>;
  secondarySerial(zone: string, secondary: Secondary): Promise<number>;
  /** The zone's secondaries now: the configured ones and, with `auto`, its NS names resolved through the primary. */
  secondaries(zone: string): Promise<readonly Secondary[]>;
}

/** What a waiting answer expects every secondary to serve at a name: this value among others, or exactly these. */
export type ServedExpectation = { includes: string } | { exactly: readonly string[] };

/**
 * Answers that wait for the secondaries (ACME TXT, `update.waitForSecondaries`): every secondary of the zone asked
 * directly for the record itself, not its serial. 'none': the zone has no secondaries; 'timeout': not all of them
 * served it within `timeoutMs`.
 */
export interface SecondaryWait {
  untilServed(
    zone: string,
    name: string,
    type: 'A' | 'AAAA' | 'TXT',
    expected: ServedExpectation,
    timeoutMs: number,
  ): Promise<'served' | 'timeout' | 'none'>;
}

/** What the watcher knows of one secondary. */
export interface SecondaryStatus {
  zone: string;
  secondary: string;
  /** It answered its last SOA query. */
  up: boolean;
  /** Its serial at that answer (null: never answered). */
  serial: number | null;
  /** The primary's serial it is compared with (null: the primary was not asked yet). */
  primarySerial: number | null;
  /** Serials behind the primary's (0: current). */
  behind: number;
  /** When it was last asked (ms). */
  checkedAt: number | null;
}

export interface PropagationTimings {
  /** First wait between polls of a secondary after an update; each wait is half again as long. */
  firstPollMs: number;
  maxPollMs: number;
  /** Past this, an update still not served is given up on (the periodic check goes on reporting it behind). */
  boundMs: number;
  /** The periodic check of every secondary, updates or not. */
  checkIntervalMs: number;
  /** One SOA query's time limit. */
  queryTimeoutMs: number;
}

export const PROPAGATION_TIMINGS: PropagationTimings = {
  firstPollMs: 100,
  maxPollMs: 2000,
  boundMs: 600_000,
  checkIntervalMs: 30_000,
  queryTimeoutMs: 2000,
};

/** Updates not yet seen on one secondary, oldest first: the serial each needs and when it was published. */
interface Target {
  serial: number;
  publishedAt: number;
}

/** Asks of the primary's serial after an update while it has not moved (50 ms, doubling: 1.55 s in all). */
const SERIAL_RETRIES = 6;

/** The targets one secondary holds at most; more drop the oldest (its propagation time is not observed). */
const MAX_TARGETS = 64;

class SecondaryWatch {
  readonly targets: Target[] = [];
  status: SecondaryStatus;
  polling = false;
  removed = false;

  constructor(
    zone: string,
    readonly secondary: Secondary,
  ) {
    this.status = {
      zone,
      secondary: secondary.name,
      up: false,
      serial: null,
      primarySerial: null,
      behind: 0,
      checkedAt: null,
    };
  }
}

export class PropagationWatcher {
  private readonly watches = new Map<string, Map<string, SecondaryWatch>>();
  private readonly primaryQuery = new Map<string, { inFlight: boolean; again: number | undefined }>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly lastPrimarySerial = new Map<string, number>();
  private periodic: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly zones: readonly string[],
    private readonly probe: SerialProbe,
    private readonly telemetry: Pick<Telemetry, 'secondaryPropagated' | 'secondaryState' | 'secondaryRemoved'>,
    private readonly timings: PropagationTimings = PROPAGATION_TIMINGS,
    private readonly now: () => number = Date.now,
  ) {}

  /** Start the periodic check (the first one at once). */
  start(): void {
    const tick = (): void => {
      if (this.stopped) return;
      void this.checkAll()
        .catch(() => undefined)
        .finally(() => {
          if (!this.stopped) this.periodic = setTimeout(tick, this.timings.checkIntervalMs).unref();
        });
    };
    tick();
  }

  stop(): void {
    this.stopped = true;
    if (this.periodic) clearTimeout(this.periodic);
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }

  /** An UPDATE message to `zone`'s primary was applied: follow it to the secondaries. Never throws, never waits. */
  published(zone: string): void {
    if (this.stopped || !this.zones.includes(zone)) return;
    const at = this.now();
    const q = this.primaryQuery.get(zone) ?? { inFlight: false, again: undefined };
    this.primaryQuery.set(zone, q);
    // One SOA query at a time per zone: messages published meanwhile share the next one (their earliest time).
    if (q.inFlight) {
      q.again ??= at;
      return;
    }
    void this.followPrimary(zone, at, q).catch(() => undefined);
  }

  /** What the watcher knows of every secondary, by zone then name. */
  statuses(): SecondaryStatus[] {
    return [...this.watches.values()].flatMap((m) => [...m.values()].map((w) => ({ ...w.status })));
  }

  /** Ask every secondary of every zone now, beside the primary (the periodic check; `check` calls it once). */
  async checkAll(): Promise<SecondaryStatus[]> {
    await Promise.all(
      this.zones.map(async (zone) => {
        const watches = await this.watchesOf(zone);
        if (watches.length === 0) return;
        const primary = await this.probe.primarySerial(zone).catch(() => undefined);
        if (primary !== undefined) this.lastPrimarySerial.set(zone, primary);
        await Promise.all(watches.map((w) => this.ask(w, primary)));
      }),
    );
    return this.statuses();
  }

  private async followPrimary(zone: string, at: number, q: { inFlight: boolean; again: number | undefined }) {
    q.inFlight = true;
    try {
      const watches = await this.watchesOf(zone);
      if (watches.length === 0) return;
      const serial = await this.servedAfterUpdate(zone);
      // The primary does not answer a query a moment after it applied an update: the periodic check will tell.
      if (serial === undefined || this.stopped) return;
      this.lastPrimarySerial.set(zone, serial);
      for (const w of watches) {
        w.status.primarySerial = serial;
        const last = w.targets.at(-1);
        if (last === undefined || last.serial !== serial) w.targets.push({ serial, publishedAt: at });
        if (w.targets.length > MAX_TARGETS) w.targets.shift();
        if (!w.polling) void this.poll(w, this.timings.firstPollMs).catch(() => undefined);
      }
    } finally {
      q.inFlight = false;
      const again = q.again;
      q.again = undefined;
      if (again !== undefined && !this.stopped) void this.followPrimary(zone, again, q).catch(() => undefined);
    }
  }

  /**
   * The serial the primary serves after an update. A primary that signs inline (BIND) serves the signed zone's new
   * serial a moment after it answered the UPDATE: while it still serves the last serial seen, ask again (bounded).
   */
  private async servedAfterUpdate(zone: string): Promise<number | undefined> {
    const last = this.lastPrimarySerial.get(zone);
    let serial: number | undefined;
    for (let i = 0, wait = 50; i < SERIAL_RETRIES; i++, wait *= 2) {
      serial = await this.probe.primarySerial(zone).catch(() => undefined);
      if (serial === undefined || last === undefined || serial !== last || this.stopped) return serial;
      await this.sleep(wait);
    }
    return serial;
  }

  /** Poll one secondary until it serves every target, waiting `waitMs` (growing) between polls, within the bound. */
  private async poll(w: SecondaryWatch, waitMs: number): Promise<void> {
    w.polling = true;
    try {
      while (w.targets.length > 0 && !this.stopped) {
        await this.ask(w, w.status.primarySerial ?? undefined);
        if (w.targets.length === 0 || this.stopped) return;
        // Given up on: the periodic check keeps reporting it behind (or down) for the alerts.
        if (this.now() - w.targets[0]!.publishedAt > this.timings.boundMs) {
          w.targets.length = 0;
          return;
        }
        await this.sleep(waitMs);
        waitMs = Math.min(this.timings.maxPollMs, Math.round(waitMs * 1.5));
      }
    } finally {
      w.polling = false;
    }
  }

  /** One SOA query to a secondary: its status, and the targets it has reached (their propagation times observed). */
  private async ask(w: SecondaryWatch, primarySerial: number | undefined): Promise<void> {
    const { zone } = w.status;
    let served: number | undefined;
    try {
      served = await this.probe.secondarySerial(zone, w.secondary);
    } catch {
      served = undefined;
    }
    const at = this.now();
    if (primarySerial !== undefined) w.status.primarySerial = primarySerial;
    w.status.checkedAt = at;
    w.status.up = served !== undefined;
    if (served !== undefined) {
      w.status.serial = served;
      while (w.targets.length > 0 && serialReached(served, w.targets[0]!.serial)) {
        const t = w.targets.shift()!;
        this.telemetry.secondaryPropagated(zone, w.secondary.name, Math.max(0, at - t.publishedAt) / 1000);
      }
    }
    const reference = w.status.primarySerial;
    w.status.behind = reference === null || w.status.serial === null ? 0 : serialsBehind(w.status.serial, reference);
    if (w.removed) return;
    this.telemetry.secondaryState(zone, w.secondary.name, w.status.up, w.status.behind, w.status.serial);
  }

  private async watchesOf(zone: string): Promise<SecondaryWatch[]> {
    const secondaries = await this.probe.secondaries(zone).catch(() => undefined);
    let byName = this.watches.get(zone);
    if (byName === undefined) {
      byName = new Map();
      this.watches.set(zone, byName);
    }
    if (secondaries !== undefined) {
      const names = new Set(secondaries.map((s) => s.name));
      for (const [name, w] of byName) {
        if (names.has(name)) continue;
        // No longer a secondary (auto): its polls stop and its series go, so no alert stays on for it.
        w.removed = true;
        w.targets.length = 0;
        byName.delete(name);
        this.telemetry.secondaryRemoved(zone, name);
      }
      for (const s of secondaries) if (!byName.has(s.name)) byName.set(s.name, new SecondaryWatch(zone, s));
    }
    return [...byName.values()];
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.timers.delete(t);
        resolve();
      }, ms);
      t.unref();
      this.timers.add(t);
    });
  }
}
