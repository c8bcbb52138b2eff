/**
 * Drift: does DNS still hold what Redis says the bridge published? Each zone is read whole from its primary
 * and compared, for every registered host, with the records a republish of its stored state would leave
 * (the publisher's own plan, through RecordPlanner); names with addresses that look like hosts but are not
 * registered are reported too; static names (zones[].staticNames) are the operator's, never a finding. The fix
 * republishes the stored state of each drifted host under its lease, as `host remove` takes it, so no update
 * races it; it never deletes a name Redis does not know.
 * docs/operators.md, "Drift". Not the repair loop (reconcile.ts), which republishes interrupted changes.
 */
import { staticNameMatch, type StaticNamesByZone } from '../core/static-names.js';
import { storedTxt } from '../core/txt.js';
import { familiesToLeave, pickDns, type HostRecord, type TargetState } from '../core/types.js';
import type {
  HostAdmin,
  HostChange,
  HostGate,
  PublishedRecords,
  Publisher,
  RecordPlanner,
  ZoneContents,
  ZoneRecord,
  ZoneTransfer,
} from './ports.js';
import { claimWhenIdle, releaseAfterFailure } from './operator-lease.js';

export type FindingKind = 'missing' | 'extra' | 'different' | 'unknown';
export type ComparedType = 'A' | 'AAAA' | 'MX';

/** One RRset where DNS and Redis disagree. */
export interface Finding {
  /**
   * missing: Redis has records DNS lacks; extra: DNS has records where Redis has none; different: both have some,
   * not the same (values or TTL); unknown: addresses at a name that looks like a host but is not registered.
   */
  kind: FindingKind;
  zone: string;
  /** The RRset's owner: a host or `*.host`. */
  name: string;
  type: ComparedType;
  /** The registered host the RRset belongs to; absent for `unknown`. */
  host?: string;
  /** The values in DNS and those Redis implies, sorted (A/AAAA: the address; MX: `preference exchange`). */
  dns: string[];
  redis: string[];
  /** Both TTLs, when the values agree and only they differ. */
  ttl?: { dns: number; redis: number };
}

/** A registered host of a zone and what DNS should hold for it. */
export interface HostExpectation {
  fqdn: string;
  published: PublishedRecords;
}

const COMPARED = new Set<string>(['A', 'AAAA', 'MX']);
/** Hosts `--fix` republishes at once (the publisher's own group commit merges them per message). */
export const FIX_PARALLEL = 32;
const key = (name: string, type: string) => `${name} ${type}`;
const labelCount = (name: string) => (name === '' ? 0 : name.split('.').length);

/**
 * The change that republishes a host's stored state, whose plan is also what DNS should hold. A family the store
 * does not know is left as the primary has it (the bridge never set it: docs/protocol.md, "The update request").
 * An offline host has no addresses and keeps its MX: written with the MX (the repair loop's offline change leaves
 * MX untouched, so it could not fix one).
 */
export function storedChange(host: HostRecord, zone: string): HostChange {
  const fqdn = host.fqdn;
  if (host.state === 'offline')
    return { fqdn, zone, previous: host, target: { ...pickDns(host), ipv4: null, ipv6: null, offline: false } };
  const target = { ...pickDns(host), offline: false };
  const leave = familiesToLeave(host, { ipv4: false, ipv6: false });
  // The ACME TXT set is rewritten with the rest (the comparison leaves TXT out: ZoneRecordType).
  return { fqdn, zone, previous: host, target, leave, ...storedTxt(host) };
}

/** What the store records once the stored state is published again: itself (the commit keeps the state). */
function storedTarget(host: HostRecord): TargetState {
  return { ...pickDns(host), offline: host.state === 'offline' };
}

/**
 * Compare one zone with its registered hosts. Pure. An RRset (name, type) is compared when a republish of some
 * host writes it; `unknown`: A or AAAA records at a name that is not a registered host nor `*.` one, nor named by
 * the zone's SOA, NS or MX records or a host's stored MX (nameservers, mail servers), and that has — after a
 * leading `*.` — as many labels under the apex as a registered host of the zone, or one. No finding of any kind
 * at a name `staticNames` (the zone's patterns, core/static-names.ts) covers: a host's RRset there exists only
 * when the host was registered before the name was listed (`check` reports it), and `--fix` must not rewrite
 * the operator's records.
 */
