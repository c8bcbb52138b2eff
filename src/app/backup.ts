/**
 * Backups (docs/operators.md, "Backups"): `export` writes the store's accounts, hosts, update
 * tokens and agent blocks as JSON lines; `import-all` validates every line of such a file, then
 * restores it through the store's add paths.
 *
 * The file: a header line, the accounts, the hosts, the tokens, the agent blocks, and an end line
 * with the counts (a file cut short has none). Each line is one JSON object with a `kind`.
 */
import { ACCOUNT_NAME_RULE, isAccountName, scryptCostProblem } from '../core/accounts.js';
import { ConflictError, InvalidInputError } from '../core/errors.js';
import { parseAddress } from '../core/addresses.js';
import { namesBetween, normalizeHostname, zoneOf } from '../core/names.js';
import { staticNameProblem, type StaticNamesByZone } from '../core/static-names.js';
import { checkInterfaceId, checkIpv6Prefix, MAX_LINKS_PER_PARENT } from '../core/prefix.js';
import { TSIG_ALGORITHMS } from '../core/tsig.js';
import { isValidTxtValue, TXT_VALUES_KEPT as MAX_TXT_VALUES } from '../core/txt.js';
import { HOST_STATES, HOST_TYPES, type Account, type HostLink, type HostRecord } from '../core/types.js';
import { noteProblem, parseSourceList, TOKEN_ID_PATTERN } from '../core/update-tokens.js';
import type { BackupSource, BackupTarget, StoredToken } from './ports.js';

export const EXPORT_FORMAT = 'ddns-bridge-export';
export const EXPORT_VERSION = 1;

export interface BackupCounts {
  accounts: number;
  hosts: number;
  tokens: number;
  agentBlocks: number;
}

const RECORD_KINDS = ['account', 'host', 'token', 'agentBlock'] as const;
type RecordKind = (typeof RECORD_KINDS)[number];
const COUNT_OF: Record<RecordKind, keyof BackupCounts> = {
  account: 'accounts',
  host: 'hosts',
  token: 'tokens',
  agentBlock: 'agentBlocks',
};

const noCounts = (): BackupCounts => ({ accounts: 0, hosts: 0, tokens: 0, agentBlocks: 0 });

// ---- export ----

/**
 * Write every record of `source` through `write`, one JSON line each. Every line is a record as
 * one read found it; the file as a whole is not a snapshot (see the port). It stays restorable:
 * a host whose account was not read (added meanwhile) is left out, and so is a token whose host
 * was not, or belongs to another account now.
 */
export async function exportBackup(
  source: BackupSource,
  write: (line: string) => void | Promise<void>,
  now: () => number = Date.now,
): Promise<BackupCounts> {
  const counts = noCounts();
  const emit = (kind: string, body: object) => write(JSON.stringify({ kind, ...body }));
  await emit('header', { format: EXPORT_FORMAT, version: EXPORT_VERSION, exportedAt: new Date(now()).toISOString() });

  const accounts = new Set<string>();
  for await (const batch of source.accounts()) {
    for (const a of batch) {
      if (accounts.has(a.name)) continue;
      accounts.add(a.name);
      counts.accounts++;
      await emit('account', accountLine(a));
    }
  }
  // host → owner, for the tokens.
  const hosts = new Map<string, string>();
  for await (const batch of source.hosts()) {
    for (const h of batch) {
      if (hosts.has(h.fqdn) || !accounts.has(h.account)) continue;
      hosts.set(h.fqdn, h.account);
      counts.hosts++;
      await emit('host', hostLine(h));
    }
  }
  const tokens = new Set<string>();
  for await (const batch of source.tokens()) {
    for (const t of batch) {
      if (tokens.has(t.id) || hosts.get(t.fqdn) !== t.account) continue;
      tokens.add(t.id);
      counts.tokens++;
      await emit('token', tokenLine(t));
    }
  }
  for (const pattern of [...new Set(await source.agentBlocks())].sort()) {
    counts.agentBlocks++;
    await emit('agentBlock', { pattern });
  }
  await emit('end', counts);
  return counts;
}

