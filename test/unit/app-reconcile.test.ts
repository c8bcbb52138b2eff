/**
 * The reconciler's decisions, on in-memory ports (the Redis scripts and real primaries behind
 * them are covered by store-hosts and the fault tests): which hosts it republishes, which it
 * postpones because their zone's primary just timed out, and what it does on failure.
 */
import { expect } from 'chai';
import type { CommitOutcome, HostChange, HostGate, Lease, Publisher, Reclaimed } from '../../src/app/ports.js';
import { MAX_REPUBLISH_DELAY_MS, Reconciler, republishDelayMs } from '../../src/app/reconcile.js';
import { DnsUpdateError } from '../../src/core/errors.js';
import type { Logger } from '../../src/core/log.js';
import type { AddressFamilies, HostRecord, TargetState } from '../../src/core/types.js';

const LEASE_MS = 5000;
const quiet: Logger = { debug() {}, info() {}, warn() {}, error() {} };

function record(fqdn: string, ipv4: string): HostRecord {
  return {
    fqdn,
    account: 'a',
    type: 'dynamic',
    state: 'active',
    updatedAt: 1,
    ipv4,
    ipv6: null,
    wildcard: false,
    mx: null,
    backmx: false,
  };
}

class MemoryHosts implements Pick<HostGate, 'staleLeases' | 'reclaim' | 'commit' | 'release' | 'postpone'> {
  readonly calls: string[] = [];
  /** Failed republishes per host, as the release script counts them. */
  readonly failed = new Map<string, number>();
  /** Hosts whose lease another holder has (reclaim takes nothing; they stay due). */
  readonly held = new Set<string>();
  /** The families each interrupted change wrote (both when not given, as for a lease with no record). */
  readonly families = new Map<string, AddressFamilies>();
  constructor(readonly due: Map<string, HostRecord>) {}
  async staleLeases(limit: number): Promise<string[]> {
    return [...this.due.keys()].slice(0, limit);
  }
  async reclaim(fqdn: string): Promise<Reclaimed | undefined> {
    this.calls.push(`reclaim ${fqdn}`);
    this.step('reclaim');
    if (this.held.has(fqdn)) return undefined;
    const host = this.due.get(fqdn);
    const families = this.families.get(fqdn) ?? { ipv4: true, ipv6: true };
    return (
      host && { host, lease: { fqdn, token: `t-${fqdn}` }, failedRepublishes: this.failed.get(fqdn) ?? 0, families }
    );
  }
  /** Hosts a request took over meanwhile: the commit finds its lease gone. */
  readonly takenOver = new Set<string>();
  /** Store failures: the nth call of the named step rejects. */
  readonly failing = new Map<string, number>();
  private counts = new Map<string, number>();
  private step(name: string): void {
    const n = (this.counts.get(name) ?? 0) + 1;
    this.counts.set(name, n);
    if (this.failing.get(name) === n) throw new Error(`redis: ${name} failed: Command timed out`);
  }
  async commit(lease: Lease, target: TargetState, opts?: { republish?: boolean }): Promise<CommitOutcome> {
    this.calls.push(`commit ${lease.fqdn} ${target.ipv4}${opts?.republish ? ' (republish)' : ''}`);
    this.step('commit');
    if (this.takenOver.has(lease.fqdn)) return 'lost';
    this.due.delete(lease.fqdn);
    return 'committed';
  }
  async release(lease: Lease, opts?: { republishInMs?: number; failedRepublish?: boolean }): Promise<void> {
    this.calls.push(`release ${lease.fqdn} ${opts?.republishInMs}${opts?.failedRepublish ? ' (failed)' : ''}`);
    if (opts?.failedRepublish) this.failed.set(lease.fqdn, (this.failed.get(lease.fqdn) ?? 0) + 1);
  }
  async postpone(fqdns: readonly string[], ms: number): Promise<void> {
    if (fqdns.length > 0) this.calls.push(`postpone ${fqdns.join(',')} ${ms}`);
  }
}

class MemoryPublisher implements Publisher {
  readonly published: string[] = [];
  readonly changes: HostChange[] = [];
  unreachable = new Set<string>();
  /** No answer (a timeout): the primary is away. */
  failing = new Set<string>();
  /** An answered refusal. */
  refusing = new Set<string>();
  zoneFor(fqdn: string): string | undefined {
    return fqdn.slice(fqdn.indexOf('.') + 1);
  }
  async publish(change: HostChange): Promise<void> {
    this.published.push(`${change.fqdn} ${change.target.ipv4}`);
    this.changes.push(change);
    if (this.failing.has(change.fqdn))
      throw new DnsUpdateError('ERR_DNS_TIMEOUT', change.zone, 'no answer', { retryable: true, maybeApplied: true });
    if (this.refusing.has(change.fqdn))
      throw new DnsUpdateError('ERR_DNS_RCODE', change.zone, 'REFUSED', { retryable: false });
  }
  recentlyUnreachable(zone: string): boolean {
    return this.unreachable.has(zone);
  }
}

