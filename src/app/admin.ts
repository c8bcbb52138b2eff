/**
 * The operator's use cases on accounts, hosts, tokens and User-Agent blocks: one piece of code
 * behind both the CLI (`account …`, `host …`, `token …`, `agent …`) and the provisioning API
 * (`/v1/…` on the admin listener). It returns plain views; the callers print or serialise
 * them. Errors are the core's: InvalidInputError (400), NotFoundError (404), ConflictError (409).
 */
import { countsOverDay, type LastRequest, type RequestCounts } from '../core/request-log.js';
import { ACCOUNT_NAME_RULE, isAccountName } from '../core/accounts.js';
import { ConflictError, HostStateConflictError, InvalidInputError, NotFoundError } from '../core/errors.js';
import { MAX_PASSWORD_LENGTH } from '../core/limits.js';
import { normalizeHostname } from '../core/names.js';
import { checkRegistration } from '../core/registration.js';
import type { StaticNamesByZone } from '../core/static-names.js';
import {
  DEFAULT_HOST_TYPE,
  emptyDnsState,
  type Account,
  type HostRecord,
  type HostState,
  type SettableHostState,
} from '../core/types.js';
import {
  noteProblem,
  parseDuration,
  parseSourceList,
  TOKEN_ID_PATTERN,
  type TokenRecord,
} from '../core/update-tokens.js';
import { TSIG_ALGORITHMS, type TsigAlgorithm } from '../core/tsig.js';
import { isQuietFor } from '../core/quiet.js';
import type { AccountStore, DnsRepair, HostAdmin, HostGate, Publisher, TokenAdmin, AgentBlocks } from './ports.js';
import type { HostLinks } from './ports.js';
import { checkInterfaceId, MAX_LINKS_PER_PARENT } from '../core/prefix.js';
import { claimWhenIdle, releaseAfterFailure } from './operator-lease.js';

/** Password hashing and token minting: the auth adapter's, passed in. */
export interface AdminSecrets {
  hashPassword(password: string): Promise<string>;
  /** A new token, its id and the hash it is stored under. */
  mintToken(): { token: string; id: string; hash: string };
  /**
   * A gateway TSIG key for a new id: the hash its record is stored under and the key (name, algorithm, secret in
   * base64), derived from the gateway's master secret. undefined: no `gateway.keyFile` is configured here.
   */
  tsigKey?(id: string, fqdn: string, algorithm: TsigAlgorithm): { hash: string; key: GatewayKey };
}

/** A gateway key as a client configures it: shown once, when it is made. */
export interface GatewayKey {
  name: string;
  algorithm: TsigAlgorithm;
  /** base64 */
  secret: string;
}

export interface AdminServiceDeps {
  accounts: AccountStore;
  hosts: HostAdmin & Pick<HostGate, 'release'>;
  /** Hosts that follow another's IPv6 prefix (host link); without, link and unlink fail. */
  links?: HostLinks;
  tokens: TokenAdmin;
  agents: AgentBlocks;
  secrets: AdminSecrets;
  /** Zone apexes a host may be registered under. */
  zones: readonly string[];
  /** Each zone's static names (core/static-names.ts): never a host. */
  staticNames: StaticNamesByZone;
  /** User-Agent patterns the config file blocks now (they cannot be unblocked here; a reload may change them). */
  configBlockedAgents(): readonly string[];
  leaseMs: number;
  /**
   * Deletes a removed host's records. Called per removal, so a CLI that runs one command
   * opens a connection only when it needs one; `release` is called when the removal ends.
   */
  publisher(): { publisher: Publisher; release(): Promise<void> };
}

export interface AccountView {
  name: string;
  donator: boolean;
  createdAt: number;
}

export interface AccountDetail extends AccountView {
  hosts: string[];
}