const accountLine = (a: Account) => ({
  name: a.name,
  passwordHash: a.passwordHash,
  donator: a.donator,
  createdAt: a.createdAt,
});

const hostLine = (h: HostRecord) => ({
  fqdn: h.fqdn,
  owner: h.account,
  type: h.type,
  state: h.state,
  ipv4: h.ipv4,
  ipv6: h.ipv6,
  wildcard: h.wildcard,
  mx: h.mx,
  backmx: h.backmx,
  updatedAt: h.updatedAt,
  // Only where set: the ACME values, the prefix it follows, the last prefix it carried.
  ...(h.txt !== undefined ? { txt: h.txt } : {}),
  ...(h.link !== undefined ? { link: { parent: h.link.parent, iid: h.link.iid } } : {}),
  ...(h.prefix !== undefined ? { prefix: h.prefix } : {}),
});

const tokenLine = (t: StoredToken) => ({
  id: t.id,
  hash: t.hash,
  host: t.fqdn,
  account: t.account,
  createdAt: t.createdAt,
  expiresAt: t.expiresAt,
  lastUsedAt: t.lastUsedAt,
  from: t.from,
  note: t.note,
  // Only when set: an export without TXT-only tokens reads as before.
  ...(t.acmeOnly ? { acmeOnly: true } : {}),
  // A gateway key: its algorithm only (the secret is derived, never stored: docs/security.md, "Gateway keys").
  ...(t.tsig !== null ? { tsig: t.tsig } : {}),
});

// ---- import ----

/** What the import checks that only the adapters know (the composition root hands them in). */
export interface RecordChecks {
  /** A password hash in the format the authenticator verifies. */
  isPasswordHash(hash: string): boolean;
  /** A token hash in the format the token login looks up. */
  isTokenHash(hash: string): boolean;
  /** The hash a gateway TSIG key with this id is stored under (auth's tsigKeyHash). */
  tsigKeyHash(id: string): string;
}

export interface ImportOptions {
  /** Add to a keyspace that holds records already (else it must hold none). */
  merge: boolean;
  /** The configured zones (for the hosts' nest index). */
  zones: readonly string[];
  /** Their static names: a host at one is refused, as `host add` refuses it. */
  staticNames: StaticNamesByZone;
  checks: RecordChecks;
  /** Records written at once (default 64). */
  concurrency?: number;
}

export interface ImportReport {
  restored: BackupCounts;
  /** There already, the same record (see sameRecord). */
  unchanged: BackupCounts;
  /** Lines not restored, by line number, in file order. */
  conflicts: { line: number; message: string }[];
}

type ParsedRecord =
  | { kind: 'account'; account: Account }
  | { kind: 'host'; host: HostRecord }
  | { kind: 'token'; token: StoredToken }
  | { kind: 'agentBlock'; pattern: string };

/** Invalid lines reported at most, before "… and N more". */
const MAX_REPORTED = 20;

/**
 * Validate every line `open()` yields, then (unless one is invalid: InvalidInputError naming
 * the line numbers, nothing written, no store opened) write the records in file order, kind by
 * kind, on the target `withTarget` opens. `open` is called once per pass. Without `merge`, a
 * keyspace that holds a record already is refused (ConflictError) before anything is written.
 * With it, a record that exists stays as it is: the line is unchanged when it is the same
 * record, else a conflict, and the rest is restored.
 */
export async function importBackup(
  withTarget: (use: (target: BackupTarget) => Promise<ImportReport>) => Promise<ImportReport>,
  open: () => AsyncIterable<string>,
  opts: ImportOptions,
): Promise<ImportReport> {
  await validateFile(open(), opts);
  return withTarget((target) => restoreAll(target, open, opts));
}

