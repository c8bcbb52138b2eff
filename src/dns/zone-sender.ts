/**
 * Per-zone sender: a queue of host plans sent as signed UPDATEs over one TCP transport.
 *
 * Group commit: a free message slot takes the queue's head at once (idle → sent alone);
 * while every slot is busy, plans queue up and the next free slot sends up to
 * `maxHostsPerMessage` of them (and ~`maxMessageBytes`) in one message. When a
 * multi-host message fails, its hosts are retried one by one (a prerequisite failure of
 * one host, or Knot 3.2 failing a whole merged batch with SERVFAIL, must not fail the
 * others). A single host gets one retry on a retryable failure; everything for a host
 * happens within `dns.timeoutMs` of its `send()`.
 */
import { performance } from 'node:perf_hooks';
import type { Config, ZoneConfig } from '../config/schema.js';
import type { DnsUpdateError } from '../core/errors.js';
import { NO_TELEMETRY, type Telemetry } from '../core/telemetry.js';
import type { HostPlan } from './plan.js';
import { connectionFailure, protocolFailure, RCODE_NAMES, timeoutFailure, TsigErrorAnswer } from './rcode.js';
import { asDnsUpdateError, signedExchange, type SigningContext } from './signed-exchange.js';
import { TcpTransport } from './transport.js';
import { encodeUpdate, encodedLength } from '../core/dns-wire.js';

export interface ZoneSenderOptions {
  /** Seconds since the epoch (before dns.clockOffsetSeconds); tests inject one. */
  clock?: () => number;
  /** Hosts per UPDATE message at most (default 50). */
  maxHostsPerMessage?: number;
  /** Prerequisite + update bytes per message at most, unless one host alone needs more (default 16 KiB). */
  maxMessageBytes?: number;
  /** Each UPDATE message's outcome, time and hosts; messages in flight and changes queued. */
  telemetry?: Telemetry;
  /** Each message the primary applied (NOERROR), once: the propagation watcher follows it (app/propagation.ts). */
  onApplied?: (zone: string) => void;
}

export const DEFAULT_MAX_HOSTS_PER_MESSAGE = 50;
export const DEFAULT_MAX_MESSAGE_BYTES = 16 * 1024;

/** How long after an answer signed with our key a BADKEY is taken as a per-name denial. */
const KEY_ACCEPTED_MS = 60_000;

/** Below this much time left a retry is not worth starting. */
const MIN_ATTEMPT_MS = 5;

interface PendingHost {
  plan: HostPlan;
  /** Encoded size of its prerequisites and updates. */
  size: number;
  /** performance.now() by which the host must be settled. */
  deadline: number;
  retriesLeft: number;
  /** Sent alone from now on (it was in a failed multi-host message, or is being retried). */
  solo: boolean;
  /** Its message goes out with no other in flight (a retry after a SERVFAIL). */
  alone: boolean;
  /** Part of a message that is out now. */
  inFlight: boolean;
  /** An earlier attempt's outcome is unknown: the primary may apply it yet. */
  maybeApplied: boolean;
  /** Queued by one sendGroup: its first message holds the whole group (a parent and the hosts that follow it). */
  group?: number;
  settled: boolean;
  timer: NodeJS.Timeout;
  resolve(): void;
  reject(err: DnsUpdateError): void;
}

/** Statistics for tests and the benchmark. */
export interface ZoneSenderStats {
  messagesSent: number;
  hostsSent: number;
  largestMessageHosts: number;
}

export class ZoneSender {
  readonly zone: ZoneConfig;
  private readonly dns: Config['dns'];
  private readonly transport: TcpTransport;
  private readonly signing: SigningContext;
  private readonly maxHosts: number;
  private readonly maxBytes: number;
  /** Messages in flight at most: the zone's own setting, else dns.maxInFlight. */
  private readonly maxInFlight: number;
  /** Invariant: every solo host precedes every batchable one (solos are requeued at the front). */
  private readonly queue: PendingHost[] = [];
  private readonly outstanding = new Set<Promise<void>>();
  private messagesInFlight = 0;
  /** A message that must go alone is out: nothing else goes until it is answered (see pump). */
  private aloneInFlight = false;
  /** performance.now() of the last answer signed with our key (NOERROR or an error RCODE). */
  private keyAcceptedAt: number | undefined;
  /** performance.now() of the last timeout or lost connection, cleared by any answer. */
  private lastUnreachableAt: number | undefined;
  private closed = false;
  /** The last sendGroup's number. */
  private groups = 0;
  private readonly telemetry: Telemetry;
  private readonly onApplied: ((zone: string) => void) | undefined;
  readonly stats: ZoneSenderStats = { messagesSent: 0, hostsSent: 0, largestMessageHosts: 0 };

