/** The bench report as a markdown table (Knot and BIND side by side). */
import type { LabKind } from '../src/lab/index.js';
import type { BenchReport, ByConcurrency, GatewayBenchReport, WrkBenchReport } from './report-types.js';
import type { Measurement } from './stats.js';
import { gatewaySections } from './report-gateway.js';
import { cpuProfileSections, wrkBoundLines, wrkSections } from './report-wrk.js';

const NAMES: Record<LabKind, string> = { knot: 'Knot', bind: 'BIND', pdns: 'PowerDNS' };

/** `--section gateway`: the gateway rounds, the machine and how it was run. */
export function renderGatewayMarkdown(r: GatewayBenchReport): string {
  const m = r.machine;
  return [
    ...gatewaySections(r),
    `Machine: ${m.nproc} × ${m.cpu}; Node ${m.node}; ${r.gateway.nameserver === 'bind' ? m.bind : m.knot}; ${m.redis}. ` +
      `Load average before/after: ${m.loadAverageAtStart.join(' ')} / ${m.loadAverageAtEnd.join(' ')}` +
      (m.otherLoad ? ' (other load was present on the machine).' : '.'),
    '',
    `Profile \`${r.profile}\`, ${r.durationSeconds} s, \`${r.command}\`, started ${r.startedAt}.`,
    '',
    ...r.notes.map((n) => `- ${n}`),
    '',
  ].join('\n');
}

/** `--section wrk`: the wrk rounds with their references, the targets they decide, what bounds them, the machine. */
export function renderWrkMarkdown(r: WrkBenchReport): string {
  const m = r.machine;
  return [
    ...wrkSections(r),
    ...targetLines(r.targets),
    'What bounds the targets in this run:',
    ...wrkBoundLines(r),
    '',
    ...cpuProfileSections(r),
    `Machine: ${m.nproc} × ${m.cpu}; Node ${m.node}; ${m.redis}. ` +
      `Load average before/after: ${m.loadAverageAtStart.join(' ')} / ${m.loadAverageAtEnd.join(' ')}` +
      (m.otherLoad ? ' (other load was present on the machine).' : '.'),
    '',
    `Profile \`${r.profile}\`, ${r.durationSeconds} s, \`${r.command}\`, started ${r.startedAt}.`,
    '',
  ].join('\n');
}

/** The targets table. */
function targetLines(targets: BenchReport['targets']): string[] {
  const out = ['| target | value | goal | met |', '|---|---:|---:|---|'];
  for (const t of targets) {
    out.push(
      `| ${t.name}${t.nameserver ? ` (${NAMES[t.nameserver]})` : ''} | ${Number.isInteger(t.value) ? String(t.value) : fmt(t.value)} | ${t.target} | ${t.met ? 'yes' : '**no**'} |`,
    );
  }
  out.push('');
  return out;
}

