/**
 * docs/protocol.md, "What goes into DNS": the records one host change writes. Pure. Every delete is typed (Knot denies
 * type-ANY deletes under a typed ACL) and the whole change is one atomic UPDATE.
 */
import type { HostChange } from '../app/ports.js';
import { MAX_NAME_LENGTH } from '../core/names.js';
import { planTxt } from './txt-plan.js';
import type { Prerequisite, UpdateOperation } from '../core/dns-wire.js';

/** The part of an UPDATE message that one host contributes. */
export interface HostPlan {
  fqdn: string;
  zone: string;
  prerequisites: Prerequisite[];
  updates: UpdateOperation[];
}

export const MX_PRIMARY_PREFERENCE = 10;
export const MX_BACKUP_PREFERENCE = 20;

export function planChange(change: HostChange, ttl: number): HostPlan {
  // The ACME TXT set alone (docs/protocol.md, "ACME TXT records"): nothing else of the host is written.
  if (change.txtOnly) return { fqdn: change.fqdn, zone: change.zone, ...planTxt(change, ttl) };
  const host = change.fqdn;
  const wildcard = `*.${host}`;
  const wildcardFits = wildcard.length <= MAX_NAME_LENGTH;
  const t = change.target;
  // BIND and Knot silently ignore an add beside a CNAME and still answer NOERROR.
  const prerequisites: Prerequisite[] = [{ kind: 'rrset-absent', name: host, type: 'CNAME' }];
  const updates: UpdateOperation[] = [];
  const del = (name: string, type: 'A' | 'AAAA' | 'MX'): void => {
    updates.push({ kind: 'delete-rrset', name, type });
  };

  if (t.offline) {
    // Addresses go, MX stays (docs/protocol.md, "States and limits").
    del(host, 'A');
    del(host, 'AAAA');
    if (wildcardFits) {
      del(wildcard, 'A');
      del(wildcard, 'AAAA');
    }
    return withTxt({ fqdn: host, zone: change.zone, prerequisites, updates }, change, ttl);
  }

  // A family the change leaves has no address in the target (the store does not know it).
  const leaveA = change.leave?.ipv4 === true && !t.ipv4;
  const leaveAAAA = change.leave?.ipv6 === true && !t.ipv6;
  if (!leaveA) del(host, 'A');
  if (t.ipv4) updates.push({ kind: 'add', name: host, ttl, data: { type: 'A', address: t.ipv4 } });
  if (!leaveAAAA) del(host, 'AAAA');
  if (t.ipv6) updates.push({ kind: 'add', name: host, ttl, data: { type: 'AAAA', address: t.ipv6 } });

  // A name of 252 or 253 characters has no room for `*.`: no wildcard records can exist
  // (asking for one fails at encoding, for that host only). Wildcard OFF deletes both
  // families there (docs/protocol.md, "What goes into DNS"); ON replaces those the change does not leave.
  if (wildcardFits) {
    if (!(t.wildcard && leaveA)) del(wildcard, 'A');
    if (!(t.wildcard && leaveAAAA)) del(wildcard, 'AAAA');
  }
  if (t.wildcard && wildcardFits && (t.ipv4 || t.ipv6)) {
    // The same silent ignore happens to an add beside a CNAME at *.host.
    prerequisites.push({ kind: 'rrset-absent', name: wildcard, type: 'CNAME' });
  }
  if (t.wildcard) {
    if (t.ipv4) updates.push({ kind: 'add', name: wildcard, ttl, data: { type: 'A', address: t.ipv4 } });
    if (t.ipv6) updates.push({ kind: 'add', name: wildcard, ttl, data: { type: 'AAAA', address: t.ipv6 } });
  }

  del(host, 'MX');
  if (t.mx) {
    if (t.backmx) {
      // Mail goes to the client's machine first, the backup server second.
      updates.push({
        kind: 'add',
        name: host,
        ttl,
        data: { type: 'MX', preference: MX_PRIMARY_PREFERENCE, exchange: host },
      });
      updates.push({
        kind: 'add',
        name: host,
        ttl,
        data: { type: 'MX', preference: MX_BACKUP_PREFERENCE, exchange: t.mx },
      });
    } else {
      updates.push({
        kind: 'add',
        name: host,
        ttl,
        data: { type: 'MX', preference: MX_PRIMARY_PREFERENCE, exchange: t.mx },
      });
    }
  }
  return withTxt({ fqdn: host, zone: change.zone, prerequisites, updates }, change, ttl);
}

/** The plan with the change's TXT set appended, when it has one (a republish of a host that manages TXT). */
function withTxt(plan: HostPlan, change: HostChange, ttl: number): HostPlan {
  if (change.txt === undefined) return plan;
  const txt = planTxt(change, ttl);
  return {
    ...plan,
    prerequisites: [...plan.prerequisites, ...txt.prerequisites],
    updates: [...plan.updates, ...txt.updates],
  };
}