  constructor(zone: ZoneConfig, dns: Config['dns'], opts: ZoneSenderOptions = {}) {
    this.zone = zone;
    this.dns = dns;
    const clock = opts.clock ?? (() => Date.now() / 1000);
    this.signing = { zone, fudge: dns.fudge, now: () => clock() + dns.clockOffsetSeconds };
    this.maxHosts = opts.maxHostsPerMessage ?? DEFAULT_MAX_HOSTS_PER_MESSAGE;
    this.maxBytes = opts.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
    this.maxInFlight = Math.max(1, zone.maxInFlight ?? dns.maxInFlight);
    this.telemetry = opts.telemetry ?? NO_TELEMETRY;
    this.onApplied = opts.onApplied;
    this.telemetry.sample('dns_messages_in_flight', { zone: zone.name }, () => this.messagesInFlight);
    this.telemetry.sample('dns_changes_queued', { zone: zone.name }, () => this.queue.filter((h) => !h.settled).length);
    this.transport = new TcpTransport({
      zone: zone.name,
      host: zone.primary.host,
      port: zone.primary.port,
      maxInFlight: this.maxInFlight,
      connectTimeoutMs: dns.timeoutMs,
    });
  }

  /** Resolves once the primary applied the plan (NOERROR, valid TSIG); else DnsUpdateError. */
  send(plan: HostPlan): Promise<void> {
    const promise = this.enqueue(plan);
    this.pump();
    return promise;
  }

  /**
   * Several hosts' plans in one message (more than maxHostsPerMessage or maxMessageBytes if need be), each settling as
   * send's: when that message fails, each host is tried on its own, as in any multi-host message.
   */
  sendGroup(plans: readonly HostPlan[]): Promise<void>[] {
    const group = ++this.groups;
    const promises = plans.map((plan) => this.enqueue(plan, group));
    this.pump();
    return promises;
  }

  private enqueue(plan: HostPlan, group?: number): Promise<void> {
    if (this.closed) return Promise.reject(connectionFailure(this.zone.name, 'sender is closed'));
    let size: number;
    try {
      size = encodedLength(this.zone.name, plan.prerequisites, plan.updates);
    } catch (err) {
      // Not representable in DNS (a wildcard of a 252-character name): this host fails, nothing is sent.
      return Promise.reject(
        protocolFailure(this.zone.name, `cannot encode the update of ${plan.fqdn}: ${(err as Error).message}`, err),
      );
    }
    const promise = new Promise<void>((resolve, reject) => {
      const host: PendingHost = {
        plan,
        size,
        deadline: performance.now() + this.dns.timeoutMs,
        retriesLeft: 1,
        solo: false,
        alone: false,
        inFlight: false,
        maybeApplied: false,
        settled: false,
        timer: setTimeout(() => {
          if (host.inFlight) this.lastUnreachableAt = performance.now();
          this.settle(host, timeoutFailure(this.zone.name, this.dns.timeoutMs));
        }, this.dns.timeoutMs),
        resolve,
        reject,
        ...(group === undefined ? {} : { group }),
      };
      this.queue.push(host);
    });
    this.outstanding.add(promise);
    const forget = (): void => {
      this.outstanding.delete(promise);
    };
    promise.then(forget, forget);
    return promise;
  }

  /** Stop accepting plans, let the outstanding ones finish (bounded by their deadlines), close the connection. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.allSettled([...this.outstanding]);
    this.transport.close();
  }

  /**
   * True when a message to the primary timed out or lost its connection within the last
   * `ms` and no answer came since: the reconciler waits instead of holding hosts' leases
   * through another timeout.
   */
  unreachableWithin(ms: number): boolean {
    return this.lastUnreachableAt !== undefined && performance.now() - this.lastUnreachableAt < ms;
  }