export interface HostView {
  fqdn: string;
  owner: string;
  type: string;
  state: string;
  ipv4: string | null;
  ipv6: string | null;
  addresses: string[];
  wildcard: boolean;
  mx: string | null;
  backmx: boolean;
  /** The ACME TXT values at `_acme-challenge.<fqdn>`, oldest first (docs/protocol.md, "ACME TXT records"). */
  txt: readonly string[];
  updatedAt: number | null;
  /** With `quietFor` only: the last counted request (ms) or null (docs/operators.md, "Quiet hosts"). */
  lastRequestAt?: number | null;
  /** The host whose IPv6 prefix it follows, with its interface identifier (docs/protocol.md, "IPv6 prefixes"). */
  link: { parent: string; iid: string } | null;
  /** The last delegated prefix its updates carried (its linked hosts follow it). */
  prefix: string | null;
}

export interface HostDetail extends HostView {
  repair: DnsRepair | null;
  /** Its last update request (docs/operators.md, "The last request of a host"); null: none recorded. */
  lastRequest: LastRequest | null;
  /** Its update requests by reply over the last 24 hours, counted by the hour. */
  requests24h: RequestCounts;
}

export interface TokenView {
  id: string;
  host: string;
  account: string;
  created: string;
  expires: string | null;
  lastUsed: string | null;
  from: readonly string[];
  note: string;
  /** It may set and clear the host's ACME TXT values and nothing else. */
  acmeOnly: boolean;
  /** A gateway TSIG key: its algorithm; null: an HTTP update token. */
  tsig: TsigAlgorithm | null;
}

/** What `token add` / `POST /v1/hosts/{fqdn}/tokens` asks for, as given (text). */
export interface TokenOptions {
  /** A duration: 90m, 12h, 30d, 8w. */
  expires?: string;
  /** CIDR blocks, comma-separated (or a list). */
  from?: string | readonly string[];
  note?: string;
  /** TXT only: `--acme-only` (docs/security.md, "Update tokens"). */
  acmeOnly?: boolean;
  /** A TSIG key of the RFC 2136 gateway with this algorithm instead of an HTTP token (`--tsig`). */
  tsig?: string;
}

export const HOST_STATE_CHANGES = {
  unblock: { from: ['blocked'], to: 'active' },
  reopen: { from: ['closed'], to: 'active' },
  close: { from: ['active', 'offline', 'blocked'], to: 'closed' },
  block: { from: ['active', 'offline'], to: 'blocked' },
} as const satisfies Record<string, { from: readonly HostState[]; to: SettableHostState }>;
export type HostStateChange = keyof typeof HOST_STATE_CHANGES;

export type AgentBlockResult = 'blocked' | 'already blocked';

export function accountName(raw: string): string {
  const name = typeof raw === 'string' ? raw.trim() : '';
  if (!isAccountName(name))
    throw new InvalidInputError(`invalid account name ${JSON.stringify(raw)}: ${ACCOUNT_NAME_RULE}`);
  return name;
}

export function hostName(raw: string): string {
  const fqdn = typeof raw === 'string' ? normalizeHostname(raw) : undefined;
  if (!fqdn) throw new InvalidInputError(`invalid host name ${JSON.stringify(raw)}`);
  return fqdn;
}

/** A password an update could log in with (never echoed in the message). */
export function checkPassword(password: unknown): string {
  if (typeof password !== 'string' || password.length === 0) throw new InvalidInputError('empty password');
  // Updates refuse a longer one as malformed credentials: the account could never log in.
  if (password.length > MAX_PASSWORD_LENGTH) {
    throw new InvalidInputError(`password too long: ${password.length} characters, at most ${MAX_PASSWORD_LENGTH}`);
  }
  return password;
}

export function accountView(a: Account): AccountView {
  return { name: a.name, donator: a.donator, createdAt: a.createdAt };
}

export function hostView(h: HostRecord): HostView {
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
    txt: h.txt ?? [],
    updatedAt: h.updatedAt || null,
    link: h.link ? { parent: h.link.parent, iid: h.link.iid } : null,
    prefix: h.prefix ?? null,
  };
}

