/** The frequency rule of the address echo, per requesting address (docs/protocol.md, "The address echo"), one Lua call. */
import type { Redis } from 'ioredis';
import type { EchoGate } from '../app/ports.js';
import { Keys } from './keys.js';
import { scriptsFor, type StoreScripts } from './lua.js';
import { storeCall } from './redis.js';

export class RedisEchoGate implements EchoGate {
  private readonly scripts: StoreScripts;

  constructor(
    redis: Redis,
    private readonly keys: Keys,
  ) {
    this.scripts = scriptsFor(redis);
  }

  async admit(sourceIp: string, minIntervalMs: number, maxFrequent: number, cooldownMs: number): Promise<'ok' | 'abuse'> {
    const verdict = await storeCall('echo admit', () =>
      this.scripts.echo(
        this.keys.echo(sourceIp),
        Math.max(1, Math.floor(minIntervalMs)),
        maxFrequent,
        Math.max(1, Math.floor(cooldownMs)),
      ),
    );
    return verdict === 'abuse' ? 'abuse' : 'ok';
  }
}
