/**
 * Static names (`zones[].staticNames`): records an operator keeps in a dynamic zone beside the hosts (`www`, `mail`,
 * `vpn`). Pure. Each is held as a pattern: a lower-case FQDN (that name alone), or `*.` and an FQDN (every name below
 * that one, at any depth, not the name itself). A static name is never a drift finding (app/drift.ts) and never a
 * host (registration.ts, the import paths). docs/configuration.md, "Zones"; docs/operators.md, "Drift".
 */
import { zoneOf } from './names.js';

/** Each zone's static names (patterns of parseStaticName), by zone apex; a zone it does not list has none. */
export type StaticNamesByZone = ReadonlyMap<string, readonly string[]>;

export const NO_STATIC_NAMES: StaticNamesByZone = new Map();

/** What a configured entry may look like, for messages. */
export const STATIC_NAME_FORMS = '"www", "vpn.office", "mail.<zone>." or "*.lab"';

/** LDH, and `_` as zone names allow it (an operator's `_dmarc` or `_sip._tcp` is a name like any other). */
const LABEL = /^(?!-)[a-z0-9_-]{1,63}(?<!-)$/;
const MAX_NAME_LENGTH = 253;

/**
 * One configured entry of `zone` (normalised: lower case, no trailing dot) as a pattern. A name ending in a dot is
 * an FQDN and must lie in the zone; one ending in the zone's own name is that FQDN; any other is relative to the
 * zone. `*.` first makes it a pattern for the names below. Refused: the apex, and `*` alone (every name of the zone:
 * no host could be registered).
 */
export function parseStaticName(raw: string, zone: string): { pattern: string } | { problem: string } {
  const text = raw.trim().toLowerCase();
  const below = text.startsWith('*.');
  let name = below ? text.slice(2) : text;
  const absolute = name.endsWith('.');
  if (absolute) name = name.slice(0, -1);
  if (text === '*' || text === '*.' || (below && name === zone))
    return {
      problem:
        `"*" alone would make every name of the zone static and leave no name for a host; ` +
        `list names or patterns such as ${STATIC_NAME_FORMS}`,
    };
  if (name === '') return { problem: `expected a name such as ${STATIC_NAME_FORMS}` };
  const inZone = name === zone || name.endsWith(`.${zone}`);
  if (absolute && !inZone) return { problem: `${name} is not in the zone ${zone}` };
  const fqdn = inZone ? name : `${name}.${zone}`;
  if (fqdn === zone)
    return { problem: `${zone} is the zone apex: never a host nor a drift finding, so not a static name` };
  const labels = fqdn.slice(0, -zone.length - 1).split('.');
  if (labels.includes('*')) return { problem: `"*" only as the first label: "*.name" (the names below name)` };
  const bad = labels.find((l) => !LABEL.test(l));
  if (bad !== undefined)
    return { problem: `${JSON.stringify(bad)} is not a label (letters, digits, - and _, at most 63 characters)` };
  const pattern = below ? `*.${fqdn}` : fqdn;
  if (pattern.length > MAX_NAME_LENGTH) return { problem: `longer than ${MAX_NAME_LENGTH} characters in all` };
  return { pattern };
}

/** The first pattern that covers `name` (lower case, no trailing dot), or undefined. */
export function staticNameMatch(name: string, patterns: readonly string[]): string | undefined {
  // `*.lab.zone` covers what ends in `.lab.zone`: every name below lab, a literal `*.lab.zone` too.
  return patterns.find((p) => (p.startsWith('*.') ? name.endsWith(p.slice(1)) : name === p));
}

/**
 * Why `fqdn`, a name of `zone`, cannot be a host; undefined when it can. Neither the name nor its wildcard name
 * `*.fqdn` may be static: every update of a host writes or deletes the records at both, and would overwrite the
 * operator's (docs/protocol.md, "What goes into DNS").
 */
export function staticNameProblem(fqdn: string, zone: string, staticNames: StaticNamesByZone): string | undefined {
  const patterns = staticNames.get(zone) ?? [];
  const which = (pattern: string) =>
    pattern === fqdn ? ' (zones[].staticNames)' : ` (${pattern} in zones[].staticNames)`;
  const own = staticNameMatch(fqdn, patterns);
  if (own !== undefined) return `${fqdn} is a static name of zone ${zone}${which(own)}: never a host`;
  const wildcard = staticNameMatch(`*.${fqdn}`, patterns);
  if (wildcard !== undefined)
    return (
      `${fqdn} cannot be a host: its wildcard name *.${fqdn}, which every update of the host rewrites, is a ` +
      `static name of zone ${zone}${which(wildcard)}`
    );
  return undefined;
}

/** The zones' static names, by apex (from the config's zones). */
export function staticNamesByZone(
  zones: readonly { name: string; staticNames: readonly string[] }[],
): StaticNamesByZone {
  return new Map(zones.filter((z) => z.staticNames.length > 0).map((z) => [z.name, z.staticNames]));
}

/**
 * The hosts that `staticNameProblem` would refuse now, each with why: registered before the name was listed. Only
 * hosts of a configured zone; sorted by name.
 */
export function hostsAtStaticNames<H extends { fqdn: string }>(
  hosts: readonly H[],
  zones: readonly { name: string; staticNames: readonly string[] }[],
): { host: H; problem: string }[] {
  const byZone = staticNamesByZone(zones);
  if (byZone.size === 0) return [];
  const names = zones.map((z) => z.name);
  return hosts
    .flatMap((host) => {
      const zone = zoneOf(host.fqdn, names);
      const problem = zone === undefined ? undefined : staticNameProblem(host.fqdn, zone, byZone);
      return problem === undefined ? [] : [{ host, problem }];
    })
    .sort((a, b) => (a.host.fqdn < b.host.fqdn ? -1 : a.host.fqdn > b.host.fqdn ? 1 : 0));
}
