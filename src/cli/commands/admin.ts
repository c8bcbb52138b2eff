/**
 * Operator commands on accounts, hosts and User-Agent blocks: text (or --json) around the
 * admin service (src/app/admin.ts), which the provisioning API calls too.
 */
import type { LastRequest, RequestCounts } from '../../core/request-log.js';
import type { AdminService, HostStateChange } from '../../app/admin.js';
import type { DnsRepair } from '../../app/ports.js';
import { InvalidInputError } from '../../core/errors.js';
import { openStore, type Store } from '../../store/index.js';
import { adminServiceOn } from '../admin-service.js';
import type { CommandContext } from '../context.js';
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

export function withAdmin<T>(ctx: CommandContext, fn: (admin: AdminService) => Promise<T>): Promise<T> {
  return withStore(ctx, (store) =>
    fn(adminServiceOn(store, ctx.config, ctx.logger, undefined, undefined, ctx.passwordCost)),
  );
}

/** `account add`; `askPassword` asks for the password (default: the terminal or stdin, readPassword). */
export async function accountAdd(
  ctx: CommandContext,
  name: string,
  donator: boolean,
  out: Out,
  askPassword: (prompt: string) => Promise<string> = readPassword,
): Promise<void> {
  const view = await withAdmin(ctx, async (admin) => {
    // Ask for the password only once we know the name is free.
    const account = await admin.accountMustBeFree(name);
    const password = await askPassword(`Password for ${account}: `);
    return admin.addAccount({ name: account, password, donator });
  });
  out(`account ${view.name} added${donator ? ' (donator)' : ''}`);
}

export async function accountPasswd(ctx: CommandContext, name: string, out: Out): Promise<void> {
  const account = await withAdmin(ctx, async (admin) => {
    const account = await admin.accountMustExist(name);
    await admin.setPassword(account, await readPassword(`New password for ${account}: `));
    return account;
  });
  out(`password of ${account} changed`);
}

export async function accountDonator(ctx: CommandContext, name: string, donator: boolean, out: Out): Promise<void> {
  await withAdmin(ctx, (admin) => admin.setDonator(name, donator));
  out(`account ${name.trim()} ${donator ? 'is' : 'is not'} a donator`);
}

export async function accountRemove(ctx: CommandContext, name: string, out: Out): Promise<void> {
  await withAdmin(ctx, (admin) => admin.removeAccount(name));
  out(`account ${name.trim()} removed`);
}

export async function accountList(ctx: CommandContext, json: boolean, out: Out): Promise<void> {
  const accounts = await withAdmin(ctx, (admin) => admin.listAccounts());
  if (json) out(JSON.stringify(accounts));
  else for (const a of accounts) out(`${a.name}${a.donator ? '\tdonator' : ''}`);
}

export async function accountShow(ctx: CommandContext, name: string, json: boolean, out: Out): Promise<void> {
  const view = await withAdmin(ctx, (admin) => admin.showAccount(name));
  if (json) out(JSON.stringify(view));
  else {
    out(`account: ${view.name}`);
    out(`donator: ${view.donator ? 'yes' : 'no'}`);
    out(`created: ${new Date(view.createdAt).toISOString()}`);
    out(`hosts:   ${view.hosts.join(' ') || '-'}`);
  }
}

export async function hostAdd(
  ctx: CommandContext,
  name: string,
  account: string,
  type: string,
  out: Out,
): Promise<void> {
  const host = await withAdmin(ctx, (admin) => admin.addHost({ fqdn: name, account, type }));
  out(`host ${host.fqdn} added to ${host.owner} (${host.type})`);
}

/** Remove the host from Redis after deleting its records from DNS (see AdminService.removeHost). */
export async function hostRemove(ctx: CommandContext, name: string, keepDns: boolean, out: Out): Promise<void> {
  const fqdn = await withAdmin(ctx, (admin) => admin.removeHost(name, { keepDns }));
  out(`host ${fqdn} removed${keepDns ? ' (DNS records kept)' : ''}`);
}

