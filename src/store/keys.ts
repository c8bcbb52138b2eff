/**
 * Every Redis key name the service uses, in one place. Short names and short hash fields
 * on purpose: at a million hosts each host must stay within a few hundred bytes.
 *
 *   {p}a:{name}        account hash     h=password hash, d=1 donator, c=created ms, n=hosts owned, k=tokens
 *   {p}accounts        set of account names
 *   {p}h:{fqdn}        host hash        see HOST_FIELDS
 *   {p}ag              set of blocked User-Agent patterns (CLI `agent block`)
 *   {p}jc:{ip}:{ua}    junk counter (TTL = junk window)     ua = sha1(User-Agent) hex, 16 chars
 *   {p}jb:{ip}:{ua}    junk block marker (TTL = block time)
 *   {p}fi:{ip}         failed logins per source (TTL = window)
 *   {p}fa:{account}    failed logins per account (TTL = window)
 *   {p}ti:{ip}         login cool-down per source (TTL = cool-down)
 *   {p}ta:{account}    login cool-down per account (TTL = cool-down)
 *   {p}e:{ip}          address-echo frequency hash  see ECHO_FIELDS
 *   {p}t:{id}          update token hash  see TOKEN_FIELDS
 *   {p}tk:{hash}       the id of the token with this hash (the login's lookup)
 *   {p}ht:{fqdn}       set of the host's token ids
 *   {p}hl:{fqdn}       set of the hosts linked to it (they follow its IPv6 prefix; each names it in
 *                      HOST_FIELDS.linkParent)
 *   {p}d:{name}        nest index: the hosts below a name that lies between them and their zone's apex → owner
 *   {p}qs              the quiet-host sweep's lock (PX: one sweep per interval)
 *   {p}qh              hash: hosts quiet for at least each age, as the last sweep counted
 *   {p}schema          hash of data migrations done (field nesting=1: the nest index covers every host)
 *
 * `{ip}` is the address bucket (see addressBucket): IPv6 clients are counted per /64.
 */
import { hash } from 'node:crypto';
import { isIPv6 } from 'node:net';

/** Short field names of the host hash. Absent fields mean ''/false/0. */
export const HOST_FIELDS = {
  owner: 'o',
  type: 't',
  state: 's',
  ipv4: '4',
  ipv6: '6',
  wildcard: 'w',
  mx: 'm',
  backmx: 'b',
  updatedAt: 'u',
  lastRequest: 'fl',
  frequentCount: 'fc',
  frequencySeq: 'fs',
  leaseToken: 'lk',
  leaseUntil: 'lu',
  /** Failed republishes since DNS and Redis last agreed (the reconciler's back-off). */
  republishFailures: 'rf',
  /**
   * The address families ('4', '6', '46' or '') the holder of the lease `leaseFamiliesOf`
   * writes in full, kept until its commit: a repair of it rewrites them and leaves the
   * families nobody wrote (FAMILIES in lua.ts).
   */
  leaseFamilies: 'lf',
  /** The host whose IPv6 prefix this one follows (docs/protocol.md, "IPv6 prefixes"), and its interface ID. */
  linkParent: 'pp',
  linkIid: 'pi',
  /** A parent's last delegated prefix (`network/length`), recorded once every linked host that could follow it did. */
  lastPrefix: 'px',
  /**
   * Counts the links made to this host since its prefix was last published (its next prefix update is no nochg);
   * its value when the lease was taken is `linksSeen`: the commit clears it only if no link came meanwhile.
   */
  linksChanged: 'pd',
  linksSeen: 'ps',
  /** The lease token `leaseFamilies` belongs to. */
  leaseFamiliesOf: 'lt',
  /** '1': a change that lost its lease may have landed while this holder was in flight. */
  leaseLate: 'lr',
  /**
   * The ACME TXT values, oldest first, joined by '\n' (never in a value); '' once all are removed; absent: never
   * set (docs/protocol.md, "ACME TXT records").
   */
  txt: 'x',
  /** Start (ms) of the host's current TXT rate window and the TXT requests counted in it (frequency.txtLimit). */
  txtWindowStart: 'xs',
  txtCount: 'xn',
  /**
   * What versions before these three fields kept instead, `<families>[r]:<lease token>`:
   * read (a running deployment upgrades in place), deleted by the next write of the lease.
   */
  legacyLeaseRecord: 'la',
  /**
   * Lease tokens whose requester gave up (a timeout: `911`) before its admission ran, space-separated, newest last
   * (at most ABANDON_MARKS): a lease taken with one of them ends as it is taken (ABANDON in scripts/lease.ts).
   */
  leaseAbandoned: 'lg',
  /**
   * When the quiet-host sweep first saw the host without a counted request, or it was made active again (ms;
   * docs/operators.md, "Quiet hosts"): a host that never made a request is quiet since then.
   */
  createdAt: 'ca',
  /**
   * The last update request (core/request-log.ts): when (ms), its reply in dyndns2's words ('' while in flight),
   * the client's source address and User-Agent (at most RECORDED_AGENT_MAX characters).
   */
  requestAt: 'qa',
  requestReply: 'qr',
  requestSource: 'qs',
  requestAgent: 'qu',
  /**
   * Requests by the hour: the hour last counted (hours since the epoch) and its counts, one field each so that a
   * request rewrites one short number; the 23 hours before it as `hour good nochg refused failed` entries (`,`).
   */
  tallyHour: 'rh',
  tallyGood: 'rg',
  tallyNochg: 'rn',
  tallyRefused: 'rr',
  tallyFailed: 'rx',
  tallyEarlier: 'rd',
} as const;

