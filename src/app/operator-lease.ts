/**
 * An operator's change of one host (remove, drift repair) holds the host's lease like an update
 * does: an update in flight finishes first, and none starts until the change is done.
 */
import { ConflictError, DnsUpdateError } from '../core/errors.js';
import type { HostRecord } from '../core/types.js';
import type { HostAdmin, HostGate, Lease } from './ports.js';

/** The host's lease, waiting (at most a lease's time and a little) while an update holds it; undefined: no host. */
export async function claimWhenIdle(
  hosts: Pick<HostAdmin, 'claim'>,
  fqdn: string,
  leaseMs: number,
): Promise<{ host: HostRecord; lease: Lease; repairDue: boolean } | undefined> {
  const deadline = Date.now() + leaseMs + 1000;
  for (;;) {
    const claimed = await hosts.claim(fqdn, leaseMs);
    if (claimed !== 'busy') return claimed;
    if (Date.now() > deadline) throw new ConflictError(`host ${fqdn} is being updated; try again`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Give the lease back after the change's UPDATE failed: when the primary may still apply what
 * was sent, the stored state goes out again at once; a repair that was due when the lease was
 * taken over stays due.
 */
export async function releaseAfterFailure(
  hosts: Pick<HostGate, 'release'>,
  lease: Lease,
  err: unknown,
  repairDue: boolean,
  leaseMs: number,
): Promise<void> {
  const maybeApplied = err instanceof DnsUpdateError && err.maybeApplied;
  const opts = maybeApplied ? { republishInMs: 0 } : repairDue ? { republishInMs: leaseMs, refused: true } : {};
  await hosts.release(lease, opts);
}