  /**
   * Fill the free message slots. A host retried after a SERVFAIL goes out alone: after the
   * messages in flight and before anything else. Knot 3.2 merges the updates it finds
   * queued into one change and answers SERVFAIL to all of them when one fails, so retries
   * sent side by side could fail an innocent host again. Retries after an answered refusal
   * (a prerequisite, REFUSED) or no answer go out side by side, as anything else does.
   */
  private pump(): void {
    while (this.messagesInFlight < this.maxInFlight && !this.aloneInFlight) {
      const head = this.nextPending();
      if (head === undefined) return;
      if (head.alone && this.messagesInFlight > 0) return;
      const batch = this.takeBatch();
      this.messagesInFlight++;
      const alone = head.alone;
      if (alone) this.aloneInFlight = true;
      void this.dispatch(batch).finally(() => {
        this.messagesInFlight--;
        if (alone) this.aloneInFlight = false;
        this.pump();
      });
    }
  }

  /** The first host of the queue not settled yet (settled ones are dropped). */
  private nextPending(): PendingHost | undefined {
    while (this.queue.length > 0 && this.queue[0]!.settled) this.queue.shift();
    return this.queue[0];
  }

  private takeBatch(): PendingHost[] {
    const batch: PendingHost[] = [];
    let bytes = 0;
    while (this.queue.length > 0 && batch.length < this.maxHosts) {
      const head = this.queue[0]!;
      if (head.settled) {
        this.queue.shift();
        continue;
      }
      if (batch.length > 0 && (head.solo || bytes + head.size > this.maxBytes)) break;
      if (head.group !== undefined && !head.solo) {
        // A group goes whole: into this message if it fits, else into the next, past the limits if it must.
        let end = 1;
        while (end < this.queue.length && this.queue[end]!.group === head.group && !this.queue[end]!.solo) end++;
        const members = this.queue.slice(0, end).filter((h) => !h.settled);
        const size = members.reduce((n, h) => n + h.size, 0);
        if (batch.length > 0 && (batch.length + members.length > this.maxHosts || bytes + size > this.maxBytes)) break;
        this.queue.splice(0, end);
        batch.push(...members);
        bytes += size;
        continue;
      }
      this.queue.shift();
      batch.push(head);
      bytes += head.size;
      if (head.solo) break;
    }
    return batch;
  }

  private async dispatch(batch: PendingHost[]): Promise<void> {
    const now = performance.now();
    // As long as its youngest host may wait: an older host's own timer settles it at its
    // deadline (as maybe applied), and the answer still counts for the others.
    const remaining = Math.max(...batch.map((h) => h.deadline)) - now;
    // Leave room for the retry unless this is the host's last chance.
    const lastChance = batch.length === 1 && batch[0]!.retriesLeft === 0;
    const attemptMs = lastChance ? remaining : remaining / 2;
    for (const h of batch) h.inFlight = true;
    let sent: PendingHost[] = [];
    try {
      // Encoded once connected: a host whose deadline passed meanwhile was answered already
      // (its lease may be taken over), so its change must not go out late.
      const encode = (id: number): Buffer => {
        sent = batch.filter((h) => !h.settled);
        if (sent.length === 0) throw new Error('every host of the message ran out of time before it could be sent');
        return this.encode(id, sent);
      };
      await signedExchange(this.transport, this.signing, encode, attemptMs);
      this.countSent(sent);
      this.telemetry.dnsUpdate(this.zone.name, 'NOERROR', (performance.now() - now) / 1000, sent.length);
      this.onApplied?.(this.zone.name);
      this.lastUnreachableAt = undefined;
      this.keyAcceptedAt = performance.now();
      for (const h of batch) h.inFlight = false;
      for (const h of batch) this.settle(h);
    } catch (e) {
      const err = asDnsUpdateError(this.zone.name, e);
      this.countSent(sent);
      if (sent.length === 0 && batch.every((h) => h.settled)) return; // nothing was sent
      // Also a message that could not go out (no connection): its hosts are what it was for.
      const hosts = sent.length > 0 ? sent.length : batch.length;
      this.telemetry.dnsUpdate(this.zone.name, outcomeLabel(err), (performance.now() - now) / 1000, hosts);
      if (err.code === 'ERR_DNS_TIMEOUT' || err.code === 'ERR_DNS_CONNECTION')
        this.lastUnreachableAt = performance.now();
      else this.lastUnreachableAt = undefined; // it answered
      if (err.signedAnswer) this.keyAcceptedAt = performance.now(); // an error, but signed with our key
      for (const h of batch) {
        h.inFlight = false;
        if (err.maybeApplied) h.maybeApplied = true;
      }
      // Split and retry by what went out (a host may have run out of time before encoding).
      this.handleFailure(sent.length > 0 ? sent : batch, err);
    }
  }

