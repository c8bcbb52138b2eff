/** Host name normalisation and validation (pure). */
import { domainToASCII } from 'node:url';

export const MAX_NAME_LENGTH = 253;
export const MAX_LABEL_LENGTH = 63;

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/**
 * Normalise a client-supplied host name: trim, drop one trailing dot, lowercase,
 * IDN to punycode. Returns `undefined` when the result is not a syntactically valid
 * FQDN of at least two labels made of letters, digits and hyphens (no `_`, no `*`).
 */
export function normalizeHostname(raw: string): string | undefined {
  let name = raw.trim();
  const dotted = name.endsWith('.');
  if (dotted) name = name.slice(0, -1);
  if (name.length === 0 || name.length > 1024) return undefined;
  // Plain ASCII names skip the IDN conversion (the common case, and it is strict about them).
  if (/[^\x21-\x7e]/.test(name)) {
    // Control characters are exactly what this refuses.
    // eslint-disable-next-line no-control-regex
    if (/[\s\x00-\x1f\x7f]/.test(name)) return undefined;
    let ascii = domainToASCII(name);
    // An ideographic full stop (。．｡) at the end becomes a trailing dot: one is allowed, as above.
    if (!dotted && ascii.endsWith('.')) ascii = ascii.slice(0, -1);
    if (ascii === '') return undefined;
    name = ascii;
  }
  name = name.toLowerCase();
  return isValidFqdn(name) ? name : undefined;
}

/** True for a lowercase ASCII FQDN (no trailing dot) of two or more LDH labels. */
export function isValidFqdn(name: string): boolean {
  if (name.length === 0 || name.length > MAX_NAME_LENGTH) return false;
  const labels = name.split('.');
  if (labels.length < 2) return false;
  for (const label of labels) {
    if (!LABEL.test(label)) return false;
  }
  // A top-level label made only of digits is never a host name (and keeps IPs out).
  return !/^[0-9]+$/.test(labels[labels.length - 1]!);
}

/**
 * The longest zone (from `zones`, each normalised) of which `name` is a proper sub-name;
 * undefined for the apex of any configured zone, even one below another configured zone
 * (a host registered before its name became a zone must not be written into the parent
 * zone at the cut).
 */
export function zoneOf(name: string, zones: readonly string[]): string | undefined {
  let best: string | undefined;
  for (const zone of zones) {
    if (name === zone) return undefined;
    if (name.length > zone.length && name.endsWith(zone) && name[name.length - zone.length - 1] === '.') {
      if (best === undefined || zone.length > best.length) best = zone;
    }
  }
  return best;
}

/**
 * The names strictly between `name` and its zone's apex, nearest first: where a host of
 * another account would sit above it (its wildcard answers for `name`). Empty for a name
 * directly below the apex, and for one outside `zone`.
 */
export function namesBetween(name: string, zone: string): string[] {
  if (!name.endsWith(`.${zone}`)) return [];
  const between: string[] = [];
  for (let at = name.indexOf('.'); at >= 0 && name.length - at - 1 > zone.length; at = name.indexOf('.', at + 1)) {
    between.push(name.slice(at + 1));
  }
  return between;
}

/** Every proper ancestor of `name` with at least two labels, nearest first. */
export function ancestorsOf(name: string): string[] {
  const out: string[] = [];
  for (let at = name.indexOf('.'); at >= 0; at = name.indexOf('.', at + 1)) {
    const rest = name.slice(at + 1);
    if (rest.includes('.')) out.push(rest);
  }
  return out;
}
