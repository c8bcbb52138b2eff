/** Accounts in Redis: one hash per account plus the set of names (for listing). */
import type { Redis } from 'ioredis';
import type { AccountStore } from '../app/ports.js';
import { ACCOUNT_NAME_RULE, isAccountName } from '../core/accounts.js';
import { ConflictError, InvalidInputError, NotFoundError } from '../core/errors.js';
import type { Account } from '../core/types.js';
import { decodeAccount } from './codec.js';
import { ACCOUNT_FIELDS, Keys } from './keys.js';
import { execPipeline, storeCall } from './redis.js';
import { runScript } from './script.js';
import { ACCOUNT_CREATE, ACCOUNT_REMOVE, ACCOUNT_SET, type SettableAccountField } from './scripts/accounts.js';

/** What a login needs, read in one round trip (see auth's LoginLookup). */
export interface LoginRecord {
  account: Account | undefined;
  /** The source address or the account is in its failed-login cool-down. */
  throttled: boolean;
}

export class RedisAccountStore implements AccountStore {
  constructor(
    private readonly redis: Redis,
    private readonly keys: Keys,
  ) {}

  async get(name: string): Promise<Account | undefined> {
    const fields = await storeCall('account get', () => this.redis.hgetall(this.keys.account(name)));
    return decodeAccount(name, fields);
  }

  /**
   * The account and the cool-down markers of the source and the account, in one
   * pipelined round trip: the authenticator's hot path.
   */
  async getForLogin(name: string, sourceIp: string): Promise<LoginRecord> {
    const [fields, markers] = await execPipeline(
      'login lookup',
      this.redis
        .pipeline()
        .hgetall(this.keys.account(name))
        .exists(this.keys.cooldownBySource(sourceIp), this.keys.cooldownByAccount(name)),
    );
    return {
      account: decodeAccount(name, fields as Record<string, string>),
      throttled: Number(markers) > 0,
    };
  }

  async create(account: Account): Promise<void> {
    if (!isAccountName(account.name)) {
      throw new InvalidInputError(`invalid account name ${JSON.stringify(account.name)}: ${ACCOUNT_NAME_RULE}`);
    }
    const created = await runScript(
      this.redis,
      ACCOUNT_CREATE,
      { account: this.keys.account(account.name), accounts: this.keys.accountSet() },
      {
        name: account.name,
        passwordHash: account.passwordHash,
        donator: account.donator,
        createdAt: account.createdAt,
      },
      'account create',
    );
    if (!created) throw new ConflictError(`account ${account.name} already exists`);
  }

  async setPasswordHash(name: string, passwordHash: string): Promise<void> {
    await this.setField(name, ACCOUNT_FIELDS.passwordHash, passwordHash);
  }

  async setDonator(name: string, donator: boolean): Promise<void> {
    await this.setField(name, ACCOUNT_FIELDS.donator, donator ? '1' : '0');
  }

  async remove(name: string): Promise<void> {
    const keys = { account: this.keys.account(name), accounts: this.keys.accountSet() };
    const result = await runScript(this.redis, ACCOUNT_REMOVE, keys, { name }, 'account remove');
    if (result === 'gone') throw new NotFoundError(`no such account: ${name}`);
    if (result === 'owns tokens')
      throw new ConflictError(`account ${name} still owns update tokens; remove them first (token list)`);
    if (result !== 'ok') throw new ConflictError(`account ${name} still owns hosts; remove them first`);
  }

  async list(): Promise<Account[]> {
    const names = await storeCall('account list', () => this.redis.smembers(this.keys.accountSet()));
    if (names.length === 0) return [];
    names.sort();
    const pipeline = this.redis.pipeline();
    for (const name of names) pipeline.hgetall(this.keys.account(name));
    const replies = await execPipeline('account list', pipeline);
    const accounts: Account[] = [];
    names.forEach((name, i) => {
      // A name whose hash is gone (removed meanwhile) is skipped.
      const account = decodeAccount(name, (replies[i] ?? {}) as Record<string, string>);
      if (account !== undefined) accounts.push(account);
    });
    return accounts;
  }

  /** Number of hosts the account owns (kept by host add/remove). */
  async hostCount(name: string): Promise<number> {
    const n = await storeCall('account hosts', () =>
      this.redis.hget(this.keys.account(name), ACCOUNT_FIELDS.hostCount),
    );
    return n === null ? 0 : Number(n);
  }

  private async setField(name: string, field: SettableAccountField, value: string): Promise<void> {
    const found = await runScript(
      this.redis,
      ACCOUNT_SET,
      { account: this.keys.account(name) },
      { field, value },
      'account update',
    );
    if (!found) throw new NotFoundError(`no such account: ${name}`);
  }
}