export function tokenView(t: TokenRecord): TokenView {
  const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
  return {
    id: t.id,
    host: t.fqdn,
    account: t.account,
    created: iso(t.createdAt)!,
    expires: iso(t.expiresAt),
    lastUsed: iso(t.lastUsedAt),
    from: t.from,
    note: t.note,
    acmeOnly: t.acmeOnly,
    tsig: t.tsig,
  };
}

/** A gateway key in the three forms clients read (docs/clients.md, "RFC 2136 clients"). */
export function keySnippets(key: GatewayKey): { nsupdate: string; bind: string; knot: string } {
  return {
    nsupdate: `${key.algorithm}:${key.name}:${key.secret}`,
    bind: `key "${key.name}" {\n\talgorithm ${key.algorithm};\n\tsecret "${key.secret}";\n};`,
    knot: `key:\n  - id: ${key.name}\n    algorithm: ${key.algorithm}\n    secret: ${key.secret}`,
  };
}

/** The key's host may be at most this long: `<12 hex digits>.<host>` stays a DNS name. */
export const MAX_TSIG_HOST_LENGTH = 240;

function tsigAlgorithmOf(raw: unknown): TsigAlgorithm {
  const text = typeof raw === 'string' ? raw.trim().toLowerCase() : '';
  if (!(TSIG_ALGORITHMS as readonly string[]).includes(text))
    throw new InvalidInputError(`expected one of ${TSIG_ALGORITHMS.join(', ')}`, 'algorithm');
  return text as TsigAlgorithm;
}

export class AdminService {
  constructor(private readonly deps: AdminServiceDeps) {}

  // --- accounts -------------------------------------------------------------------------

  /** ConflictError when the name is taken (the CLI asks before it prompts for a password). */
  async accountMustBeFree(name: string): Promise<string> {
    const account = accountName(name);
    if (await this.deps.accounts.get(account)) throw new ConflictError(`account ${account} exists`);
    return account;
  }

  async addAccount(input: { name: string; password: string; donator?: boolean }): Promise<AccountView> {
    const name = await this.accountMustBeFree(input.name);
    const passwordHash = await this.deps.secrets.hashPassword(checkPassword(input.password));
    const account = { name, passwordHash, donator: input.donator === true, createdAt: Date.now() };
    await this.deps.accounts.create(account);
    return accountView(account);
  }

  /** NotFoundError when there is no such account (the CLI asks before it prompts). */
  async accountMustExist(name: string): Promise<string> {
    const account = accountName(name);
    if (!(await this.deps.accounts.get(account))) throw new NotFoundError(`no account ${account}`);
    return account;
  }

  async setPassword(name: string, password: string): Promise<void> {
    const account = await this.accountMustExist(name);
    await this.deps.accounts.setPasswordHash(account, await this.deps.secrets.hashPassword(checkPassword(password)));
  }

  async setDonator(name: string, donator: boolean): Promise<void> {
    await this.deps.accounts.setDonator(accountName(name), donator);
  }

  async removeAccount(name: string): Promise<void> {
    await this.deps.accounts.remove(accountName(name));
  }

  async listAccounts(): Promise<AccountView[]> {
    const accounts = await this.deps.accounts.list();
    return accounts.map(accountView).sort((a, b) => a.name.localeCompare(b.name));
  }

  async showAccount(name: string): Promise<AccountDetail> {
    const account = accountName(name);
    const [a, hosts] = await Promise.all([this.deps.accounts.get(account), this.deps.hosts.list(account)]);
    if (!a) throw new NotFoundError(`no account ${account}`);
    return { ...accountView(a), hosts: hosts.map((h) => h.fqdn).sort() };
  }

  // --- hosts ----------------------------------------------------------------------------