async function restoreAll(
  target: BackupTarget,
  open: () => AsyncIterable<string>,
  opts: ImportOptions,
): Promise<ImportReport> {
  if (!opts.merge) {
    const found = await target.firstRecord();
    if (found !== undefined) {
      throw new ConflictError(
        `the keyspace holds records already (${JSON.stringify(found)}): import-all restores into an empty one; ` +
          '--merge adds to it',
      );
    }
  }
  await target.indexNesting(opts.zones);
  const report: ImportReport = { restored: noCounts(), unchanged: noCounts(), conflicts: [] };
  const writer = new BoundedWriter(opts.concurrency ?? 64);
  const links: { fqdn: string; link: HostLink; line: number }[] = [];
  let kind: RecordKind | undefined;
  let lineNo = 0;
  // Opened only now: a line reader may start reading at once (see the CLI's readLines).
  for await (const raw of open()) {
    lineNo++;
    const record = parseLine(raw, opts.checks);
    if (record === undefined || !('kind' in record)) continue;
    // A kind depends on the ones before it (hosts on accounts, tokens on hosts): finish those first.
    if (record.kind !== kind) await writer.drain();
    kind = record.kind;
    const line = lineNo;
    await writer.add(async () => {
      const outcome = await restore(target, record, opts);
      if (outcome === 'ok' && record.kind === 'host' && record.host.link !== undefined)
        links.push({ fqdn: record.host.fqdn, link: record.host.link, line });
      const counts = COUNT_OF[record.kind];
      if (outcome === 'ok') report.restored[counts]++;
      else if (outcome === 'same') report.unchanged[counts]++;
      else report.conflicts.push({ line, message: outcome.conflict });
    });
  }
  await writer.drain();
  // Links once every host is there (a parent may come after the hosts that follow it).
  for (const { fqdn, link, line } of links) {
    const outcome = await target.restoreLink(fqdn, link);
    if (outcome !== 'ok') report.conflicts.push({ line, message: outcome.conflict });
  }
  report.conflicts.sort((a, b) => a.line - b.line);
  return report;
}

async function restore(
  target: BackupTarget,
  record: ParsedRecord,
  opts: ImportOptions,
): Promise<'ok' | 'same' | { conflict: string }> {
  switch (record.kind) {
    case 'account': {
      const a = record.account;
      const reply = await target.restoreAccount(a);
      if (reply === 'ok') return 'ok';
      return reply.existing.passwordHash === a.passwordHash
        ? 'same'
        : { conflict: `account ${a.name} exists with another password; left as it is` };
    }
    case 'host': {
      const h = record.host;
      const zone = zoneOf(h.fqdn, opts.zones);
      const between = zone === undefined ? [] : namesBetween(h.fqdn, zone);
      // Checked with or without --merge: the file's own hosts were checked in the validation
      // pass, this keeps a host added meanwhile by `host add` from being shadowed.
      const reply = await target.restoreHost(h, between, true);
      switch (reply.kind) {
        case 'ok':
          return 'ok';
        case 'noaccount':
          return { conflict: `host ${h.fqdn}: no such account: ${h.account}` };
        case 'exists':
          return reply.existing.account === h.account && reply.existing.type === h.type
            ? 'same'
            : {
                conflict:
                  `host ${h.fqdn} exists (owner ${reply.existing.account}, type ${reply.existing.type}); ` +
                  'left as it is',
              };
        default:
          return {
            conflict:
              `host ${h.fqdn} would lie ${reply.kind} ${reply.name} of account ${reply.owner} ` +
              '(docs/security.md, "No shadowing across accounts")',
          };
      }
    }
    case 'token': {
      const t = record.token;
      const reply = await target.restoreToken(t);
      switch (reply.kind) {
        case 'ok':
          return 'ok';
        case 'exists':
          return reply.hash === t.hash ? 'same' : { conflict: `token ${t.id} exists (another token); left as it is` };
        case 'nohost':
          return { conflict: `token ${t.id}: no such host: ${t.fqdn}` };
        case 'not-owner':
          return { conflict: `token ${t.id}: host ${t.fqdn} belongs to account ${reply.owner}, not ${t.account}` };
        case 'hash-taken':
          return { conflict: `token ${t.id}: the same token is stored under another id` };
      }
      break;
    }
    case 'agentBlock':
      return (await target.restoreAgentBlock(record.pattern)) ? 'ok' : 'same';
  }
  throw new Error(`unexpected record ${JSON.stringify(record)}`);
}

