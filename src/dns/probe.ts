/**
 * `ddns-bridge check`: prove a zone's key against its primary. The probe is a signed
 * UPDATE whose only content is the always-true prerequisite "the apex SOA RRset exists":
 * it changes nothing, yet passes the primary's update ACL / update-policy gate, so a wrong
 * key name, secret or algorithm, an ACL that denies the key, or a zone the primary does
 * not serve all fail it. The response's TSIG is verified like every update's.
 */
import type { Config, ZoneConfig } from '../config/schema.js';
import { asDnsUpdateError, signedExchange } from './signed-exchange.js';
import { TcpTransport } from './transport.js';
import { encodeUpdate } from './wire.js';

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
  const encode = (id: number): Buffer =>
    encodeUpdate({ id, zone: zone.name, prerequisites: [{ kind: 'rrset-exists', name: zone.name, type: 'SOA' }], updates: [] });
  try {
    await signedExchange(transport, signing, encode, dns.timeoutMs);
    return { ok: true };
  } catch (e) {
    const err = asDnsUpdateError(zone.name, e);
    return { ok: false, reason: err.message };
  } finally {
    transport.close();
  }
}
