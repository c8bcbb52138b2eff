/**
 * The store side of `export` and `import-all` (docs/operators.md, "Backups"): records read in
 * SCAN batches, each whole in one HGETALL; restored through the add paths' own scripts and
 * methods, or scripts that write what those write (scripts/backup.ts).
 */
import type { Redis } from 'ioredis';
import type { BackupSource, BackupTarget, HostRestore, StoredToken, TokenRestore } from '../app/ports.js';
import { ConflictError, NotFoundError } from '../core/errors.js';
import { MAX_LINKS_PER_PARENT } from '../core/prefix.js';
import type { Account, HostLink, HostRecord } from '../core/types.js';
import type { RedisAccountStore } from './account-store.js';
import type { AgentAdmin } from './client-policy.js';
import { decodeAccount, decodeHost, type HashFields } from './codec.js';
import type { RedisHostStore } from './host-store.js';
import { HOST_FIELDS as HF, Keys, TOKEN_FIELDS as TF } from './keys.js';
import { execPipeline, storeCall } from './redis.js';
import { presentFlag, runScript } from './script.js';
import { HOST_RESTORE, TOKEN_RESTORE } from './scripts/backup.js';
import { decodeToken } from './token-store.js';
import { RedisLinkStore } from './link-store.js';

const SCAN_BATCH = 1000;

export class RedisBackupStore implements BackupSource, BackupTarget {
  constructor(
    private readonly redis: Redis,
    private readonly keys: Keys,
    private readonly accountStore: RedisAccountStore,
    private readonly hostStore: RedisHostStore,
    private readonly agentStore: AgentAdmin,
  ) {}

  // ---- BackupSource: SCAN order; SCAN may return a record twice (the reader keeps the first) ----

  async *accounts(): AsyncGenerator<Account[]> {
    let cursor = '0';
    do {
      const [next, names] = await storeCall('export accounts', () =>
        this.redis.sscan(this.keys.accountSet(), cursor, 'COUNT', SCAN_BATCH),
      );
      cursor = next;
      const records = await this.readAll(
        'export accounts',
        names.map((n) => this.keys.account(n)),
      );
      // A name whose hash is gone (removed meanwhile) is skipped.
      const batch = names.flatMap((name, i) => decodeAccount(name, records[i]!) ?? []);
      if (batch.length > 0) yield batch;
    } while (cursor !== '0');
  }

  async *hosts(): AsyncGenerator<HostRecord[]> {
    for await (const keys of this.scanKeys('export hosts', this.keys.hostScanPattern())) {
      const records = await this.readAll('export hosts', keys);
      const batch = keys.flatMap((key, i) => {
        const fqdn = this.keys.fqdnOfHostKey(key);
        const fields = records[i]!;
        return fqdn === undefined || fields[HF.owner] === undefined ? [] : [decodeHost(fqdn, fields)];
      });
      if (batch.length > 0) yield batch;
    }
  }

  async *tokens(): AsyncGenerator<StoredToken[]> {
    for await (const keys of this.scanKeys('export tokens', this.keys.tokenScanPattern())) {
      const records = await this.readAll('export tokens', keys);
      const batch = keys.flatMap((key, i) => {
        const id = this.keys.idOfTokenKey(key);
        const fields = records[i]!;
        const hash = fields[TF.hash];
        if (id === undefined || fields[TF.fqdn] === undefined || hash === undefined) return [];
        return [{ ...decodeToken(id, fields), hash }];
      });
      if (batch.length > 0) yield batch;
    }
  }

  agentBlocks(): Promise<string[]> {
    return this.agentStore.list();
  }

  // ---- BackupTarget ----

  async firstRecord(): Promise<string | undefined> {
    const heads = [
      this.keys.account(''),
      this.keys.host(''),
      this.keys.token(''),
      this.keys.tokenIndex(''),
      this.keys.hostTokens(''),
      this.keys.nestIndex(''),
    ];
    const sets = [this.keys.accountSet(), this.keys.blockedAgents()];
    for await (const keys of this.scanKeys('import check', this.keys.prefixScanPattern())) {
      const found = keys.find((k) => sets.includes(k) || heads.some((h) => k.startsWith(h)));
      if (found !== undefined) return found;
    }
    return undefined;
  }

  async indexNesting(zones: readonly string[]): Promise<void> {
    await this.hostStore.indexNesting(zones);
  }

  async restoreAccount(account: Account): Promise<'ok' | { existing: Account }> {
    try {
      await this.accountStore.create(account);
      return 'ok';
    } catch (err) {
      if (!(err instanceof ConflictError)) throw err;
      const existing = await this.accountStore.get(account.name);
      if (existing === undefined) throw err;
      return { existing };
    }
  }

