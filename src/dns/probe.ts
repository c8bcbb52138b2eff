/**
 * `ddns-bridge check`: prove a zone's key against its primary, with two signed UPDATEs that
 * change nothing. The first holds only the always-true prerequisite "the apex SOA exists": a
 * wrong key name, secret or algorithm, an ACL that denies the key, or a zone the primary
 * does not serve fail it. The second adds "delete the A RRset at PROBE_LABEL", guarded by
 * "PROBE_LABEL has no A RRset": BIND checks an update-policy per record of the update
 * section, so only a record shows whether the key may change host records (an UPDATE
 * without one passes with any key named in named.conf). The responses' TSIG is verified
 * like every update's.
 */
import type { Config, ZoneConfig } from '../config/schema.js';
import type { DnsUpdateError } from '../core/errors.js';
import { asDnsUpdateError, signedExchange } from './signed-exchange.js';
import { TcpTransport } from './transport.js';
import { encodeUpdate } from '../core/dns-wire.js';

/** A name no host should have; if one does, with an A record, the probe fails (YXRRSET) and says so. */
const PROBE_LABEL = 'ddns-bridge-check';

export type ProbeResult = { ok: true } | { ok: false; reason: string };

export async function probeZone(
  zone: ZoneConfig,
  dns: Config['dns'],
  clock: () => number = () => Date.now() / 1000,
): Promise<ProbeResult> {
  const transport = new TcpTransport({
    zone: zone.name,
    host: zone.primary.host,
    port: zone.primary.port,
    maxInFlight: 1,
    connectTimeoutMs: dns.timeoutMs,
  });
  const signing = { zone, fudge: dns.fudge, now: () => clock() + dns.clockOffsetSeconds };
  const probe = `${PROBE_LABEL}.${zone.name}`;
  const apexExists = { kind: 'rrset-exists', name: zone.name, type: 'SOA' } as const;
  const accepted = (id: number): Buffer =>
    encodeUpdate({ id, zone: zone.name, prerequisites: [apexExists], updates: [] });
  const granted = (id: number): Buffer =>
    encodeUpdate({
      id,
      zone: zone.name,
      prerequisites: [apexExists, { kind: 'rrset-absent', name: probe, type: 'A' }],
      updates: [{ kind: 'delete-rrset', name: probe, type: 'A' }],
    });
  try {
    await signedExchange(transport, signing, accepted, dns.timeoutMs);
  } catch (e) {
    transport.close();
    return { ok: false, reason: asDnsUpdateError(zone.name, e).message };
  }
  try {
    await signedExchange(transport, signing, granted, dns.timeoutMs);
    return { ok: true };
  } catch (e) {
    return { ok: false, reason: notGranted(asDnsUpdateError(zone.name, e), probe) };
  } finally {
    transport.close();
  }
}

/** Why the second probe failed, for an operator: the key works, its rights are the problem. */
function notGranted(err: DnsUpdateError, probe: string): string {
  if (err.rcode === 'YXRRSET')
    return `${probe} has an A record, so the probe could not prove the key's rights: free that name`;
  if (err.rcode !== 'REFUSED' && err.rcode !== 'NOTAUTH' && err.rcode !== 'BADKEY') return err.message;
  return (
    `the primary accepts the key but refused a change of the A records at ${probe} (${err.rcode}): ` +
    'grant the key A, AAAA, MX and TXT below the whole zone (BIND: update-policy { grant KEY zonesub A AAAA MX TXT; }; ' +
    'Knot: update-type [A, AAAA, MX, TXT] without update-owner; PowerDNS: TSIG-ALLOW-DNSUPDATE and no policy script). ' +
    'A primary that grants only some names or types ' +
    'updates just those, and fails this check'
  );
}