export function renderMarkdown(r: BenchReport): string {
  const kinds = Object.keys(r.nameservers) as LabKind[];
  const mode = r.settings.headlineMode;
  // The headline first: the wrk rounds, the drain, the sample checks.
  const out: string[] = [...wrkSections(r), ...gatewaySections(r)];
  const m = r.machine;
  out.push(
    `Machine: ${m.nproc} × ${m.cpu}; Node ${m.node}; ${m.knot}; ${m.bind}; ${m.pdns ? `${m.pdns}; ` : ''}${m.redis}. ` +
      `Load average before/after: ${m.loadAverageAtStart.join(' ')} / ${m.loadAverageAtEnd.join(' ')}` +
      (m.otherLoad ? ' (other load was present on the machine).' : '.'),
  );
  out.push('');
  out.push(
    `Profile \`${r.profile}\`, ${r.durationSeconds} s. Headline bridge layout: **${mode}** — ${r.settings.headlineReason}.`,
  );
  out.push('');

  const header = ['path', 'c', ...kinds.flatMap((k) => [`${NAMES[k]} /s`, 'p50 ms', 'p99 ms', 'cpu ms/req'])];
  out.push(`| ${header.join(' | ')} |`);
  out.push(`|${header.map((_, i) => (i < 2 ? '---' : '---:')).join('|')}|`);
  const row = (label: string, c: string, get: (k: LabKind) => Measurement | undefined): void => {
    const cells = kinds.flatMap((k) => {
      const x = get(k);
      const parts = [x?.cpuMsPerRequest, x?.redisCpuMsPerRequest, x?.nameserverCpuMsPerRequest];
      const cpu = parts.every((p) => p === undefined)
        ? '–'
        : parts.map((p) => (p === undefined ? '–' : fmt(p))).join(' + ');
      return x ? [fmt(x.rps), fmt(x.p50Ms), fmt(x.p99Ms), cpu] : ['–', '–', '–', '–'];
    });
    out.push(`| ${label} | ${c} | ${cells.join(' | ')} |`);
  };
  const rows = (label: string, get: (k: LabKind) => ByConcurrency | undefined): void => {
    for (const c of r.settings.concurrencies) row(label, String(c), (k) => get(k)?.[String(c)]);
  };
  rows('raw UPDATE, 1 name/message', (k) => r.nameservers[k]!.rawSingle);
  row(
    `raw UPDATE, 1 name/message, isolated (${r.settings.isolatedPauseMs} ms idle between)`,
    '1',
    (k) => r.nameservers[k]!.rawIsolated,
  );
  rows(`raw UPDATE, ${r.settings.namesPerMessage} names/message (names/s)`, (k) => r.nameservers[k]!.rawBatched);
  row('nsupdate process per update', '1', (k) => r.nameservers[k]!.nsupdate);
  for (const md of r.settings.modes) {
    rows(`HTTP ceiling, bare node:http (${md})`, () => r.httpCeiling[md]);
    rows(`bridge change path (${md})`, (k) => r.nameservers[k]!.bridge[md]?.change);
    rows(`bridge nochg path (${md})`, (k) => r.nameservers[k]!.bridge[md]?.nochg);
  }
  out.push('');

  const perHost = kinds.flatMap((k) => {
    const h = r.nameservers[k]!.bridge['in-process']?.hostsPerMessage;
    return h
      ? [
          `${NAMES[k]} ${Object.entries(h)
            .map(([c, n]) => `c=${c}: ${n}`)
            .join(', ')}`,
        ]
      : [];
  });
  if (perHost.length > 0)
    out.push(`Hosts per UPDATE message sent by the bridge (in-process, group commit): ${perHost.join('; ')}.`, '');

  const paired = kinds.filter((k) => r.nameservers[k]!.paired?.rounds.length);
  if (paired.length > 0) {
    const c = r.nameservers[paired[0]!]!.paired.concurrency;
    out.push(
      `Paired rounds (${mode}): each reference measured right beside the bridge (odd rounds: the bridge first), ${bounds(mode, r.settings.pairedSecondsMax, r.settings.httpRequestsMax)} each; the p50 target is their median.`,
      '',
      `| nameserver | round | HTTP ceiling /s (c=${c}) | nochg /s (c=${c}) | nochg / ceiling | raw UPDATE p50 c=1 ms | change p50 c=1 ms | difference ms |`,
      '|---|---:|---:|---:|---:|---:|---:|---:|',
    );
    for (const k of paired) {
      r.nameservers[k]!.paired.rounds.forEach((x, i) => {
        const cells = [
          fmt(x.ceiling.rps),
          fmt(x.nochg.rps),
          fmt(x.nochg.rps / x.ceiling.rps),
          fmt(x.rawC1.p50Ms),
          fmt(x.changeC1.p50Ms),
          fmt(x.changeC1.p50Ms - x.rawC1.p50Ms),
        ];
        out.push(`| ${NAMES[k]} | ${i + 1} | ${cells.join(' | ')} |`);
      });
    }
    out.push('');
  }

  const bound = kinds
    .map((k) => `${NAMES[k]} ${fmt(r.nameservers[k]!.ratios[mode]?.httpCeilingVsRawBatched ?? NaN)}`)
    .join(', ');
  out.push(
    `HTTP ceiling / batched raw capacity (${mode}): ${bound} — the change path cannot exceed the HTTP ceiling.`,
    '',
  );
  const sized = kinds.filter((k) => r.nameservers[k]!.large?.rounds.length);
  if (sized.length > 0) {
    const l = r.nameservers[sized[0]!]!.large;
    const [few, many] = [l.smallHosts.toLocaleString('en'), l.hosts.toLocaleString('en')];
    out.push(
      `Registry size (${mode}, c=${l.concurrency}): two bridges, one on a registry of ${few} hosts and one on ${many} (another database of the same redis-server), measured in alternation (odd rounds: the large one first); the targets are the medians of the ratios.`,
      '',
      `| nameserver | round | change /s, ${few} hosts | change /s, ${many} | ratio | nochg /s, ${few} hosts | nochg /s, ${many} | ratio |`,
      '|---|---:|---:|---:|---:|---:|---:|---:|',
    );
    for (const k of sized) {
      r.nameservers[k]!.large.rounds.forEach((x, i) => {
        const cells = [
          x.smallChange.rps,
          x.largeChange.rps,
          x.largeChange.rps / x.smallChange.rps,
          x.smallNochg.rps,
          x.largeNochg.rps,
          x.largeNochg.rps / x.smallNochg.rps,
        ].map(fmt);
        out.push(`| ${NAMES[k]} | ${i + 1} | ${cells.join(' | ')} |`);
      });
    }
    out.push('');
  }
  out.push(...targetLines(r.targets));
  const rt = r.redisRoundTrips;
  const ratio = (k: LabKind) => r.nameservers[k]!.ratios[mode];
  const h1 = r.httpCeiling[mode]?.['1'];
  out.push(
    'What bounds the targets in this run:',
    ...wrkBoundLines(r),
    `- p50 at c=1: a change adds to its UPDATE at least the HTTP ceiling's p50 at c=1 (${fmt(h1?.p50Ms ?? NaN)} ms) and two Redis round trips after idle time (${fmt(rt.isolated.p50Ms)} ms each at ${r.settings.isolatedPauseMs} ms idle, ${fmt(rt.backToBack.p50Ms)} ms back to back): ${fmt(ratio(kinds[0]!)?.p50C1OverheadFloorMs ?? NaN)} ms. A primary that answers at once (BIND) shows it whole; Knot's answer cycle hides it.`,
    '',
    'Earlier ratios, no longer targets:',
    `- nochg / HTTP ceiling, from CPU alone: the ceiling's whole CPU per request (load generator + server) plus redis-server's own CPU per nochg request allows at most ${kinds.map((k) => `${NAMES[k]} ${fmt(ratio(k)?.nochgVsHttpCeilingCpuBound ?? NaN)}`).join(', ')} (paired-round medians), before the bridge's own work.`,
    `- change path / batched raw capacity: the HTTP ceiling itself is ${kinds.map((k) => `${NAMES[k]} ${fmt(ratio(k)?.httpCeilingVsRawBatched ?? NaN)}`).join(', ')} of it; from CPU alone (${r.machine.nproc} cores for a ceiling request's CPU, redis-server's per change and the nameserver's per name in a batched message) at most ${kinds.map((k) => `${NAMES[k]} ${fmt(ratio(k)?.changeVsRawBatchedCpuBound ?? NaN)}`).join(', ')}.`,
    '',
  );
  const mem = r.redisMemory;
  out.push(
    `Redis: ${fmt(mem.small.bytesPerHost)} bytes per registered host at ${mem.small.hosts.toLocaleString('en')} hosts, ` +
      `${fmt(mem.large.bytesPerHost)} at ${mem.large.hosts.toLocaleString('en')} (bulk import: ${mem.large.importRate.toLocaleString('en')} hosts/s).`,
  );
  const rss = Object.entries(r.bridgeRss)
    .map(
      ([md, x]) =>
        `${md}: largest process ${mib(x.maxProcessBytes)} MiB, all ${x.processes} processes ${mib(x.maxTotalBytes)} MiB` +
        `${x.includesLoadGenerator ? ' (includes the load generator)' : ''}${x.coldLogins > 0 ? `, with ${x.coldLogins} password checks of new accounts during the heaviest loads` : ''}`,
    )
    .join('; ');
  out.push(`Bridge RSS (maximum during the runs): ${rss}.`);
  out.push('');
  out.push(
    '`cpu ms/req`: CPU time per request (per name for raw UPDATEs) of the server processes + of redis-server + of the nameserver (in-process: the server is the bench process, load generator included; the load generator alone is `clientCpuMsPerRequest` in the JSON).',
    '',
  );
  out.push(...cpuProfileSections(r));
  out.push('Notes:');
  for (const n of r.settings.notes) out.push(`- ${n}`);
  return out.join('\n') + '\n';
}

/** How long each measurement ran: wrk whole seconds (servers in child processes), the Node generator in-process. */
function bounds(mode: string, seconds: number, requests: number): string {
  return mode === 'in-process'
    ? `${seconds} s or ${requests.toLocaleString('en')} requests`
    : `${Math.max(1, Math.ceil(seconds))} s of wrk (the HTTP loads; raw UPDATEs at most ${seconds} s)`;
}

function fmt(x: number): string {
  if (!Number.isFinite(x)) return String(x);
  if (Math.abs(x) >= 100) return Math.round(x).toLocaleString('en');
  if (Math.abs(x) >= 10) return x.toFixed(1);
  return x.toFixed(2);
}

const mib = (bytes: number) => (bytes / (1024 * 1024)).toFixed(0);