  async restoreHost(host: HostRecord, between: readonly string[], checkNesting: boolean): Promise<HostRestore> {
    const keys = {
      host: this.keys.host(host.fqdn),
      account: this.keys.account(host.account),
      nestIndex: this.keys.nestIndex(host.fqdn),
      between: between.map((b) => ({ host: this.keys.host(b), nestIndex: this.keys.nestIndex(b) })),
    };
    const args = { owner: host.account, fqdn: host.fqdn, checkNesting, fields: hostFields(host), between };
    const reply = await runScript(this.redis, HOST_RESTORE, keys, args, 'host restore');
    if (reply.kind === 'exists') return { kind: 'exists', existing: decodeHost(host.fqdn, reply.fields) };
    return reply;
  }

  async restoreToken(token: StoredToken): Promise<TokenRestore> {
    const keys = {
      host: this.keys.host(token.fqdn),
      account: this.keys.account(token.account),
      token: this.keys.token(token.id),
      index: this.keys.tokenIndex(token.hash),
      hostTokens: this.keys.hostTokens(token.fqdn),
    };
    const args = { owner: token.account, id: token.id, hash: token.hash, fields: tokenFields(token) };
    return runScript(this.redis, TOKEN_RESTORE, keys, args, 'token restore');
  }

  async restoreLink(fqdn: string, link: HostLink): Promise<'ok' | { conflict: string }> {
    try {
      await new RedisLinkStore(this.redis, this.keys).link(fqdn, link.parent, link.iid, MAX_LINKS_PER_PARENT);
      return 'ok';
    } catch (err) {
      if (err instanceof ConflictError || err instanceof NotFoundError)
        return { conflict: `host ${fqdn}: its link to ${link.parent} not restored: ${err.message}` };
      throw err;
    }
  }

  restoreAgentBlock(pattern: string): Promise<boolean> {
    return this.agentStore.block(pattern);
  }

  /** The keys matching `pattern`, a SCAN batch at a time (empty batches left out). */
  private async *scanKeys(operation: string, pattern: string): AsyncGenerator<string[]> {
    let cursor = '0';
    do {
      const [next, keys] = await storeCall(operation, () =>
        this.redis.scan(cursor, 'MATCH', pattern, 'COUNT', SCAN_BATCH),
      );
      cursor = next;
      if (keys.length > 0) yield keys;
    } while (cursor !== '0');
  }

  /** HGETALL of each key, pipelined ({} for a key that is gone). */
  private async readAll(operation: string, keys: readonly string[]): Promise<HashFields[]> {
    if (keys.length === 0) return [];
    const pipeline = this.redis.pipeline();
    for (const key of keys) pipeline.hgetall(key);
    return (await execPipeline(operation, pipeline)).map((r) => (r ?? {}) as HashFields);
  }
}

/**
 * A host record as its hash holds it, as COMMIT writes it: absent fields for no address, no MX
 * and flags that are off (codec's decodeHost reads them back).
 */
function hostFields(h: HostRecord): HashFields {
  const fields: HashFields = { [HF.owner]: h.account, [HF.type]: h.type, [HF.state]: h.state };
  const optional: [string, string][] = [
    [HF.ipv4, h.ipv4 ?? ''],
    [HF.ipv6, h.ipv6 ?? ''],
    [HF.wildcard, presentFlag(h.wildcard)],
    [HF.mx, h.mx ?? ''],
    [HF.backmx, presentFlag(h.mx !== null && h.backmx)],
    [HF.updatedAt, h.updatedAt > 0 ? String(h.updatedAt) : ''],
    [HF.lastPrefix, h.prefix ?? ''],
  ];
  for (const [field, value] of optional) if (value !== '') fields[field] = value;
  // '' is kept: all values removed, the name is the bridge's (absent: never set, left alone).
  if (h.txt !== undefined) fields[HF.txt] = h.txt.join('\n');
  return fields;
}

/** A token record as its hash holds it, as TOKEN_ADD writes it (decodeToken reads it back). */
function tokenFields(t: StoredToken): HashFields {
  const fields: HashFields = {
    [TF.fqdn]: t.fqdn,
    [TF.account]: t.account,
    [TF.hash]: t.hash,
    [TF.createdAt]: String(t.createdAt),
  };
  if (t.expiresAt !== null) fields[TF.expiresAt] = String(t.expiresAt);
  if (t.lastUsedAt !== null) fields[TF.lastUsedAt] = String(t.lastUsedAt);
  if (t.from.length > 0) fields[TF.from] = t.from.join(',');
  if (t.note !== '') fields[TF.note] = t.note;
  if (t.acmeOnly) fields[TF.acmeOnly] = '1';
  if (t.tsig !== null) fields[TF.tsig] = t.tsig;
  return fields;
}