  async addHost(input: { fqdn: string; account: string; type?: string }): Promise<HostView> {
    const { zones, staticNames } = this.deps;
    const checked = checkRegistration(input.fqdn, input.type ?? DEFAULT_HOST_TYPE, zones, staticNames);
    if ('problem' in checked) throw new InvalidInputError(checked.problem);
    const account = accountName(input.account);
    await this.deps.hosts.indexNesting(zones);
    await this.deps.hosts.add(checked.fqdn, account, checked.type, checked.between);
    const host = await this.deps.hosts.get(checked.fqdn);
    if (!host) throw new NotFoundError(`no host ${checked.fqdn}`);
    return hostView(host);
  }

  /** Every host, or one account's; with `quietFor` (a duration: 30d), only those quiet that long (core/quiet.ts). */
  async listHosts(account?: string, opts: { quietFor?: string } = {}): Promise<HostView[]> {
    const owner = account === undefined ? undefined : accountName(account);
    const quietForMs = opts.quietFor === undefined ? undefined : parseDuration(String(opts.quietFor));
    if (opts.quietFor !== undefined && quietForMs === undefined)
      throw new InvalidInputError(
        `expected a duration such as 12h, 30d or 8w, not ${JSON.stringify(opts.quietFor)}`,
        'quietFor',
      );
    if (owner !== undefined && !(await this.deps.accounts.get(owner))) throw new NotFoundError(`no account ${owner}`);
    const now = Date.now();
    const hosts = (await this.deps.hosts.list(owner)).filter(
      (h) => quietForMs === undefined || isQuietFor(h, quietForMs, now),
    );
    const views = hosts.map((h) =>
      quietForMs === undefined ? hostView(h) : { ...hostView(h), lastRequestAt: h.lastRequestAt ?? null },
    );
    return views.sort((a, b) => a.fqdn.localeCompare(b.fqdn));
  }

  async showHost(name: string): Promise<HostDetail> {
    const fqdn = hostName(name);
    const [host, repair] = await Promise.all([this.deps.hosts.get(fqdn), this.deps.hosts.repairOf(fqdn)]);
    if (!host) throw new NotFoundError(`no host ${fqdn}`);
    // repair: DNS may hold what Redis does not until the stored state is published again.
    return {
      ...hostView(host),
      repair: repair ?? null,
      lastRequest: host.lastRequest ?? null,
      requests24h: countsOverDay(host.requestTallies ?? [], Date.now()),
    };
  }

  async setHostState(name: string, change: HostStateChange): Promise<{ fqdn: string; state: SettableHostState }> {
    const fqdn = hostName(name);
    const rule = HOST_STATE_CHANGES[change];
    try {
      await this.deps.hosts.setState(fqdn, rule.to, rule.from);
    } catch (err) {
      if (err instanceof NotFoundError) throw new NotFoundError(`no host ${fqdn}`);
      if (err instanceof HostStateConflictError)
        throw new HostStateConflictError(`host ${fqdn} is ${err.current}: cannot ${change}`, err.current);
      throw err;
    }
    return { fqdn, state: rule.to };
  }

