/**
 * `ddns-bridge check`: prove a zone's key against its primary. The probe is a signed UPDATE
 * that changes nothing: prerequisites "the apex SOA exists" and "PROBE_LABEL has no A
 * RRset", then "delete the A RRset at PROBE_LABEL". The delete is what makes it a proof:
 * BIND checks an update-policy per record of the update section, so an UPDATE with none
 * passes with any key the server knows, granted or not. A wrong key name, secret or
 * algorithm, a key no rule grants A records below the whole zone, or a zone the primary
 * does not serve all fail it. The response's TSIG is verified like every update's.
 */
import type { Config, ZoneConfig } from '../config/schema.js';
import { asDnsUpdateError, signedExchange } from './signed-exchange.js';
import { TcpTransport } from './transport.js';
import { encodeUpdate } from './wire.js';

/** A name no host should have; if one does, with an A record, the probe fails (YXRRSET) and says so. */
export const PROBE_LABEL = 'ddns-bridge-check';

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
  const encode = (id: number): Buffer =>
    encodeUpdate({
      id,
      zone: zone.name,
      prerequisites: [
        { kind: 'rrset-exists', name: zone.name, type: 'SOA' },
        { kind: 'rrset-absent', name: probe, type: 'A' },
      ],
      updates: [{ kind: 'delete-rrset', name: probe, type: 'A' }],
    });
  try {
    await signedExchange(transport, signing, encode, dns.timeoutMs);
    return { ok: true };
  } catch (e) {
    const err = asDnsUpdateError(zone.name, e);
    if (err.rcode === 'YXRRSET') return { ok: false, reason: `${probe} has an A record, so the probe could not prove the key's rights: free that name` };
    return { ok: false, reason: err.message };
  } finally {
    transport.close();
  }
}
