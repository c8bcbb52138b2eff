/**
 * `npm run bench -- --quick`: the whole benchmark with small counts, as CI runs it. Asserts
 * that every section is there with positive figures and no errors — never a speed.
 */
import { expect } from 'chai';
import type { Measurement } from '../../bench/stats.js';
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { ROOT, type CliResult } from '../support/bridge.js';
import { makeTempDir, removeDir, requireBinariesOrSkip } from '../../src/lab/index.js';

/** What `npm run bench -- ARGS` runs once built: the bench's own entry point (not the product's CLI). */
const BENCH = path.join(ROOT, 'dist/bench/main.js');

function runBenchMain(args: string[]): Promise<CliResult> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BENCH, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** A measurement as the bench reports it. */
type M = Measurement;

function expectMeasurement(m: M | undefined, where: string): void {
  expect(m, where).to.be.an('object');
  expect(m!.errors, `${where}: ${m!.firstError}`).to.equal(0);
  for (const f of ['ok', 'seconds', 'rps', 'p50Ms', 'p99Ms'] as const)
    expect(m![f], `${where}.${f}`).to.be.a('number').above(0);
  expect(m!.p99Ms, `${where}: p99 ≥ p50`).to.be.at.least(m!.p50Ms);
}

/** The middle value (the mean of the two middle ones for an even count), computed here, not by the bench. */
function medianOf(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** A paired or registry round of the JSON report: named measurements. */
type Round = Record<string, M>;

/** A wrk measurement: replies by kind and wrk's own socket errors beside the figures. */
type W = M & { replies: { good: number; nochg: number; other: number; notFound: number }; socketErrors: number };

/** No reply but the expected kind, no socket error, and every party's CPU per request. */
function expectWrk(m: W, where: string, expected: 'good' | 'nochg', nameserver: boolean): void {
  expectMeasurement(m, where);
  expect(m.replies, where).to.include({ other: 0, [expected === 'good' ? 'nochg' : 'good']: 0 });
  expect(m.replies[expected], where).to.equal(m.ok);
  expect(m.socketErrors, where).to.equal(0);
  expect(m.cpuMsPerRequest, `${where} server cpu`).to.be.a('number').above(0);
  expect(m.redisCpuMsPerRequest, `${where} redis cpu`).to.be.a('number').and.at.least(0);
  expect(m.clientCpuMsPerRequest, `${where} wrk cpu`).to.be.a('number').above(0);
  if (nameserver) expect(m.nameserverCpuMsPerRequest, `${where} nameserver cpu`).to.be.a('number').and.at.least(0);
  else expect(m.nameserverCpuMsPerRequest, `${where} nameserver cpu`).to.equal(undefined);
}

function expectByConcurrency(by: Record<string, M> | undefined, where: string, concurrencies: number[]): void {
  expect(Object.keys(by ?? {}).sort(), where).to.deep.equal(concurrencies.map(String).sort());
  for (const c of concurrencies) expectMeasurement(by![String(c)], `${where}[c=${c}]`);
}

describe('bench --quick (CI smoke)', function () {
  this.timeout(180000);
  let dir: string;

  before(async function () {
    requireBinariesOrSkip(this, ['redis-server', 'knotd', 'named', 'nsupdate', 'dig']);
    dir = await makeTempDir('ddns-bench-smoke-');
  });
  after(async () => {
    if (dir) await removeDir(dir);
  });

  it('reports every section for Knot and BIND with positive numbers, as JSON and markdown', async () => {
    const json = path.join(dir, 'bench.json');
    const markdown = path.join(dir, 'bench.md');
    const r = await runBenchMain(['--quick', '--json', json, '--markdown', markdown]);
    expect(r.code, r.stderr.slice(-3000)).to.equal(0);
    const report = JSON.parse(await readFile(json, 'utf8'));

    expect(report.profile).to.equal('quick');
    const conc: number[] = report.settings.concurrencies;
    expect(conc).to.deep.equal([1, 16, 64]);
    const modes: string[] = report.settings.modes;
    expect(modes).to.deep.equal(['in-process', 'workers-2']);
    expect(report.settings.headlineMode, 'the deployable layout is the headline').to.equal('workers-2');
    expect(report.machine.nproc).to.be.above(0);
    for (const v of ['cpu', 'node', 'knot', 'bind', 'redis'])
      expect(report.machine[v], v).to.be.a('string').and.not.equal('');

    for (const mode of modes) expectByConcurrency(report.httpCeiling[mode], `httpCeiling.${mode}`, conc);
    expectMeasurement(report.redisRoundTrips.backToBack, 'redisRoundTrips.backToBack');
    expectMeasurement(report.redisRoundTrips.isolated, 'redisRoundTrips.isolated');
    // The load generator's CPU is known only when the server runs in child processes.
    expect(report.httpCeiling['workers-2']['64'].clientCpuMsPerRequest).to.be.above(0);
    expect(report.httpCeiling['in-process']['64'].clientCpuMsPerRequest).to.equal(undefined);
    for (const kind of ['knot', 'bind']) {
      const ns = report.nameservers[kind];
      expectByConcurrency(ns.rawSingle, `${kind}.rawSingle`, conc);
      expectByConcurrency(ns.rawBatched, `${kind}.rawBatched`, conc);
      expectMeasurement(ns.rawIsolated, `${kind}.rawIsolated`);
      expectMeasurement(ns.nsupdate, `${kind}.nsupdate`);
      for (const mode of modes) {
        expectByConcurrency(ns.bridge[mode].change, `${kind}.bridge.${mode}.change`, conc);
        expectByConcurrency(ns.bridge[mode].nochg, `${kind}.bridge.${mode}.nochg`, conc);
        const ratios = ns.ratios[mode];
        expect(ratios.changeVsRawBatched, 'changeVsRawBatched').to.be.above(0);
        expect(ratios.nochgVsHttpCeiling, 'nochgVsHttpCeiling').to.be.above(0);
        expect(ratios.p50C1MinusRawMs, 'p50C1MinusRawMs').to.be.a('number').and.satisfy(Number.isFinite);
        expect(ratios.p50C1MinusIsolatedRawMs, 'p50C1MinusIsolatedRawMs')
          .to.be.a('number')
          .and.satisfy(Number.isFinite);
        expect(ratios.httpCeilingVsRawBatched, 'httpCeilingVsRawBatched').to.be.above(0);
        for (const path of ['change', 'nochg'] as const) {
          const m = ns.bridge[mode][path]['64'];
          expect(m.cpuMsPerRequest, `${kind}.${mode}.${path} cpu`).to.be.a('number').and.at.least(0);
          expect(m.redisCpuMsPerRequest, `${kind}.${mode}.${path} redis cpu`).to.be.a('number').and.at.least(0);
          // Above 0, not 1: the admissions of one event-loop turn share one script call (store/batch.ts).
          expect(
            ns.bridge[mode].redisCommandsPerRequest[path].evalsha,
            `${kind}.${mode}.${path} evalsha/request`,
          ).to.be.above(0);
        }
      }
      expect(ns.bridge['in-process'].hostsPerMessage['1'], 'hosts per message').to.be.at.least(1);
      // Registry size: a bridge on the small registry and one on the large (database 1), in
      // alternation. Hosts of the large pool exist only in the large registry, so a bridge on
      // the wrong database would answer nohost and fail expectMeasurement.
      expect(ns.large.hosts).to.equal(10000);
      expect(ns.large.smallHosts).to.equal(1000);
      expect(ns.large.rounds).to.have.length(report.settings.pairedRounds);
      for (const [i, round] of ns.large.rounds.entries()) {
        for (const part of ['smallChange', 'largeChange', 'smallNochg', 'largeNochg'])
          expectMeasurement(round[part], `${kind}.large.rounds[${i}].${part}`);
      }
      // The targets are the medians of the rounds' own ratios, whatever the number of rounds.
      const headline = ns.ratios[report.settings.headlineMode];
      const ofRounds = (rounds: Round[], f: (r: Round) => number) => medianOf(rounds.map(f));
      expect(headline.changeLargeVsSmall).to.be.closeTo(
        ofRounds(ns.large.rounds, (r) => r.largeChange!.rps / r.smallChange!.rps),
        0.001,
      );
      expect(headline.nochgLargeVsSmall).to.be.closeTo(
        ofRounds(ns.large.rounds, (r) => r.largeNochg!.rps / r.smallNochg!.rps),
        0.001,
      );
      // Paired rounds (headline layout): each reference beside the bridge; the targets use their medians.
      expect(ns.paired.mode).to.equal(report.settings.headlineMode);
      expect(ns.paired.rounds).to.have.length(report.settings.pairedRounds).and.length.above(0);
      for (const [i, round] of ns.paired.rounds.entries()) {
        for (const part of ['ceiling', 'nochg', 'rawC1', 'changeC1'])
          expectMeasurement(round[part], `${kind}.paired.rounds[${i}].${part}`);
      }
      expect(headline.nochgVsHttpCeilingPaired).to.be.closeTo(
        ofRounds(ns.paired.rounds, (r) => r.nochg!.rps / r.ceiling!.rps),
        0.001,
      );
      expect(headline.p50C1MinusRawMsPaired).to.be.closeTo(
        ofRounds(ns.paired.rounds, (r) => r.changeC1!.p50Ms - r.rawC1!.p50Ms),
        0.001,
      );
      // What bounds them: both derived from measured figures.
      expect(headline.nochgVsHttpCeilingCpuBound).to.be.above(0).and.below(1);
      expect(headline.changeVsRawBatchedCpuBound).to.be.above(0);
      // The nameserver's CPU per name is read from its own process: batched raw UPDATEs and the change path.
      expect(ns.rawBatched['64'].nameserverCpuMsPerRequest, `${kind} raw batched ns cpu`)
        .to.be.a('number')
        .and.at.least(0);
      expect(ns.bridge['workers-2'].change['64'].nameserverCpuMsPerRequest, `${kind} change ns cpu`)
        .to.be.a('number')
        .and.at.least(0);
      expect(
        ns.bridge['workers-2'].nochg['64'].nameserverCpuMsPerRequest,
        'nochg never involves the nameserver',
      ).to.equal(undefined);
      const ceilingCpu = (r: Round) => r.ceiling!.clientCpuMsPerRequest! + r.ceiling!.cpuMsPerRequest!;
      expect(headline.nochgVsHttpCeilingCpuBound).to.be.closeTo(
        ofRounds(ns.paired.rounds, (r) => ceilingCpu(r) / (ceilingCpu(r) + r.nochg!.redisCpuMsPerRequest!)),
        0.001,
      );
      expect(headline.p50C1OverheadFloorMs).to.be.closeTo(
        report.httpCeiling[report.settings.headlineMode]['1'].p50Ms + 2 * report.redisRoundTrips.isolated.p50Ms,
        0.001,
      );
      const target = (prefix: string) =>
        report.targets.find(
          (t: { name: string; nameserver?: string }) => t.nameserver === kind && t.name.startsWith(prefix),
        );
      expect(target('p50 at c=1 minus raw UPDATE p50').value).to.equal(headline.p50C1MinusRawMsPaired);

      // The wrk rounds: the bridge and the bare ceiling under the same wrk load, nochg and storm.
      const w = ns.wrk;
      expect(w.mode).to.equal('workers-2');
      expect(w.nochg).to.deep.equal({ concurrency: 64, hosts: 512 });
      expect(w.storm).to.deep.equal({ concurrency: 256, hosts: 20000 });
      expect(w.rounds).to.have.length(report.settings.wrkRounds).and.length.above(0);
      for (const [i, r] of (w.rounds as Record<string, W>[]).entries()) {
        expectWrk(r.ceilingNochg!, `${kind}.wrk.rounds[${i}].ceilingNochg`, 'nochg', false);
        expectWrk(r.nochg!, `${kind}.wrk.rounds[${i}].nochg`, 'nochg', false);
        expectWrk(r.ceilingRedisNochg!, `${kind}.wrk.rounds[${i}].ceilingRedisNochg`, 'nochg', false);
        // The front's reference: every reply the bridge's 404, counted as its successes.
        const front = r.frontNochg!;
        expectMeasurement(front, `${kind}.wrk.rounds[${i}].frontNochg`);
        expect(front.replies, 'front').to.include({ good: 0, nochg: 0, notFound: front.ok, other: front.ok });
        expect(front.errors + front.socketErrors, 'front errors').to.equal(0);
        expect(front.cpuMsPerRequest, 'front server cpu').to.be.above(0);
        expectWrk(r.ceilingStorm!, `${kind}.wrk.rounds[${i}].ceilingStorm`, 'nochg', false);
        expectWrk(r.storm!, `${kind}.wrk.rounds[${i}].storm`, 'good', true);
      }
      const wrkRounds = w.rounds as Round[];
      expect(w.nochgVsCeiling).to.be.closeTo(
        ofRounds(wrkRounds, (r) => r.nochg!.rps / r.ceilingNochg!.rps),
        0.001,
      );
      expect(w.nochgVsCeilingRedis).to.be.closeTo(
        ofRounds(wrkRounds, (r) => r.nochg!.rps / r.ceilingRedisNochg!.rps),
        0.001,
      );
      // bare + Redis runs one script per request on the bench's Redis: redis-server works for it, not for the ceiling.
      const split = w.nochgSplit;
      expect(split.redis.ceilingRedis, `${kind} bare + Redis: redis-server cpu`).to.be.above(0);
      expect(split.useCase).to.be.closeTo(split.server.bridge - split.server.front, 0.0002);
      expect(split.front).to.be.closeTo(split.server.front - split.server.ceiling, 0.0002);
      expect(w.stormVsCeiling).to.be.closeTo(
        ofRounds(wrkRounds, (r) => r.storm!.rps / r.ceilingStorm!.rps),
        0.001,
      );
      for (const path of ['nochg', 'storm'] as const) {
        const a = w.cpu[path];
        expect(a.ceiling.total, `${kind} ${path} ceiling cpu`).to.be.above(0);
        expect(a.bridge.total, `${kind} ${path} bridge cpu`).to.be.above(0);
        expect(a.ratio, `${kind} ${path} cpu ratio`).to.be.closeTo(a.ceiling.total / a.bridge.total, 0.001);
        expect(a.bridge.nameserver === undefined, `${kind} ${path}: the nameserver counts for the storm`).to.equal(
          path === 'nochg',
        );
      }
      expect(w.sample, `${kind} storm sample`).to.deep.equal({ checked: 50, matched: 50 });
      expect(w.rss.maxProcessBytes).to.be.above(0);
      // The drain: every host once, each answered good, all published.
      const d = ns.drain;
      expect(d).to.include({ mode: 'workers-2', hosts: 1000, concurrency: 64 });
      expectMeasurement(d.measurement, `${kind}.drain`);
      expect(d.measurement.ok).to.equal(d.hosts);
      expect(d.sample, `${kind} drain sample`).to.deep.equal({ checked: 50, matched: 50 });
      expect(d.rss.maxProcessBytes).to.be.above(0);

      expect(target('nochg / ceiling (wrk, c=64)').value).to.equal(w.nochgVsCeiling);
      expect(target('storm / ceiling (wrk, c=256)').value).to.equal(w.stormVsCeiling);
      expect(target('nochg / bare + Redis (wrk, c=64)')).to.include({ value: w.nochgVsCeilingRedis, target: '≥ 0.8' });
      expect(target('replies other than good/nochg')).to.include({ value: 0, met: true });
      expect(target('sample published as Redis says')).to.include({ value: 100, met: true });
      expect(target('change rps at 10000 / 1000 hosts').value).to.equal(headline.changeLargeVsSmall);
      expect(target('nochg rps at 10000 / 1000 hosts').value).to.equal(headline.nochgLargeVsSmall);
    }
    // The RFC 2136 gateway beside HTTP (first nameserver, one bridge): every answer NOERROR, each party's CPU.
    const g = report.gateway;
    expect(g).to.include({ mode: 'workers-2', nameserver: 'knot' });
    expect(g.keys).to.equal(g.nochg.hosts + g.change.hosts);
    expect(g.rounds).to.have.length(report.settings.gatewayRounds).and.length.above(0);
    type G = M & { rcodes: Record<string, number>; timeouts: number };
    for (const [i, r] of (g.rounds as Record<string, G & W>[]).entries()) {
      expectWrk(r.httpNochg!, `gateway.rounds[${i}].httpNochg`, 'nochg', false);
      expectWrk(r.httpStorm!, `gateway.rounds[${i}].httpStorm`, 'good', true);
      for (const part of ['nochg', 'change'] as const) {
        const m = r[part]!;
        expectMeasurement(m, `gateway.rounds[${i}].${part}`);
        expect(m.rcodes, `gateway.rounds[${i}].${part}`).to.deep.equal({ NOERROR: m.ok });
        expect(m.timeouts).to.equal(0);
        expect(m.cpuMsPerRequest, `gateway ${part} server cpu`).to.be.above(0);
        expect(m.clientCpuMsPerRequest, `gateway ${part} generator cpu`).to.be.above(0);
        expect(
          m.nameserverCpuMsPerRequest === undefined,
          `gateway ${part}: the nameserver counts for changes`,
        ).to.equal(part === 'nochg');
      }
    }
    const gRounds = g.rounds as Round[];
    expect(g.nochgVsHttp).to.be.closeTo(medianOf(gRounds.map((r) => r.nochg!.rps / r.httpNochg!.rps)), 0.001);
    expect(g.changeVsStorm).to.be.closeTo(medianOf(gRounds.map((r) => r.change!.rps / r.httpStorm!.rps)), 0.001);
    expect(g.nochgSerial.after, 'a gateway nochg sends no UPDATE').to.equal(g.nochgSerial.before);
    expect(g.sample.checked).to.be.above(0);
    expect(g.sample.matched, g.sample.firstMismatch).to.equal(g.sample.checked);
    // Where the Node generator stays, and why: in the notes.
    expect(report.settings.notes.join('\n')).to.match(
      /The Node generator \(load\.ts\) stays where wrk cannot do the job/,
    );
    expect(report.redisMemory.small).to.include({ hosts: 1000 });
    expect(report.redisMemory.large).to.include({ hosts: 10000 });
    expect(report.redisMemory.small.bytesPerHost).to.be.above(0);
    expect(report.redisMemory.large.bytesPerHost).to.be.above(0);
    expect(report.redisMemory.large.importRate).to.be.above(0);
    for (const mode of modes) {
      expect(report.bridgeRss[mode].maxProcessBytes, `rss ${mode}`).to.be.above(0);
      expect(report.bridgeRss[mode].maxTotalBytes, `rss ${mode}`).to.be.at.least(
        report.bridgeRss[mode].maxProcessBytes,
      );
    }
    expect(report.bridgeRss['workers-2'].processes, 'primary + 2 workers').to.equal(3);
    // One login of a new account in each c=64 change and nochg run of the headline layout, answered good.
    expect(report.bridgeRss['workers-2'].coldLogins, 'password checks under load').to.equal(
      2 * Object.keys(report.nameservers).length,
    );
    expect(report.bridgeRss['in-process'].coldLogins).to.equal(0);
    // 8 per nameserver + the drain's RSS + RSS + Redis bytes per host
    expect(report.targets).to.have.length(19);
    const drainRss = report.targets.find((t: { name: string }) => t.name.startsWith('bridge RSS in the 1,000-host'));
    expect(drainRss, 'the drain RSS target').to.include({ target: '≤ 150' });
    expect(report.targets.some((t: { name: string }) => t.name.startsWith('change path / batched raw'))).to.equal(
      false,
    );
    for (const t of report.targets) expect(t.value, t.name).to.be.a('number').and.satisfy(Number.isFinite);

    const md = await readFile(markdown, 'utf8');
    // The headline opens the report: the wrk rounds, their medians, CPU per party, the drain, the samples.
    expect(md.startsWith('wrk rounds (`serve --workers 2`'), md.slice(0, 200)).to.equal(true);
    expect(md).to.include(
      '| nameserver | round | ceiling /s (c=64) | bare + Redis /s | front (404) /s | nochg /s | nochg / ceiling | nochg / bare + Redis | ceiling /s (c=256) | storm /s | ratio |',
    );
    for (const k of ['Knot', 'BIND']) {
      expect(md).to.match(
        new RegExp(`\\| ${k} \\| median \\|( [\\d,.]+ \\|){4} \\*\\*[\\d.]+\\*\\* \\| \\*\\*[\\d.]+\\*\\* \\|`),
      );
      expect(md).to.match(new RegExp(`\\| ${k} \\|( -?[\\d.]+ \\|){7} -?[\\d.]+ · -?[\\d.]+ \\|`), `${k} split row`);
      expect(md).to.match(
        new RegExp(`- nochg / bare \\+ Redis \\(wrk, c=64\\), ${k}: measured [\\d.]+ .*CPU alone allows [\\d.]+\\.`),
      );
    }
    expect(md).to.include(
      '| nameserver | round | load | /s | good / nochg / errors | server | redis-server | nameserver | wrk | total |',
    );
    expect(md).to.match(/\| Knot \| 1 \| bridge storm, c=256 \| [\d,.]+ \| \d+ \/ 0 \/ 0 \|/);
    expect(md).to.match(/\| BIND \| 1,000 \| 64 \| [\d,.]+ \| [\d,.]+ \| [\d,.]+ \| [\d,.]+ \| 0 \|/);
    expect(md).to.include(
      'Knot: storm hosts 50 of 50, drain hosts 50 of 50; BIND: storm hosts 50 of 50, drain hosts 50 of 50.',
    );
    for (const k of ['Knot', 'BIND'])
      for (const [path, c] of [
        ['nochg', 64],
        ['storm', 256],
      ])
        expect(md).to.match(
          new RegExp(
            `- ${path} / ceiling \\(wrk, c=${c}\\), ${k}: measured [\\d.]+ .*the ceiling [\\d.]+ ms .*CPU alone allows [\\d.]+\\.`,
          ),
        );
    expect(md).to.include(
      '| path | c | Knot /s | p50 ms | p99 ms | cpu ms/req | BIND /s | p50 ms | p99 ms | cpu ms/req |',
    );
    for (const row of [
      'raw UPDATE, 1 name/message',
      'raw UPDATE, 1 name/message, isolated (2 ms idle between)',
      'raw UPDATE, 50 names/message',
      'nsupdate process per update',
      'HTTP ceiling',
      'bridge change path',
      'bridge nochg path',
      '| change /s, 1,000 hosts | change /s, 10,000 |',
    ]) {
      expect(md, row).to.include(row);
    }
    expect(md).to.match(/Redis: [\d.]+ bytes per registered host/);
    expect(md).to.include('| nameserver | round | HTTP ceiling /s (c=64) | nochg /s (c=64) | nochg / ceiling |');
    expect(md).to.match(/nochg \/ HTTP ceiling, from CPU alone: .* allows at most Knot 0\.\d\d, BIND 0\.\d\d/);
    expect(md).to.match(/two Redis round trips after idle time \([\d.]+ ms each/);
    expect(md).to.match(/from CPU alone \(\d+ cores for a ceiling request's CPU.*\) at most Knot [\d.]+, BIND [\d.]+/);
    expect(md).to.match(/\| Knot \| 1 \| [\d,.]+ \|/);
    expect(md).to.match(/\| BIND \| 1 \| [\d,.]+ \|/);
  });
});
