/** The markdown of the wrk rounds, the drain, their sample checks and CPU accounts, and the profiles. */
import type { LabKind } from '../src/lab/index.js';
import { selfTimeTable } from './cpu-profile.js';
import type { CpuAccount, WrkRoundsResult, WrkView } from './report-types.js';
import type { Measurement } from './stats.js';
import { median } from './verdict.js';

const NAMES: Record<LabKind, string> = { knot: 'Knot', bind: 'BIND', pdns: 'PowerDNS' };

/** The report's opening: the wrk rounds, their CPU per request, the drain, the sample checks. */
export function wrkSections(r: WrkView): string[] {
  const kinds = (Object.keys(r.nameservers) as LabKind[]).filter((k) => r.nameservers[k]!.wrk);
  if (kinds.length === 0) return [];
  const first = r.nameservers[kinds[0]!]!.wrk;
  const out: string[] = [
    `wrk rounds (\`serve --${first.mode.replace('-', ' ')}\` beside a bare node:http cluster of as many workers): ${first.seconds} s of wrk per measurement; ` +
      `nochg cycles over ${first.nochg.hosts} hosts each set before, measured against three references in an order rotated each round: the bare ceiling, ` +
      `bare + Redis (the ceiling running one two-command script per request on the same Redis) and the bridge's front (the same requests to a path it does not serve: its 404, no use case); ` +
      `the storm gives every request a new address for the next of ${first.storm.hosts.toLocaleString('en')} hosts, beside the ceiling, the order flipped each round (rounds 2, 4, …: the bridge first). The targets are the medians of the ratios.`,
    '',
    `| nameserver | round | ceiling /s (c=${first.nochg.concurrency}) | bare + Redis /s | front (404) /s | nochg /s | nochg / ceiling | nochg / bare + Redis | ceiling /s (c=${first.storm.concurrency}) | storm /s | ratio |`,
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const k of kinds) {
    r.nameservers[k]!.wrk.rounds.forEach((x, i) => {
      const cells = [
        x.ceilingNochg.rps,
        x.ceilingRedisNochg.rps,
        x.frontNochg.rps,
        x.nochg.rps,
        x.nochg.rps / x.ceilingNochg.rps,
        x.nochg.rps / x.ceilingRedisNochg.rps,
        x.ceilingStorm.rps,
        x.storm.rps,
        x.storm.rps / x.ceilingStorm.rps,
      ].map(fmt);
      out.push(`| ${NAMES[k]} | ${i + 1} | ${cells.join(' | ')} |`);
    });
  }
  for (const k of kinds) {
    const w = r.nameservers[k]!.wrk;
    const med = (f: (x: WrkRoundsResult['rounds'][number]) => number) => fmt(median(w.rounds.map(f)));
    const cells = [
      med((x) => x.ceilingNochg.rps),
      med((x) => x.ceilingRedisNochg.rps),
      med((x) => x.frontNochg.rps),
      med((x) => x.nochg.rps),
      `**${fmt(w.nochgVsCeiling ?? NaN)}**`,
      `**${fmt(w.nochgVsCeilingRedis ?? NaN)}**`,
      med((x) => x.ceilingStorm.rps),
      med((x) => x.storm.rps),
      `**${fmt(w.stormVsCeiling ?? NaN)}**`,
    ];
    out.push(`| ${NAMES[k]} | median | ${cells.join(' | ')} |`);
  }
  out.push('', ...nochgSplitLines(r, kinds));
  out.push(
    'CPU per request of each party in the wrk rounds (ms; server: the serving processes, primary and workers; wrk: the load generator):',
    '',
    '| nameserver | round | load | /s | good / nochg / errors | server | redis-server | nameserver | wrk | total |',
    '|---|---:|---|---:|---|---:|---:|---:|---:|---:|',
  );
  for (const k of kinds) {
    const w = r.nameservers[k]!.wrk;
    w.rounds.forEach((x, i) => {
      const rows: [string, Measurement & { replies: { good: number; nochg: number; notFound?: number } }][] = [
        [`ceiling, c=${w.nochg.concurrency}`, x.ceilingNochg],
        [`bare + Redis, c=${w.nochg.concurrency}`, x.ceilingRedisNochg],
        [`bridge front (404), c=${w.nochg.concurrency}`, x.frontNochg],
        [`bridge nochg, c=${w.nochg.concurrency}`, x.nochg],
        [`ceiling, c=${w.storm.concurrency}`, x.ceilingStorm],
        [`bridge storm, c=${w.storm.concurrency}`, x.storm],
      ];
      for (const [label, m] of rows) {
        const parts = [m.cpuMsPerRequest, m.redisCpuMsPerRequest, m.nameserverCpuMsPerRequest, m.clientCpuMsPerRequest];
        const total = parts.reduce<number>((a, p) => a + (p ?? 0), 0);
        out.push(
          `| ${NAMES[k]} | ${i + 1} | ${label} | ${fmt(m.rps)} | ${m.replies.good} / ${m.replies.nochg} / ${m.errors}${m.replies.notFound ? ` (404: ${m.replies.notFound})` : ''} | ` +
            `${parts.map((p) => (p === undefined ? '–' : ms(p))).join(' | ')} | ${ms(total)} |`,
        );
      }
    });
  }
  out.push('');
  const drained = kinds.filter((k) => r.nameservers[k]!.drain);
  if (drained.length > 0) {
    out.push(
      'Drain: every registered host gets one new address, one request each, many clients at once (the Node generator: wrk cannot stop after a fixed set of requests); time until the last reply:',
      '',
      '| nameserver | hosts | clients | seconds to the last reply | good /s | p50 ms | p99 ms | errors | cpu ms/req: server + redis + nameserver + generator |',
      '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
    );
    for (const k of drained) {
      const d = r.nameservers[k]!.drain!;
      const m = d.measurement;
      const cpu = [m.cpuMsPerRequest, m.redisCpuMsPerRequest, m.nameserverCpuMsPerRequest, m.clientCpuMsPerRequest]
        .map((p) => (p === undefined ? '–' : ms(p)))
        .join(' + ');
      out.push(
        `| ${NAMES[k]} | ${d.hosts.toLocaleString('en')} | ${d.concurrency.toLocaleString('en')} | ${fmt(m.seconds)} | ${fmt(m.rps)} | ${fmt(m.p50Ms)} | ${fmt(m.p99Ms)} | ${m.errors} | ${cpu} |`,
      );
    }
    out.push('');
  }
  const samples = kinds.map((k) => {
    const ns = r.nameservers[k]!;
    const one = (label: string, s: { checked: number; matched: number; firstMismatch?: string } | undefined) =>
      s ? `${label} ${s.matched} of ${s.checked}${s.firstMismatch ? ` (first mismatch: ${s.firstMismatch})` : ''}` : '';
    return `${NAMES[k]}: ${[one('storm hosts', ns.wrk.sample), one('drain hosts', ns.drain?.sample)].filter(Boolean).join(', ')}`;
  });
  out.push(
    `Published as Redis says (the address Redis records = the A record the primary serves): ${samples.join('; ')}.`,
  );
  const rss = kinds.map((k) => {
    const ns = r.nameservers[k]!;
    return `${NAMES[k]} wrk rounds ${mib(ns.wrk.rss.maxProcessBytes)} MiB${ns.drain ? `, drain ${mib(ns.drain.rss.maxProcessBytes)} MiB` : ''}`;
  });
  out.push(`Bridge RSS, largest process: ${rss.join('; ')}.`, '');
  return out;
}

