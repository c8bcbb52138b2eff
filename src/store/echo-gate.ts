/**
 * The frequency rule of the address echo, per requesting address (docs/protocol.md, "The address echo"), one Lua
 * call.
 */
import type { Redis } from 'ioredis';
import type { EchoGate } from '../app/ports.js';
import { Keys } from './keys.js';
import { runScript } from './script.js';
import { ECHO } from './scripts/counters.js';

export class RedisEchoGate implements EchoGate {
  constructor(
    private readonly redis: Redis,
    private readonly keys: Keys,
  ) {}

  admit(sourceIp: string, minIntervalMs: number, maxFrequent: number, cooldownMs: number): Promise<'ok' | 'abuse'> {
    return runScript(
      this.redis,
      ECHO,
      { echo: this.keys.echo(sourceIp) },
      { minIntervalMs, maxFrequent, cooldownMs },
      'echo admit',
    );
  }
}
