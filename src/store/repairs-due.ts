/**
 * How many hosts are due for a repair now (the reconciler's work waiting): the pending-changes
 * index (Keys.pendingChanges, scored by when each is due) counted up to Redis's clock, the
 * leases' clock. Read at each metrics scrape (docs/operators.md, "Metrics").
 */
import type { Redis } from 'ioredis';
import type { Keys } from './keys.js';
import { storeCall } from './redis.js';

export async function repairsDue(redis: Redis, keys: Keys): Promise<number> {
  return storeCall('repairs due', async () => {
    const [seconds, micros] = await redis.time();
    const now = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    return redis.zcount(keys.pendingChanges(), '-inf', now);
  });
}
