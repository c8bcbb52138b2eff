/**
 * Frontends scaled out on one Redis (`--section scale-out`, issue 32 item 4; docs/operators.md, "Capacity"): the same
 * loads against one `serve --workers 2` and against two `serve --workers 1` processes sharing the same Redis, config
 * and hosts, alternated each round. Each load is two wrk runs at once, each with half the nochg hosts and half the
 * clients (the storm's pool split into even and odd hosts): both to the one process, or one to each of the two. Two
 * processes are what two frontend machines would be; on one 2-core machine they cannot be faster than one process of
 * two workers, so the figure to read is their ratio (near 1: nothing is lost by splitting a frontend) and the CPU per
 * request of each party; then a sample of the storm's hosts of the two processes: the address Redis records must be
 * the one DNS serves.
 */
import { JsonLogger } from '../src/cli/logger.js';
import type { LabKind } from '../src/lab/index.js';
import { checkSample, spread } from './dns-check.js';
import { updatePath } from './load.js';
import { nextAddress } from './raw-dns.js';
import type { SampleCheck } from './report-types.js';
import { primeHosts, withCpu } from './runs.js';
import { round } from './stats.js';
import { startBridgeTarget, type Target } from './targets.js';
import { median } from './verdict.js';
import { wrkChange, wrkCycle } from './wrk-loads.js';
import { errorsOf, nochgFrom, STORM_FROM, type WrkContext } from './wrk-rounds.js';
import type { WrkMeasurement } from './wrk.js';

export type Layout = 'one' | 'two';

export interface ScaleOutRound {
  order: Layout[];
  one: { nochg: WrkMeasurement; storm: WrkMeasurement };
  two: { nochg: WrkMeasurement; storm: WrkMeasurement };
}

export interface ScaleOutResult {
  nameserver: LabKind;
  seconds: number;
  nochg: { concurrency: number; hosts: number };
  storm: { concurrency: number; hosts: number };
  rounds: ScaleOutRound[];
  /** Medians over the rounds: two processes / one, and CPU per request of each party (ms). */
  medians: {
    nochgTwoOverOne: number;
    stormTwoOverOne: number;
    cpuMsPerRequest: Record<Layout, { nochg: number; storm: number }>;
    redisCpuMsPerRequest: Record<Layout, { nochg: number; storm: number }>;
  };
  /** Storm hosts of the two processes after the rounds. */
  sample: SampleCheck;
}

/** Two targets as one: their processes' CPU summed (withCpu), stopped together. */
function together(a: Target, b: Target): Target {
  return {
    port: a.port,
    inProcess: false,
    rss: async () => new Map([...(await a.rss()), ...(await b.rss())]),
    cpuSeconds: async () => (await a.cpuSeconds()) + (await b.cpuSeconds()),
    stop: async () => {
      await Promise.all([a.stop(), b.stop()]);
    },
  };
}

/** Two wrk runs at once, one per process, as one measurement: counts and rates summed, the slower latencies. */
function merged(x: WrkMeasurement, y: WrkMeasurement): WrkMeasurement {
  const n = (m: WrkMeasurement) => m.ok + m.errors;
  const m: WrkMeasurement = {
    ok: x.ok + y.ok,
    errors: x.errors + y.errors,
    seconds: Math.max(x.seconds, y.seconds),
    rps: round(x.rps + y.rps, 1),
    p50Ms: Math.max(x.p50Ms, y.p50Ms),
    p99Ms: Math.max(x.p99Ms, y.p99Ms),
    replies: {
      good: x.replies.good + y.replies.good,
      nochg: x.replies.nochg + y.replies.nochg,
      other: x.replies.other + y.replies.other,
      notFound: x.replies.notFound + y.replies.notFound,
    },
    socketErrors: x.socketErrors + y.socketErrors,
  };
  if (x.clientCpuMsPerRequest !== undefined && y.clientCpuMsPerRequest !== undefined && n(m) > 0)
    m.clientCpuMsPerRequest = round((x.clientCpuMsPerRequest * n(x) + y.clientCpuMsPerRequest * n(y)) / n(m), 3);
  const first = x.firstError ?? y.firstError;
  if (first !== undefined) m.firstError = first;
  return m;
}

