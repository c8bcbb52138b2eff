/**
 * What a response (or its absence) means for an update (docs/protocol.md, "What goes into DNS"): applied, worth one
 * retry, or a failure with a hint for the operator's log. The single place that turns
 * DNS outcomes into DnsUpdateError.
 */
import { DnsUpdateError, type DnsFailureCode } from '../core/errors.js';
import type { TsigFailureReason, TsigVerdict } from '../core/tsig.js';

export const RCODE_NAMES: Readonly<Record<number, string>> = {
  0: 'NOERROR',
  1: 'FORMERR',
  2: 'SERVFAIL',
  3: 'NXDOMAIN',
  4: 'NOTIMP',
  5: 'REFUSED',
  6: 'YXDOMAIN',
  7: 'YXRRSET',
  8: 'NXRRSET',
  9: 'NOTAUTH',
  10: 'NOTZONE',
  16: 'BADSIG',
  17: 'BADKEY',
  18: 'BADTIME',
  19: 'BADMODE',
  20: 'BADNAME',
  21: 'BADALG',
  22: 'BADTRUNC',
};

export function rcodeName(code: number): string {
  return RCODE_NAMES[code] ?? `RCODE${code}`;
}

const KEY_OR_POLICY = "check the zone's update-policy / acl and the key name and algorithm";
const SECRET = 'key secret mismatch between the bridge and the primary (on Knot also: the acl denies this key)';
const CLOCK = 'clock skew between the bridge and the primary: sync both clocks (NTP) or set dns.clockOffset';

/** An operator hint for a failure mnemonic (rcode or TSIG error), for the error log. */
export function hintFor(rcode: string | undefined, code?: DnsUpdateError['code']): string {
  switch (rcode) {
    case 'REFUSED':
      return (
        `the primary refused the update: ${KEY_OR_POLICY} (BIND also refuses names with '_' and MX targets without ` +
        'addresses; PowerDNS answers a wrong key name, secret or algorithm, or a skewed clock, with an unsigned REFUSED)'
      );
    case 'NOTAUTH':
      return `the primary is not authoritative for the zone or denies the key: ${KEY_OR_POLICY}`;
    case 'NOTZONE':
      return 'a name in the update is outside the zone: check the configured zone name';
    case 'FORMERR':
      return 'the primary could not parse the update (a bug in the bridge, or an unsupported TSIG algorithm)';
    case 'BADKEY':
      return `the primary does not know this key: ${KEY_OR_POLICY}`;
    case 'BADSIG':
      return SECRET;
    case 'BADTIME':
      return CLOCK;
    case 'BADTRUNC':
      return 'the primary rejected the MAC length';
    case 'YXRRSET':
      return 'a prerequisite failed: the host name has a CNAME (remove it from the zone)';
    case 'NXRRSET':
      return 'a prerequisite failed: the zone apex has no SOA';
    case 'SERVFAIL':
      return 'the primary failed to apply the update (retried once); see its log';
    default:
      break;
  }
  switch (code) {
    case 'ERR_DNS_TIMEOUT':
      return 'the primary did not answer in time (update-quota, overload or a firewall)';
    case 'ERR_DNS_CONNECTION':
      return 'cannot reach the primary over TCP: is it running and listening on the configured address?';
    case 'ERR_DNS_TSIG':
      return 'the response is not signed by our key: check the key name, algorithm and secret';
    case 'ERR_DNS_PROTOCOL':
      return 'the primary sent an unexpected response';
    default:
      return "see the primary's log";
  }
}

/** A DnsUpdateError whose message ends with the operator hint ("what happened: what to check"). */
function failure(
  code: DnsFailureCode,
  zone: string,
  what: string,
  opts: { rcode?: string; retryable: boolean; maybeApplied?: boolean; signedAnswer?: boolean; cause?: unknown },
): DnsUpdateError {
  return new DnsUpdateError(code, zone, `${what}: ${hintFor(opts.rcode, code)}`, opts);
}

/**
 * The outcome of a verified (or unsigned error) response's RCODE: undefined = applied. An
 * unsigned error may be forged by anyone on the path, standing in for the primary's
 * NOERROR: the update may have been applied.
 */