/** At most `limit` writes at once. */
class BoundedWriter {
  private readonly inFlight = new Set<Promise<void>>();
  private failure: { error: unknown } | undefined;

  constructor(private readonly limit: number) {}

  async add(task: () => Promise<void>): Promise<void> {
    while (this.inFlight.size >= this.limit) await Promise.race(this.inFlight);
    this.throwIfFailed();
    const running = task().then(
      () => undefined,
      (error: unknown) => {
        this.failure ??= { error };
      },
    );
    this.inFlight.add(running);
    void running.finally(() => this.inFlight.delete(running));
  }

  async drain(): Promise<void> {
    await Promise.all(this.inFlight);
    this.throwIfFailed();
  }

  private throwIfFailed(): void {
    if (this.failure !== undefined) throw this.failure.error;
  }
}

// ---- validation ----

/** The first pass: every line valid, the header first, the end line last with the right counts. */
async function validateFile(lines: AsyncIterable<string>, opts: ImportOptions): Promise<void> {
  const problems: { line: number; message: string }[] = [];
  let more = 0;
  const problem = (line: number, message: string) => {
    if (problems.length < MAX_REPORTED) problems.push({ line, message });
    else more++;
  };
  const counts = noCounts();
  const accounts = new Set<string>();
  const hosts = new Map<string, string>();
  // The rules of `host add` and `host link` among the file's own hosts (the store checks the rest).
  const nesting = new FileNesting(opts.zones);
  const linked = new Map<string, { type: string; owner: string; link?: HostLink; line: number }>();
  const tokenIds = new Set<string>();
  const tokenHashes = new Set<string>();
  const patterns = new Set<string>();
  let lineNo = 0;
  let sawHeader = false;
  let end: { line: number; counts: unknown } | undefined;
  let previousKind = -1;
  for await (const raw of lines) {
    lineNo++;
    let parsed: ReturnType<typeof parseLine>;
    try {
      parsed = parseLine(raw, opts.checks);
    } catch (err) {
      problem(lineNo, (err as Error).message);
      continue;
    }
    if (parsed === undefined) continue;
    if (!sawHeader) {
      if (!('header' in parsed)) {
        problem(lineNo, `expected the header line ({"kind":"header","format":"${EXPORT_FORMAT}",…}) first`);
        break;
      }
      sawHeader = true;
      continue;
    }
    if ('header' in parsed) {
      problem(lineNo, 'a second header line');
      continue;
    }
    if (end !== undefined) {
      problem(lineNo, `a line after the end line (line ${end.line})`);
      continue;
    }
    if ('end' in parsed) {
      end = { line: lineNo, counts: parsed.end };
      continue;
    }
    const order = RECORD_KINDS.indexOf(parsed.kind);
    if (order < previousKind) {
      problem(
        lineNo,
        `a ${parsed.kind} line after ${RECORD_KINDS[previousKind]} lines (the order is ${RECORD_KINDS.join(', ')})`,
      );
    }
    previousKind = Math.max(previousKind, order);
    counts[COUNT_OF[parsed.kind]]++;
    const unknown = (what: string) =>
      `${what}, which is not defined above${opts.merge ? ' (with --merge, it must then exist in the keyspace)' : ''}`;
    switch (parsed.kind) {
      case 'account':
        if (accounts.has(parsed.account.name)) problem(lineNo, `account ${parsed.account.name} a second time`);
        accounts.add(parsed.account.name);
        break;
      case 'host': {
        const h = parsed.host;
        if (hosts.has(h.fqdn)) {
          problem(lineNo, `host ${h.fqdn} a second time`);
          break;
        }
        if (!accounts.has(h.account) && !opts.merge) problem(lineNo, `host ${h.fqdn}: account ${unknown(h.account)}`);
        hosts.set(h.fqdn, h.account);
        const zone = zoneOf(h.fqdn, opts.zones);
        const isStatic = zone === undefined ? undefined : staticNameProblem(h.fqdn, zone, opts.staticNames);
        if (isStatic !== undefined) problem(lineNo, `host ${isStatic}`);
        const clash = nesting.add(h.fqdn, h.account, lineNo);
        if (clash !== undefined) {
          problem(
            lineNo,
            `host ${h.fqdn} would lie ${clash.kind} ${clash.name} (line ${clash.line}) of account ${clash.owner} ` +
              '(docs/security.md, "No shadowing across accounts")',
          );
        }
        linked.set(h.fqdn, { type: h.type, owner: h.account, ...(h.link ? { link: h.link } : {}), line: lineNo });
        break;
      }
      case 'token': {
        const t = parsed.token;
        if (tokenIds.has(t.id)) problem(lineNo, `token ${t.id} a second time`);
        if (tokenHashes.has(t.hash)) problem(lineNo, `token ${t.id}: its hash is that of a token above`);
        tokenIds.add(t.id);
        tokenHashes.add(t.hash);
        const owner = hosts.get(t.fqdn);
        if (owner === undefined && !opts.merge) problem(lineNo, `token ${t.id}: host ${unknown(t.fqdn)}`);
        if (owner !== undefined && owner !== t.account)
          problem(lineNo, `token ${t.id}: host ${t.fqdn} belongs to account ${owner}, not ${t.account}`);
        break;
      }
      case 'agentBlock':
        if (patterns.has(parsed.pattern))
          problem(lineNo, `agent block ${JSON.stringify(parsed.pattern)} a second time`);
        patterns.add(parsed.pattern);
        break;
    }
  }
  for (const p of linkProblems(linked, opts.merge)) problem(p.line, p.message);
  if (!sawHeader && problems.length === 0) problem(Math.max(lineNo, 1), 'the file is empty');
  else if (sawHeader && end === undefined)
    problem(lineNo, 'the file ends without its end line ({"kind":"end",…}): it was cut short');
  else if (end !== undefined && problems.length === 0 && JSON.stringify(end.counts) !== JSON.stringify(counts))
    problem(end.line, `the end line counts ${JSON.stringify(end.counts)}, the file holds ${JSON.stringify(counts)}`);
  if (problems.length > 0) {
    const lines = problems.sort((a, b) => a.line - b.line).map((p) => `line ${p.line}: ${p.message}`);
    throw new InvalidInputError(
      `import-all: nothing written, the file is not a valid export:\n${lines.join('\n')}` +
        (more > 0 ? `\n… and ${more} more` : ''),
    );
  }
}

