/**
 * Hash fields ↔ domain records. Absent fields mean ''/false/0, so a fresh host costs
 * only its owner, type and state. Flags are stored as '1' or left out.
 */
import type { Expectations } from '../app/ports.js';
import {
  HOST_STATES,
  HOST_TYPES,
  type Account,
  type AddressFamilies,
  type HostRecord,
  type HostState,
  type HostType,
} from '../core/types.js';
import { ACCOUNT_FIELDS as A, HOST_FIELDS as H } from './keys.js';
import { parseTallies } from '../core/request-log.js';

export type HashFields = Record<string, string>;

/** Turn a flat [field, value, field, value, …] reply (Lua HGETALL) into an object. */
export function fieldsFromFlat(flat: readonly unknown[]): HashFields {
  const out: HashFields = {};
  for (let i = 0; i + 1 < flat.length; i += 2) out[String(flat[i])] = String(flat[i + 1]);
  return out;
}

export function decodeHost(fqdn: string, f: HashFields): HostRecord {
  return {
    fqdn,
    account: f[H.owner] ?? '',
    type: asHostType(f[H.type]),
    state: asHostState(f[H.state]),
    ipv4: nonEmpty(f[H.ipv4]),
    ipv6: nonEmpty(f[H.ipv6]),
    wildcard: f[H.wildcard] === '1',
    mx: nonEmpty(f[H.mx]),
    backmx: f[H.backmx] === '1',
    updatedAt: toNumber(f[H.updatedAt]),
    ...(f[H.lastRequest] ? { lastRequestAt: toNumber(f[H.lastRequest]) } : {}),
    ...(f[H.createdAt] ? { createdAt: toNumber(f[H.createdAt]) } : {}),
    ...(f[H.linkParent] ? { link: { parent: f[H.linkParent]!, iid: f[H.linkIid] ?? '' } } : {}),
    ...(f[H.lastPrefix] ? { prefix: f[H.lastPrefix] } : {}),
    ...(f[H.txt] === undefined ? {} : { txt: decodeTxt(f[H.txt]!) }),
    ...(f[H.requestAt]
      ? {
          lastRequest: {
            at: toNumber(f[H.requestAt]),
            reply: nonEmpty(f[H.requestReply]),
            userAgent: f[H.requestAgent] ?? '',
            source: f[H.requestSource] ?? '',
          },
        }
      : {}),
    ...(f[H.tallyHour]
      ? {
          requestTallies: parseTallies(
            {
              hour: f[H.tallyHour],
              good: f[H.tallyGood],
              nochg: f[H.tallyNochg],
              refused: f[H.tallyRefused],
              failed: f[H.tallyFailed],
            },
            f[H.tallyEarlier],
          ),
        }
      : {}),
  };
}

/** The stored TXT values (HOST_FIELDS.txt), oldest first. */
export function decodeTxt(v: string): string[] {
  return v === '' ? [] : v.split('\n');
}

export function decodeAccount(name: string, f: HashFields): Account | undefined {
  const passwordHash = f[A.passwordHash];
  if (passwordHash === undefined) return undefined;
  return {
    name,
    passwordHash,
    donator: f[A.donator] === '1',
    createdAt: toNumber(f[A.createdAt]),
  };
}

/** How each Expectations key (HostRecord field name) maps onto the host hash. */
const EXPECTATION_FIELDS: Readonly<Record<string, { field: string; flag: boolean }>> = {
  state: { field: H.state, flag: false },
  ipv4: { field: H.ipv4, flag: false },
  ipv6: { field: H.ipv6, flag: false },
  wildcard: { field: H.wildcard, flag: true },
  mx: { field: H.mx, flag: false },
  backmx: { field: H.backmx, flag: true },
  // A parent's prefix update (core/prefix.ts, prefixExpectations).
  prefix: { field: H.lastPrefix, flag: false },
  linksChanged: { field: H.linksChanged, flag: true },
};

/**
 * Expectations as [hashField, storedValue, …] for the admit script, in stored form:
 * the script reads an absent field as '' and a '0' flag as '' too.
 */
export function encodeExpectations(expect: Expectations): string[] {
  const out: string[] = [];
  for (const [name, value] of Object.entries(expect)) {
    const spec = EXPECTATION_FIELDS[name];
    if (spec === undefined) throw new Error(`unknown host expectation '${name}'`);
    out.push(spec.field, spec.flag ? (value === '1' ? '1' : '') : value);
  }
  return out;
}

/**
 * The address families a request's expectations write, as the admit script takes them
 * ('4', '6', '46', ''): the families it names; both when it goes offline (the addresses go).
 */
export function encodeWrittenFamilies(expect: Expectations | null): string {
  if (expect === null) return '';
  if (expect.state === 'offline') return '46';
  return (expect.ipv4 !== undefined ? '4' : '') + (expect.ipv6 !== undefined ? '6' : '');
}

/** Address families as the scripts return them ('4', '6', '46', ''). */
export function decodeFamilies(v: string): AddressFamilies {
  return { ipv4: v.includes('4'), ipv6: v.includes('6') };
}

function nonEmpty(v: string | undefined): string | null {
  return v === undefined || v === '' ? null : v;
}

function toNumber(v: string | undefined): number {
  const n = v === undefined ? 0 : Number(v);
  return Number.isFinite(n) ? n : 0;
}

/** A missing or unknown type reads as 'static': never updatable, as the admit script sees it. */
function asHostType(v: string | undefined): HostType {
  return (HOST_TYPES as readonly string[]).includes(v ?? '') ? (v as HostType) : 'static';
}

function asHostState(v: string | undefined): HostState {
  return (HOST_STATES as readonly string[]).includes(v ?? '') ? (v as HostState) : 'active';
}
