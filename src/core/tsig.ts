/**
 * RFC 8945 TSIG: signing requests and verifying signed messages (responses, or requests
 * when playing the server in tests). Only full-length MACs are produced and accepted.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

import {
  CLASS_ANY,
  TYPE_TSIG,
  WireFormatError,
  encodeCanonicalName,
  encodeName,
  parseMessage,
  readName,
} from './dns-wire.js';

export const TSIG_ALGORITHMS = ['hmac-sha256', 'hmac-sha1', 'hmac-sha224', 'hmac-sha384', 'hmac-sha512'] as const;
export type TsigAlgorithm = (typeof TSIG_ALGORITHMS)[number];

export interface TsigKeyConfig {
  /** Key name as configured on the primary (or a gateway key's name), e.g. `ddns-key`. */
  name: string;
  algorithm: TsigAlgorithm;
  /** The decoded secret. Never logged. */
  secret: Buffer;
}

/** Algorithm name (wire form, without trailing dot) → node:crypto digest. */
const DIGESTS: Record<TsigAlgorithm, { wireName: string; digest: string; macLength: number }> = {
  'hmac-sha1': { wireName: 'hmac-sha1', digest: 'sha1', macLength: 20 },
  'hmac-sha224': { wireName: 'hmac-sha224', digest: 'sha224', macLength: 28 },
  'hmac-sha256': { wireName: 'hmac-sha256', digest: 'sha256', macLength: 32 },
  'hmac-sha384': { wireName: 'hmac-sha384', digest: 'sha384', macLength: 48 },
  'hmac-sha512': { wireName: 'hmac-sha512', digest: 'sha512', macLength: 64 },
};

/** The MAC length (bytes) of each algorithm: also the length of a derived gateway key's secret. */
export const TSIG_MAC_LENGTHS = Object.fromEntries(
  Object.entries(DIGESTS).map(([alg, d]) => [alg, d.macLength]),
) as Record<TsigAlgorithm, number>;

/** Recognised only so that a message using it is rejected by name (MD5 is not accepted). */
export const HMAC_MD5_NAME = 'hmac-md5.sig-alg.reg.int';

/** RFC 8945 §4.3 TSIG error codes (carried in the TSIG RR's Error field). */
export const TSIG_ERRORS = { BADSIG: 16, BADKEY: 17, BADTIME: 18, BADTRUNC: 22 } as const;

const ALGORITHM_BY_WIRE_NAME = new Map<string, TsigAlgorithm | 'hmac-md5'>([
  ...Object.entries(DIGESTS).map(([alg, d]) => [d.wireName, alg as TsigAlgorithm] as const),
  [HMAC_MD5_NAME, 'hmac-md5'],
]);

/** The algorithm's wire name (no trailing dot), e.g. `hmac-sha256`. */
export function algorithmWireName(algorithm: TsigAlgorithm): string {
  return DIGESTS[algorithm].wireName;
}

/** The supported algorithm with this wire name, `'hmac-md5'` (to reject it by name), or undefined. */
export function algorithmFromWireName(name: string): TsigAlgorithm | 'hmac-md5' | undefined {
  const lower = name.toLowerCase();
  return ALGORITHM_BY_WIRE_NAME.get(lower.endsWith('.') ? lower.slice(0, -1) : lower);
}

/** The decoded TSIG RDATA (RFC 8945 §4.2) plus the record's owner name. */
export interface TsigRecord {
  keyName: string;
  algorithm: string;
  timeSigned: number;
  fudge: number;
  mac: Buffer;
  originalId: number;
  error: number;
  otherData: Buffer;
}

const EMPTY = Buffer.alloc(0);
/** TYPE, CLASS, TTL and RDLENGTH after the owner name. */
const RR_FIXED_LENGTH = 10;
/** Time Signed (48 bits), Fudge, MAC Size; then after the MAC: Original ID, Error, Other Len. */
const RDATA_FIXED_LENGTH = 16;
/** The variables after the algorithm name (§4.3.3): Time Signed, Fudge, Error, Other Len. */
const VARIABLES_TAIL_LENGTH = 12;