/**
 * The file's hosts as the nest index would hold them: a host must not lie below or above a host
 * of another account (docs/security.md, "No shadowing across accounts"), as `host add` refuses.
 */
class FileNesting {
  private readonly hosts = new Map<string, { owner: string; line: number }>();
  /** A name → the hosts below it, one per owner, at most two owners (one that differs is all a check needs). */
  private readonly below = new Map<string, Map<string, { fqdn: string; line: number }>>();

  constructor(private readonly zones: readonly string[]) {}

  /** Adds the host, or returns the host of another account it would lie below or above (and adds nothing). */
  add(
    fqdn: string,
    owner: string,
    line: number,
  ): { kind: 'below' | 'above'; name: string; owner: string; line: number } | undefined {
    const zone = zoneOf(fqdn, this.zones);
    const between = zone === undefined ? [] : namesBetween(fqdn, zone);
    for (const name of between) {
      const above = this.hosts.get(name);
      if (above !== undefined && above.owner !== owner) return { kind: 'below', name, ...above };
    }
    for (const [other, under] of this.below.get(fqdn) ?? []) {
      if (other !== owner) return { kind: 'above', name: under.fqdn, owner: other, line: under.line };
    }
    this.hosts.set(fqdn, { owner, line });
    for (const name of between) {
      let owners = this.below.get(name);
      if (owners === undefined) this.below.set(name, (owners = new Map()));
      if (!owners.has(owner) && owners.size < 2) owners.set(owner, { fqdn, line });
    }
    return undefined;
  }
}