export function compareZone(
  contents: ZoneContents,
  hosts: readonly HostExpectation[],
  staticNames: readonly string[] = [],
): Finding[] {
  const zone = contents.zone;
  const inDns = new Map<string, ZoneRecord[]>();
  for (const r of contents.records) {
    if (!COMPARED.has(r.type)) continue;
    const k = key(r.name, r.type);
    const list = inDns.get(k);
    if (list) list.push(r);
    else inDns.set(k, [r]);
  }
  const findings: Finding[] = [];
  const known = new Set<string>();
  const depths = new Set<number>([1]);
  const zoneLabels = labelCount(zone);
  for (const { fqdn, published } of hosts) {
    known.add(fqdn).add(`*.${fqdn}`);
    depths.add(labelCount(fqdn) - zoneLabels);
    for (const rrset of published.rrsets) {
      if (staticNameMatch(rrset.name, staticNames) !== undefined) continue;
      const expected = published.records.filter((r) => r.name === rrset.name && r.type === rrset.type);
      const actual = inDns.get(key(rrset.name, rrset.type)) ?? [];
      const finding = compareRrset(expected, actual);
      if (finding) findings.push({ ...finding, zone, name: rrset.name, type: rrset.type, host: fqdn });
    }
  }

  // The names mail and name service point at: in DNS, and in what Redis holds (an MX deleted behind our back).
  const infrastructure = new Set<string>();
  for (const { published } of hosts)
    for (const r of published.records) if (r.type === 'MX') infrastructure.add(r.value.slice(r.value.indexOf(' ') + 1));
  for (const r of contents.records) {
    if (r.type === 'NS' || r.type === 'SOA') infrastructure.add(r.value);
    if (r.type === 'MX') infrastructure.add(r.value.slice(r.value.indexOf(' ') + 1));
  }
  for (const records of inDns.values()) {
    const { name, type } = records[0]!;
    if (type === 'MX' || known.has(name) || infrastructure.has(name)) continue;
    if (staticNameMatch(name, staticNames) !== undefined) continue;
    if (!name.endsWith(`.${zone}`)) continue; // the apex, or (never in a transfer) outside the zone
    const base = name.startsWith('*.') ? name.slice(2) : name;
    if (!depths.has(labelCount(base) - zoneLabels)) continue;
    findings.push({ kind: 'unknown', zone, name, type: type as ComparedType, dns: values(records), redis: [] });
  }
  return findings.sort(byNameAndType);
}

function values(records: readonly ZoneRecord[]): string[] {
  return [...new Set(records.map((r) => r.value))].sort();
}

function compareRrset(
  expected: readonly ZoneRecord[],
  actual: readonly ZoneRecord[],
): Pick<Finding, 'kind' | 'dns' | 'redis' | 'ttl'> | undefined {
  const dns = values(actual);
  const redis = values(expected);
  if (redis.length === 0 && dns.length === 0) return undefined;
  if (redis.length === 0) return { kind: 'extra', dns, redis };
  if (dns.length === 0) return { kind: 'missing', dns, redis };
  if (dns.join('\n') !== redis.join('\n')) return { kind: 'different', dns, redis };
  const dnsTtl = Math.max(...actual.map((r) => r.ttl));
  const redisTtl = expected[0]!.ttl;
  if (actual.some((r) => r.ttl !== redisTtl))
    return { kind: 'different', dns, redis, ttl: { dns: dnsTtl, redis: redisTtl } };
  return undefined;
}

function byNameAndType(a: Finding, b: Finding): number {
  const host = (f: Finding) => f.host ?? (f.name.startsWith('*.') ? f.name.slice(2) : f.name);
  const order = (x: string, y: string) => (x < y ? -1 : x > y ? 1 : 0);
  return order(a.zone, b.zone) || order(host(a), host(b)) || order(a.name, b.name) || order(a.type, b.type);
}

export interface ZoneReport {
  zone: string;
  serial: number;
  /** Registered hosts compared in it. */
  hosts: number;
}

export interface DriftReport {
  zones: ZoneReport[];
  findings: Finding[];
}

export interface FixReport {
  /** Hosts whose stored state was published again. */
  republished: string[];
  failed: { host: string; error: string }[];
}