  /**
   * Remove the host from Redis after deleting its records from DNS (so nothing is left behind).
   * The host's lease is held throughout: an update in flight finishes first, and none starts
   * (nor a repair) until the host is gone — its UPDATE could otherwise land after the deletes.
   */
  async removeHost(name: string, opts: { keepDns?: boolean } = {}): Promise<string> {
    const fqdn = hostName(name);
    const { hosts } = this.deps;
    const dns = opts.keepDns ? undefined : this.deps.publisher();
    try {
      const zone = dns?.publisher.zoneFor(fqdn);
      if (dns && !zone) {
        // Its zone left the config, or its name became a zone of its own: the bridge writes
        // none of its records any more, and "removed" would hide the ones left.
        if (!(await hosts.get(fqdn))) throw new NotFoundError(`no host ${fqdn}`);
        const where = this.deps.zones.includes(fqdn)
          ? 'is now the apex of a configured zone'
          : 'is in no configured zone';
        throw new ConflictError(`host ${fqdn} ${where}: its DNS records cannot be deleted; remove it with --keep-dns`);
      }
      const claimed = await claimWhenIdle(hosts, fqdn, this.deps.leaseMs);
      if (claimed === undefined) throw new NotFoundError(`no host ${fqdn}`);
      if (dns && zone) {
        try {
          await dns.publisher.publish({
            fqdn,
            zone,
            previous: claimed.host,
            target: { ...emptyDnsState(), offline: false },
            // Its ACME TXT set goes too, when it has one.
            ...(claimed.host.txt === undefined ? {} : { txt: [] }),
          });
        } catch (err) {
          // The host stays; if the deletes may still be applied, its stored state goes out again.
          await releaseAfterFailure(hosts, claimed.lease, err, claimed.repairDue, this.deps.leaseMs);
          throw err;
        }
      }
      await hosts.remove(fqdn, claimed.lease);
      await this.deps.links?.forget(fqdn, claimed.host.link?.parent);
      return fqdn;
    } finally {
      await dns?.release();
    }
  }

  // --- links (docs/protocol.md, "IPv6 prefixes") ------------------------------------------

  /**
   * `fqdn` follows `to`'s IPv6 prefix from `to`'s next update with one: AAAA = prefix + `iid`. InvalidInputError: a
   * name, the iid, a link to itself; NotFoundError: either host; ConflictError: another account's, not dynamic, a
   * chain (`to` follows a host, or `fqdn` has followers), too many links.
   */
  async linkHost(
    name: string,
    input: { to: string; iid: string },
  ): Promise<{ fqdn: string; parent: string; iid: string }> {
    const fqdn = hostName(name);
    const parent = hostName(input.to);
    if (typeof input.iid !== 'string') throw new InvalidInputError('expected text', 'iid');
    const iid = checkInterfaceId(input.iid);
    if ('problem' in iid) throw new InvalidInputError(iid.problem, 'iid');
    if (parent === fqdn) throw new InvalidInputError(`host ${fqdn} cannot follow itself`, 'to');
    await this.links().link(fqdn, parent, iid.iid, MAX_LINKS_PER_PARENT);
    return { fqdn, parent, iid: iid.iid };
  }

  /** `fqdn` follows no prefix any more; its AAAA stays until its next change. NotFoundError: no host, or no link. */
  async unlinkHost(name: string): Promise<{ fqdn: string; parent: string }> {
    const fqdn = hostName(name);
    return { fqdn, parent: await this.links().unlink(fqdn) };
  }

  private links(): HostLinks {
    if (this.deps.links === undefined) throw new Error('host links are not available here');
    return this.deps.links;
  }

  // --- tokens ---------------------------------------------------------------------------

