/**
 * RFC 2136 §2.4 prerequisites of a gateway UPDATE, judged against what the bridge records for the key's host
 * (docs/protocol.md, "RFC 2136 gateway"): the host's A and AAAA, and the TXT set at `_acme-challenge.<host>`.
 * Pure: the gateway reads the host record, this says which rcode (§3.2) the message gets.
 */
import type { HostRecord } from './types.js';

/** The names a key may name: its host, and its host's ACME challenge name. */
export type KeyName = 'host' | 'acme';

/** The RRset types the bridge records per name. */
export type RecordedType = 'A' | 'AAAA' | 'TXT';

export type Prerequisite =
  /** §2.4.4 "Name Is In Use": class ANY, type ANY. */
  | { kind: 'name-in-use'; name: KeyName }
  /** §2.4.5 "Name Is Not In Use": class NONE, type ANY. */
  | { kind: 'name-not-in-use'; name: KeyName }
  /** §2.4.1 "RRset Exists (Value Independent)": class ANY. */
  | { kind: 'rrset-exists'; name: KeyName; type: RecordedType }
  /** §2.4.2 "RRset Exists (Value Dependent)": class IN; one entry per (name, type), its values gathered. */
  | { kind: 'rrset-equals'; name: KeyName; type: RecordedType; values: readonly string[] }
  /** §2.4.3 "RRset Does Not Exist": class NONE. */
  | { kind: 'rrset-absent'; name: KeyName; type: RecordedType };

/** The rcode a failed prerequisite answers (RFC 2136 §3.2.1, §3.2.2, §3.2.3). */
export type PrerequisiteFailure = 'NXDOMAIN' | 'YXDOMAIN' | 'NXRRSET' | 'YXRRSET';

/** What the bridge records at a name: its RRsets (values in the form the bridge stores them). */
function recordedSets(host: HostRecord | undefined, name: KeyName): Map<RecordedType, readonly string[]> {
  const sets = new Map<RecordedType, readonly string[]>();
  if (host === undefined) return sets;
  if (name === 'acme') {
    if (host.txt !== undefined && host.txt.length > 0) sets.set('TXT', host.txt);
    return sets;
  }
  if (host.ipv4 !== null) sets.set('A', [host.ipv4]);
  if (host.ipv6 !== null) sets.set('AAAA', [host.ipv6]);
  return sets;
}

/** The host's name is in use when the bridge recorded any record there: an address, or an MX. */
function nameInUse(host: HostRecord | undefined, name: KeyName): boolean {
  if (host === undefined) return false;
  return recordedSets(host, name).size > 0 || (name === 'host' && host.mx !== null);
}

function sameSet(a: readonly string[], b: readonly string[]): boolean {
  const left = new Set(a);
  const right = new Set(b);
  return left.size === right.size && [...left].every((v) => right.has(v));
}

/** 'ok', or the rcode of the first prerequisite that does not hold (in the message's order). */
export function checkPrerequisites(
  prerequisites: readonly Prerequisite[],
  host: HostRecord | undefined,
): 'ok' | PrerequisiteFailure {
  for (const p of prerequisites) {
    switch (p.kind) {
      case 'name-in-use':
        if (!nameInUse(host, p.name)) return 'NXDOMAIN';
        break;
      case 'name-not-in-use':
        if (nameInUse(host, p.name)) return 'YXDOMAIN';
        break;
      case 'rrset-exists':
        if (!recordedSets(host, p.name).has(p.type)) return 'NXRRSET';
        break;
      case 'rrset-equals': {
        const recorded = recordedSets(host, p.name).get(p.type);
        if (recorded === undefined || !sameSet(recorded, p.values)) return 'NXRRSET';
        break;
      }
      case 'rrset-absent':
        if (recordedSets(host, p.name).has(p.type)) return 'YXRRSET';
        break;
    }
  }
  return 'ok';
}
