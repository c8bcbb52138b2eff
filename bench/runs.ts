/**
 * The bench's measurement procedures: a change run, a nochg run, the CPU of every party around
 * a run, the bulk registration, RSS sampling, the paired rounds and Redis round trips.
 *
 * Load generator: wrk (wrk-loads.ts) against servers in child processes (`workers-N`), for
 * the time bound of the run; the Node generator (load.ts) for the in-process layout (a
 * diagnostic whose server CPU is the bench process, its load generator included by
 * definition) and wherever a fixed set of requests must each be sent once (see `fixed`).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { hashPassword } from '../src/auth/index.js';
import type { LabKind } from '../src/lab/index.js';
import { importLines, outcomeHandler, type ImportSummary, type Rejection } from '../src/cli/commands/import.js';
import { BulkHostImporter } from '../src/store/index.js';
import { CEILING_BODY } from './ceiling-server.js';
import { BENCH_ACCOUNT, redisCommandCalls, redisCpuSeconds, type BenchLab, type BenchRegistry } from './lab.js';
import { exchange, runHttpLoad, updatePath, updateRequest, type HttpLoad } from './load.js';
import type { BenchProfile } from './profile.js';
import { nextAddress, runRawUpdates } from './raw-dns.js';
import type { PairedRound, RssResult } from './report-types.js';
import { round, summarize, type Measurement } from './stats.js';
import { procCpu, type Target } from './targets.js';
import { wrkChange, wrkCycle } from './wrk-loads.js';

/** Which hosts a change run uses: `count` of them, indexes from, from + stride, from + 2·stride, … */
export interface HostCursor {
  next: number;
  from: number;
  count: number;
  /** Distance between the pool's host indexes (default 1). */
  stride?: number;
}

const hostName = (lab: BenchLab, kind: LabKind, index: number) => `h${index}.${lab.zoneOf(kind)}`;

/** One load against a bridge: who, against which zone's hosts, how hard, for how long. */
export interface BridgeRun {
  target: Target;
  kind: LabKind;
  concurrency: number;
  /** Stop after this many requests (Node generator only: wrk runs for the time bound)… */
  requests: number;
  /** …or after this many seconds. */
  maxSeconds: number;
  /** The hosts: a change run takes the pool's next ones; a nochg run its last ones. */
  hosts: HostCursor;
  /**
   * Exactly `requests` requests, each host of the pool once (e.g. every name into the zone
   * before a measurement): the Node generator, since wrk can only run for a time.
   */
  fixed?: boolean;
}

/** wrk for servers in child processes; in-process and fixed request sets keep the Node generator. */
const byWrk = (run: { target: Target; fixed?: boolean }) => !run.target.inProcess && !run.fixed;

/** HTTP requests to the run's target at the run's concurrency. */
function loadOn(run: BridgeRun, load: Omit<HttpLoad, 'host' | 'port' | 'concurrency'>): Promise<Measurement> {
  return runHttpLoad({ host: '127.0.0.1', port: run.target.port, concurrency: run.concurrency, ...load });
}

/** Every request changes the address of a host no other request in flight touches. */
export async function changeRun(lab: BenchLab, run: BridgeRun): Promise<Measurement> {
  const { target, kind, requests, maxSeconds, hosts: cursor } = run;
  if (byWrk(run)) {
    // wrk's pool starts at its first host every run (cursor.next is for the Node generator):
    // every address is new all the same, so every request is a change.
    const pool = { zone: lab.zoneOf(kind), from: cursor.from, count: cursor.count, stride: cursor.stride };
    const load = () =>
      wrkChange(
        { port: target.port, dir: lab.dir },
        {
          pool,
          concurrency: run.concurrency,
          seconds: maxSeconds,
          authorization: lab.authorization,
          expect: 'good',
        },
      );
    return withCpu(lab, target, load, kind);
  }
  const addresses: string[] = [];
  const first = cursor.next;
  const load = () =>
    loadOn(run, {
      requests,
      maxSeconds,
      request: (i) => {
        addresses[i] = nextAddress();
        const host = cursor.from + ((first + i) % cursor.count) * (cursor.stride ?? 1);
        return updateRequest(hostName(lab, kind, host), addresses[i], lab.authorization);
      },
      expect: (i, _s, body) => body === `good ${addresses[i]}\n`,
    });
  const m = await withCpu(lab, target, load, kind);
  cursor.next = first + m.ok + m.errors;
  return m;
}

