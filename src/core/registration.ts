/** What makes a name registrable as a host (pure): used by `host add` and `host import`. */
import { namesBetween, normalizeHostname, zoneOf } from './names.js';
import { staticNameProblem, type StaticNamesByZone } from './static-names.js';
import { HOST_TYPES, type HostType } from './types.js';

/**
 * The normalised name and type, and the names between it and its zone's apex; or why it cannot be registered
 * (not a name, outside the zones, an apex, a static name of its zone, an unknown type).
 */
export function checkRegistration(
  name: string,
  type: string,
  zones: readonly string[],
  staticNames: StaticNamesByZone,
): { fqdn: string; type: HostType; between: string[] } | { problem: string } {
  const fqdn = normalizeHostname(name);
  if (fqdn === undefined) return { problem: `not a valid host name: ${JSON.stringify(name)}` };
  if (zones.includes(fqdn)) return { problem: `${fqdn} is a zone apex: only names below it can be hosts` };
  const zone = zoneOf(fqdn, zones);
  if (zone === undefined) return { problem: `${fqdn} is not below any configured zone (${zones.join(', ')})` };
  const isStatic = staticNameProblem(fqdn, zone, staticNames);
  if (isStatic !== undefined) return { problem: isStatic };
  if (!(HOST_TYPES as readonly string[]).includes(type))
    return { problem: `unknown type ${JSON.stringify(type)} (one of ${HOST_TYPES.join(', ')})` };
  // between: where a host of another account must not sit (docs/security.md, "No shadowing").
  return { fqdn, type: type as HostType, between: namesBetween(fqdn, zone) };
}
