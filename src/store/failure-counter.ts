/**
 * Failed-login counting (docs/protocol.md, "Clients that misbehave"): per source address and per account, shared by every
 * frontend. Reaching `maxFailures` within `windowMs` puts that address or account into a
 * cool-down of `cooldownMs`, during which logins are refused without a password check.
 */
import type { Redis } from 'ioredis';
import type { FailureCounter } from '../app/ports.js';
import type { Config } from '../config/schema.js';
import { Keys } from './keys.js';
import { scriptsFor, type StoreScripts } from './lua.js';
import { storeCall } from './redis.js';

export class RedisFailureCounter implements FailureCounter {
  private readonly scripts: StoreScripts;

  constructor(
    private readonly redis: Redis,
    private readonly keys: Keys,
    private readonly cfg: Pick<Config['credentials'], 'maxFailures' | 'windowMs' | 'cooldownMs'>,
  ) {
    this.scripts = scriptsFor(redis);
  }

  async isThrottled(sourceIp: string, account: string | undefined): Promise<boolean> {
    const markers = [this.keys.cooldownBySource(sourceIp)];
    if (account !== undefined) markers.push(this.keys.cooldownByAccount(account));
    const n = await storeCall('throttle check', () => this.redis.exists(...markers));
    return n > 0;
  }

  async recordFailure(sourceIp: string, account: string | undefined): Promise<void> {
    const pairs: [string, string][] = [[this.keys.failuresBySource(sourceIp), this.keys.cooldownBySource(sourceIp)]];
    if (account !== undefined) {
      pairs.push([this.keys.failuresByAccount(account), this.keys.cooldownByAccount(account)]);
    }
    await storeCall('failure count', () =>
      this.scripts.strike(pairs, this.cfg.maxFailures, this.cfg.windowMs, this.cfg.cooldownMs),
    );
  }
}
