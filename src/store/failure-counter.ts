/**
 * Failed-login counting (docs/protocol.md, "Clients that misbehave"): per source address and per account, shared by
 * every frontend. Reaching `maxFailures` within `windowMs` puts that address or account into a cool-down of
 * `cooldownMs`, during which logins are refused without a password check.
 */
import type { Redis } from 'ioredis';
import type { FailureCounter } from '../app/ports.js';
import type { Config } from '../config/schema.js';
import { Keys } from './keys.js';
import { storeCall } from './redis.js';
import { runScript } from './script.js';
import { STRIKE, type StrikePair } from './scripts/counters.js';

export class RedisFailureCounter implements FailureCounter {
  constructor(
    private readonly redis: Redis,
    private readonly keys: Keys,
    private readonly cfg: Pick<Config['credentials'], 'maxFailures' | 'windowMs' | 'cooldownMs'>,
  ) {}

  async isThrottled(sourceIp: string, account: string | undefined): Promise<boolean> {
    const markers = [this.keys.cooldownBySource(sourceIp)];
    if (account !== undefined) markers.push(this.keys.cooldownByAccount(account));
    const n = await storeCall('throttle check', () => this.redis.exists(...markers));
    return n > 0;
  }

  async recordFailure(sourceIp: string, account: string | undefined): Promise<void> {
    const pairs: StrikePair[] = [
      { counter: this.keys.failuresBySource(sourceIp), marker: this.keys.cooldownBySource(sourceIp) },
    ];
    if (account !== undefined) {
      pairs.push({ counter: this.keys.failuresByAccount(account), marker: this.keys.cooldownByAccount(account) });
    }
    const args = { threshold: this.cfg.maxFailures, windowMs: this.cfg.windowMs, markMs: this.cfg.cooldownMs };
    await runScript(this.redis, STRIKE, { pairs }, args, 'failure count');
  }
}