export function rcodeFailure(zone: string, rcode: number, signed = true): DnsUpdateError | undefined {
  if (rcode === 0) return undefined;
  const name = rcodeName(rcode);
  const note = signed ? '' : ' (unsigned response)';
  const opts = { rcode: name, retryable: name === 'SERVFAIL', signedAnswer: signed, maybeApplied: !signed };
  return failure('ERR_DNS_RCODE', zone, `primary answered ${name}${note}`, opts);
}

/**
 * A TSIG error the primary's answer reported in its TSIG record (`tsigError`: BADSIG,
 * BADKEY, BADTIME, …), as opposed to one found by our own verification. Knot answers an
 * ACL denial of one owner name as BADKEY, which the zone sender splits by.
 */
export class TsigErrorAnswer extends DnsUpdateError {
  constructor(
    zone: string,
    message: string,
    opts: { rcode?: string; maybeApplied: boolean },
    readonly tsigError: string,
  ) {
    super('ERR_DNS_TSIG', zone, message, { ...opts, retryable: false });
  }
}

/** The mnemonic a local verification failure corresponds to (what a server would say). */
const LOCAL_TSIG_RCODE: Partial<Record<TsigFailureReason, string>> = {
  'key-mismatch': 'BADKEY',
  'algorithm-mismatch': 'BADKEY',
  'truncated-mac': 'BADTRUNC',
  'bad-mac': 'BADSIG',
  'bad-time': 'BADTIME',
  'server-badsig': 'BADSIG',
  'server-badkey': 'BADKEY',
  'server-badtime': 'BADTIME',
  'server-badtrunc': 'BADTRUNC',
};

/**
 * The outcome of a response given its header RCODE and its TSIG verdict. A response
 * that is not validly signed by our key is never taken as success; an unsigned error
 * answer (a server that could not even parse the TSIG) is reported by its RCODE. Only an
 * answer whose MAC verifies over our request's says the primary refused; any other may be
 * forged and hide a NOERROR, so it is `maybeApplied`.
 */
export function responseFailure(zone: string, rcode: number, verdict: TsigVerdict): DnsUpdateError | undefined {
  if (verdict.ok) return rcodeFailure(zone, rcode);
  if (verdict.reason === 'unsigned' && rcode !== 0) return rcodeFailure(zone, rcode, false);
  const mnemonic = LOCAL_TSIG_RCODE[verdict.reason];
  const skew = verdict.skewSeconds === undefined ? '' : ` (our clock is ${verdict.skewSeconds} s off the primary's)`;
  const what = verdict.reason.startsWith('server-')
    ? `primary answered ${rcodeName(rcode)}, TSIG error ${mnemonic ?? verdict.tsig?.error}${skew}`
    : `response failed TSIG verification: ${verdict.reason}, ${verdict.detail}`;
  // A NOERROR we cannot trust may stand in for a real one, and so may an error whose MAC
  // does not verify: BADSIG and BADKEY answers carry none (RFC 8945 §5.3.2), so only a
  // signed BADTIME (§5.2.3) or a verified answer outside the time window is the primary's
  // own refusal. A verified NOERROR outside the window was applied.
  const maybeApplied = rcode === 0 || verdict.macVerified !== true;
  const message = `${what}: ${hintFor(mnemonic, 'ERR_DNS_TSIG')}`;
  if (verdict.reason.startsWith('server-')) {
    return new TsigErrorAnswer(
      zone,
      message,
      { rcode: mnemonic, maybeApplied },
      mnemonic ?? `TSIG error ${verdict.tsig?.error}`,
    );
  }
  return failure('ERR_DNS_TSIG', zone, what, { rcode: mnemonic, retryable: false, maybeApplied });
}

export function timeoutFailure(zone: string, ms: number): DnsUpdateError {
  return failure('ERR_DNS_TIMEOUT', zone, `no answer from the primary within ${Math.round(ms)} ms`, {
    retryable: true,
  });
}

export function connectionFailure(zone: string, what: string, cause?: unknown): DnsUpdateError {
  return failure('ERR_DNS_CONNECTION', zone, what, { retryable: true, cause });
}

export function protocolFailure(zone: string, what: string, cause?: unknown): DnsUpdateError {
  return failure('ERR_DNS_PROTOCOL', zone, what, { retryable: false, cause });
}
