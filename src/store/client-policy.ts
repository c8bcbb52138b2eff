/**
 * Misbehaving clients (docs/protocol.md, "Clients that misbehave"): the User-Agent block list (config ∪ the Redis set
 * the CLI edits) and junk blocking of (source address, User-Agent) pairs.
 */
import type { Redis } from 'ioredis';
import type { AgentBlocks, ClientPolicy } from '../app/ports.js';
import type { Config } from '../config/schema.js';
import { AgentMatcher } from '../core/agents.js';
import { InvalidInputError } from '../core/errors.js';
import { Keys } from './keys.js';
import { execPipeline, storeCall } from './redis.js';
import { runScript } from './script.js';
import { STRIKE } from './scripts/counters.js';

/** How long the Redis block list is reused before it is fetched again. */
export const AGENT_LIST_CACHE_MS = 2000;

export interface ClientPolicyOptions {
  agents: Config['agents'];
  junk: Config['junk'];
  /** Milliseconds clock for the block-list cache (tests inject one). */
  clock?: () => number;
  agentListCacheMs?: number;
}

export class RedisClientPolicy implements ClientPolicy {
  private configured: AgentMatcher;
  private readonly clock: () => number;
  private readonly cacheMs: number;
  private shared = new AgentMatcher([]);
  private sharedFetchedAt = Number.NEGATIVE_INFINITY;
  private refreshTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly redis: Redis,
    private readonly keys: Keys,
    private opts: ClientPolicyOptions,
  ) {
    this.configured = new AgentMatcher(opts.agents.blocked);
    this.clock = opts.clock ?? Date.now;
    this.cacheMs = opts.agentListCacheMs ?? AGENT_LIST_CACHE_MS;
  }

  /** A reloaded config's block list and junk limits, from the next request on. */
  reconfigure(next: Pick<ClientPolicyOptions, 'agents' | 'junk'>): void {
    this.configured = new AgentMatcher(next.agents.blocked);
    this.opts = { ...this.opts, agents: next.agents, junk: next.junk };
  }

  async isBlocked(userAgent: string, sourceIp: string): Promise<boolean> {
    if (this.configured.matches(userAgent)) return true;
    const junkBlock = this.keys.junkBlock(sourceIp, userAgent);
    const now = this.clock();
    if (now - this.sharedFetchedAt >= this.cacheMs) {
      // Refresh the shared list in the same round trip as the junk check.
      const [patterns, blocked] = await execPipeline(
        'agent policy',
        this.redis.pipeline().smembers(this.keys.blockedAgents()).exists(junkBlock),
      );
      const fetched = new AgentMatcher(patterns as string[]);
      this.adopt(fetched, now);
      return fetched.matches(userAgent) || Number(blocked) > 0;
    }
    if (this.shared.matches(userAgent)) return true;
    return (await storeCall('junk check', () => this.redis.exists(junkBlock))) > 0;
  }

  listVerdict(userAgent: string): 'blocked' | 'allowed' | 'unknown' {
    if (this.configured.matches(userAgent)) return 'blocked';
    this.keepListFresh();
    if (this.clock() - this.sharedFetchedAt >= this.cacheMs) return 'unknown';
    return this.shared.matches(userAgent) ? 'blocked' : 'allowed';
  }

  /** Stop the background refresh of the shared list (see keepListFresh). */
  close(): void {
    if (this.refreshTimer) clearInterval(this.refreshTimer);
    this.refreshTimer = undefined;
  }

  /**
   * Once the update path asks for verdicts from memory, refetch the shared list in the
   * background every half cache period, so it stays fresh between sparse requests too
   * (a router that updates every few minutes still gets the one-round-trip path).
   */
  private keepListFresh(): void {
    if (this.refreshTimer) return;
    const refresh = (): void => {
      const started = this.clock();
      this.redis
        .smembers(this.keys.blockedAgents())
        .then((patterns) => this.adopt(new AgentMatcher(patterns), started))
        // A failed refresh leaves the list stale: requests take the full path (→ 911 if Redis is down).
        .catch(() => undefined);
    };
    this.refreshTimer = setInterval(refresh, Math.max(100, this.cacheMs / 2));
    this.refreshTimer.unref();
    refresh();
  }

  /**
   * Take a fetched copy of the shared list unless a newer one is already in place (the
   * on-demand fetch in isBlocked and the background one may overlap).
   */
  private adopt(fetched: AgentMatcher, fetchedAt: number): void {
    if (fetchedAt < this.sharedFetchedAt) return;
    this.shared = fetched;
    this.sharedFetchedAt = fetchedAt;
  }

  async recordJunk(userAgent: string, sourceIp: string): Promise<void> {
    const { threshold, windowMs, blockMs } = this.opts.junk;
    const pair = {
      counter: this.keys.junkCount(sourceIp, userAgent),
      marker: this.keys.junkBlock(sourceIp, userAgent),
    };
    await runScript(this.redis, STRIKE, { pairs: [pair] }, { threshold, windowMs, markMs: blockMs }, 'junk count');
  }
}

/** The shared User-Agent block list as the CLI edits it. */
export class AgentAdmin implements AgentBlocks {
  constructor(
    private readonly redis: Redis,
    private readonly keys: Keys,
  ) {}

  /** Returns false when the pattern was already listed. */
  async block(pattern: string): Promise<boolean> {
    if (pattern.trim().length === 0) throw new InvalidInputError('an empty User-Agent pattern would match nothing');
    return (await storeCall('agent block', () => this.redis.sadd(this.keys.blockedAgents(), pattern))) === 1;
  }

  /** Returns false when the pattern was not listed. */
  async unblock(pattern: string): Promise<boolean> {
    return (await storeCall('agent unblock', () => this.redis.srem(this.keys.blockedAgents(), pattern))) === 1;
  }

  /** The patterns in Redis (the config file's list is not included), sorted. */
  async list(): Promise<string[]> {
    const patterns = await storeCall('agent list', () => this.redis.smembers(this.keys.blockedAgents()));
    return patterns.sort();
  }
}