function writeU48(buf: Buffer, value: number, pos: number): number {
  buf.writeUInt16BE(Math.floor(value / 2 ** 32), pos);
  buf.writeUInt32BE(value % 2 ** 32, pos + 2);
  return pos + 6;
}

/**
 * A key's fixed wire pieces, worked out once per key (the config's keys live as long as the
 * process; every UPDATE and answer would otherwise encode the same names again).
 */
interface KeyForms {
  /** What they were made from: rebuilt if the key object says otherwise. */
  keyName: string;
  algorithm: TsigAlgorithm;
  /** The key name as a message's is compared with it: lowercase, no final dot. */
  comparableName: string;
  /** The record's owner: the key name as configured, uncompressed. */
  owner: Buffer;
  /** The algorithm name, uncompressed (lowercase: its canonical form too). */
  algorithmName: Buffer;
  /** §4.3.3 variables up to the algorithm name: canonical key name, class ANY, TTL 0, canonical algorithm. */
  variablesHead: Buffer;
}

const keyForms = new WeakMap<TsigKeyConfig, KeyForms>();

function formsOf(key: TsigKeyConfig): KeyForms {
  const known = keyForms.get(key);
  if (known && known.keyName === key.name && known.algorithm === key.algorithm) return known;
  const algorithmName = encodeName(algorithmWireName(key.algorithm));
  const canonicalKey = encodeCanonicalName(key.name);
  const variablesHead = Buffer.alloc(canonicalKey.length + 6 + algorithmName.length);
  canonicalKey.copy(variablesHead, 0);
  variablesHead.writeUInt16BE(CLASS_ANY, canonicalKey.length); // then TTL 0
  algorithmName.copy(variablesHead, canonicalKey.length + 6);
  const lower = key.name.toLowerCase();
  const forms: KeyForms = {
    keyName: key.name,
    algorithm: key.algorithm,
    comparableName: lower.endsWith('.') ? lower.slice(0, -1) : lower,
    owner: encodeName(key.name),
    algorithmName,
    variablesHead,
  };
  keyForms.set(key, forms);
  return forms;
}

/**
 * RFC 8945 §4.3: the MAC over [request MAC,] the message as signed and the TSIG variables.
 * The variables' names are the key's canonical forms: a message whose names differ (other
 * than in case) is refused before its MAC is computed.
 */
function macOf(
  key: TsigKeyConfig,
  forms: KeyForms,
  requestMac: Buffer | undefined,
  message: Buffer,
  t: Pick<TsigRecord, 'timeSigned' | 'fudge' | 'error' | 'otherData'>,
): Buffer {
  const h = createHmac(DIGESTS[key.algorithm].digest, key.secret);
  if (requestMac) {
    const length = Buffer.allocUnsafe(2);
    length.writeUInt16BE(requestMac.length);
    h.update(length).update(requestMac);
  }
  const tail = Buffer.allocUnsafe(VARIABLES_TAIL_LENGTH);
  let pos = writeU48(tail, t.timeSigned, 0);
  pos = tail.writeUInt16BE(t.fudge, pos);
  pos = tail.writeUInt16BE(t.error, pos);
  tail.writeUInt16BE(t.otherData.length, pos);
  return h.update(message).update(forms.variablesHead).update(tail).update(t.otherData).digest();
}

/** Length of the TSIG record (owner = key name, class ANY, TTL 0) with these fields. */
function tsigRecordLength(owner: Buffer, algorithmName: Buffer, t: Pick<TsigRecord, 'mac' | 'otherData'>): number {
  return owner.length + RR_FIXED_LENGTH + algorithmName.length + RDATA_FIXED_LENGTH + t.mac.length + t.otherData.length;
}

