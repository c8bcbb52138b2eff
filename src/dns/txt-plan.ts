/**
 * docs/protocol.md, "ACME TXT records": the records of a host's TXT set at `_acme-challenge.<host>`. Pure. The set is
 * replaced whole (a typed delete, then one record per value), so the primary ends with exactly the stored values.
 */
import type { HostChange } from '../app/ports.js';
import { ACME_LABEL } from '../core/txt.js';
import type { Prerequisite, UpdateOperation } from '../core/dns-wire.js';

export function planTxt(
  change: Pick<HostChange, 'fqdn' | 'txt'>,
  ttl: number,
): { prerequisites: Prerequisite[]; updates: UpdateOperation[] } {
  // A name too long for the label fails at encoding, for this host only (the use case refuses it first).
  const name = `${ACME_LABEL}.${change.fqdn}`;
  const values = change.txt ?? [];
  return {
    // BIND and Knot silently ignore an add beside a CNAME (a delegation to an acme-dns server, say).
    prerequisites: values.length > 0 ? [{ kind: 'rrset-absent', name, type: 'CNAME' }] : [],
    updates: [
      { kind: 'delete-rrset', name, type: 'TXT' },
      ...values.map((text): UpdateOperation => ({ kind: 'add', name, ttl, data: { type: 'TXT', text } })),
    ],
  };
}
