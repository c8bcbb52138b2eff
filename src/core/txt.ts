/**
 * ACME DNS-01 TXT records (pure): what a request asks of a host's TXT set at `_acme-challenge.<host>`, the value
 * check, and the names involved (docs/protocol.md, "ACME TXT records").
 */
import { hash } from 'node:crypto';
import { MAX_NAME_LENGTH, normalizeHostname } from './names.js';
import type { HostRecord } from './types.js';

/** The label a DNS-01 challenge's TXT record sits under (RFC 8555 §8.4). */
export const ACME_LABEL = '_acme-challenge';

/** How many values a host keeps: a certificate for `host` and `*.host` needs two at once. */
export const TXT_VALUES_KEPT = 2;

/** One character-string of a TXT record holds at most 255 bytes. */
export const MAX_TXT_VALUE_LENGTH = 255;

/**
 * What a request asks of the TXT set: add a value (the oldest goes past TXT_VALUES_KEPT), remove one value, remove
 * them all; `invalid`: a `txt` value that is not printable ASCII of 1–255 bytes (nothing changes: `badsys`).
 */
export type TxtAsk =
  { op: 'set'; value: string } | { op: 'remove'; value: string } | { op: 'clear' } | { op: 'invalid' };

/** Printable ASCII (space to tilde), 1 to 255 bytes. An ACME value is 43 base64url characters. */
export function isValidTxtValue(value: string): boolean {
  return value.length > 0 && value.length <= MAX_TXT_VALUE_LENGTH && /^[\x20-\x7e]+$/.test(value);
}

/** `clear=` values that mean yes. */
const YES = new Set(['true', 'yes', '1', 'on']);

/**
 * The TXT part of an update request's parameters (first values): undefined when it names neither `txt` nor a `clear`
 * that means yes (an address update). `txt=V` sets V; `clear=true` (also with an empty `txt=`) removes every value,
 * and with `txt=V` only V.
 */
export function parseTxtAsk(txt: string | undefined, clear: string | undefined): TxtAsk | undefined {
  const clearing = clear !== undefined && YES.has(clear.trim().toLowerCase());
  // `txt=&clear=true` clears everything, as DuckDNS-style clients (acme.sh hooks) send it.
  if (txt === undefined || (clearing && txt === '')) return clearing ? { op: 'clear' } : undefined;
  if (!isValidTxtValue(txt)) return { op: 'invalid' };
  return clearing ? { op: 'remove', value: txt } : { op: 'set', value: txt };
}

/**
 * A requested name for a TXT change: `_acme-challenge.<host>` stands for `<host>` (the name ACME clients know);
 * anything else is a host name as for an address update.
 */
export function txtHostname(raw: string): string | undefined {
  const name = raw.trim();
  const prefix = `${ACME_LABEL}.`;
  return normalizeHostname(name.toLowerCase().startsWith(prefix) ? name.slice(prefix.length) : name);
}

/** The owner name of a host's TXT set; undefined when it would be longer than a DNS name may be. */
export function acmeNameOf(fqdn: string): string | undefined {
  const name = `${ACME_LABEL}.${fqdn}`;
  return name.length <= MAX_NAME_LENGTH ? name : undefined;
}

/** lego httpreq's RAW mode sends the key authorization: the TXT value is its SHA-256 in base64url (RFC 8555 §8.4). */
export function txtValueOfKeyAuthorization(keyAuthorization: string): string {
  return hash('sha256', keyAuthorization, 'base64url');
}

/**
 * The TXT part of a republish of a host's stored state: its values when the bridge manages its TXT set (it has had
 * one), else nothing, so the TXT records of a host that never used them are never written.
 */
export function storedTxt(host: Pick<HostRecord, 'txt'>): { txt?: readonly string[] } {
  return host.txt === undefined ? {} : { txt: host.txt };
}
