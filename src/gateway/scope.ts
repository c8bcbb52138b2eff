/**
 * What a verified UPDATE asks, within the key's scope (docs/protocol.md, "RFC 2136 gateway"). Pure: RFC 2136
 * §3.1–§3.4 form checks (FORMERR), the zone (NOTAUTH) and its names (NOTZONE), then least privilege (REFUSED): a
 * key changes only its host's A and AAAA and the TXT at `_acme-challenge.<host>` (an ACME-only key: the TXT only).
 * Nothing reaches Redis or the primary before this passed.
 */
import { parseAddress } from '../core/addresses.js';
import type { KeyName, Prerequisite, RecordedType } from '../core/prerequisites.js';
import { acmeNameOf, isValidTxtValue } from '../core/txt.js';
import type { FamilyChange, GatewayChange } from '../app/gateway.js';
import { TYPE_ANY, type Question, type RcodeName, type WireRecord } from './message.js';

const CLASS_IN = 1;
const CLASS_NONE = 254;
const CLASS_ANY = 255;
const TYPE_SOA = 6;
const TYPES: Record<number, RecordedType> = { 1: 'A', 28: 'AAAA', 16: 'TXT' };
/** Meta and query-only types (RFC 2136 §3.4.1.2: FORMERR in the update section): AXFR, IXFR, MAILA, MAILB, ANY. */
const META_TYPES = new Set([251, 252, 253, 254, 255]);

export interface KeyScope {
  fqdn: string;
  acmeOnly: boolean;
}

export interface Refusal {
  rcode: Exclude<RcodeName, 'NOERROR'>;
  why: string;
}
export type ScopeVerdict = Refusal | { change: GatewayChange };

const refuse = (rcode: Refusal['rcode'], why: string): Refusal => ({ rcode, why });

/** The zone section: exactly one SOA question in class IN naming a configured zone. */
export function zoneOf(questions: readonly Question[], zones: readonly string[]): string | Refusal {
  if (questions.length !== 1) return refuse('FORMERR', `the zone section has ${questions.length} entries`);
  const z = questions[0]!;
  if (z.type !== TYPE_SOA) return refuse('FORMERR', 'the zone section is not of type SOA');
  if (z.klass !== CLASS_IN || !zones.includes(z.name))
    return refuse('NOTAUTH', `not a zone of this gateway: ${z.name}`);
  return z.name;
}

function inZone(name: string, zone: string): boolean {
  return name === zone || name.endsWith(`.${zone}`);
}

function whichName(name: string, key: KeyScope): KeyName | undefined {
  if (name === key.fqdn) return 'host';
  return name === acmeNameOf(key.fqdn) ? 'acme' : undefined;
}

/** RDATA as the bridge stores values: an address's text, or a TXT record of one character-string. */
function valueOf(type: RecordedType, rdata: Buffer): string | undefined {
  if (type === 'A') return rdata.length === 4 ? [...rdata].join('.') : undefined;
  if (type === 'AAAA') {
    if (rdata.length !== 16) return undefined;
    const groups = Array.from({ length: 8 }, (_, i) => rdata.readUInt16BE(i * 2).toString(16));
    return parseAddress(groups.join(':'))?.address;
  }
  if (rdata.length < 1 || rdata[0] !== rdata.length - 1) return undefined;
  const text = rdata.toString('latin1', 1);
  return isValidTxtValue(text) ? text : undefined;
}

function formOf(r: WireRecord, section: 'prerequisite' | 'update'): string | undefined {
  if (r.klass === CLASS_ANY || r.klass === CLASS_NONE) {
    if (r.ttl !== 0) return `a ${section} of class ${r.klass === CLASS_ANY ? 'ANY' : 'NONE'} must have TTL 0`;
    if (r.klass === CLASS_ANY && r.rdata.length !== 0) return `a ${section} of class ANY carries no RDATA`;
    if (section === 'prerequisite' && r.rdata.length !== 0) return 'a prerequisite of class NONE carries no RDATA';
    if (section === 'update' && r.klass === CLASS_NONE && r.type === TYPE_ANY)
      return 'a delete of class NONE names a type';
    return undefined;
  }
  if (r.klass !== CLASS_IN) return `${section} of class ${r.klass}`;
  if (section === 'prerequisite' && r.ttl !== 0) return 'a prerequisite must have TTL 0';
  if (section === 'update' && META_TYPES.has(r.type)) return `an add of meta type ${r.type}`;
  return undefined;
}