/** The host fields that belong to a lease, not to the host record. */
export const LEASE_FIELDS = [
  HOST_FIELDS.leaseToken,
  HOST_FIELDS.leaseUntil,
  HOST_FIELDS.leaseFamilies,
  HOST_FIELDS.leaseFamiliesOf,
  HOST_FIELDS.leaseLate,
  HOST_FIELDS.linksSeen,
  HOST_FIELDS.legacyLeaseRecord,
  HOST_FIELDS.leaseAbandoned,
] as const;

/** The host fields of its request log (core/request-log.ts): observations of its requests, not its state. */
export const REQUEST_LOG_FIELDS = [
  HOST_FIELDS.requestAt,
  HOST_FIELDS.requestReply,
  HOST_FIELDS.requestSource,
  HOST_FIELDS.requestAgent,
  HOST_FIELDS.tallyHour,
  HOST_FIELDS.tallyGood,
  HOST_FIELDS.tallyNochg,
  HOST_FIELDS.tallyRefused,
  HOST_FIELDS.tallyFailed,
  HOST_FIELDS.tallyEarlier,
] as const;

/** Short field names of the account hash. */
export const ACCOUNT_FIELDS = {
  passwordHash: 'h',
  donator: 'd',
  createdAt: 'c',
  hostCount: 'n',
  tokenCount: 'k',
} as const;

/** Short field names of the address echo's per-address hash (`{p}e:{ip}`). */
export const ECHO_FIELDS = {
  lastRequest: 'fl',
  frequentCount: 'fc',
  blockedUntil: 'bu',
} as const;

/** Short field names of an update token's hash. Absent: never expires, never used, anywhere, no note. */
export const TOKEN_FIELDS = {
  fqdn: 'f',
  account: 'a',
  /** The token's keyed hash (auth/update-token): the token itself is never stored. */
  hash: 'k',
  createdAt: 'c',
  expiresAt: 'e',
  lastUsedAt: 'l',
  /** Comma-separated CIDR blocks. */
  from: 'r',
  note: 'n',
  /** '1': the token may set and clear the host's ACME TXT values and nothing else (`token add --acme-only`). */
  acmeOnly: 'x',
  /** The algorithm of a gateway TSIG key (`token add --tsig`); absent: an HTTP update token. Never its secret. */
  tsig: 'g',
} as const;

export class Keys {
  private readonly hostPrefix: string;

  constructor(readonly prefix: string) {
    this.hostPrefix = `${prefix}h:`;
  }

  account(name: string): string {
    return `${this.prefix}a:${name}`;
  }

  accountSet(): string {
    return `${this.prefix}accounts`;
  }

  host(fqdn: string): string {
    return this.hostPrefix + fqdn;
  }

  /** Sorted set of host keys with a change lease (score: lease end, ms): changes in flight. */
  pendingChanges(): string {
    return `${this.prefix}pending`;
  }

  /** The quiet-host sweep's lock (one process sweeps per interval) and its last counts by age. */
  quietSweepLock(): string {
    return `${this.prefix}qs`;
  }

  quietCounts(): string {
    return `${this.prefix}qh`;
  }

  /** SCAN MATCH pattern for every key under the prefix (its glob characters escaped). */
  prefixScanPattern(): string {
    return `${escapeGlob(this.prefix)}*`;
  }

  /** SCAN MATCH pattern for every host key (the prefix's glob characters escaped). */
  hostScanPattern(): string {
    return `${escapeGlob(this.hostPrefix)}*`;
  }