  private countSent(sent: readonly PendingHost[]): void {
    if (sent.length === 0) return;
    this.stats.messagesSent++;
    this.stats.hostsSent += sent.length;
    this.stats.largestMessageHosts = Math.max(this.stats.largestMessageHosts, sent.length);
  }

  private encode(id: number, batch: readonly PendingHost[]): Buffer {
    return encodeUpdate({
      id,
      zone: this.zone.name,
      prerequisites: batch.flatMap((h) => h.plan.prerequisites),
      updates: batch.flatMap((h) => h.plan.updates),
    });
  }

  private handleFailure(batch: PendingHost[], err: DnsUpdateError): void {
    const now = performance.now();
    const retry: PendingHost[] = [];
    // A key or clock problem fails every message of the zone alike: no point splitting. But
    // Knot answers an ACL denial of one owner name as NOTAUTH/BADKEY, like a wrong key: while
    // the primary has lately accepted our key, a BADKEY it reports is taken as such a denial.
    // (Such an answer is unsigned, hence maybe applied: what counts is that the answer says
    // BADKEY, not a key mismatch our own verification found.)
    const keyAccepted = this.keyAcceptedAt !== undefined && now - this.keyAcceptedAt < KEY_ACCEPTED_MS;
    const reportedBadkey = err instanceof TsigErrorAnswer && err.tsigError === 'BADKEY';
    const zoneWide = err.code === 'ERR_DNS_TSIG' && !(reportedBadkey && keyAccepted);
    // Knot 3.2 fails a whole bulk of merged updates with SERVFAIL: retries then go alone.
    const servfail = err.code === 'ERR_DNS_RCODE' && err.rcode === 'SERVFAIL';
    for (const h of batch) {
      if (h.settled) continue;
      const timeLeft = h.deadline - now > MIN_ATTEMPT_MS;
      if (batch.length > 1 && !zoneWide && timeLeft) {
        // The failure may belong to another host of the message: each gets its own try.
        if (err.retryable) h.retriesLeft = 0;
        h.solo = true;
        h.alone = servfail;
        retry.push(h);
      } else if (batch.length === 1 && err.retryable && h.retriesLeft > 0 && timeLeft) {
        h.retriesLeft--;
        h.solo = true;
        h.alone = servfail;
        retry.push(h);
      } else {
        this.settle(h, err);
      }
    }
    this.queue.unshift(...retry);
  }

  /**
   * Resolve or reject once. A failure is `maybeApplied` when any attempt's outcome is
   * unknown or a message holding the host is still out (the host's budget ran out first):
   * the caller must then have the stored state published again.
   */
  private settle(host: PendingHost, err?: DnsUpdateError): void {
    if (host.settled) return;
    host.settled = true;
    clearTimeout(host.timer);
    if (!err) host.resolve();
    else host.reject(host.maybeApplied || host.inFlight ? err.asMaybeApplied() : err);
  }
}

const RCODES: ReadonlySet<string> = new Set(Object.values(RCODE_NAMES));

/** A failed message's outcome for the metrics: its rcode (or TSIG error) mnemonic, else the kind of failure. */
function outcomeLabel(err: DnsUpdateError): string {
  if (err.rcode !== undefined && RCODES.has(err.rcode)) return err.rcode;
  if (err.code === 'ERR_DNS_RCODE') return 'OTHER'; // an rcode without a mnemonic
  return err.code.slice('ERR_DNS_'.length); // TIMEOUT, CONNECTION, TSIG, PROTOCOL
}