/** Where a nochg's CPU goes: the references' and the bridge's CPU per request, and the parts they split it into. */
function nochgSplitLines(r: WrkView, kinds: readonly LabKind[]): string[] {
  const split = kinds.filter((k) => r.nameservers[k]!.wrk.nochgSplit);
  if (split.length === 0) return [];
  const out = [
    'Where a nochg goes (ms of CPU per request, medians over the rounds): the serving processes of each reference and of the bridge, redis-server, and the differences that name the parts.',
    '',
    '| nameserver | ceiling | bare + Redis | front (404) | bridge nochg | front beyond bare | use case in JavaScript (bridge − front) | a script call in a bare server | redis-server: bare + Redis · bridge |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---|',
  ];
  for (const k of split) {
    const w = r.nameservers[k]!.wrk;
    const s = w.nochgSplit!;
    out.push(
      `| ${NAMES[k]} | ${ms(s.server.ceiling)} | ${ms(s.server.ceilingRedis)} | ${ms(s.server.front)} | ${ms(s.server.bridge)} | ` +
        `${ms(s.front)} | ${ms(s.useCase)} | ${ms(s.redisClient)} | ${ms(s.redis.ceilingRedis)} · ${ms(s.redis.bridge)} |`,
    );
  }
  const ratios = split.map((k) => {
    const w = r.nameservers[k]!.wrk;
    return `${NAMES[k]}: bare + Redis ${fmt(w.ceilingRedisVsCeiling ?? NaN)} of the ceiling, the front ${fmt(w.frontVsCeiling ?? NaN)}`;
  });
  out.push('', `Throughput of the references (medians of the ratios): ${ratios.join('; ')}.`, '');
  return out;
}

