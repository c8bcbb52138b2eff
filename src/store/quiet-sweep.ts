/**
 * The quiet-host sweep's Redis side (docs/operators.md, "Quiet hosts"): one process per interval takes the lock and
 * reads every host's activity; a host with neither a counted request nor a creation time (added before either was
 * kept) gets its creation time stamped now, so it ages from here. The counts by age are kept for every process's
 * metrics to read.
 */
import type { Redis } from 'ioredis';
import type { HostActivity, QuietSweepStore } from '../app/quiet.js';
import type { HostState } from '../core/types.js';
import { HOST_FIELDS, type Keys } from './keys.js';
import { execPipeline, storeCall } from './redis.js';
import { runScript } from './script.js';
import { QUIET_STAMP } from './scripts/hosts.js';

const SCAN_BATCH = 1000;

export class RedisQuietSweep implements QuietSweepStore {
  constructor(
    private readonly redis: Redis,
    private readonly keys: Keys,
  ) {}

  async take(lockMs: number): Promise<boolean> {
    const got = await storeCall('quiet sweep', () =>
      this.redis.set(this.keys.quietSweepLock(), String(process.pid), 'PX', lockMs, 'NX'),
    );
    return got === 'OK';
  }

  async activity(nowMs: number): Promise<HostActivity[]> {
    const hosts: HostActivity[] = [];
    let cursor = '0';
    do {
      const [next, keys] = await storeCall('quiet sweep', () =>
        this.redis.scan(cursor, 'MATCH', this.keys.hostScanPattern(), 'COUNT', SCAN_BATCH),
      );
      cursor = next;
      if (keys.length === 0) continue;
      const read = this.redis.pipeline();
      const F = HOST_FIELDS;
      for (const key of keys) read.hmget(key, F.owner, F.state, F.lastRequest, F.createdAt);
      const replies = (await execPipeline('quiet sweep', read)) as (string | null)[][];
      const stamps: Promise<unknown>[] = [];
      keys.forEach((key, i) => {
        const fqdn = this.keys.fqdnOfHostKey(key);
        const [owner, state, lastRequest, createdAt] = replies[i] ?? [];
        if (fqdn === undefined || !owner) return;
        let since = lastRequest ? Number(lastRequest) : createdAt ? Number(createdAt) : undefined;
        if (since === undefined) {
          stamps.push(runScript(this.redis, QUIET_STAMP, { host: key }, { now: String(nowMs) }, 'quiet sweep'));
          since = nowMs;
        }
        hosts.push({ fqdn, state: (state ?? 'active') as HostState, since });
      });
      await Promise.all(stamps);
    } while (cursor !== '0');
    return hosts;
  }

  async saveCounts(counts: Readonly<Record<string, number>>): Promise<void> {
    const flat = Object.entries(counts).flatMap(([k, v]) => [k, String(v)]);
    if (flat.length > 0) await storeCall('quiet counts', () => this.redis.hset(this.keys.quietCounts(), ...flat));
  }

  async counts(): Promise<Record<string, number>> {
    const raw = await storeCall('quiet counts', () => this.redis.hgetall(this.keys.quietCounts()));
    return Object.fromEntries(Object.entries(raw).map(([k, v]) => [k, Number(v)]));
  }
}
