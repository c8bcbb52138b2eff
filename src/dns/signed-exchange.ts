/**
 * One signed round trip: sign the message with the zone's key once the transport has
 * picked its ID, send it, verify the response's TSIG (request MAC included) and map its
 * RCODE. Resolves only for a NOERROR answer validly signed by our key.
 */
import type { ZoneConfig } from '../config/schema.js';
import { DnsUpdateError } from '../core/errors.js';
import { protocolFailure, responseFailure } from './rcode.js';
import type { TcpTransport } from './transport.js';
import { signRequest, verifyMessage } from '../core/tsig.js';
import { parseHeader } from '../core/dns-wire.js';

export interface SigningContext {
  zone: ZoneConfig;
  fudge: number;
  /** Seconds since the epoch as the primary should see them (clock offset applied). */
  now(): number;
}

export async function signedExchange(
  transport: TcpTransport,
  ctx: SigningContext,
  encode: (id: number) => Buffer,
  timeoutMs: number,
): Promise<void> {
  let requestMac: Buffer | undefined;
  let requestOpcode = -1;
  const response = await transport.request((id) => {
    const unsigned = encode(id);
    requestOpcode = (unsigned.readUInt16BE(2) >> 11) & 0xf;
    const signed = signRequest(unsigned, ctx.zone.key, { timeSigned: Math.floor(ctx.now()), fudge: ctx.fudge });
    requestMac = signed.mac;
    return signed.message;
  }, timeoutMs);

  // A message with our ID that is no verifiable answer may have taken the place of the
  // primary's NOERROR (anyone on the path can send one): the update may have been applied.
  const zone = ctx.zone.name;
  let header;
  try {
    header = parseHeader(response);
  } catch (err) {
    throw protocolFailure(zone, `unreadable response: ${(err as Error).message}`, err).asMaybeApplied();
  }
  if (!header.qr || header.opcode !== requestOpcode) {
    const what = `response has QR=${header.qr ? 1 : 0} opcode ${header.opcode}, expected a reply to opcode ${requestOpcode}`;
    throw protocolFailure(zone, what).asMaybeApplied();
  }
  const verdict = verifyMessage(response, ctx.zone.key, { now: ctx.now(), requestMac: requestMac!, fudge: ctx.fudge });
  const failure = responseFailure(zone, header.rcode, verdict);
  if (failure) throw failure;
}

/** Anything thrown below the sender as a DnsUpdateError (unexpected errors are protocol failures). */
export function asDnsUpdateError(zone: string, err: unknown): DnsUpdateError {
  if (err instanceof DnsUpdateError) return err;
  return protocolFailure(zone, `unexpected failure: ${err instanceof Error ? err.message : String(err)}`, err);
}