/** Write the TSIG record at `pos` (room for tsigRecordLength bytes). */
function writeTsigRecord(
  buf: Buffer,
  pos: number,
  owner: Buffer,
  algorithmName: Buffer,
  t: Omit<TsigRecord, 'keyName' | 'algorithm'>,
): void {
  pos += owner.copy(buf, pos);
  pos = buf.writeUInt16BE(TYPE_TSIG, pos);
  pos = buf.writeUInt16BE(CLASS_ANY, pos);
  pos = buf.writeUInt32BE(0, pos); // TTL
  pos = buf.writeUInt16BE(algorithmName.length + RDATA_FIXED_LENGTH + t.mac.length + t.otherData.length, pos);
  pos += algorithmName.copy(buf, pos);
  pos = writeU48(buf, t.timeSigned, pos);
  pos = buf.writeUInt16BE(t.fudge, pos);
  pos = buf.writeUInt16BE(t.mac.length, pos);
  pos += t.mac.copy(buf, pos);
  pos = buf.writeUInt16BE(t.originalId, pos);
  pos = buf.writeUInt16BE(t.error, pos);
  pos = buf.writeUInt16BE(t.otherData.length, pos);
  t.otherData.copy(buf, pos);
}

/** The TSIG resource record (owner = key name, class ANY, TTL 0). */
export function encodeTsigRecord(t: TsigRecord): Buffer {
  const owner = encodeName(t.keyName);
  const algorithmName = encodeName(t.algorithm);
  const out = Buffer.allocUnsafe(tsigRecordLength(owner, algorithmName, t));
  writeTsigRecord(out, 0, owner, algorithmName, t);
  return out;
}

export interface SignOptions {
  /** Seconds since the epoch (integer) to put in Time Signed. */
  timeSigned: number;
  /** Seconds of permitted clock difference. */
  fudge: number;
  /** When signing a response: the request's MAC, prepended to the MAC input (RFC 8945 §5.3). */
  requestMac?: Buffer;
  /** TSIG Error field (a server answering BADTIME); default 0. */
  error?: number;
  otherData?: Buffer;
}

export interface SignedMessage {
  /** The message with the TSIG record appended and ARCOUNT incremented. */
  message: Buffer;
  /** The MAC, needed to verify the answer to a request. */
  mac: Buffer;
}

/**
 * Sign a message (RFC 8945 §4.3): MAC over [request MAC,] the message as sent and the
 * TSIG variables, then append the TSIG record. Requests omit `requestMac`.
 */
export function signMessage(message: Buffer, key: TsigKeyConfig, opts: SignOptions): SignedMessage {
  const forms = formsOf(key);
  const fields = {
    timeSigned: Math.floor(opts.timeSigned),
    fudge: opts.fudge,
    error: opts.error ?? 0,
    otherData: opts.otherData ?? EMPTY,
  };
  const mac = macOf(key, forms, opts.requestMac, message, fields);
  const record = { ...fields, mac, originalId: message.readUInt16BE(0) };
  const out = Buffer.allocUnsafe(message.length + tsigRecordLength(forms.owner, forms.algorithmName, record));
  message.copy(out, 0);
  writeTsigRecord(out, message.length, forms.owner, forms.algorithmName, record);
  out.writeUInt16BE(out.readUInt16BE(10) + 1, 10);
  return { message: out, mac };
}

/** Sign a request: see signMessage. */
export function signRequest(
  message: Buffer,
  key: TsigKeyConfig,
  opts: { timeSigned: number; fudge: number },
): SignedMessage {
  return signMessage(message, key, opts);
}

/** Why a message failed verification; `server-*` are errors the peer reported in its TSIG. */
export type TsigFailureReason =
  | 'unsigned'
  | 'malformed'
  | 'key-mismatch'
  | 'algorithm-mismatch'
  | 'truncated-mac'
  | 'bad-mac'
  | 'bad-time'
  | 'server-badsig'
  | 'server-badkey'
  | 'server-badtime'
  | 'server-badtrunc'
  | 'server-error';