/** The request's prerequisites and updates for this key, or the rcode it gets (RFC 2136 §3.2–§3.4 order of checks). */
export function scopeOf(
  zone: string,
  prerequisites: readonly WireRecord[],
  updates: readonly WireRecord[],
  key: KeyScope,
): ScopeVerdict {
  for (const [records, section] of [
    [prerequisites, 'prerequisite'],
    [updates, 'update'],
  ] as const) {
    for (const r of records) {
      const problem = formOf(r, section);
      if (problem !== undefined) return refuse('FORMERR', problem);
      if (!inZone(r.name, zone)) return refuse('NOTZONE', `${r.name} is not in zone ${zone}`);
    }
  }
  const prereqs = prerequisitesOf(prerequisites, key);
  if ('rcode' in prereqs) return prereqs;
  const change: GatewayChange = { prerequisites: prereqs.list };
  const families: { ipv4?: FamilyChange; ipv6?: FamilyChange } = {};
  const added: { ipv4?: string; ipv6?: string } = {};
  const txtOps: WireRecord[] = [];
  for (const r of updates) {
    const name = whichName(r.name, key);
    const type = TYPES[r.type];
    if (name === undefined) return refuse('REFUSED', `${r.name} is not this key's name`);
    if (type === undefined) return refuse('REFUSED', `type ${r.type} is not one this key may change`);
    if (name === 'host' && (type === 'TXT' || key.acmeOnly))
      return refuse('REFUSED', key.acmeOnly ? 'an ACME-only key changes the TXT only' : 'TXT only at the ACME name');
    if (name === 'acme' && type !== 'TXT') return refuse('REFUSED', 'only TXT at the ACME name');
    const value = r.klass === CLASS_ANY ? undefined : valueOf(type, r.rdata);
    if (r.klass !== CLASS_ANY && value === undefined)
      return refuse(type === 'TXT' ? 'REFUSED' : 'FORMERR', `${type} data the bridge cannot hold`);
    if (type === 'TXT') {
      txtOps.push(r);
      continue;
    }
    const family = type === 'A' ? 'ipv4' : 'ipv6';
    if (r.klass === CLASS_ANY) {
      families[family] = null;
    } else if (r.klass === CLASS_NONE) {
      const current = families[family];
      if (current === undefined || typeof current === 'object') families[family] = { removeIf: value! };
      else if (current === value) families[family] = null;
    } else {
      if (added[family] !== undefined && added[family] !== value)
        return refuse('REFUSED', `one ${type} address per host: the message adds two`);
      added[family] = value!;
      families[family] = value!;
    }
  }
  const txt = txtOps.length === 0 ? undefined : txtChange(txtOps);
  if (txt === null) return refuse('REFUSED', 'one TXT change per message (an add, a delete, or a delete of the set)');
  if (txt !== undefined && Object.keys(families).length > 0)
    return refuse('REFUSED', 'one message changes the addresses or the TXT, not both');
  if (Object.keys(families).length > 0) change.addresses = families;
  if (txt !== undefined) change.txt = txt;
  return { change };
}

/**
 * The TXT operations of one message as one change of the ACME value set: an add, a delete of one value, a delete of
 * the set; a delete of the set then an add (lego's present) adds, since the set keeps the two newest values and a
 * parallel challenge of the same name (`H` and `*.H`) must stay. null: any other sequence.
 */
function txtChange(ops: readonly WireRecord[]): GatewayChange['txt'] | null {
  const kinds = ops.map((r) => (r.klass === CLASS_IN ? 'add' : r.klass === CLASS_NONE ? 'delete' : 'clear'));
  const last = ops[ops.length - 1]!;
  const value = (): string => valueOf('TXT', last.rdata)!;
  if (kinds.length === 2 && kinds[0] === 'clear' && kinds[1] === 'add') return { op: 'set', value: value() };
  if (kinds.length !== 1) return null;
  return kinds[0] === 'add'
    ? { op: 'set', value: value() }
    : kinds[0] === 'delete'
      ? { op: 'remove', value: value() }
      : { op: 'clear' };
}

function prerequisitesOf(records: readonly WireRecord[], key: KeyScope): { list: Prerequisite[] } | Refusal {
  const list: Prerequisite[] = [];
  const valued = new Map<string, { name: KeyName; type: RecordedType; values: string[] }>();
  for (const r of records) {
    const name = whichName(r.name, key);
    if (name === undefined) return refuse('REFUSED', `${r.name} is not this key's name`);
    if (r.type === TYPE_ANY) {
      if (r.klass === CLASS_IN) return refuse('FORMERR', 'a prerequisite of class IN names a type');
      list.push({ kind: r.klass === CLASS_ANY ? 'name-in-use' : 'name-not-in-use', name });
      continue;
    }
    const type = TYPES[r.type];
    if (type === undefined || (name === 'host') === (type === 'TXT'))
      return refuse('REFUSED', `type ${r.type} at ${r.name} is not one this key may see`);
    if (r.klass === CLASS_ANY) list.push({ kind: 'rrset-exists', name, type });
    else if (r.klass === CLASS_NONE) list.push({ kind: 'rrset-absent', name, type });
    else {
      const value = valueOf(type, r.rdata);
      // A value the bridge can never hold is never in the RRset: the prerequisite fails (NXRRSET).
      const entry = valued.get(`${name}/${type}`) ?? { name, type, values: [] };
      entry.values.push(value ?? `\u0000${r.rdata.toString('hex')}`);
      if (!valued.has(`${name}/${type}`)) {
        valued.set(`${name}/${type}`, entry);
        list.push({ kind: 'rrset-equals', name, type, values: entry.values });
      }
    }
  }
  return { list };
}