export async function hostList(
  ctx: CommandContext,
  account: string | undefined,
  json: boolean,
  out: Out,
  quietFor?: string,
): Promise<void> {
  const hosts = await withAdmin(ctx, (admin) =>
    admin.listHosts(account, quietFor === undefined ? {} : { quietFor }).catch((err: unknown) => {
      if (err instanceof InvalidInputError && err.field === 'quietFor')
        throw new InvalidInputError(err.detail, '--quiet-for');
      throw err;
    }),
  );
  if (json) out(JSON.stringify(hosts));
  else
    for (const h of hosts) {
      const fields = [h.fqdn, h.owner, h.type, h.state, h.addresses.join(',') || '-'];
      // With --quiet-for: when it was last heard of (docs/operators.md, "Quiet hosts").
      if (quietFor !== undefined)
        fields.push(
          h.lastRequestAt == null ? 'no request yet' : `last request ${new Date(h.lastRequestAt).toISOString()}`,
        );
      out(fields.join('\t'));
    }
}

export async function hostShow(ctx: CommandContext, name: string, json: boolean, out: Out): Promise<void> {
  const view = await withAdmin(ctx, (admin) => admin.showHost(name));
  if (json) out(JSON.stringify(view));
  else
    for (const [k, v] of Object.entries(view))
      out(
        `${k}: ${k === 'repair' ? repairText(view.repair ?? undefined) : k === 'link' ? linkText(view.link) : k === 'lastRequest' ? lastRequestText(view.lastRequest) : k === 'requests24h' ? countsText(view.requests24h) : Array.isArray(v) ? v.join(' ') : String(v)}`,
      );
}

/**
 * The last request, one line; the User-Agent quoted as a JSON string with every other non-printable character
 * (DEL, the C1 controls a terminal may act on) escaped too, so no byte of it can end, fake or colour a line.
 */
function lastRequestText(last: LastRequest | null): string {
  if (last === null) return 'none';
  const agent = JSON.stringify(last.userAgent).replace(
    /[\u007f-\u009f]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
  return `${new Date(last.at).toISOString()} ${last.reply ?? '(no reply: in flight or interrupted)'} from ${last.source} agent ${agent}`;
}

function countsText(c: RequestCounts): string {
  return `good ${c.good}, nochg ${c.nochg}, refused ${c.refused}, failed ${c.failed}`;
}

function linkText(link: { parent: string; iid: string } | null): string {
  return link === null ? 'none' : `follows ${link.parent} (iid ${link.iid})`;
}

/** `host link` (docs/protocol.md, "IPv6 prefixes"). */
export async function hostLink(ctx: CommandContext, name: string, to: string, iid: string, out: Out): Promise<void> {
  const link = await withAdmin(ctx, (admin) => admin.linkHost(name, { to, iid }));
  out(`host ${link.fqdn} follows the prefix of ${link.parent} (iid ${link.iid})`);
}

export async function hostUnlink(ctx: CommandContext, name: string, out: Out): Promise<void> {
  const { fqdn, parent } = await withAdmin(ctx, (admin) => admin.unlinkHost(name));
  out(`host ${fqdn} no longer follows ${parent}`);
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

export async function hostSetState(
  ctx: CommandContext,
  name: string,
  change: HostStateChange,
  out: Out,
): Promise<void> {
  const { fqdn, state } = await withAdmin(ctx, (admin) => admin.setHostState(name, change));
  out(`host ${fqdn} is now ${state}`);
}

export async function agentBlock(ctx: CommandContext, pattern: string, block: boolean, out: Out): Promise<void> {
  if (block) out(`${await withAdmin(ctx, (admin) => admin.blockAgent(pattern))}: ${pattern}`);
  else {
    await withAdmin(ctx, (admin) => admin.unblockAgent(pattern));
    out(`unblocked: ${pattern}`);
  }
}

export async function agentList(ctx: CommandContext, out: Out): Promise<void> {
  const blocked = await withAdmin(ctx, (admin) => admin.listBlockedAgents());
  for (const b of blocked) out(b.source === 'config' ? `${b.pattern}\t(config)` : b.pattern);
}