function reconciler(hosts: MemoryHosts, publisher: MemoryPublisher): Reconciler {
  return new Reconciler({ hosts: hosts as unknown as HostGate, publisher, leaseMs: LEASE_MS, logger: quiet });
}

/** One due host whose republish gets no answer ('failing') or is refused, on each of `sweeps` sweeps. */
async function failingSweeps(how: 'failing' | 'refusing', sweeps: number) {
  const hosts = new MemoryHosts(new Map([['a.z1', record('a.z1', '192.0.2.1')]]));
  const publisher = new MemoryPublisher();
  publisher[how].add('a.z1');
  const r = reconciler(hosts, publisher);
  for (let i = 0; i < sweeps; i++) expect(await r.sweep()).to.equal(0);
  return { hosts, publisher, r, releases: hosts.calls.filter((c) => c.startsWith('release')) };
}

describe('app: reconciler', () => {
  it('republishes the stored state of every due host and records it', async () => {
    const hosts = new MemoryHosts(
      new Map([
        ['a.z1', record('a.z1', '192.0.2.1')],
        ['b.z1', record('b.z1', '192.0.2.2')],
      ]),
    );
    const publisher = new MemoryPublisher();
    expect(await reconciler(hosts, publisher).sweep()).to.equal(2);
    expect(publisher.published).to.have.members(['a.z1 192.0.2.1', 'b.z1 192.0.2.2']);
    expect(hosts.calls).to.include.members(['commit a.z1 192.0.2.1 (republish)', 'commit b.z1 192.0.2.2 (republish)']);
  });

  it('rewrites the families the interrupted change wrote and those stored; leaves a family neither wrote nor stored (docs/protocol.md, "The update request")', async () => {
    const hosts = new MemoryHosts(
      new Map([
        ['v4.z1', record('v4.z1', '192.0.2.1')],
        ['v6.z1', record('v6.z1', '192.0.2.2')],
        ['old.z1', record('old.z1', '192.0.2.3')],
      ]),
    );
    hosts.families.set('v4.z1', { ipv4: true, ipv6: false });
    // Its change wrote an AAAA the store does not know (interrupted before the commit): removed.
    hosts.families.set('v6.z1', { ipv4: false, ipv6: true });
    // old.z1: no record of what its change wrote: everything is rewritten.
    const publisher = new MemoryPublisher();
    expect(await reconciler(hosts, publisher).sweep()).to.equal(3);
    const leaveOf = (fqdn: string) => publisher.changes.find((c) => c.fqdn === fqdn)?.leave;
    expect(leaveOf('v4.z1')).to.deep.equal({ ipv4: false, ipv6: true });
    expect(leaveOf('v6.z1')).to.deep.equal({ ipv4: false, ipv6: false });
    expect(leaveOf('old.z1')).to.deep.equal({ ipv4: false, ipv6: false });
  });

  it('postpones, without taking their leases, the hosts of a zone whose primary just timed out', async () => {
    const hosts = new MemoryHosts(
      new Map([
        ['a.down', record('a.down', '192.0.2.1')],
        ['b.up', record('b.up', '192.0.2.2')],
      ]),
    );
    const publisher = new MemoryPublisher();
    publisher.unreachable.add('down');
    expect(await reconciler(hosts, publisher).sweep()).to.equal(1);
    expect(publisher.published).to.deep.equal(['b.up 192.0.2.2']);
    expect(hosts.calls).to.not.include('reclaim a.down');
    expect(hosts.calls).to.include(`postpone a.down ${LEASE_MS}`);
  });

  it('a failed republish leaves the host due again after a lease, its lease expired for requests to take over', async () => {
    const hosts = new MemoryHosts(new Map([['a.z1', record('a.z1', '192.0.2.1')]]));
    const publisher = new MemoryPublisher();
    publisher.failing.add('a.z1');
    expect(await reconciler(hosts, publisher).sweep()).to.equal(0);
    expect(hosts.calls).to.deep.equal(['reclaim a.z1', `release a.z1 ${LEASE_MS}`]);
  });

  it('a primary that does not answer is not counted against the host: every retry after a lease', async () => {
    const { hosts, releases } = await failingSweeps('failing', 3);
    expect(releases).to.deep.equal([1, 2, 3].map(() => `release a.z1 ${LEASE_MS}`));
    expect(hosts.failed.size).to.equal(0);
  });

  it('while whole batches are due, the next sweep starts at once instead of after the interval', async () => {
    const due = new Map<string, HostRecord>();
    for (let i = 0; i < 250; i++) due.set(`h${i}.z1`, record(`h${i}.z1`, '192.0.2.1'));
    const hosts = new MemoryHosts(due);
    const r = reconciler(hosts, new MemoryPublisher());
    r.start(60_000); // an interval no test waits for: only the immediate sweeps can finish
    try {
      for (let i = 0; i < 200 && due.size > 0; i++) await new Promise((done) => setTimeout(done, 10));
      expect(due.size, 'hosts still due').to.equal(0);
      expect(hosts.calls.filter((c) => c.startsWith('commit'))).to.have.length(250);
    } finally {
      await r.stop();
    }
  });

  it('the very same whole batch again (no progress: held elsewhere) waits the interval: no spinning', async () => {
    const due = new Map<string, HostRecord>();
    for (let i = 0; i < 150; i++) due.set(`h${i}.z1`, record(`h${i}.z1`, '192.0.2.1'));
    const hosts = new MemoryHosts(due);
    for (const fqdn of due.keys()) hosts.held.add(fqdn);
    const r = reconciler(hosts, new MemoryPublisher());
    r.start(60_000);
    try {
      await new Promise((done) => setTimeout(done, 200));
      // The first sweep, the one right after it (a whole batch was due), then the interval.
      expect(
        hosts.calls.filter((c) => c.startsWith('reclaim')),
        'two sweeps',
      ).to.have.length(200);
    } finally {
      await r.stop();
    }
  });

  it('each further refused republish waits twice as long, at most an hour', async () => {
    const { hosts, publisher, r, releases } = await failingSweeps('refusing', 4);
    expect(releases).to.deep.equal([1, 2, 4, 8].map((k) => `release a.z1 ${k * LEASE_MS} (failed)`));
    expect(MAX_REPUBLISH_DELAY_MS).to.equal(3_600_000);
    expect(republishDelayMs(LEASE_MS, 0)).to.equal(LEASE_MS);
    expect(republishDelayMs(LEASE_MS, 9)).to.equal(512 * LEASE_MS);
    expect(republishDelayMs(LEASE_MS, 10)).to.equal(MAX_REPUBLISH_DELAY_MS);
    expect(republishDelayMs(LEASE_MS, 10_000)).to.equal(MAX_REPUBLISH_DELAY_MS);
    // Once it works, the host is recorded (the store clears the count on commit).
    publisher.refusing.clear();
    expect(await r.sweep()).to.equal(1);
    expect(hosts.calls.at(-1)).to.equal('commit a.z1 192.0.2.1 (republish)');
  });

  it('a republish whose lease a request took over meanwhile is not counted as done (that request publishes its own state)', async () => {
    const hosts = new MemoryHosts(
      new Map([
        ['a.z1', record('a.z1', '192.0.2.1')],
        ['b.z1', record('b.z1', '192.0.2.2')],
      ]),
    );
    hosts.takenOver.add('a.z1');
    const lines: string[] = [];
    const logger: Logger = { ...quiet, warn: (msg, fields) => lines.push(`${msg} ${String(fields?.host)}`) };
    const r = new Reconciler({
      hosts: hosts as unknown as HostGate,
      publisher: new MemoryPublisher(),
      leaseMs: LEASE_MS,
      logger,
    });
    expect(await r.sweep()).to.equal(1);
    expect(lines).to.deep.equal(['republished a host whose change was interrupted b.z1']);
  });

  it('a store failure part-way through a sweep: the sweep fails after the repairs under way have finished, none left unhandled', async () => {
    const hosts = new MemoryHosts(
      new Map([
        ['a.z1', record('a.z1', '192.0.2.1')],
        ['b.z1', record('b.z1', '192.0.2.2')],
      ]),
    );
    hosts.failing.set('commit', 1); // a.z1's republish cannot be recorded…
    hosts.failing.set('reclaim', 2); // …and the sweep's next step fails too
    const lines: string[] = [];
    const logger: Logger = { ...quiet, warn: (msg, fields) => lines.push(`${msg} ${String(fields?.host)}`) };
    const r = new Reconciler({
      hosts: hosts as unknown as HostGate,
      publisher: new MemoryPublisher(),
      leaseMs: LEASE_MS,
      logger,
    });
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      let failure: Error | undefined;
      await r.sweep().catch((err: Error) => {
        failure = err;
        expect(hosts.calls, 'the repair under way had finished').to.include('commit a.z1 192.0.2.1 (republish)');
      });
      expect(failure?.message).to.equal('redis: reclaim failed: Command timed out');
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(unhandled, 'an unhandled rejection ends a serving process').to.deep.equal([]);
      expect(lines).to.deep.equal(['could not record a repair a.z1']);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});