/** Each client repeats one host and address: set once (good), then nochg every time. */
export async function nochgRun(
  lab: BenchLab,
  run: BridgeRun,
  onCommandCalls?: (calls: { before: Map<string, number>; after: Map<string, number> }, requests: number) => void,
): Promise<Measurement> {
  const { target, kind, concurrency, requests, maxSeconds, hosts: pool } = run;
  const requestOf: string[] = [];
  const addressOf: string[] = [];
  const hosts: string[] = [];
  for (let s = 0; s < concurrency; s++) {
    addressOf[s] = nextAddress();
    // The last hosts of the change runs' pool: with either registry, hosts the change runs touch too.
    hosts[s] = hostName(lab, kind, pool.from + (pool.count - 1 - s) * (pool.stride ?? 1));
    requestOf[s] = updateRequest(hosts[s]!, addressOf[s]!, lab.authorization);
  }
  await primeHosts(lab, target, hosts, addressOf);
  const before = onCommandCalls ? await redisCommandCalls(lab.store) : undefined;
  const m = await withCpu(lab, target, () =>
    byWrk(run)
      ? wrkCycle(
          { port: target.port, dir: lab.dir },
          {
            targets: hosts.map((h, s) => updatePath(h, addressOf[s]!)),
            concurrency,
            seconds: maxSeconds,
            authorization: lab.authorization,
            expect: 'nochg',
          },
        )
      : loadOn(run, {
          requests,
          maxSeconds,
          request: (_i, s) => requestOf[s]!,
          expect: (_i, s, body) => body === `nochg ${addressOf[s]}\n`,
        }),
  );
  if (onCommandCalls && before) onCommandCalls({ before, after: await redisCommandCalls(lab.store) }, m.ok + m.errors);
  return m;
}

/**
 * Set each host's address once (answered `good`), so that the same request after it is a
 * nochg. The Node generator: a fixed set of requests, each sent once (wrk runs for a time).
 */
export async function primeHosts(
  lab: BenchLab,
  target: Target,
  hosts: readonly string[],
  addresses: readonly string[],
): Promise<void> {
  const primed = await runHttpLoad({
    host: '127.0.0.1',
    port: target.port,
    concurrency: Math.min(64, hosts.length),
    requests: hosts.length,
    maxSeconds: 60,
    request: (i) => updateRequest(hosts[i]!, addresses[i]!, lab.authorization),
    expect: (i, _s, body) => body === `good ${addresses[i]}\n`,
  });
  if (primed.errors > 0 || primed.ok < hosts.length)
    throw new Error(`bench: setting up the nochg hosts failed: ${primed.firstError ?? 'out of time'}`);
}

/**
 * An unmeasured change load before the measurements (JIT, connections): wrk for
 * `warmUpSeconds` against child processes (none when 0), `warmupRequests` requests with the
 * Node generator in-process.
 */
export async function warmUp(
  lab: BenchLab,
  target: Target,
  kind: LabKind,
  cursor: HostCursor,
  profile: BenchProfile,
): Promise<void> {
  if (!target.inProcess && profile.warmUpSeconds === 0) return;
  await changeRun(lab, {
    target,
    kind,
    concurrency: 16,
    requests: profile.warmupRequests,
    maxSeconds: target.inProcess ? 30 : profile.warmUpSeconds,
    hosts: cursor,
  });
}

/**
 * The HTTP ceiling at `concurrency`: wrk for `seconds` against child processes, the Node
 * generator in-process (at most `requests` requests).
 */
export function ceilingRun(
  lab: BenchLab,
  ceiling: Target,
  load: { concurrency: number; requests: number; seconds: number; hostname: string },
): Promise<Measurement> {
  return withCpu(lab, ceiling, () =>
    byWrk({ target: ceiling })
      ? wrkCycle(
          { port: ceiling.port, dir: lab.dir },
          {
            targets: [updatePath(load.hostname, '192.0.2.1')],
            concurrency: load.concurrency,
            seconds: load.seconds,
            authorization: lab.authorization,
            expect: 'nochg',
          },
        )
      : runHttpLoad({
          host: '127.0.0.1',
          port: ceiling.port,
          concurrency: load.concurrency,
          requests: load.requests,
          maxSeconds: load.seconds,
          request: () => updateRequest(load.hostname, '192.0.2.1', lab.authorization),
          expect: (_i, _s, body) => body === CEILING_BODY,
        }),
  );
}

/**
 * Run a measurement and add CPU time per operation: of the target's processes and of
 * redis-server (when there is a target: the raw UPDATE sender is the bench itself), of the
 * load generator (target in child processes), of the nameserver (when given).
 */
