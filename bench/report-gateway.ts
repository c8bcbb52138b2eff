/** The markdown of the RFC 2136 gateway rounds (gateway-rounds.ts): updates/s beside HTTP, CPU per request. */
import type { LabKind } from '../src/lab/index.js';
import type { GatewayMeasurement, GatewayResult, PartyCpu } from './report-types.js';
import type { Measurement } from './stats.js';
import { median } from './verdict.js';

const NAMES: Record<LabKind, string> = { knot: 'Knot', bind: 'BIND', pdns: 'PowerDNS' };

export function gatewaySections(r: { gateway?: GatewayResult }): string[] {
  const g = r.gateway;
  if (!g) return [];
  const out: string[] = [
    `RFC 2136 gateway beside HTTP (one \`serve --${g.mode.replace('-', ' ')}\` bridge with the gateway on, ${NAMES[g.nameserver]}; ` +
      `${g.seconds} s per measurement, HTTP and gateway in alternation, rounds 2, 4, …: the gateway first). ` +
      `Gateway: UDP UPDATEs (delete A + add A), each signed with its host's own key (${g.keys.toLocaleString('en')} keys, made in ${g.keySeconds} s); ` +
      `nochg: ${g.nochg.hosts} hosts, ${g.nochg.concurrency} in flight; change: ${g.change.hosts.toLocaleString('en')} hosts, ${g.change.concurrency} in flight. ` +
      `HTTP: nochg c=${g.httpNochg.concurrency} over ${g.httpNochg.hosts} hosts, storm c=${g.httpStorm.concurrency} over ${g.httpStorm.hosts.toLocaleString('en')} hosts (wrk).`,
    '',
    '| round | HTTP nochg /s | gateway nochg /s | ratio | HTTP storm /s | gateway change /s | ratio |',
    '|---:|---:|---:|---:|---:|---:|---:|',
  ];
  g.rounds.forEach((x, i) => {
    const cells = [
      x.httpNochg.rps,
      x.nochg.rps,
      x.nochg.rps / x.httpNochg.rps,
      x.httpStorm.rps,
      x.change.rps,
      x.change.rps / x.httpStorm.rps,
    ].map(fmt);
    out.push(`| ${i + 1}${x.gatewayFirst ? ' (gateway first)' : ''} | ${cells.join(' | ')} |`);
  });
  const rounds = g.rounds;
  const med = (f: (x: (typeof rounds)[number]) => number) => fmt(median(rounds.map(f)));
  out.push(
    `| median | ${med((x) => x.httpNochg.rps)} | ${med((x) => x.nochg.rps)} | **${fmt(g.nochgVsHttp)}** | ` +
      `${med((x) => x.httpStorm.rps)} | ${med((x) => x.change.rps)} | **${fmt(g.changeVsStorm)}** |`,
    '',
    'CPU per request of each party (ms; server: the bridge, primary and workers; client: wrk or the gateway generator):',
    '',
    '| round | load | /s | p50 ms | p99 ms | answers | server | redis-server | nameserver | client | total |',
    '|---:|---|---:|---:|---:|---|---:|---:|---:|---:|---:|',
  );
  g.rounds.forEach((x, i) => {
    const rows: [string, Measurement, string][] = [
      [`HTTP nochg, c=${g.httpNochg.concurrency}`, x.httpNochg, replies(x.httpNochg)],
      [`gateway nochg, ${g.nochg.concurrency} in flight`, x.nochg, answers(x.nochg)],
      [`HTTP storm, c=${g.httpStorm.concurrency}`, x.httpStorm, replies(x.httpStorm)],
      [`gateway change, ${g.change.concurrency} in flight`, x.change, answers(x.change)],
    ];
    for (const [label, m, what] of rows) {
      const parts = [m.cpuMsPerRequest, m.redisCpuMsPerRequest, m.nameserverCpuMsPerRequest, m.clientCpuMsPerRequest];
      const total = parts.reduce<number>((a, p) => a + (p ?? 0), 0);
      out.push(
        `| ${i + 1} | ${label} | ${fmt(m.rps)} | ${fmt(m.p50Ms)} | ${fmt(m.p99Ms)} | ${what} | ` +
          `${parts.map((p) => (p === undefined ? '–' : ms(p))).join(' | ')} | ${ms(total)} |`,
      );
    }
  });
  const line = (what: string, gw: PartyCpu, http: PartyCpu) =>
    `- ${what}: gateway ${ms(gw.total)} ms per update (server ${ms(gw.server)} + redis-server ${ms(gw.redis)}` +
    `${gw.nameserver === undefined ? '' : ` + nameserver ${ms(gw.nameserver)}`} + generator ${ms(gw.client)}), ` +
    `HTTP ${ms(http.total)} ms per request (server ${ms(http.server)} + redis-server ${ms(http.redis)}` +
    `${http.nameserver === undefined ? '' : ` + nameserver ${ms(http.nameserver)}`} + wrk ${ms(http.client)}); ` +
    `server CPU gateway / HTTP ${fmt(gw.server / http.server)}.`;
  out.push(
    '',
    'Medians over the rounds:',
    '',
    line('nochg', g.cpu.nochg.gateway, g.cpu.nochg.http),
    line('change', g.cpu.change.gateway, g.cpu.change.http),
    `- The zone's SOA serial over the gateway nochg loads: ${g.nochgSerial.before} → ${g.nochgSerial.after} (${g.nochgSerial.before === g.nochgSerial.after ? 'no UPDATE reached the primary' : '**moved**'}).`,
    `- Published as Redis says, gateway change hosts: ${g.sample.matched} of ${g.sample.checked}${g.sample.firstMismatch ? ` (first mismatch: ${g.sample.firstMismatch})` : ''}. Bridge RSS, largest process: ${(g.rss.maxProcessBytes / (1024 * 1024)).toFixed(0)} MiB.`,
    '',
  );
  return out;
}

function replies(m: Measurement & { replies?: { good: number; nochg: number } }): string {
  return m.replies ? `${m.replies.good} good / ${m.replies.nochg} nochg / ${m.errors} errors` : `${m.errors} errors`;
}

function answers(m: GatewayMeasurement): string {
  const others = Object.entries(m.rcodes).filter(([k]) => k !== 'NOERROR');
  return (
    `${m.rcodes.NOERROR ?? 0} NOERROR` +
    others.map(([k, n]) => ` / ${n} ${k}`).join('') +
    (m.timeouts > 0 ? ` / ${m.timeouts} timeouts` : '') +
    (m.udpReceiveBufferErrors > 0
      ? ` (kernel: ${m.udpReceiveBufferErrors} UDP receive buffer drops, ${m.gatewaySocketDrops} at the gateway's socket)`
      : '')
  );
}

function fmt(x: number): string {
  if (!Number.isFinite(x)) return String(x);
  if (Math.abs(x) >= 100) return Math.round(x).toLocaleString('en');
  if (Math.abs(x) >= 10) return x.toFixed(1);
  return x.toFixed(2);
}

const ms = (x: number) => (Number.isFinite(x) ? x.toFixed(3) : String(x));
