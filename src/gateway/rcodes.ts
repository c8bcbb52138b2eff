/**
 * The gateway's one table from what the use cases answered to the rcode a client gets (docs/protocol.md,
 * "RFC 2136 gateway"). `good`/`nochg` are NOERROR; the primary's or Redis's failure is SERVFAIL (nothing changed);
 * every refusal of the update path (the host's state, the frequency rule, a login check that failed at the
 * admission) is REFUSED.
 */
import type { GatewayResult } from '../app/gateway.js';
import type { HostOutcome, RequestOutcome } from '../core/outcomes.js';
import type { RcodeName } from './message.js';

export const OUTCOME_RCODES: Record<HostOutcome | RequestOutcome, RcodeName> = {
  changed: 'NOERROR',
  unchanged: 'NOERROR',
  'dns-failed': 'SERVFAIL',
  unavailable: 'SERVFAIL',
  'invalid-name': 'REFUSED',
  'unknown-host': 'REFUSED',
  'not-owner': 'REFUSED',
  'not-dynamic': 'REFUSED',
  closed: 'REFUSED',
  abuse: 'REFUSED',
  'offline-not-allowed': 'REFUSED',
  'bad-agent': 'REFUSED',
  'bad-credentials': 'REFUSED',
  'too-many-hosts': 'REFUSED',
};

/** The rcode of a verified, in-scope message's result. */
export function rcodeOf(result: GatewayResult): RcodeName {
  switch (result.kind) {
    case 'prerequisite':
      return result.failure;
    case 'nothing':
      return result.host === 'active' ? 'NOERROR' : 'REFUSED';
    case 'update': {
      const { reply } = result;
      if (reply.kind === 'request') return OUTCOME_RCODES[reply.outcome];
      return OUTCOME_RCODES[reply.lines[0]?.outcome ?? 'dns-failed'];
    }
  }
}
