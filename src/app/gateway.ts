/**
 * The RFC 2136 gateway's use cases (docs/protocol.md, "RFC 2136 gateway"): finding a key's record, and a verified
 * key's change of its own host — prerequisites against what the bridge records, then the update path's admission,
 * DNS and commit (UpdateService.updateWithKey). The adapter (src/gateway) parses, verifies the TSIG MAC, enforces
 * the key's scope and turns what this returns into rcodes.
 */
import { checkPrerequisites, type Prerequisite, type PrerequisiteFailure } from '../core/prerequisites.js';
import { sourceAllowed } from '../core/update-tokens.js';
import type { FailureCounter, HostAdmin, TokenLogin, TokenLookup } from './ports.js';
import type { KeyChange, UpdateReply, UpdateService } from './update.js';

/** What the junk block and the admission's guard key a gateway request by: DNS has no User-Agent. */
export const GATEWAY_AGENT = 'rfc2136';

/** A key id no record has: a malformed key name costs the lookup a real one costs. */
const NO_KEY_ID = '000000000000';

export interface GatewayServiceDeps {
  keys: TokenLookup;
  /** The hash a key's record is stored under (auth's tsigKeyHash). */
  keyHash(id: string): string;
  failures: FailureCounter;
  updates: Pick<UpdateService, 'updateWithKey'>;
  registry: Pick<HostAdmin, 'get'>;
}

/**
 * A key's lookup: its record; 'refused' when the source is in cool-down, junk-blocked or outside the key's `from`
 * (the same answer whatever the MAC: nothing may tell a right secret from a wrong one before every check passed);
 * 'unknown' when there is no such key (revoked, expired, never made).
 */
export type KeyLookup = TokenLogin | 'refused' | 'unknown';

/** One verified message's change: its prerequisites, then the addresses or the one TXT change. */
export interface GatewayChange {
  prerequisites: readonly Prerequisite[];
  /** Per family: a value to set, null to remove, `{ removeIf }` to remove only if the recorded value is that. */
  addresses?: { ipv4?: FamilyChange; ipv6?: FamilyChange };
  txt?: KeyChange['txt'];
}

export type FamilyChange = string | null | { removeIf: string };

export type GatewayResult =
  | { kind: 'prerequisite'; failure: PrerequisiteFailure }
  /** Nothing to change (no updates, or deletes of records the host does not have): the host's state decides. */
  | { kind: 'nothing'; host: 'active' | 'refused' | 'unknown' }
  | { kind: 'update'; reply: UpdateReply };

export class GatewayService {
  constructor(private readonly deps: GatewayServiceDeps) {}

  /** One Redis round trip for every key name, known or not (TokenLookup.find). */
  async lookup(keyId: string | undefined, sourceIp: string): Promise<KeyLookup> {
    const found = await this.deps.keys.find(this.deps.keyHash(keyId ?? NO_KEY_ID), sourceIp, GATEWAY_AGENT);
    if (found === 'agent' || found === 'login') return 'refused';
    if (found === undefined || found.tsig === undefined || keyId === undefined) return 'unknown';
    return sourceAllowed(found.from, sourceIp) ? found : 'refused';
  }

  /** A bad key or signature: counted against the source like a wrong password (docs/security.md). */
  async failed(sourceIp: string): Promise<void> {
    await this.deps.failures.recordFailure(sourceIp, undefined);
  }

  async apply(key: TokenLogin, change: GatewayChange, clientIp: string): Promise<GatewayResult> {
    const needsRecord =
      change.prerequisites.length > 0 ||
      isConditional(change.addresses?.ipv4) ||
      isConditional(change.addresses?.ipv6) ||
      (change.addresses === undefined && change.txt === undefined);
    const host = needsRecord ? await this.deps.registry.get(key.fqdn) : undefined;
    if (change.prerequisites.length > 0) {
      const verdict = checkPrerequisites(change.prerequisites, host);
      if (verdict !== 'ok') return { kind: 'prerequisite', failure: verdict };
    }
    const addresses = change.addresses === undefined ? undefined : resolveFamilies(change.addresses, host);
    const asksNothing =
      change.txt === undefined &&
      (addresses === undefined || (addresses.ipv4 === undefined && addresses.ipv6 === undefined));
    if (asksNothing) {
      const state =
        host === undefined ? 'unknown' : host.state === 'blocked' || host.state === 'closed' ? 'refused' : 'active';
      return { kind: 'nothing', host: state };
    }
    const reply = await this.deps.updates.updateWithKey({
      token: key,
      clientIp,
      agent: GATEWAY_AGENT,
      ...(addresses === undefined ? {} : { addresses }),
      ...(change.txt === undefined ? {} : { txt: change.txt }),
    });
    return { kind: 'update', reply };
  }
}

function isConditional(c: FamilyChange | undefined): c is { removeIf: string } {
  return typeof c === 'object' && c !== null;
}

/** `removeIf` against the recorded value: a delete of a record the host does not have changes nothing (§3.4.2.4). */
function resolveFamilies(
  asked: NonNullable<GatewayChange['addresses']>,
  host: { ipv4: string | null; ipv6: string | null } | undefined,
): { ipv4?: string | null; ipv6?: string | null } {
  const out: { ipv4?: string | null; ipv6?: string | null } = {};
  for (const family of ['ipv4', 'ipv6'] as const) {
    const c = asked[family];
    if (c === undefined) continue;
    if (isConditional(c)) {
      if (host !== undefined && host[family] === c.removeIf) out[family] = null;
    } else {
      out[family] = c;
    }
  }
  return out;
}