export async function measureScaleOut(ctx: WrkContext, kind: LabKind): Promise<ScaleOutResult> {
  const { lab, profile, progress } = ctx;
  const seconds = profile.wrkSeconds;
  const zone = lab.zoneOf(kind);
  const logger = new JsonLogger('warn');
  const started: Target[] = [];
  const start = async (mode: 'workers-1' | 'workers-2') => {
    const t = await startBridgeTarget(mode, lab.config, lab.configPath, logger);
    started.push(t);
    return t;
  };
  try {
    const one = await start('workers-2');
    const [a, b] = [await start('workers-1'), await start('workers-1')];
    const two = together(a, b);
    // The nochg hosts, set once (through one process: the record is in Redis, which both layouts read).
    const hosts = spread(nochgFrom(profile), profile.nochgHosts, profile.nochgHosts).map((i) => `h${i}.${zone}`);
    const addresses = hosts.map(() => nextAddress());
    await primeHosts(lab, one, hosts, addresses);
    const targets = hosts.map((h, i) => updatePath(h, addresses[i]!));
    const half = Math.ceil(targets.length / 2);
    const c = profile.nochgConcurrency;
    const sc = profile.stormConcurrency;
    const server = (t: Target) => ({ port: t.port, dir: lab.dir });
    const nochg = (t: Target, list: readonly string[], concurrency: number, s: number) =>
      wrkCycle(server(t), {
        targets: list,
        concurrency,
        seconds: s,
        authorization: lab.authorization,
        expect: 'nochg',
      });
    const storm = (t: Target, from: number, stride: number, concurrency: number, s: number) =>
      wrkChange(server(t), {
        pool: { zone, from: STORM_FROM + from, count: Math.floor(profile.stormHosts / stride), stride },
        concurrency,
        seconds: s,
        authorization: lab.authorization,
        expect: 'good',
      });
    // Both layouts get the same two wrk runs at once (half the hosts and clients each), so that only the servers
    // differ: to one process's port both, to the two processes one each.
    // The fewer goods of the two storm runs of a two-process round: the sample's bound (below).
    let lastStormGoods = 0;
    const layoutLoads = (target: Target, first: Target, second: Target) => ({
      nochg: (s: number) =>
        withCpu(lab, target, async () => {
          const [x, y] = await Promise.all([
            nochg(first, targets.slice(0, half), c / 2, s),
            nochg(second, targets.slice(half), c / 2, s),
          ]);
          return merged(x, y);
        }),
      storm: (s: number) =>
        withCpu(
          lab,
          target,
          async () => {
            const [x, y] = await Promise.all([storm(first, 0, 2, sc / 2, s), storm(second, 1, 2, sc / 2, s)]);
            lastStormGoods = Math.min(x.ok, y.ok);
            return merged(x, y);
          },
          kind,
        ),
    });
    const loads = { one: layoutLoads(one, one, one), two: layoutLoads(two, a, b) };
    // Unmeasured: a fresh server's first seconds run below its pace (JIT).
    const warm = Math.max(1, profile.warmUpSeconds);
    for (const layout of ['one', 'two'] as const) {
      await loads[layout].nochg(warm);
      await loads[layout].storm(warm);
    }
    const rounds: ScaleOutRound[] = [];
    let stormTwo = 0;
    for (let i = 0; i < profile.wrkRounds; i++) {
      const order: Layout[] = i % 2 === 0 ? ['one', 'two'] : ['two', 'one'];
      const n: Partial<Record<Layout, WrkMeasurement>> = {};
      const st: Partial<Record<Layout, WrkMeasurement>> = {};
      for (const layout of order) n[layout] = await loads[layout].nochg(seconds);
      let twoStormGoods = 0;
      for (const layout of order) {
        st[layout] = await loads[layout].storm(seconds);
        if (layout === 'two') twoStormGoods = lastStormGoods;
      }
      const r: ScaleOutRound = {
        order,
        one: { nochg: n.one!, storm: st.one! },
        two: { nochg: n.two!, storm: st.two! },
      };
      stormTwo = Math.max(stormTwo, twoStormGoods);
      rounds.push(r);
      progress(
        `${kind} scale-out round ${i + 1} (${order.join(', ')}): nochg one ${r.one.nochg.rps}/s, two ${r.two.nochg.rps}/s → ` +
          `${round(r.two.nochg.rps / r.one.nochg.rps, 2)}; storm one ${r.one.storm.rps}/s, two ${r.two.storm.rps}/s → ` +
          `${round(r.two.storm.rps / r.one.storm.rps, 2)}` +
          errorsOf([r.one.nochg, r.two.nochg, r.one.storm, r.two.storm]),
      );
    }
    // Each wrk run's storm starts again at its pool's second host (wrk-rounds.ts): per run, the hosts below its goods,
    // less its clients, have had a good; the slower of the two runs bounds both pools. Even hosts are the first
    // process's, odd ones the second's.
    const touched = Math.max(0, Math.min(Math.floor(profile.stormHosts / 2) - 1, stormTwo - sc / 2));
    const sampled = spread(1, touched, 25).flatMap((k) => [2 * k, 2 * k + 1]);
    const sample = await checkSample(
      lab,
      kind,
      sampled.map((h) => `h${STORM_FROM + h}.${zone}`),
    );
    progress(`${kind} scale-out sample: ${sample.matched} of ${sample.checked} published as Redis says`);
    const med = (f: (r: ScaleOutRound) => number | undefined) => round(median(rounds.map((r) => f(r) ?? NaN)), 3);
    const cpu = (layout: Layout, key: 'cpuMsPerRequest' | 'redisCpuMsPerRequest') => ({
      nochg: med((r) => r[layout].nochg[key]),
      storm: med((r) => r[layout].storm[key]),
    });
    return {
      nameserver: kind,
      seconds,
      nochg: { concurrency: c, hosts: targets.length },
      storm: { concurrency: sc, hosts: profile.stormHosts },
      rounds,
      medians: {
        nochgTwoOverOne: med((r) => r.two.nochg.rps / r.one.nochg.rps),
        stormTwoOverOne: med((r) => r.two.storm.rps / r.one.storm.rps),
        cpuMsPerRequest: { one: cpu('one', 'cpuMsPerRequest'), two: cpu('two', 'cpuMsPerRequest') },
        redisCpuMsPerRequest: { one: cpu('one', 'redisCpuMsPerRequest'), two: cpu('two', 'redisCpuMsPerRequest') },
      },
      sample,
    };
  } finally {
    for (const t of started) await t.stop();
  }
}