/**
 * The rules of `host link` (store/link-store.ts) among the file's hosts: the parent exists (with
 * --merge it may be in the keyspace: the restore's link script decides), has the same owner, both
 * are dynamic, the parent follows nobody, at most MAX_LINKS_PER_PARENT follow one parent.
 */
function linkProblems(
  hosts: ReadonlyMap<string, { type: string; owner: string; link?: HostLink; line: number }>,
  merge: boolean,
): { line: number; message: string }[] {
  const problems: { line: number; message: string }[] = [];
  const followers = new Map<string, number>();
  for (const [fqdn, h] of hosts) {
    if (h.link === undefined) continue;
    const to = h.link.parent;
    const parent = hosts.get(to);
    const says = (message: string) =>
      problems.push({ line: h.line, message: `host ${fqdn}: link to ${to}: ${message}` });
    if (parent === undefined) {
      if (!merge) says(`no host ${to} is defined in the file`);
      continue;
    }
    if (parent.owner !== h.owner)
      says(`${to} belongs to ${parent.owner}, ${fqdn} to ${h.owner}: only hosts of one account link`);
    else if (h.type !== 'dynamic') says(`${fqdn} is ${h.type}: only dynamic hosts link`);
    else if (parent.type !== 'dynamic') says(`${to} is ${parent.type}: only dynamic hosts link`);
    else if (parent.link !== undefined)
      says(`${to} follows ${parent.link.parent} itself (line ${parent.line}): links do not chain`);
    else {
      const count = (followers.get(to) ?? 0) + 1;
      followers.set(to, count);
      if (count > MAX_LINKS_PER_PARENT)
        says(`${to} has ${MAX_LINKS_PER_PARENT} linked hosts already, the most one host may have`);
    }
  }
  return problems;
}

type ParsedLine = ParsedRecord | { header: true } | { end: BackupCounts } | undefined;

/** One line: undefined when blank; throws an Error whose message says what is wrong. */
function parseLine(raw: string, checks: RecordChecks): ParsedLine {
  if (raw.trim() === '') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw new Error('not a JSON object');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error('not a JSON object');
  const line = new Fields(value as Record<string, unknown>);
  const kind = line.string('kind');
  let parsed: ParsedLine;
  switch (kind) {
    case 'header': {
      const format = line.string('format');
      if (format !== EXPORT_FORMAT) throw new Error(`format ${JSON.stringify(format)}: not a ddns-bridge export`);
      const version = line.integer('version');
      if (version !== EXPORT_VERSION)
        throw new Error(`version ${version}: this ddns-bridge reads version ${EXPORT_VERSION}`);
      line.string('exportedAt');
      parsed = { header: true };
      break;
    }
    case 'end':
      parsed = {
        end: {
          accounts: line.integer('accounts'),
          hosts: line.integer('hosts'),
          tokens: line.integer('tokens'),
          agentBlocks: line.integer('agentBlocks'),
        },
      };
      break;
    case 'account':
      parsed = { kind, account: parseAccount(line, checks) };
      break;
    case 'host':
      parsed = { kind, host: parseHost(line) };
      break;
    case 'token':
      parsed = { kind, token: parseToken(line, checks) };
      break;
    case 'agentBlock': {
      const pattern = line.string('pattern');
      if (pattern.trim() === '') throw new Error('an empty agent block pattern');
      parsed = { kind, pattern };
      break;
    }
    default:
      throw new Error(`unknown kind ${JSON.stringify(kind)} (expected header, ${RECORD_KINDS.join(', ')} or end)`);
  }
  line.noOthers();
  return parsed;
}

