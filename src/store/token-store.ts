/**
 * Update tokens in Redis: the login's lookup and checks (one Lua call each) and the
 * operator's add, list and remove. Only the token's keyed hash is stored.
 */
import type { Redis } from 'ioredis';
import type { GuardCheck, NewToken, TokenAdmin, TokenGuard, TokenLogin, TokenLookup } from '../app/ports.js';
import { ConflictError, NotFoundError } from '../core/errors.js';
import { TSIG_ALGORITHMS, type TsigAlgorithm } from '../core/tsig.js';
import type { TokenRecord } from '../core/update-tokens.js';
import { tokenGuardKeys } from './host-store.js';
import { HOST_FIELDS, Keys, TOKEN_FIELDS } from './keys.js';
import { execPipeline, storeCall } from './redis.js';
import { runScript } from './script.js';
import { TOKEN_ADD, TOKEN_CHECK, TOKEN_FIND, TOKEN_REMOVE } from './scripts/tokens.js';

export type { NewToken } from '../app/ports.js';

const SCAN_BATCH = 1000;

export class RedisTokenStore implements TokenLookup, TokenAdmin {
  constructor(
    private readonly redis: Redis,
    private readonly keys: Keys,
  ) {}

  async find(hash: string, sourceIp: string, userAgent: string): Promise<TokenLogin | 'agent' | 'login' | undefined> {
    const keys = {
      index: this.keys.tokenIndex(hash),
      junkBlock: this.keys.junkBlock(sourceIp, userAgent),
      sourceCooldown: this.keys.cooldownBySource(sourceIp),
    };
    const found = await runScript(this.redis, TOKEN_FIND, keys, { keyPrefix: this.keys.prefix, hash }, 'token find');
    if (found === undefined || found === 'agent' || found === 'login') return found;
    const { id, fqdn, account, donator, from, acmeOnly, tsig } = found;
    const algorithm = tsigAlgorithm(tsig);
    return {
      id,
      hash,
      fqdn,
      account: { name: account, donator },
      from: splitList(from),
      acmeOnly,
      ...(algorithm === null ? {} : { tsig: algorithm }),
    };
  }

  async check(guard: TokenGuard): Promise<'ok' | GuardCheck> {
    const keys = tokenGuardKeys(this.keys, guard, guard.token.fqdn);
    const args = { tokenHash: guard.token.hash, donator: guard.token.account.donator };
    return runScript(this.redis, TOKEN_CHECK, keys, args, 'token check');
  }

  /** Record a token for a registered host: NotFoundError without one, ConflictError if the id is taken. */
  async add(token: NewToken): Promise<TokenRecord> {
    const hostKey = this.keys.host(token.fqdn);
    for (let attempt = 0; attempt < 5; attempt++) {
      const owner = await storeCall('token add', () => this.redis.hget(hostKey, HOST_FIELDS.owner));
      if (owner === null) throw new NotFoundError(`no such host: ${token.fqdn}`);
      const keys = {
        host: hostKey,
        account: this.keys.account(owner),
        token: this.keys.token(token.id),
        index: this.keys.tokenIndex(token.hash),
        hostTokens: this.keys.hostTokens(token.fqdn),
      };
      const reply = await runScript(this.redis, TOKEN_ADD, keys, { ...token, owner }, 'token add');
      if (reply.kind === 'exists') throw new ConflictError(`token id ${token.id} is taken; try again`);
      if (reply.kind === 'ok') {
        return {
          id: token.id,
          fqdn: token.fqdn,
          account: owner,
          createdAt: reply.createdAt,
          expiresAt: reply.expiresAt,
          lastUsedAt: null,
          from: [...token.from],
          note: token.note,
          acmeOnly: token.acmeOnly === true,
          tsig: token.tsig ?? null,
        };
      }
      // 'changed': removed or given to another account meanwhile; read the owner again.
    }
    throw new ConflictError(`host ${token.fqdn} changed while its token was added; try again`);
  }

  /** Every token, or the tokens of one host; sorted by host, then creation. */
  async list(fqdn?: string): Promise<TokenRecord[]> {
    const ids =
      fqdn === undefined
        ? await this.allIds()
        : await storeCall('token list', () => this.redis.smembers(this.keys.hostTokens(fqdn)));
    if (ids.length === 0) return [];
    const pipeline = this.redis.pipeline();
    for (const id of ids) pipeline.hgetall(this.keys.token(id));
    const records = (await execPipeline('token list', pipeline)) as Record<string, string>[];
    const tokens = ids.flatMap((id, i) => {
      const fields = records[i] ?? {};
      return fields[TOKEN_FIELDS.fqdn] === undefined ? [] : [decodeToken(id, fields)];
    });
    return tokens.sort((a, b) => (a.fqdn === b.fqdn ? a.createdAt - b.createdAt : a.fqdn < b.fqdn ? -1 : 1));
  }

  /** Revoke a token at once (every frontend: the login checks read the record). NotFoundError. */
  async remove(id: string): Promise<TokenRecord> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const fields = await storeCall('token remove', () => this.redis.hgetall(this.keys.token(id)));
      if (fields[TOKEN_FIELDS.fqdn] === undefined) throw new NotFoundError(`no such token: ${id}`);
      const record = decodeToken(id, fields);
      const hash = fields[TOKEN_FIELDS.hash] ?? '';
      const keys = {
        token: this.keys.token(id),
        index: this.keys.tokenIndex(hash),
        hostTokens: this.keys.hostTokens(record.fqdn),
        account: this.keys.account(record.account),
      };
      const result = await runScript(this.redis, TOKEN_REMOVE, keys, { id, hash }, 'token remove');
      if (result === 'ok') return record;
    }
    throw new ConflictError(`token ${id} changed while being removed; try again`);
  }

  private async allIds(): Promise<string[]> {
    const ids: string[] = [];
    let cursor = '0';
    do {
      const [next, keys] = await storeCall('token list', () =>
        this.redis.scan(cursor, 'MATCH', this.keys.tokenScanPattern(), 'COUNT', SCAN_BATCH),
      );
      cursor = next;
      for (const key of keys) {
        const id = this.keys.idOfTokenKey(key);
        if (id !== undefined) ids.push(id);
      }
    } while (cursor !== '0');
    return [...new Set(ids)];
  }
}

/** A token record's hash fields as a TokenRecord (its hash stays out: TOKEN_FIELDS.hash). */
export function decodeToken(id: string, fields: Record<string, string>): TokenRecord {
  const time = (field: string) => (fields[field] === undefined ? null : Number(fields[field]));
  return {
    id,
    fqdn: fields[TOKEN_FIELDS.fqdn] ?? '',
    account: fields[TOKEN_FIELDS.account] ?? '',
    createdAt: Number(fields[TOKEN_FIELDS.createdAt] ?? 0),
    expiresAt: time(TOKEN_FIELDS.expiresAt),
    lastUsedAt: time(TOKEN_FIELDS.lastUsedAt),
    from: splitList(fields[TOKEN_FIELDS.from] ?? ''),
    note: fields[TOKEN_FIELDS.note] ?? '',
    acmeOnly: fields[TOKEN_FIELDS.acmeOnly] === '1',
    tsig: tsigAlgorithm(fields[TOKEN_FIELDS.tsig] ?? ''),
  };
}

/** A stored algorithm name, or null (none, or one this version does not know: never usable). */
function tsigAlgorithm(text: string): TsigAlgorithm | null {
  return (TSIG_ALGORITHMS as readonly string[]).includes(text) ? (text as TsigAlgorithm) : null;
}

function splitList(text: string): string[] {
  return text === '' ? [] : text.split(',');
}