export interface DriftDeps {
  hosts: HostAdmin & Pick<HostGate, 'commit' | 'release'>;
  publisher: Publisher;
  transfer: ZoneTransfer;
  planner: RecordPlanner;
  leaseMs: number;
  /** Each zone's static names, never findings; absent: none. */
  staticNames?: StaticNamesByZone;
}

export class DriftCheck {
  constructor(private readonly deps: DriftDeps) {}

  /**
   * Transfer each zone and read the hosts Redis holds, at once (a host updated meanwhile may show as different: run
   * again), then compare. Both are awaited before a failure is thrown: nothing is left in flight.
   */
  async check(zones: readonly string[]): Promise<DriftReport> {
    const { hosts, publisher, transfer, planner } = this.deps;
    const [transferred, listed] = await Promise.allSettled([
      (async () => {
        const out: ZoneContents[] = [];
        for (const zone of zones) out.push(await transfer.transfer(zone));
        return out;
      })(),
      hosts.list(),
    ]);
    if (transferred.status === 'rejected') throw transferred.reason;
    if (listed.status === 'rejected') throw listed.reason;
    const contents = transferred.value;
    const byZone = new Map<string, HostExpectation[]>(zones.map((z) => [z, []]));
    for (const host of listed.value) {
      const zone = publisher.zoneFor(host.fqdn);
      const list = zone === undefined ? undefined : byZone.get(zone);
      list?.push({ fqdn: host.fqdn, published: planner.recordsOf(storedChange(host, zone!)) });
    }
    const report: DriftReport = { zones: [], findings: [] };
    for (const c of contents) {
      const expectations = byZone.get(c.zone) ?? [];
      report.zones.push({ zone: c.zone, serial: c.serial, hosts: expectations.length });
      report.findings.push(...compareZone(c, expectations, this.deps.staticNames?.get(c.zone)));
    }
    return report;
  }

  /**
   * Publish the stored state of every host with a finding (FIX_PARALLEL at a time), each under its lease
   * (waiting while an update holds it): what Redis holds when the lease is taken is what goes out. Names
   * Redis does not know are left alone.
   */
  async fix(findings: readonly Finding[]): Promise<FixReport> {
    const drifted = [...new Set(findings.flatMap((f) => (f.host === undefined ? [] : [f.host])))].sort();
    // A few at a time: each holds its host's lease until the primary answered, and a large drift
    // (a zone restored from an old file) must not hold them all while the queue drains.
    const outcomes: Awaited<ReturnType<DriftCheck['republish']>>[] = [];
    let next = 0;
    const worker = async () => {
      while (next < drifted.length) {
        const i = next++;
        outcomes[i] = await this.republish(drifted[i]!).catch((err: unknown) => ({ error: (err as Error).message }));
      }
    };
    await Promise.all([...Array(Math.min(FIX_PARALLEL, drifted.length)).keys()].map(worker));
    const report: FixReport = { republished: [], failed: [] };
    drifted.forEach((host, i) => {
      const outcome = outcomes[i]!;
      if (outcome === 'republished') report.republished.push(host);
      else if (outcome !== 'gone') report.failed.push({ host, error: outcome.error });
    });
    return report;
  }

  private async republish(fqdn: string): Promise<'republished' | 'gone' | { error: string }> {
    const { hosts, publisher, leaseMs } = this.deps;
    const zone = publisher.zoneFor(fqdn);
    if (zone === undefined) return { error: 'its zone is no longer configured' };
    let claimed: Awaited<ReturnType<typeof claimWhenIdle>>;
    try {
      claimed = await claimWhenIdle(hosts, fqdn, leaseMs);
    } catch (err) {
      return { error: (err as Error).message };
    }
    if (claimed === undefined) return 'gone'; // removed meanwhile: nothing of it to publish
    const { host, lease, repairDue } = claimed;
    try {
      await publisher.publish(storedChange(host, zone));
    } catch (err) {
      await releaseAfterFailure(hosts, lease, err, repairDue, leaseMs).catch(() => undefined); // the lease runs out
      return { error: (err as Error).message };
    }
    const outcome = await hosts.commit(lease, storedTarget(host), { republish: true });
    if (outcome === 'gone') return 'gone';
    if (outcome === 'lost')
      return { error: 'its lease ended before the fix was recorded; the repair loop publishes it again' };
    return 'republished';
  }
}