export async function withCpu<M extends Measurement>(
  lab: BenchLab,
  target: Target | undefined,
  run: () => Promise<M>,
  nameserver?: LabKind,
): Promise<M> {
  const nsPid = nameserver === undefined ? undefined : lab.nameservers.get(nameserver)?.pid;
  const sample = () =>
    Promise.all([
      target?.cpuSeconds() ?? 0,
      target ? redisCpuSeconds(lab.store) : 0,
      nsPid === undefined ? 0 : procCpu([nsPid]),
    ]);
  const [cpu0, redis0, ns0] = await sample();
  const client0 = process.cpuUsage();
  const m = await run();
  const client = process.cpuUsage(client0);
  const [cpu1, redis1, ns1] = await sample();
  const n = m.ok + m.errors;
  if (n > 0) {
    if (target) {
      m.cpuMsPerRequest = round(((cpu1 - cpu0) * 1000) / n, 3);
      m.redisCpuMsPerRequest = round(((redis1 - redis0) * 1000) / n, 3);
    }
    // wrk reports its own (wrk.ts); otherwise the load generator is this process.
    if (!target?.inProcess && m.clientCpuMsPerRequest === undefined)
      m.clientCpuMsPerRequest = round((client.user + client.system) / 1000 / n, 3);
    if (nsPid !== undefined) m.nameserverCpuMsPerRequest = round(((ns1 - ns0) * 1000) / n, 3);
  }
  return m;
}

export function perRequestDelta(
  before: Map<string, number>,
  after: Map<string, number>,
  requests: number,
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [cmd, n] of after) {
    const d = n - (before.get(cmd) ?? 0);
    if (d > 0 && requests > 0 && cmd !== 'info') out[cmd] = round(d / requests, 2);
  }
  return out;
}

/** Register hosts h{from}…h{to-1} in every zone through the bulk import path. */
export async function importHosts(
  registry: BenchRegistry,
  lab: BenchLab,
  kinds: readonly LabKind[],
  from: number,
  to: number,
): Promise<void> {
  if (to <= from) return;
  const rejections: Rejection[] = [];
  const summary: ImportSummary = { imported: 0, unchanged: 0, rejected: 0 };
  const onReject = (r: Rejection) => rejections.length < 5 && rejections.push(r);
  const importer = new BulkHostImporter(registry.store.redis, registry.store.keys, outcomeHandler(summary, onReject));
  function* lines(): Generator<string> {
    for (const kind of kinds) for (let i = from; i < to; i++) yield `${hostName(lab, kind, i)} ${BENCH_ACCOUNT}`;
  }
  await importLines(lines(), { importer, zones: registry.config.zones.map((z) => z.name) }, onReject, summary);
  if (summary.rejected > 0)
    throw new Error(`bench: import rejected ${summary.rejected} lines, e.g. ${JSON.stringify(rejections)}`);
}

export function senderStats(target: Target, zone: string) {
  const stats = target.bridge?.publisher.senderFor(zone)?.stats;
  return stats ? { ...stats } : undefined;
}

let coldAccounts = 0;

/**
 * Password checks under load: while `run` goes on, `logins` requests `spacingMs` apart (the
 * first at once), each from an account that never logged in before, so a worker runs scrypt
 * (32 MiB) on top of its loaded heap, as a production worker does whenever a client's cached
 * login has run out. Each account owns a host of its own and sets its address (good): a
 * refused request would count as junk against the source and User-Agent the measured load
 * shares. The RSS sampler sees them; they are not among the run's requests, but they take
 * their share of the machine while it is measured. Resolves with the run's result and how
 * many of them were answered good.
 */
export async function withColdLogins<M>(
  lab: BenchLab,
  target: Target,
  kind: LabKind,
  opts: { logins: number; spacingMs: number },
  run: () => Promise<M>,
): Promise<{ result: M; coldLogins: number }> {
  const logins: { authorization: string; fqdn: string }[] = [];
  for (let k = 0; k < opts.logins; k++) {
    const name = `cold${++coldAccounts}`;
    const password = `cold-${Math.random().toString(36).slice(2)}`;
    const fqdn = `${name}.${lab.zoneOf(kind)}`;
    await lab.store.accounts.create({
      name,
      passwordHash: await hashPassword(password),
      donator: false,
      createdAt: Date.now(),
    });
    await lab.store.hosts.add(fqdn, name, 'dynamic');
    logins.push({ authorization: `Basic ${Buffer.from(`${name}:${password}`).toString('base64')}`, fqdn });
  }
  let running = true;
  let answered = 0;
  const sending = (async () => {
    for (const [k, { authorization, fqdn }] of logins.entries()) {
      if (k > 0) await sleep(opts.spacingMs);
      if (!running) return;
      const reply = await exchange(
        '127.0.0.1',
        target.port,
        updateRequest(fqdn, '192.0.2.1', authorization),
        10_000,
      ).catch(() => '');
      if (reply.endsWith('\r\n\r\ngood 192.0.2.1\n')) answered++;
    }
  })();
  let result: M;
  try {
    result = await run();
  } finally {
    running = false;
    await sending;
  }
  return { result, coldLogins: answered };
}

