/**
 * The ACME TXT use case (docs/protocol.md, "ACME TXT records"): one host's TXT set at `_acme-challenge.<host>`,
 * changed under the host's lease like an address change — admission (host checks, the TXT rate rule, the login's
 * checks in the same atomic step) → DNS (a TSIG-signed UPDATE of that set alone) → commit. The update path calls it
 * for a request with `txt=` or `clear=`; the ACME client APIs (lego httpreq, acme-dns) are that same request.
 */
import { DnsUpdateError, NotReplicatedError } from '../core/errors.js';
import type { Logger } from '../core/log.js';
import { outcomeOfError, type HostOutcome } from '../core/outcomes.js';
import { acmeNameOf, TXT_VALUES_KEPT, type TxtAsk } from '../core/txt.js';
import { familiesToLeave, pickDns, type AddressFamilies, type HostRecord } from '../core/types.js';
import type { Telemetry } from '../core/telemetry.js';
import type { SecondaryWait } from './propagation.js';
import type {
  AccountView,
  AdmitGuard,
  AdmitRejection,
  CommitOutcome,
  GuardCheck,
  HostChange,
  HostGate,
  Lease,
  Publisher,
} from './ports.js';

/** The TXT rate rule: at most `txtLimit` TXT requests per host in `txtWindowMs` (frequency.txtLimit, txtWindow). */
export interface TxtSettings {
  txtLimit: number;
  txtWindowMs: number;
  /** How long a set waits for the secondaries to serve its value (acme.propagationTimeout). */
  propagationTimeoutMs: number;
}

export interface TxtAdmitRequest {
  fqdn: string;
  account: string;
  ask: Exclude<TxtAsk, { op: 'invalid' }>;
  /** Values kept at most (TXT_VALUES_KEPT). */
  keep: number;
  limit: number;
  windowMs: number;
  leaseMs: number;
  guard?: AdmitGuard;
}

export type TxtAdmission =
  | { kind: 'rejected'; outcome: AdmitRejection }
  | { kind: 'refused'; check: GuardCheck }
  | { kind: 'busy' }
  | { kind: 'nochg' }
  /**
   * The caller holds the host's lease until commitTxt() or HostGate.release(). values: the set to publish, oldest
   * first. repairDue: the lease taken over had expired, so the stored state is published with the set (families:
   * those the interrupted change wrote).
   */
  | { kind: 'change'; host: HostRecord; lease: Lease; values: string[]; repairDue: boolean; families: AddressFamilies };

/** The host's TXT set in the store: admitted and recorded under the host's lease (released with HostGate.release). */
export interface TxtGate {
  admitTxt(req: TxtAdmitRequest): Promise<TxtAdmission>;
  /** Record the published set and drop the lease: as HostGate.commit. */
  commitTxt(lease: Lease, values: readonly string[]): Promise<CommitOutcome>;
}

export interface TxtServiceDeps {
  txt: TxtGate;
  hosts: Pick<HostGate, 'release'>;
  publisher: Publisher;
  /** Read on every request: a reload changes it in place. */
  settings: TxtSettings;
  leaseMs: number;
  /** The longest a request waits for another change of the same host. */
  maxBusyWaitMs: number;
  logger: Logger;
  sleep?: (ms: number) => Promise<void>;
  /** The zones' secondaries (app/propagation.ts): a set answers once they all serve its value. Absent: no wait. */
  secondaries?: SecondaryWait;
  /** Each wait for the secondaries: served, or given up at the bound. */
  telemetry?: Pick<Telemetry, 'secondaryWait'>;
}

/** The store failed, or the lease was lost or held too long: the update path answers 911. */
export class TxtFault extends Error {}

/** One host's line: the outcome, and the value shown after good / nochg. */
export interface TxtLine {
  outcome: HostOutcome;
  addresses?: string;
}

const defaultSleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export class TxtService {
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(private readonly deps: TxtServiceDeps) {
    this.sleep = deps.sleep ?? defaultSleep;
  }

  /**
   * Change the TXT set of `fqdn` (in `zone`) as `ask` says, for `account` after the login checks of `guard`.
   * `{ refused }`: a login check failed at the admission (the caller refuses the whole request).
   */
  async change(
    fqdn: string,
    zone: string,
    account: AccountView,
    ask: TxtAsk,
    guard?: AdmitGuard,
    opts: { waitForSecondaries?: boolean } = {},
  ): Promise<TxtLine | { refused: GuardCheck }> {
    const line = await this.changeNow(fqdn, zone, account, ask, guard);
    // A value an ACME server is about to ask any nameserver of the zone for: answered once every secondary serves it
    // (docs/operators.md, "Secondaries"). Clearing does not wait; a nochg may be a client asking again too early.
    const served = 'outcome' in line && (line.outcome === 'changed' || line.outcome === 'unchanged');
    if (served && ask.op === 'set' && opts.waitForSecondaries !== false) await this.untilServed(fqdn, zone, ask.value);
    return line;
  }

  private async untilServed(fqdn: string, zone: string, value: string): Promise<void> {
    const wait = this.deps.secondaries;
    const name = acmeNameOf(fqdn);
    if (wait === undefined || name === undefined) return;
    const started = Date.now();
    const timeoutMs = this.deps.settings.propagationTimeoutMs;
    const outcome = await wait.untilServed(zone, name, 'TXT', { includes: value }, timeoutMs);
    if (outcome === 'none') return;
    this.deps.telemetry?.secondaryWait(zone, outcome, (Date.now() - started) / 1000);
    if (outcome === 'timeout')
      this.deps.logger.warn('a secondary did not serve the ACME TXT value in time: answered anyway', {
        fqdn,
        zone,
        timeoutMs,
      });
  }

  private async changeNow(
    fqdn: string,
    zone: string,
    account: AccountView,
    ask: TxtAsk,
    guard?: AdmitGuard,
  ): Promise<TxtLine | { refused: GuardCheck }> {
    // The update path answers an invalid value before (badsys, with the other parameter checks).
    if (ask.op === 'invalid') return { outcome: 'not-dynamic' };
    // No room for the label in front of the name: no such challenge name can exist.
    if (acmeNameOf(fqdn) === undefined) return { outcome: 'invalid-name' };
    const { settings, leaseMs } = this.deps;
    const admission = await this.admit({
      fqdn,
      account: account.name,
      ask,
      keep: TXT_VALUES_KEPT,
      limit: settings.txtLimit,
      windowMs: settings.txtWindowMs,
      leaseMs,
      ...(guard === undefined ? {} : { guard }),
    });
    if (admission.kind === 'refused') return { refused: admission.check };
    if (admission.kind === 'rejected') return { outcome: admission.outcome };
    const shown = ask.op === 'clear' ? '' : ask.value;
    if (admission.kind === 'nochg') return { outcome: 'unchanged', addresses: shown };

    const { host, lease, values } = admission;
    const target = { ...pickDns(host), offline: host.state === 'offline' };
    // The set alone; taking over an interrupted change, the stored state too (as the reconciler would publish it).
    const change: HostChange = admission.repairDue
      ? { fqdn, zone, previous: host, target, leave: familiesToLeave(host, admission.families), txt: values }
      : { fqdn, zone, previous: host, target, txt: values, txtOnly: true };
    try {
      await this.deps.publisher.publish(change);
    } catch (err) {
      // As an address change (app/update.ts): what may still be applied is published again from the store.
      const maybeApplied = err instanceof DnsUpdateError && err.maybeApplied;
      const republish = maybeApplied
        ? { republishInMs: 0 }
        : admission.repairDue
          ? { republishInMs: leaseMs, refused: true }
          : {};
      await this.deps.hosts.release(lease, republish).catch((releaseErr: unknown) => {
        throw new TxtFault(`release failed: ${(releaseErr as Error).message}`);
      });
      if (outcomeOfError(err) === 'dns-failed') return { outcome: 'dns-failed' };
      throw err;
    }
    let committed: CommitOutcome;
    try {
      committed = await this.deps.txt.commitTxt(lease, values);
    } catch (err) {
      if (err instanceof NotReplicatedError) throw new TxtFault('txt commit not replicated');
      this.deps.logger.error('published a TXT set but could not record it', { fqdn, error: (err as Error).message });
      throw new TxtFault('txt commit failed');
    }
    if (committed === 'lost') throw new TxtFault(`lease on ${fqdn} ended before the TXT commit`);
    if (committed === 'gone') {
      // Removed while the change was on its way: take the set away again.
      await this.deps.publisher
        .publish({ fqdn, zone, previous: host, target, txt: [], txtOnly: true })
        .catch((err: unknown) =>
          this.deps.logger.error('could not delete the TXT records of a removed host', {
            fqdn,
            error: (err as Error).message,
          }),
        );
      return { outcome: 'unknown-host' };
    }
    return { outcome: 'changed', addresses: shown };
  }

  private async admit(req: TxtAdmitRequest): Promise<Exclude<TxtAdmission, { kind: 'busy' }>> {
    const deadline = Date.now() + Math.min(req.leaseMs, this.deps.maxBusyWaitMs);
    for (let attempt = 0; ; attempt++) {
      const admission = await this.deps.txt.admitTxt(req);
      if (admission.kind !== 'busy') return admission;
      if (Date.now() > deadline) throw new TxtFault(`host ${req.fqdn} stayed busy`);
      await this.sleep(Math.min(2 + attempt * 2, 25) + Math.random() * 3);
    }
  }
}
