/**
 * What one serve process sends Redis, seen through MONITOR: the tests that count a request's
 * round trips (fast path, update tokens) read it.
 */
import { Redis } from 'ioredis';
import type { Keys } from '../../src/store/keys.js';
import { sleep, type BridgeEnv } from './bridge.js';
import { RedisMonitor } from './redis-monitor.js';

interface Seen {
  args: string[];
  source: string;
  /** When this process received it (ms): the bridge sent it a little earlier. */
  at: number;
}

/**
 * A MONITOR connection that keeps what the bridge's own connection sent. Commands a script
 * runs show with source 'lua', other clients (this test, the CLI) by their own address.
 */
export class BridgeCommands {
  private readonly seen: Seen[] = [];
  private probes = 0;
  private monitor!: RedisMonitor;
  private constructor(
    readonly bridgeAddr: string,
    private readonly keys: Keys,
  ) {}

  /**
   * Watch the one serve process of `env`: before any CLI run, it holds the only Redis
   * connection named ddns-bridge.
   */
  static async attach(env: BridgeEnv, raw: Redis, keys: Keys): Promise<BridgeCommands> {
    let bridges: string[] = [];
    for (let i = 0; i < 100; i++) {
      const list = (await raw.client('LIST')) as string;
      bridges = list
        .split('\n')
        .filter((l) => / name=ddns-bridge( |$)/.test(l))
        .map((l) => /(?:^| )addr=(\S+)/.exec(l)![1]!);
      if (bridges.length > 0) break;
      if (i === 10) await env.raw('GET /checkip HTTP/1.0\r\n\r\n'); // make it talk to Redis
      await sleep(50);
    }
    if (bridges.length !== 1) throw new Error(`expected one serve connection to Redis, found ${bridges.length}`);
    return BridgeCommands.start(env.redis.url, bridges[0]!, keys);
  }

  static async start(url: string, bridgeAddr: string, keys: Keys): Promise<BridgeCommands> {
    const commands = new BridgeCommands(bridgeAddr, keys);
    commands.monitor = await RedisMonitor.open(url, ({ args, source }) =>
      commands.seen.push({ args, source, at: Date.now() }),
    );
    // MONITOR is live once a command of ours shows up in it.
    const probe = new Redis(url);
    const marker = `fast-path-monitor-ready-${process.pid}`;
    for (let i = 0; i < 50 && !commands.seen.some((s) => s.args.includes(marker)); i++) {
      await probe.echo(marker);
      await sleep(20);
    }
    probe.disconnect();
    if (!commands.seen.some((s) => s.args.includes(marker))) throw new Error('MONITOR never saw our probe');
    return commands;
  }

  mark(): number {
    return this.seen.length;
  }

  /**
   * Wait until the bridge's commands stop coming: a probe of ours through MONITOR twice in a row
   * with none of the bridge's between (what a reply leaves behind, such as the junk count, is in).
   */
  async settle(probe: Redis): Promise<void> {
    let last = -1;
    for (let i = 0; i < 100; i++) {
      const marker = `bridge-commands-settle-${process.pid}-${this.probes++}`;
      const from = this.seen.length;
      await probe.echo(marker);
      for (let j = 0; j < 200 && !this.seen.slice(from).some((s) => s.args.includes(marker)); j++) await sleep(5);
      const count = this.since(0).length;
      if (count === last) return;
      last = count;
    }
    throw new Error('the bridge never stopped sending commands');
  }

  /**
   * The commands the bridge sent since `mark`: its connection only (not 'lua': a script's
   * inner calls are part of the one EVAL/EVALSHA), without what timers send, not requests:
   * the reconciler's sweep of the pending set and the agent block list's background refresh.
   */
  since(mark: number): string[][] {
    return (
      this.seen
        .slice(mark)
        .filter((s) => s.source === this.bridgeAddr)
        .map((s) => s.args)
        // The sweep's scripts (stale leases, postpone) take the pending set as their one key.
        .filter(
          (a) =>
            !(['evalsha', 'eval'].includes(a[0]!.toLowerCase()) && a[2] === '1' && a[3] === this.keys.pendingChanges()),
        )
        .filter((a) => !(a[0]!.toLowerCase() === 'smembers' && a[1] === this.keys.blockedAgents()))
    );
  }

  /** When the bridge last fetched the shared agent block list (SMEMBERS), as seen here. */
  lastListFetch(): number | undefined {
    for (let i = this.seen.length - 1; i >= 0; i--) {
      const s = this.seen[i]!;
      if (
        s.source === this.bridgeAddr &&
        s.args[0]!.toLowerCase() === 'smembers' &&
        s.args[1] === this.keys.blockedAgents()
      )
        return s.at;
    }
    return undefined;
  }

  close(): void {
    this.monitor.close();
  }
}

export const isScript = (cmd: string[]) => ['eval', 'evalsha'].includes(cmd[0]!.toLowerCase());
/** A 6-key script on the host (KEYS[1]) whose KEYS[5] is the account cool-down: the password-guarded admit. */
export const isGuardedAdmitOf = (keys: Keys, fqdn: string) => (cmd: string[]) =>
  isScript(cmd) && cmd[2] === '6' && cmd[3] === keys.host(fqdn) && cmd[7]!.startsWith(`${keys.prefix}ta:`);
/** A 6-key script on the host whose KEYS[5] is a token record: the token admit or its check alone. */
export const isTokenScriptOf = (keys: Keys, fqdn: string) => (cmd: string[]) =>
  isScript(cmd) && cmd[2] === '6' && cmd[3] === keys.host(fqdn) && cmd[7]!.startsWith(`${keys.prefix}t:`);
/** commit: 2 keys (host, pending), ARGV[1] the lease token. */
export const isCommitOf = (keys: Keys, fqdn: string, token: string) => (cmd: string[]) =>
  isScript(cmd) && cmd[2] === '2' && cmd[3] === keys.host(fqdn) && cmd[4] === keys.pendingChanges() && cmd[5] === token;

/** Forget every failed-login count, cool-down, junk count and junk block: a test starts clean. */
export async function clearLoginCounters(raw: Redis, keys: Keys): Promise<void> {
  for (const pattern of ['fi:*', 'ti:*', 'fa:*', 'ta:*', 'jc:*', 'jb:*']) {
    const found = await raw.keys(`${keys.prefix}${pattern}`);
    if (found.length > 0) await raw.del(...found);
  }
}