  /** The FQDN of a host key, or undefined for a key that is not one. */
  fqdnOfHostKey(key: string): string | undefined {
    return key.startsWith(this.hostPrefix) ? key.slice(this.hostPrefix.length) : undefined;
  }

  /** The hosts that follow this host's IPv6 prefix (`host link`). */
  hostLinks(fqdn: string): string {
    return `${this.prefix}hl:${fqdn}`;
  }

  /** The hosts registered below `name` (when `name` lies between them and their zone's apex) → owner. */
  nestIndex(name: string): string {
    return `${this.prefix}d:${name}`;
  }

  schema(): string {
    return `${this.prefix}schema`;
  }

  token(id: string): string {
    return `${this.prefix}t:${id}`;
  }

  tokenIndex(hash: string): string {
    return `${this.prefix}tk:${hash}`;
  }

  hostTokens(fqdn: string): string {
    return `${this.prefix}ht:${fqdn}`;
  }

  /** SCAN MATCH pattern for every token record. */
  tokenScanPattern(): string {
    return `${escapeGlob(this.prefix)}t:*`;
  }

  idOfTokenKey(key: string): string | undefined {
    const head = `${this.prefix}t:`;
    return key.startsWith(head) ? key.slice(head.length) : undefined;
  }

  blockedAgents(): string {
    return `${this.prefix}ag`;
  }

  junkCount(sourceIp: string, userAgent: string): string {
    return `${this.prefix}jc:${addressBucket(sourceIp)}:${agentDigest(userAgent)}`;
  }

  junkBlock(sourceIp: string, userAgent: string): string {
    return `${this.prefix}jb:${addressBucket(sourceIp)}:${agentDigest(userAgent)}`;
  }

  failuresBySource(sourceIp: string): string {
    return `${this.prefix}fi:${addressBucket(sourceIp)}`;
  }

  failuresByAccount(account: string): string {
    return `${this.prefix}fa:${account}`;
  }

  cooldownBySource(sourceIp: string): string {
    return `${this.prefix}ti:${addressBucket(sourceIp)}`;
  }

  cooldownByAccount(account: string): string {
    return `${this.prefix}ta:${account}`;
  }

  echo(sourceIp: string): string {
    return `${this.prefix}e:${addressBucket(sourceIp)}`;
  }
}

/** First 16 hex digits of sha1(User-Agent): bounded key length whatever the header holds. */
export function agentDigest(userAgent: string): string {
  let digest = agentDigests.get(userAgent);
  if (digest === undefined) {
    digest = hash('sha1', userAgent, 'hex').slice(0, 16);
    // A few agents send almost every request (router firmware): each is hashed once, not per request.
    // Only agents of a router's length are kept, so that the memo stays small whatever clients send.
    if (userAgent.length <= AGENT_DIGEST_KEPT_LENGTH) {
      if (agentDigests.size >= AGENT_DIGESTS_KEPT) agentDigests.clear();
      agentDigests.set(userAgent, digest);
    }
  }
  return digest;
}

const AGENT_DIGESTS_KEPT = 1024;
const AGENT_DIGEST_KEPT_LENGTH = 256;
const agentDigests = new Map<string, string>();

/**
 * The unit an address is counted in: IPv4 as is, IPv6 by its /64 (one customer site gets a
 * whole /64, so per-/128 counting would be trivially evaded with privacy addresses).
 */
export function addressBucket(ip: string): string {
  // No colon: not IPv6 (isIPv6's pattern is long, and most clients come over IPv4).
  if (!ip.includes(':') || !isIPv6(ip)) return ip;
  const groups = expandIPv6(ip);
  return groups === undefined ? ip : `${groups.slice(0, 4).join(':')}::/64`;
}

function expandIPv6(ip: string): string[] | undefined {
  let text = ip.toLowerCase();
  const zone = text.indexOf('%');
  if (zone >= 0) text = text.slice(0, zone);
  // An embedded IPv4 tail (::ffff:1.2.3.4) becomes two hextets.
  const v4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (v4) {
    const [a, b, c, d] = v4.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, v4.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const head = halves[0] === '' ? [] : halves[0]!.split(':');
  const tail = halves.length === 2 && halves[1] !== '' ? halves[1]!.split(':') : [];
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 0) return undefined;
  const groups = [...head, ...Array<string>(Math.max(missing, 0)).fill('0'), ...tail];
  return groups.map((g) => g.replace(/^0+(?=.)/, ''));
}

function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, '\\$&');
}