function parseAccount(line: Fields, checks: RecordChecks): Account {
  const name = line.string('name');
  if (!isAccountName(name))
    throw new Error(`account ${JSON.stringify(name)}: not a valid account name (${ACCOUNT_NAME_RULE})`);
  const passwordHash = line.string('passwordHash');
  if (!checks.isPasswordHash(passwordHash)) throw new Error(`account ${name}: passwordHash is not a password hash`);
  const costly = scryptCostProblem(passwordHash);
  if (costly !== undefined) throw new Error(`account ${name}: passwordHash: ${costly}`);
  return { name, passwordHash, donator: line.boolean('donator'), createdAt: line.time('createdAt') };
}

function parseHost(line: Fields): HostRecord {
  const fqdn = line.string('fqdn');
  if (normalizeHostname(fqdn) !== fqdn) throw new Error(`host ${JSON.stringify(fqdn)}: not a host name`);
  const account = line.string('owner');
  if (!isAccountName(account))
    throw new Error(`host ${fqdn}: owner ${JSON.stringify(account)} is not an account name (${ACCOUNT_NAME_RULE})`);
  const address = (field: string, family: 4 | 6) => {
    const text = line.nullable(field, () => line.string(field));
    if (text === null) return null;
    const parsed = parseAddress(text);
    if (parsed?.family !== family || parsed.address !== text)
      throw new Error(`host ${fqdn}: ${field} ${JSON.stringify(text)} is not an IPv${family} address`);
    return text;
  };
  const mx = line.nullable('mx', () => line.string('mx'));
  // As an update stores it (normalised): anything else fails every republish of the host.
  if (mx !== null && normalizeHostname(mx) !== mx)
    throw new Error(`host ${fqdn}: mx ${JSON.stringify(mx)} is not a host name`);
  const txt = line.optional('txt', () => line.stringList('txt'));
  if (txt !== undefined && (txt.length > MAX_TXT_VALUES || !txt.every(isValidTxtValue)))
    throw new Error(`host ${fqdn}: txt must be at most ${MAX_TXT_VALUES} valid TXT values`);
  const link = line.optional('link', () => line.record('link'));
  let hostLink: HostLink | undefined;
  if (link !== undefined) {
    const parent = typeof link.parent === 'string' ? normalizeHostname(link.parent) : undefined;
    const iid = typeof link.iid === 'string' ? checkInterfaceId(link.iid) : undefined;
    if (!parent || parent !== link.parent || iid === undefined || 'problem' in iid || iid.iid !== link.iid)
      throw new Error(`host ${fqdn}: link must be {"parent": a host name, "iid": an interface identifier}`);
    if (parent === fqdn) throw new Error(`host ${fqdn}: link: a host cannot follow itself`);
    hostLink = { parent, iid: iid.iid };
  }
  const prefix = line.optional('prefix', () => line.string('prefix'));
  if (prefix !== undefined && 'problem' in checkIpv6Prefix(prefix))
    throw new Error(`host ${fqdn}: prefix ${JSON.stringify(prefix)} is not an IPv6 prefix`);
  return {
    fqdn,
    account,
    type: line.oneOf('type', HOST_TYPES),
    state: line.oneOf('state', HOST_STATES),
    ipv4: address('ipv4', 4),
    ipv6: address('ipv6', 6),
    wildcard: line.boolean('wildcard'),
    mx,
    backmx: line.boolean('backmx'),
    updatedAt: line.time('updatedAt'),
    ...(txt !== undefined ? { txt } : {}),
    ...(hostLink !== undefined ? { link: hostLink } : {}),
    ...(prefix !== undefined ? { prefix } : {}),
  };
}