export type TsigVerdict =
  | { ok: true; tsig: TsigRecord }
  | {
      ok: false;
      reason: TsigFailureReason;
      detail: string;
      tsig?: TsigRecord;
      /** Our clock minus the peer's, in seconds, when a time check failed and it is known. */
      skewSeconds?: number;
      /**
       * The MAC verified over our request's (a time check failed, or a signed BADTIME): the
       * answer is the peer's own. Absent: anyone on the path could have made it up.
       */
      macVerified?: true;
    };

export interface VerifyOptions {
  /** Current time in seconds since the epoch. */
  now: number;
  /** The MAC of our request when verifying its response (RFC 8945 §5.3); absent for requests. */
  requestMac?: Buffer;
  /**
   * Our own fudge (dns.fudge): a skew within it is accepted even when the peer signed with a
   * smaller one (servers sign with theirs, 300 s, whatever the request said).
   */
  fudge?: number;
  /**
   * A server verifying requests: at most this fudge, whatever the request says (a client's 65535 s would make a
   * captured message good for 18 hours).
   */
  maxFudge?: number;
}

/** Decode the TSIG RDATA of the record at `loc`. */
function decodeTsig(buf: Buffer, keyName: string, rdataStart: number, rdataLength: number): TsigRecord {
  const end = rdataStart + rdataLength;
  const { name: algorithm, next } = readName(buf, rdataStart);
  let pos = next;
  const need = (n: number): void => {
    if (pos + n > end) throw new WireFormatError('TSIG RDATA truncated');
  };
  need(10);
  const timeSigned = buf.readUInt16BE(pos) * 2 ** 32 + buf.readUInt32BE(pos + 2);
  const fudge = buf.readUInt16BE(pos + 6);
  const macSize = buf.readUInt16BE(pos + 8);
  pos += 10;
  need(macSize);
  const mac = Buffer.from(buf.subarray(pos, pos + macSize));
  pos += macSize;
  need(6);
  const originalId = buf.readUInt16BE(pos);
  const error = buf.readUInt16BE(pos + 2);
  const otherLen = buf.readUInt16BE(pos + 4);
  pos += 6;
  need(otherLen);
  const otherData = Buffer.from(buf.subarray(pos, pos + otherLen));
  pos += otherLen;
  if (pos !== end) throw new WireFormatError('TSIG RDATA has trailing bytes');
  return { keyName, algorithm, timeSigned, fudge, mac, originalId, error, otherData };
}

/** Extract the TSIG record and the message as it was before signing (RFC 8945 §4.3.1). */
export function extractTsig(buf: Buffer): { tsig: TsigRecord; unsigned: Buffer } | undefined {
  const { lastAdditional: rr } = parseMessage(buf);
  if (!rr || rr.type !== TYPE_TSIG) return undefined;
  if (rr.klass !== CLASS_ANY || rr.ttl !== 0) throw new WireFormatError('TSIG record with wrong class or TTL');
  const tsig = decodeTsig(buf, rr.name, rr.rdataStart, rr.rdataLength);
  const unsigned = Buffer.from(buf.subarray(0, rr.start));
  unsigned.writeUInt16BE(tsig.originalId, 0);
  unsigned.writeUInt16BE(unsigned.readUInt16BE(10) - 1, 10);
  return { tsig, unsigned };
}

const SERVER_ERRORS: Record<number, TsigFailureReason> = {
  [TSIG_ERRORS.BADSIG]: 'server-badsig',
  [TSIG_ERRORS.BADKEY]: 'server-badkey',
  [TSIG_ERRORS.BADTIME]: 'server-badtime',
  [TSIG_ERRORS.BADTRUNC]: 'server-badtrunc',
};

