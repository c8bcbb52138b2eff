/** Operator commands on accounts, hosts and User-Agent blocks (Redis only, except host remove). */
import { hashPassword } from '../../auth/index.js';
import { ConflictError, DnsUpdateError, InvalidInputError, NotFoundError } from '../../core/errors.js';
import { normalizeHostname } from '../../core/names.js';
import { checkRegistration } from '../../core/registration.js';
import type { DnsRepair, Lease } from '../../app/ports.js';
import { emptyDnsState, type HostRecord } from '../../core/types.js';
import { DnsPublisher } from '../../dns/index.js';
import { openStore, type Store } from '../../store/index.js';
import type { CommandContext } from '../context.js';
import { leaseMs } from '../compose.js';
import { readPassword } from '../password-input.js';

export type Out = (line: string) => void;

export async function withStore<T>(ctx: CommandContext, fn: (store: Store) => Promise<T>): Promise<T> {
  const store = openStore(ctx.config, ctx.logger);
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

function accountName(raw: string): string {
  const name = raw.trim();
  if (!/^[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}$/.test(name)) {
    throw new InvalidInputError(`invalid account name "${raw}": 1-64 of letters, digits and . _ @ + - (not first)`);
  }
  return name;
}

export function hostName(raw: string): string {
  const fqdn = normalizeHostname(raw);
  if (!fqdn) throw new InvalidInputError(`invalid host name "${raw}"`);
  return fqdn;
}

export async function accountAdd(ctx: CommandContext, name: string, donator: boolean, out: Out): Promise<void> {
  const account = accountName(name);
  await withStore(ctx, async (s) => {
    // Ask for the password only once we know the name is free.
    if (await s.accounts.get(account)) throw new ConflictError(`account ${account} exists`);
    const passwordHash = await hashPassword(await readPassword(`Password for ${account}: `));
    await s.accounts.create({ name: account, passwordHash, donator, createdAt: Date.now() });
  });
  out(`account ${account} added${donator ? ' (donator)' : ''}`);
}

export async function accountPasswd(ctx: CommandContext, name: string, out: Out): Promise<void> {
  const account = accountName(name);
  await withStore(ctx, async (s) => {
    if (!(await s.accounts.get(account))) throw new NotFoundError(`no account ${account}`);
    const password = await readPassword(`New password for ${account}: `);
    await s.accounts.setPasswordHash(account, await hashPassword(password));
  });
  out(`password of ${account} changed`);
}

export async function accountDonator(ctx: CommandContext, name: string, donator: boolean, out: Out): Promise<void> {
  const account = accountName(name);
  await withStore(ctx, (s) => s.accounts.setDonator(account, donator));
  out(`account ${account} ${donator ? 'is' : 'is not'} a donator`);
}

export async function accountRemove(ctx: CommandContext, name: string, out: Out): Promise<void> {
  const account = accountName(name);
  await withStore(ctx, (s) => s.accounts.remove(account));
  out(`account ${account} removed`);
}

export async function accountList(ctx: CommandContext, json: boolean, out: Out): Promise<void> {
  const accounts = await withStore(ctx, (s) => s.accounts.list());
  accounts.sort((a, b) => a.name.localeCompare(b.name));
  if (json) out(JSON.stringify(accounts.map((a) => ({ name: a.name, donator: a.donator, createdAt: a.createdAt }))));
  else for (const a of accounts) out(`${a.name}${a.donator ? '\tdonator' : ''}`);
}

export async function accountShow(ctx: CommandContext, name: string, json: boolean, out: Out): Promise<void> {
  const account = accountName(name);
  const { a, hosts } = await withStore(ctx, async (s) => ({
    a: await s.accounts.get(account),
    hosts: await s.hosts.list(account),
  }));
  if (!a) throw new NotFoundError(`no account ${account}`);
  const view = { name: a.name, donator: a.donator, createdAt: a.createdAt, hosts: hosts.map((h) => h.fqdn).sort() };
  if (json) out(JSON.stringify(view));
  else {
    out(`account: ${view.name}`);
    out(`donator: ${view.donator ? 'yes' : 'no'}`);
    out(`created: ${new Date(view.createdAt).toISOString()}`);
    out(`hosts:   ${view.hosts.join(' ') || '-'}`);
  }
}

function hostView(h: HostRecord) {
  return {
    fqdn: h.fqdn,
    owner: h.account,
    type: h.type,
    state: h.state,
    ipv4: h.ipv4,
    ipv6: h.ipv6,
    addresses: [h.ipv4, h.ipv6].filter((a): a is string => a !== null),
    wildcard: h.wildcard,
    mx: h.mx,
    backmx: h.backmx,
    updatedAt: h.updatedAt || null,
  };
}

export async function hostAdd(
  ctx: CommandContext,
  name: string,
  account: string,
  type: string,
  out: Out,
): Promise<void> {
  const checked = checkRegistration(
    name,
    type,
    ctx.config.zones.map((z) => z.name),
  );
  if ('problem' in checked) throw new InvalidInputError(checked.problem);
  await withStore(ctx, async (s) => {
    await s.hosts.indexNesting(ctx.config.zones.map((z) => z.name));
    await s.hosts.add(checked.fqdn, accountName(account), checked.type, checked.between);
  });
  out(`host ${checked.fqdn} added to ${account} (${checked.type})`);
}

/**
 * Remove the host from Redis after deleting its records from DNS (so nothing is left behind).
 * The host's lease is held throughout: an update in flight finishes first, and none starts
 * (nor a repair) until the host is gone — its UPDATE could otherwise land after the deletes.
 */
export async function hostRemove(ctx: CommandContext, name: string, keepDns: boolean, out: Out): Promise<void> {
  const fqdn = hostName(name);
  await withStore(ctx, async (s) => {
    const publisher = keepDns ? undefined : new DnsPublisher(ctx.config.zones, ctx.config.dns, ctx.logger);
    try {
      const zone = publisher?.zoneFor(fqdn);
      if (publisher && !zone) {
        // Its zone left the config, or its name became a zone of its own: the bridge writes
        // none of its records any more, and "removed" would hide the ones left.
        if (!(await s.hosts.get(fqdn))) throw new NotFoundError(`no host ${fqdn}`);
        const where = ctx.config.zones.some((z) => z.name === fqdn)
          ? 'is now the apex of a configured zone'
          : 'is in no configured zone';
        throw new ConflictError(`host ${fqdn} ${where}: its DNS records cannot be deleted; remove it with --keep-dns`);
      }
      const claimed = await claimWhenIdle(s, fqdn, leaseMs(ctx.config));
      if (publisher && zone) {
        try {
          await publisher.publish({
            fqdn,
            zone,
            previous: claimed.host,
            target: { ...emptyDnsState(), offline: false },
          });
        } catch (err) {
          // The host stays; if the deletes may still be applied, its stored state goes out again.
          const maybeApplied = err instanceof DnsUpdateError && err.maybeApplied;
          // A repair that was due when the lease was taken over stays due.
          const republish = maybeApplied
            ? { republishInMs: 0 }
            : claimed.repairDue
              ? { republishInMs: leaseMs(ctx.config), refused: true }
              : {};
          await s.hosts.release(claimed.lease, republish);
          throw err;
        }
      }
      await s.hosts.remove(fqdn, claimed.lease);
    } finally {
      await publisher?.close();
    }
  });
  out(`host ${fqdn} removed${keepDns ? ' (DNS records kept)' : ''}`);
}

/** The host's lease, waiting (at most a lease's time and a little) while an update holds it. */
async function claimWhenIdle(
  s: Store,
  fqdn: string,
  ms: number,
): Promise<{ host: HostRecord; lease: Lease; repairDue: boolean }> {
  const deadline = Date.now() + ms + 1000;
  for (;;) {
    const claimed = await s.hosts.claim(fqdn, ms);
    if (claimed === undefined) throw new NotFoundError(`no host ${fqdn}`);
    if (claimed !== 'busy') return claimed;
    if (Date.now() > deadline) throw new ConflictError(`host ${fqdn} is being updated; try again`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export async function hostList(
  ctx: CommandContext,
  account: string | undefined,
  json: boolean,
  out: Out,
): Promise<void> {
  const owner = account === undefined ? undefined : accountName(account);
  const hosts = await withStore(ctx, async (s) => {
    if (owner !== undefined && !(await s.accounts.get(owner))) throw new NotFoundError(`no account ${owner}`);
    return s.hosts.list(owner);
  });
  hosts.sort((a, b) => a.fqdn.localeCompare(b.fqdn));
  if (json) out(JSON.stringify(hosts.map(hostView)));
  else
    for (const h of hosts)
      out([h.fqdn, h.account, h.type, h.state, [h.ipv4, h.ipv6].filter(Boolean).join(',') || '-'].join('\t'));
}

export async function hostShow(ctx: CommandContext, name: string, json: boolean, out: Out): Promise<void> {
  const fqdn = hostName(name);
  const [host, repair] = await withStore(ctx, (s) => Promise.all([s.hosts.get(fqdn), s.hosts.repairOf(fqdn)]));
  if (!host) throw new NotFoundError(`no host ${fqdn}`);
  // repair: DNS may hold what Redis does not until the stored state is published again.
  const view = { ...hostView(host), repair: repair ?? null };
  if (json) out(JSON.stringify(view));
  else
    for (const [k, v] of Object.entries(view))
      out(`${k}: ${k === 'repair' ? repairText(repair) : Array.isArray(v) ? v.join(' ') : String(v)}`);
}

function repairText(repair: DnsRepair | undefined): string {
  if (repair === undefined) return 'none';
  const failed =
    repair.failedRepublishes === 0
      ? ''
      : ` (${repair.failedRepublishes} failed republish${repair.failedRepublishes === 1 ? '' : 'es'})`;
  if (repair.inProgress) return `in progress until ${new Date(repair.dueAt).toISOString()}${failed}`;
  return `due ${new Date(repair.dueAt).toISOString()}${failed}`;
}

const STATE_CHANGES = {
  unblock: { from: ['blocked'], to: 'active' },
  reopen: { from: ['closed'], to: 'active' },
  close: { from: ['active', 'offline', 'blocked'], to: 'closed' },
  block: { from: ['active', 'offline'], to: 'blocked' },
} as const;

export async function hostSetState(
  ctx: CommandContext,
  name: string,
  change: keyof typeof STATE_CHANGES,
  out: Out,
): Promise<void> {
  const fqdn = hostName(name);
  const rule = STATE_CHANGES[change];
  await withStore(ctx, async (s) => {
    const host = await s.hosts.get(fqdn);
    if (!host) throw new NotFoundError(`no host ${fqdn}`);
    if (!(rule.from as readonly string[]).includes(host.state))
      throw new ConflictError(`host ${fqdn} is ${host.state}: cannot ${change}`);
    await s.hosts.setState(fqdn, rule.to);
  });
  out(`host ${fqdn} is now ${rule.to}`);
}

export async function agentBlock(ctx: CommandContext, pattern: string, block: boolean, out: Out): Promise<void> {
  if (pattern.trim() === '') throw new InvalidInputError('empty User-Agent pattern');
  const inConfig = ctx.config.agents.blocked.includes(pattern);
  if (!block && inConfig)
    throw new ConflictError(`"${pattern}" is blocked by the config file (agents.blocked): remove it there`);
  const changed = await withStore(ctx, (s) => (block ? s.agents.block(pattern) : s.agents.unblock(pattern)));
  if (!block && !changed) throw new NotFoundError(`"${pattern}" is not blocked`);
  out(`${block ? (changed || inConfig ? 'blocked' : 'already blocked') : 'unblocked'}: ${pattern}`);
}

export async function agentList(ctx: CommandContext, out: Out): Promise<void> {
  const fromRedis = await withStore(ctx, (s) => s.agents.list());
  for (const p of ctx.config.agents.blocked) out(`${p}\t(config)`);
  for (const p of fromRedis.sort()) out(p);
}