/** Samples the target's resident memory every 100 ms; keeps the maxima. */
export class RssSampler {
  private maxProcess = 0;
  private maxTotal = 0;
  private readonly pids = new Set<number>();
  private readonly timer: NodeJS.Timeout;
  /** Password checks of new accounts made while it sampled (withColdLogins). */
  coldLogins = 0;

  constructor(private readonly target: Target) {
    this.timer = setInterval(() => void this.sample(), 100);
    void this.sample();
  }

  private async sample(): Promise<void> {
    const rss = await this.target.rss();
    let total = 0;
    for (const [pid, bytes] of rss) {
      this.pids.add(pid);
      total += bytes;
      this.maxProcess = Math.max(this.maxProcess, bytes);
    }
    this.maxTotal = Math.max(this.maxTotal, total);
  }

  stop(inProcess: boolean): RssResult {
    clearInterval(this.timer);
    return {
      maxProcessBytes: this.maxProcess,
      maxTotalBytes: this.maxTotal,
      processes: this.pids.size,
      includesLoadGenerator: inProcess,
      coldLogins: this.coldLogins,
    };
  }
}

/**
 * Paired rounds for one nameserver: HTTP ceiling and nochg at the highest concurrency, raw
 * UPDATE and change at c=1, each pair back to back; odd rounds measure the bridge first.
 */
export async function pairedRounds(
  lab: BenchLab,
  ceiling: Target,
  target: Target,
  kind: LabKind,
  profile: BenchProfile,
  concurrency: number,
  cursor: HostCursor,
  progress: (line: string) => void,
): Promise<PairedRound[]> {
  const zone = lab.config.zones.find((z) => z.name === lab.zoneOf(kind))!;
  const seconds = profile.pairedSeconds;
  const rounds: PairedRound[] = [];
  for (let i = 0; i < profile.pairedRounds; i++) {
    const measureCeiling = () =>
      ceilingRun(lab, ceiling, {
        concurrency,
        requests: profile.httpRequests,
        seconds,
        hostname: `ceiling.${lab.zoneOf(kind)}`,
      });
    const measureNochg = () =>
      nochgRun(lab, { target, kind, concurrency, requests: profile.httpRequests, maxSeconds: seconds, hosts: cursor });
    const measureRaw = () =>
      runRawUpdates({
        zone,
        concurrency: 1,
        namesPerMessage: 1,
        messages: profile.rawMessages,
        maxSeconds: seconds,
        prefix: 'raw-',
        namePool: profile.rawNamePool,
      });
    const measureChange = () =>
      changeRun(lab, {
        target,
        kind,
        concurrency: 1,
        requests: profile.httpRequests,
        maxSeconds: seconds,
        hosts: cursor,
      });
    const bridgeFirst = i % 2 === 1;
    const [ceilingM, nochg] = await inOrder(measureCeiling, measureNochg, bridgeFirst);
    const [rawC1, changeC1] = await inOrder(measureRaw, measureChange, bridgeFirst);
    rounds.push({ ceiling: ceilingM, nochg, rawC1, changeC1 });
    progress(
      `${kind} paired round ${i + 1}${bridgeFirst ? ' (bridge first)' : ''}: ceiling ${ceilingM.rps}/s, nochg ${nochg.rps}/s (c=${concurrency}) → ${round(nochg.rps / ceilingM.rps, 2)}; ` +
        `p50 c=1 raw ${rawC1.p50Ms} ms, change ${changeC1.p50Ms} ms → ${round(changeC1.p50Ms - rawC1.p50Ms, 2)} ms`,
    );
  }
  return rounds;
}

export async function inOrder<A, B>(a: () => Promise<A>, b: () => Promise<B>, bFirst: boolean): Promise<[A, B]> {
  if (!bFirst) {
    const x = await a();
    return [x, await b()];
  }
  const y = await b();
  return [await a(), y];
}

export async function measureRedisRoundTrips(lab: BenchLab, count: number, pauseMs: number): Promise<Measurement> {
  const latencies: number[] = [];
  const started = performance.now();
  for (let i = 0; i < count; i++) {
    if (pauseMs > 0) await new Promise((resolve) => setTimeout(resolve, pauseMs));
    const t = performance.now();
    await lab.store.redis.ping();
    latencies.push(performance.now() - t);
  }
  return summarize(latencies, count, 0, (performance.now() - started) / 1000);
}