  /** A token for a registered host: the token itself is returned only here, once. */
  async addToken(
    name: string,
    opts: TokenOptions,
  ): Promise<{ record: TokenRecord; token: string; key?: undefined } | { record: TokenRecord; key: GatewayKey }> {
    const fqdn = hostName(name);
    const tsig = opts.tsig === undefined ? undefined : tsigAlgorithmOf(opts.tsig);
    const tsigKey = this.deps.secrets.tsigKey?.bind(this.deps.secrets);
    if (tsig !== undefined && tsigKey === undefined)
      throw new InvalidInputError('TSIG keys need the RFC 2136 gateway: set gateway.keyFile in the config', 'tsig');
    if (tsig !== undefined && fqdn.length > MAX_TSIG_HOST_LENGTH)
      throw new InvalidInputError(`a TSIG key's host name has at most ${MAX_TSIG_HOST_LENGTH} characters`, 'tsig');
    const expiresInMs = opts.expires === undefined ? undefined : parseDuration(String(opts.expires));
    if (opts.expires !== undefined && expiresInMs === undefined) {
      throw new InvalidInputError(
        `expected a duration such as 90m, 12h, 30d or 8w, not ${JSON.stringify(opts.expires)}`,
        'expires',
      );
    }
    const fromText = Array.isArray(opts.from) ? opts.from.join(',') : opts.from;
    if (fromText !== undefined && typeof fromText !== 'string') throw new InvalidInputError('expected text', 'from');
    const sources = fromText === undefined ? { from: [] } : parseSourceList(fromText);
    if ('problem' in sources) throw new InvalidInputError(sources.problem, 'from');
    const note = opts.note ?? '';
    const problem = typeof note === 'string' ? noteProblem(note) : 'expected text';
    if (problem !== undefined) throw new InvalidInputError(problem, 'note');
    // A random 48-bit id is taken only by bad luck: try another.
    for (let attempt = 0; ; attempt++) {
      const minted = this.deps.secrets.mintToken();
      const derived = tsig === undefined ? undefined : tsigKey!(minted.id, fqdn, tsig);
      try {
        const record = await this.deps.tokens.add({
          id: minted.id,
          hash: derived?.hash ?? minted.hash,
          fqdn,
          expiresInMs,
          from: sources.from,
          note,
          acmeOnly: opts.acmeOnly === true,
          ...(tsig === undefined ? {} : { tsig }),
        });
        return derived === undefined ? { record, token: minted.token } : { record, key: derived.key };
      } catch (err) {
        if (!(err instanceof ConflictError) || attempt >= 2) throw err;
      }
    }
  }

  /**
   * Every token, or one host's. With `requireHost`, NotFoundError for a host that is not
   * registered; without, its list is empty (the tokens of a removed host are gone).
   */
  async listTokens(name?: string, opts: { requireHost?: boolean } = {}): Promise<TokenRecord[]> {
    const fqdn = name === undefined ? undefined : hostName(name);
    if (opts.requireHost && fqdn !== undefined && !(await this.deps.hosts.get(fqdn)))
      throw new NotFoundError(`no host ${fqdn}`);
    return this.deps.tokens.list(fqdn);
  }

  async removeToken(id: string): Promise<TokenRecord> {
    const wanted = typeof id === 'string' ? id.trim().toLowerCase() : '';
    if (!TOKEN_ID_PATTERN.test(wanted))
      throw new InvalidInputError(`not a token id (12 hex digits, see token list): ${JSON.stringify(id)}`);
    return this.deps.tokens.remove(wanted);
  }

  // --- User-Agent blocks ----------------------------------------------------------------

  async blockAgent(pattern: string): Promise<AgentBlockResult> {
    if (typeof pattern !== 'string' || pattern.trim() === '') throw new InvalidInputError('empty User-Agent pattern');
    const changed = await this.deps.agents.block(pattern);
    return changed || this.deps.configBlockedAgents().includes(pattern) ? 'blocked' : 'already blocked';
  }

  async unblockAgent(pattern: string): Promise<void> {
    if (typeof pattern !== 'string' || pattern.trim() === '') throw new InvalidInputError('empty User-Agent pattern');
    if (this.deps.configBlockedAgents().includes(pattern))
      throw new ConflictError(`"${pattern}" is blocked by the config file (agents.blocked): remove it there`);
    if (!(await this.deps.agents.unblock(pattern))) throw new NotFoundError(`"${pattern}" is not blocked`);
  }

  /** The config file's patterns first, then Redis' (sorted). */
  async listBlockedAgents(): Promise<{ pattern: string; source: 'config' | 'redis' }[]> {
    const fromRedis = await this.deps.agents.list();
    return [
      ...this.deps.configBlockedAgents().map((pattern) => ({ pattern, source: 'config' as const })),
      ...[...fromRedis].sort().map((pattern) => ({ pattern, source: 'redis' as const })),
    ];
  }
}