function parseToken(line: Fields, checks: RecordChecks): StoredToken {
  const id = line.string('id');
  if (!TOKEN_ID_PATTERN.test(id)) throw new Error(`token id ${JSON.stringify(id)}: expected 12 hex digits`);
  const hash = line.string('hash');
  if (!checks.isTokenHash(hash)) throw new Error(`token ${id}: hash is not a token hash`);
  const tsig = line.optional('tsig', () => line.oneOf('tsig', TSIG_ALGORITHMS)) ?? null;
  // A key's record is found by its id's hash: any other would be a key nobody can use.
  if (tsig !== null && hash !== checks.tsigKeyHash(id)) throw new Error(`token ${id}: hash is not this TSIG key's`);
  const fqdn = line.string('host');
  if (normalizeHostname(fqdn) !== fqdn) throw new Error(`token ${id}: host ${JSON.stringify(fqdn)} is not a host name`);
  const account = line.string('account');
  if (!isAccountName(account))
    throw new Error(`token ${id}: ${JSON.stringify(account)} is not an account name (${ACCOUNT_NAME_RULE})`);
  const from = line.stringList('from');
  if (from.length > 0) {
    const sources = parseSourceList(from.join(','));
    if ('problem' in sources) throw new Error(`token ${id}: from: ${sources.problem}`);
    if (sources.from.join(',') !== from.join(',')) throw new Error(`token ${id}: from: expected address/prefix blocks`);
  }
  const note = line.string('note');
  const noteIssue = noteProblem(note);
  if (noteIssue !== undefined) throw new Error(`token ${id}: note: ${noteIssue}`);
  return {
    id,
    hash,
    fqdn,
    account,
    createdAt: line.time('createdAt'),
    expiresAt: line.nullable('expiresAt', () => line.time('expiresAt')),
    lastUsedAt: line.nullable('lastUsedAt', () => line.time('lastUsedAt')),
    from,
    note,
    acmeOnly: line.flag('acmeOnly'),
    tsig,
  };
}

/** Typed reads of a line's fields; each field read once, and noOthers() refuses the rest. */
class Fields {
  private readonly read = new Set<string>(['kind']);

  constructor(private readonly object: Record<string, unknown>) {}

  private get(field: string): unknown {
    this.read.add(field);
    if (!Object.hasOwn(this.object, field)) throw new Error(`${this.kindText()}: no ${field}`);
    return this.object[field];
  }

  string(field: string): string {
    const v = this.get(field);
    if (typeof v !== 'string') throw new Error(`${this.kindText()}: ${field} must be a string`);
    return v;
  }

  boolean(field: string): boolean {
    const v = this.get(field);
    if (typeof v !== 'boolean') throw new Error(`${this.kindText()}: ${field} must be true or false`);
    return v;
  }

  integer(field: string): number {
    const v = this.get(field);
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0)
      throw new Error(`${this.kindText()}: ${field} must be a whole number ≥ 0`);
    return v;
  }

  /** Milliseconds since the epoch. */
  time(field: string): number {
    return this.integer(field);
  }

  oneOf<T extends string>(field: string, values: readonly T[]): T {
    const v = this.string(field);
    if (!(values as readonly string[]).includes(v))
      throw new Error(`${this.kindText()}: ${field} ${JSON.stringify(v)} is not one of ${values.join(', ')}`);
    return v as T;
  }

  stringList(field: string): string[] {
    const v = this.get(field);
    if (!Array.isArray(v) || !v.every((s) => typeof s === 'string'))
      throw new Error(`${this.kindText()}: ${field} must be a list of strings`);
    return v;
  }

  /** A field that may be left out (undefined). */
  optional<T>(field: string, read: () => T): T | undefined {
    return Object.hasOwn(this.object, field) ? read() : undefined;
  }

  record(field: string): Record<string, unknown> {
    const v = this.get(field);
    if (typeof v !== 'object' || v === null || Array.isArray(v))
      throw new Error(`${this.kindText()}: ${field} must be an object`);
    return v as Record<string, unknown>;
  }

  /** A flag that may be left out (false). */
  flag(field: string): boolean {
    return Object.hasOwn(this.object, field) ? this.boolean(field) : false;
  }

  /** null when the field is null, else what `read` makes of it. */
  nullable<T>(field: string, read: () => T): T | null {
    return this.get(field) === null ? null : read();
  }

  noOthers(): void {
    const others = Object.keys(this.object).filter((k) => !this.read.has(k));
    if (others.length > 0)
      throw new Error(`${this.kindText()}: unknown field ${others.map((k) => JSON.stringify(k)).join(', ')}`);
  }

  private kindText(): string {
    return String(this.object.kind ?? 'line');
  }
}