/** The markdown of a scale-out run. */
export function renderScaleOut(x: ScaleOutResult): string[] {
  const rows = x.rounds.map(
    (r, i) =>
      `| ${i + 1} | ${r.order.join(', ')} | ${r.one.nochg.rps} | ${r.two.nochg.rps} | ${round(r.two.nochg.rps / r.one.nochg.rps, 2)} | ` +
      `${r.one.storm.rps} | ${r.two.storm.rps} | ${round(r.two.storm.rps / r.one.storm.rps, 2)} |`,
  );
  const m = x.medians;
  const ms = (v: number) => v.toFixed(3);
  return [
    `### Frontends on one Redis: one \`serve --workers 2\` against two \`serve --workers 1\` (${x.nameserver}, ${x.seconds} s of wrk a run)`,
    '',
    `nochg c=${x.nochg.concurrency} over ${x.nochg.hosts} hosts (two processes: half the hosts and clients each); storm c=${x.storm.concurrency} over ${x.storm.hosts.toLocaleString('en')} hosts (two processes: even and odd hosts).`,
    '',
    '| round | order | nochg /s, one | nochg /s, two | two / one | storm /s, one | storm /s, two | two / one |',
    '|---|---|---:|---:|---:|---:|---:|---:|',
    ...rows,
    '',
    `Medians: two / one **${m.nochgTwoOverOne}** (nochg), **${m.stormTwoOverOne}** (storm). CPU per request of the ` +
      `serving processes: nochg ${ms(m.cpuMsPerRequest.one.nochg)} ms (one) · ${ms(m.cpuMsPerRequest.two.nochg)} ms (two), ` +
      `storm ${ms(m.cpuMsPerRequest.one.storm)} · ${ms(m.cpuMsPerRequest.two.storm)} ms; redis-server: nochg ` +
      `${ms(m.redisCpuMsPerRequest.one.nochg)} · ${ms(m.redisCpuMsPerRequest.two.nochg)} ms, storm ` +
      `${ms(m.redisCpuMsPerRequest.one.storm)} · ${ms(m.redisCpuMsPerRequest.two.storm)} ms. Storm hosts of the two ` +
      `processes published as Redis says: ${x.sample.matched} of ${x.sample.checked}` +
      `${x.sample.firstMismatch ? ` (first mismatch: ${x.sample.firstMismatch})` : ''}.`,
    '',
  ];
}