/** "What bounds the targets" lines for the wrk ratios: each party's CPU per request, and what it allows. */
export function wrkBoundLines(r: WrkView): string[] {
  const out: string[] = [];
  for (const k of Object.keys(r.nameservers) as LabKind[]) {
    const w = r.nameservers[k]!.wrk;
    if (!w?.cpu) continue;
    out.push(bound(`nochg / ceiling (wrk, c=${w.nochg.concurrency})`, k, w.nochgVsCeiling!, 0.6, w.cpu.nochg, r));
    out.push(bound(`storm / ceiling (wrk, c=${w.storm.concurrency})`, k, w.stormVsCeiling!, 0.4, w.cpu.storm, r));
    if (w.nochgSplit && w.nochgVsCeilingRedis !== undefined) out.push(boundByRedis(w, k, r));
  }
  return out;
}

/** nochg / bare + Redis: the two whole accounts (server, redis-server, wrk) and the ratio they allow. */
function boundByRedis(w: WrkRoundsResult, k: LabKind, r: WrkView): string {
  const s = w.nochgSplit!;
  const wrkOf = (f: (x: WrkRoundsResult['rounds'][number]) => number | undefined) =>
    median(w.rounds.map((x) => f(x) ?? NaN));
  const reference =
    s.server.ceilingRedis + s.redis.ceilingRedis + wrkOf((x) => x.ceilingRedisNochg.clientCpuMsPerRequest);
  const bridge = s.server.bridge + s.redis.bridge + wrkOf((x) => x.nochg.clientCpuMsPerRequest);
  const measured = w.nochgVsCeilingRedis!;
  return (
    `- nochg / bare + Redis (wrk, c=${w.nochg.concurrency}), ${NAMES[k]}: measured ${fmt(measured)} (target ≥ 0.8${measured >= 0.8 ? ', met' : ', **missed**'}). ` +
    `Whole CPU per request (server + redis-server + wrk, medians): bare + Redis ${ms(reference)} ms, the bridge ${ms(bridge)} ms ` +
    `(its front ${ms(s.front)} ms beyond a bare server, its use case ${ms(s.useCase)} ms, redis-server ${ms(s.redis.bridge)} ms); ` +
    `${r.machine.nproc} cores: CPU alone allows ${fmt(reference / bridge)}.`
  );
}

function bound(what: string, k: LabKind, measured: number, goal: number, a: CpuAccount, r: WrkView): string {
  const bridgeParts = [`server ${ms(a.bridge.server)}`, `redis-server ${ms(a.bridge.redis)}`];
  if (a.bridge.nameserver !== undefined) bridgeParts.push(`nameserver ${ms(a.bridge.nameserver)}`);
  bridgeParts.push(`wrk ${ms(a.bridge.wrk)}`);
  return (
    `- ${what}, ${NAMES[k]}: measured ${fmt(measured)} (target ≥ ${goal}${measured >= goal ? ', met' : ', **missed**'}). ` +
    `CPU per request (medians): the ceiling ${ms(a.ceiling.total)} ms (server ${ms(a.ceiling.server)} + wrk ${ms(a.ceiling.wrk)}), ` +
    `the bridge ${ms(a.bridge.total)} ms (${bridgeParts.join(' + ')}); ${r.machine.nproc} cores carry at most ` +
    `${fmt(a.ceilingCapacity)}/s and ${fmt(a.bridgeCapacity)}/s: CPU alone allows ${fmt(a.ratio)}.`
  );
}

/** `--cpu-prof`: a heading and the top self-time table per path. */
export function cpuProfileSections(r: WrkView): string[] {
  const p = r.cpuProfiles;
  if (!p) return [];
  const out: string[] = [];
  for (const x of p.paths) {
    out.push(
      `### CPU profile: ${x.path} path (${NAMES[p.nameserver]}, ${p.mode}, c=${x.concurrency}, ${p.seconds} s of wrk: ${fmt(x.measurement.rps)}/s under the profiler)`,
      '',
      `Self time over the workers' profiles (${x.workerFiles} of ${x.files} files; the primary's left out), busy time only, in \`${x.dir}\`.`,
      '',
    );
    if (x.problem) out.push(`**No profile to show:** ${x.problem}.`, '');
    else out.push(selfTimeTable(x.top, x.top.length), '');
  }
  return out;
}

function fmt(x: number): string {
  if (!Number.isFinite(x)) return String(x);
  if (Math.abs(x) >= 100) return Math.round(x).toLocaleString('en');
  if (Math.abs(x) >= 10) return x.toFixed(1);
  return x.toFixed(2);
}

/** CPU milliseconds: three decimals (a request costs a tenth of a millisecond or so). */
const ms = (x: number) => (Number.isFinite(x) ? x.toFixed(3) : String(x));
const mib = (bytes: number) => (bytes / (1024 * 1024)).toFixed(0);
