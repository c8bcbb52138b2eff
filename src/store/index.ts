/** The Redis adapters: accounts, hosts, update tokens, client policy, failure counting, the echo gate. */
import type { Redis } from 'ioredis';
import type { Config } from '../config/schema.js';
import type { Logger } from '../core/log.js';
import { RedisAccountStore } from './account-store.js';
import { AgentAdmin, RedisClientPolicy } from './client-policy.js';
import { RedisEchoGate } from './echo-gate.js';
import { RedisFailureCounter } from './failure-counter.js';
import { RedisHostStore } from './host-store.js';
import { RedisLinkStore } from './link-store.js';
import { Keys } from './keys.js';
import { RedisTokenStore } from './token-store.js';
import { RedisTxtStore } from './txt-store.js';
import { ReplicaWaiter } from './replica-wait.js';
import { closeRedis, createRedis, replicaWaitOf, storeCall } from './redis.js';

export { RedisAccountStore, type LoginRecord } from './account-store.js';
export { AgentAdmin, RedisClientPolicy, AGENT_LIST_CACHE_MS, type ClientPolicyOptions } from './client-policy.js';
export { RedisEchoGate } from './echo-gate.js';
export { RedisFailureCounter } from './failure-counter.js';
export { HostLease, RedisHostStore, shadowingMessage } from './host-store.js';
export { RedisTokenStore, type NewToken } from './token-store.js';
export { RedisTxtStore } from './txt-store.js';
export { BulkHostImporter, type BulkImportOptions, type ImportEntry, type ImportOutcome } from './host-import.js';
export { RedisBackupStore } from './backup-store.js';
export { ACCOUNT_FIELDS, HOST_FIELDS, TOKEN_FIELDS, Keys, addressBucket, agentDigest } from './keys.js';
export {
  asStoreError,
  closeRedis,
  createRedis,
  execPipeline,
  replicaWaitOf,
  storeCall,
  type ReplicaWait,
} from './redis.js';

export type StoreConfig = Pick<Config, 'redis' | 'agents' | 'junk' | 'credentials'>;

/** Every Redis adapter on one shared client. */
export interface Store {
  readonly redis: Redis;
  readonly keys: Keys;
  readonly accounts: RedisAccountStore;
  /** HostGate for the update path and HostAdmin for the CLI. */
  readonly hosts: RedisHostStore;
  /** Hosts that follow another's IPv6 prefix (host link). */
  readonly links: RedisLinkStore;
  /** Update tokens: the login's lookup and checks, and the CLI's add, list, remove. */
  readonly tokens: RedisTokenStore;
  /** The hosts' ACME TXT sets (TxtGate). */
  readonly txt: RedisTxtStore;
  readonly failures: RedisFailureCounter;
  readonly clientPolicy: RedisClientPolicy;
  readonly agents: AgentAdmin;
  readonly echoGate: RedisEchoGate;
  /** The block list, junk and credential limits of a reloaded config, from the next request on. */
  reconfigure(next: Pick<Config, 'agents' | 'junk' | 'credentials'>): void;
  /** Round trip to Redis; StoreUnavailableError when it does not answer. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export function openStore(config: StoreConfig, logger: Logger): Store {
  const redis = createRedis(config.redis, logger);
  return storeOn(redis, config, logger);
}

/** The adapters on an existing client (tests use two clients on one server). */
export function storeOn(redis: Redis, config: StoreConfig, logger: Logger): Store {
  const keys = new Keys(config.redis.keyPrefix);
  const clientPolicy = new RedisClientPolicy(redis, keys, { agents: config.agents, junk: config.junk });
  // Read on every failure: a reload (reconfigure) changes it in place.
  const credentials = { ...config.credentials };
  // redis.waitReplicas: the host writes and their WAIT on a connection of their own (replica-wait.ts).
  const wait = replicaWaitOf(config.redis);
  const writes = wait ? createRedis(config.redis, logger) : undefined;
  const replicas = writes && wait ? { writes, waiter: new ReplicaWaiter(writes, wait) } : undefined;
  return {
    redis,
    keys,
    accounts: new RedisAccountStore(redis, keys),
    hosts: new RedisHostStore(redis, keys, logger, replicas),
    links: new RedisLinkStore(redis, keys, writes ?? redis),
    tokens: new RedisTokenStore(redis, keys),
    txt: new RedisTxtStore(redis, keys, logger, replicas),
    failures: new RedisFailureCounter(redis, keys, credentials),
    clientPolicy,
    agents: new AgentAdmin(redis, keys),
    echoGate: new RedisEchoGate(redis, keys),
    reconfigure(next: Pick<Config, 'agents' | 'junk' | 'credentials'>) {
      clientPolicy.reconfigure({ agents: next.agents, junk: next.junk });
      Object.assign(credentials, next.credentials);
    },
    async ping() {
      await storeCall('ping', () => redis.ping());
    },
    close: async () => {
      clientPolicy.close();
      await Promise.all([closeRedis(redis), ...(writes ? [closeRedis(writes)] : [])]);
    },
  };
}