/**
 * Verify a signed message with `key`. For a response, pass the request MAC: it is
 * prepended (length + MAC) to the MAC input. Checks, in RFC 8945 §5.3/§5.4 order: a TSIG
 * is present, key name and algorithm are ours, the peer reported no TSIG error, the MAC
 * is full length and matches, and Time Signed is within the fudge of `now` (the larger of
 * the message's and `opts.fudge`).
 */
export function verifyMessage(buf: Buffer, key: TsigKeyConfig, opts: VerifyOptions): TsigVerdict {
  let extracted: ReturnType<typeof extractTsig>;
  try {
    extracted = extractTsig(buf);
  } catch (err) {
    return { ok: false, reason: 'malformed', detail: err instanceof Error ? err.message : String(err) };
  }
  if (!extracted) return { ok: false, reason: 'unsigned', detail: 'message carries no TSIG record' };
  const { tsig, unsigned } = extracted;

  const forms = formsOf(key);
  if (tsig.keyName.toLowerCase() !== forms.comparableName) {
    return { ok: false, reason: 'key-mismatch', detail: `signed with key ${tsig.keyName}, expected ${key.name}`, tsig };
  }
  const algorithm = algorithmFromWireName(tsig.algorithm);
  if (algorithm !== key.algorithm) {
    const what = algorithm === 'hmac-md5' ? 'hmac-md5 (not supported)' : tsig.algorithm;
    return { ok: false, reason: 'algorithm-mismatch', detail: `signed with ${what}, expected ${key.algorithm}`, tsig };
  }
  const macLength = DIGESTS[key.algorithm].macLength;
  // The names in the variables are the key's (canonical): the message's were checked above.
  const macMatches = (): boolean =>
    tsig.mac.length === macLength && timingSafeEqual(macOf(key, forms, opts.requestMac, unsigned, tsig), tsig.mac);
  if (tsig.error !== 0) {
    const reason = SERVER_ERRORS[tsig.error] ?? 'server-error';
    // A BADTIME answer is signed and carries the peer's clock in Other Data (RFC 8945
    // §5.2.3). The skew is only believed from an answer whose MAC verifies: anyone can
    // send an unsigned BADTIME naming any clock.
    // BADSIG and BADKEY answers carry no MAC (RFC 8945 §5.3.2): they stay unverified.
    const peerTime =
      tsig.otherData.length === 6
        ? tsig.otherData.readUInt16BE(0) * 2 ** 32 + tsig.otherData.readUInt32BE(2)
        : undefined;
    if (reason === 'server-badtime' && macMatches()) {
      const skew = peerTime === undefined ? {} : { skewSeconds: Math.floor(opts.now) - peerTime };
      return { ok: false, reason, detail: `peer reported TSIG error ${tsig.error}`, tsig, macVerified: true, ...skew };
    }
    const unverified =
      reason === 'server-badtime' && peerTime !== undefined
        ? ' (its MAC does not verify: the clock it names is ignored)'
        : '';
    return { ok: false, reason, detail: `peer reported TSIG error ${tsig.error}${unverified}`, tsig };
  }
  if (tsig.mac.length !== macLength) {
    const reason = tsig.mac.length === 0 ? 'bad-mac' : 'truncated-mac';
    return { ok: false, reason, detail: `MAC is ${tsig.mac.length} bytes, expected ${macLength}`, tsig };
  }
  if (!macMatches()) return { ok: false, reason: 'bad-mac', detail: 'MAC does not match', tsig };
  const skew = Math.floor(opts.now) - tsig.timeSigned;
  const fudge = Math.min(Math.max(tsig.fudge, opts.fudge ?? 0), opts.maxFudge ?? Infinity);
  if (Math.abs(skew) > fudge) {
    return {
      ok: false,
      reason: 'bad-time',
      detail: `time signed is ${skew} s behind ours (fudge ${fudge} s)`,
      tsig,
      skewSeconds: skew,
      macVerified: true,
    };
  }
  return { ok: true, tsig };
}
