/**
 * The RFC 2136 gateway beside HTTP (issue 29): one `serve --workers N` bridge with the gateway on (config key
 * `gateway`), loaded in turn over HTTP by wrk and over UDP by gateway-load.ts, the order flipped each round so that a
 * shared machine's drift hits both alike:
 *
 *   nochg: UPDATEs that set the address each host already has (NOERROR, no UPDATE to the primary), beside the
 *          HTTP nochg load (wrk-rounds.ts);
 *   change: every UPDATE a new address for the next of many hosts, beside the HTTP storm.
 *
 * Every gateway host has its own key (a key is good for its host only), made through the use case behind
 * `token add H --tsig` and `POST /v1/hosts/{fqdn}/tokens`. Then a sample of the change hosts: the address Redis
 * records must be the one DNS serves; and the zone's SOA serial must not move during the gateway nochg loads.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createSocket } from 'node:dgram';
import { readFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import dnsPacket from 'dns-packet';
import { adminServiceOn } from '../src/cli/admin-service.js';
import { JsonLogger } from '../src/cli/logger.js';
import { loadConfig } from '../src/config/load.js';
import type { Config } from '../src/config/schema.js';
import { silentLogger } from '../src/core/log.js';
import { writePrivateFile, type LabKind } from '../src/lab/index.js';
import { checkSample, spread } from './dns-check.js';
import { GATEWAY_LOAD_SCRIPT, type GatewayJob, type GatewayLoadResult } from './gateway-load.js';
import { nextAddress, reserveAddresses } from './raw-dns.js';
import type { GatewayMeasurement, GatewayResult, GatewayRound, PartyCpu } from './report-types.js';
import { importHosts, inOrder, RssSampler, withCpu } from './runs.js';
import { round, type Measurement } from './stats.js';
import { startBridgeTarget } from './targets.js';
import { median } from './verdict.js';
import { ADDRESSES_PER_SECOND } from './wrk-loads.js';
import { errorsOf, primeNochg, wrkLoads, type WrkContext } from './wrk-rounds.js';

/** Host indexes of the gateway's pools, apart from every other section's (the drain's start at 2,000,000). */
export const GATEWAY_CHANGE_FROM = 3_000_000;
export const GATEWAY_NOCHG_FROM = 3_500_000;

/** A gateway host and its key (the secret base64, as `token add --tsig` prints it). */
interface KeyedHost {
  fqdn: string;
  keyName: string;
  secret: string;
  address?: string;
}

export async function measureGateway(ctx: WrkContext, kind: LabKind): Promise<GatewayResult> {
  const { lab, profile, mode, progress } = ctx;
  const zone = lab.zoneOf(kind);
  const { config, configPath, port } = await gatewayConfig(ctx);
  const changeHosts = profile.gatewayChangeHosts;
  const nochgHosts = profile.gatewayNochgHosts;
  await importHosts(lab, lab, [kind], GATEWAY_CHANGE_FROM, GATEWAY_CHANGE_FROM + changeHosts);
  await importHosts(lab, lab, [kind], GATEWAY_NOCHG_FROM, GATEWAY_NOCHG_FROM + nochgHosts);
  const t = performance.now();
  const names = (from: number, n: number) => Array.from({ length: n }, (_, i) => `h${from + i}.${zone}`);
  const change = await makeKeys(lab.store, config, names(GATEWAY_CHANGE_FROM, changeHosts));
  const nochg = await makeKeys(lab.store, config, names(GATEWAY_NOCHG_FROM, nochgHosts));
  const keySeconds = round((performance.now() - t) / 1000, 2);
  progress(`gateway: ${changeHosts + nochgHosts} keys (one per host) in ${keySeconds} s`);

  const bridge = await startBridgeTarget(mode, config, configPath, new JsonLogger('warn'));
  const rss = new RssSampler(bridge);
  let result: GatewayResult | undefined;
  try {
    await gatewayReady(port);
    // The nochg hosts get their address once (each answer NOERROR); sending it again changes nothing.
    for (const h of nochg) h.address = nextAddress();
    const primed = await runGatewayLoad(ctx, { port, zone, hosts: nochg, concurrency: 64, seconds: 60, once: true });
    if (primed.ok !== nochg.length)
      throw new Error(
        `bench: gateway: setting the nochg hosts: ${primed.ok} of ${nochg.length} NOERROR (${primed.firstError})`,
      );
    const http = wrkLoads(ctx, kind, await primeNochg(ctx, kind, bridge));
    const seconds = profile.gatewaySeconds;
    const gwNochg = (s: number) =>
      withCpu(lab, bridge, () =>
        runGatewayLoad(ctx, { port, zone, hosts: nochg, concurrency: profile.gatewayNochgConcurrency, seconds: s }),
      );
    const answered = new Set<number>();
    const gwChange = (s: number) =>
      withCpu(
        lab,
        bridge,
        () =>
          runGatewayLoad(ctx, {
            port,
            zone,
            hosts: change,
            concurrency: profile.gatewayChangeConcurrency,
            seconds: s,
            answered,
          }),
        kind,
      );
    // Unmeasured: a fresh server's first second runs well below its pace (JIT).
    if (profile.warmUpSeconds > 0) {
      await gwChange(profile.warmUpSeconds);
      await http.storm(bridge, true, profile.warmUpSeconds);
      await gwNochg(profile.warmUpSeconds);
      await http.nochg(bridge, true, profile.warmUpSeconds);
    }
    const serialBefore = await soaSerial(ctx, kind);
    let serialAfter = serialBefore;
    const rounds: GatewayRound[] = [];
    for (let i = 0; i < profile.gatewayRounds; i++) {
      const gatewayFirst = i % 2 === 1;
      const [httpNochg, gwN] = await inOrder(
        () => http.nochg(bridge, true, seconds),
        async () => {
          const before = await soaSerial(ctx, kind);
          const m = await gwNochg(seconds);
          const after = await soaSerial(ctx, kind);
          // Only the gateway's nochg load is judged: the HTTP storm in between moves the serial.
          if (after !== before) serialAfter = serialBefore + (after - before);
          return m;
        },
        gatewayFirst,
      );
      const [httpStorm, gwC] = await inOrder(
        () => http.storm(bridge, true, seconds),
        () => gwChange(seconds),
        gatewayFirst,
      );
      rounds.push({ gatewayFirst, httpNochg, nochg: gwN, httpStorm, change: gwC });
      progress(
        `${kind} gateway round ${i + 1}${gatewayFirst ? ' (gateway first)' : ''}: ` +
          `nochg HTTP ${httpNochg.rps}/s, gateway ${gwN.rps}/s → ${round(gwN.rps / httpNochg.rps, 2)}; ` +
          `change HTTP storm ${httpStorm.rps}/s, gateway ${gwC.rps}/s → ${round(gwC.rps / httpStorm.rps, 2)}` +
          errorsOf([httpNochg, httpStorm]) +
          gatewayErrors([gwN, gwC]),
      );
    }
    // Hosts whose address a change set (NOERROR): Redis and the primary must agree on each.
    const set = [...answered].sort((a, b) => a - b);
    const sample = await checkSample(
      lab,
      kind,
      spread(0, set.length, 50).map((i) => change[set[i]!]!.fqdn),
    );
    progress(
      `${kind} gateway change sample: ${sample.matched} of ${sample.checked} published as Redis says${sample.firstMismatch ? ` (${sample.firstMismatch})` : ''}`,
    );
    const med = (f: (r: GatewayRound) => number) => round(median(rounds.map(f)), 3);
    result = {
      mode,
      nameserver: kind,
      seconds,
      keys: change.length + nochg.length,
      keySeconds,
      nochg: { concurrency: profile.gatewayNochgConcurrency, hosts: nochgHosts },
      change: { concurrency: profile.gatewayChangeConcurrency, hosts: changeHosts },
      httpNochg: { concurrency: profile.nochgConcurrency, hosts: profile.nochgHosts },
      httpStorm: { concurrency: profile.stormConcurrency, hosts: profile.stormHosts },
      rounds,
      nochgSerial: { before: serialBefore, after: serialAfter },
      sample,
      rss: { maxProcessBytes: 0, maxTotalBytes: 0, processes: 0, includesLoadGenerator: false, coldLogins: 0 },
      nochgVsHttp: med((r) => r.nochg.rps / r.httpNochg.rps),
      changeVsStorm: med((r) => r.change.rps / r.httpStorm.rps),
      cpu: {
        nochg: { gateway: cpuOf(rounds.map((r) => r.nochg)), http: cpuOf(rounds.map((r) => r.httpNochg)) },
        change: { gateway: cpuOf(rounds.map((r) => r.change)), http: cpuOf(rounds.map((r) => r.httpStorm)) },
      },
    };
  } finally {
    await bridge.stop();
    const sampled = rss.stop(false);
    if (result) result.rss = sampled;
  }
  return result;
}

/**
 * The lab's config with the gateway on: a fresh master secret (base64 of 32 bytes, mode 0600), a free port, and a
 * source rate no load here reaches (every message comes from 127.0.0.1).
 */
async function gatewayConfig(ctx: WrkContext): Promise<{ config: Config; configPath: string; port: number }> {
  const dir = ctx.lab.dir;
  await writePrivateFile(path.join(dir, 'gateway.key'), randomBytes(32).toString('base64') + '\n');
  const port = await freePort();
  const json = JSON.parse(await readFile(ctx.lab.configPath, 'utf8')) as Record<string, unknown>;
  json.gateway = { listen: [`127.0.0.1:${port}`], keyFile: 'gateway.key', ratePerSource: 100_000 };
  const configPath = path.join(dir, 'config-gateway.json');
  await writePrivateFile(configPath, JSON.stringify(json, null, 2));
  return { config: await loadConfig(configPath, {}), configPath, port };
}

/** A port free for TCP and UDP on 127.0.0.1 right now (the gateway binds both). */
async function freePort(): Promise<number> {
  for (;;) {
    const server = net.createServer();
    const port = await new Promise<number>((resolve) =>
      server.listen(0, '127.0.0.1', () => resolve((server.address() as net.AddressInfo).port)),
    );
    const udp = createSocket('udp4');
    const free = await new Promise<boolean>((resolve) => {
      udp.once('error', () => resolve(false));
      udp.bind(port, '127.0.0.1', () => resolve(true));
    });
    udp.close();
    await new Promise((resolve) => server.close(resolve));
    if (free) return port;
  }
}

/** A key per host (hmac-sha256), made as `token add H --tsig` makes it; `concurrency` at a time. */
async function makeKeys(store: WrkContext['lab']['store'], config: Config, fqdns: string[]): Promise<KeyedHost[]> {
  const admin = adminServiceOn(store, config, silentLogger);
  const out: KeyedHost[] = new Array<KeyedHost>(fqdns.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < fqdns.length) {
      const i = next++;
      const made = await admin.addToken(fqdns[i]!, { tsig: 'hmac-sha256', note: 'bench' });
      if (made.key === undefined) throw new Error('bench: token add --tsig made no key');
      out[i] = { fqdn: fqdns[i]!, keyName: made.key.name, secret: made.key.secret };
    }
  };
  await Promise.all(Array.from({ length: 32 }, worker));
  return out;
}

/** Wait until the gateway answers an SOA query for a zone (discovery, unsigned), up to 15 s. */
async function gatewayReady(port: number): Promise<void> {
  const socket = createSocket('udp4');
  try {
    const deadline = performance.now() + 15_000;
    const query = dnsPacket.encode({ type: 'query', id: 1, flags: 0, questions: [{ type: 'SOA', name: 'x' }] });
    for (;;) {
      const answered = await new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(false), 200);
        socket.once('message', () => {
          clearTimeout(timer);
          resolve(true);
        });
        socket.send(query, port, '127.0.0.1');
      });
      if (answered) return;
      if (performance.now() > deadline) throw new Error(`bench: the gateway on port ${port} never answered`);
    }
  } finally {
    socket.close();
  }
}

/** The zone's SOA serial as its primary answers. */
async function soaSerial(ctx: WrkContext, kind: LabKind): Promise<number> {
  const ns = ctx.lab.nameservers.get(kind)!;
  const socket = createSocket('udp4');
  try {
    const query = dnsPacket.encode({
      type: 'query',
      id: 2,
      flags: 0,
      questions: [{ type: 'SOA', name: ctx.lab.zoneOf(kind) }],
    });
    for (let attempt = 0; attempt < 3; attempt++) {
      const answer = await new Promise<dnsPacket.Packet | undefined>((resolve) => {
        const timer = setTimeout(() => resolve(undefined), 1000);
        socket.once('message', (msg) => {
          clearTimeout(timer);
          resolve(dnsPacket.decode(msg));
        });
        socket.send(query, ns.port, ns.host);
      });
      const soa = answer?.answers?.find((a) => a.type === 'SOA');
      if (soa) return (soa.data as { serial: number }).serial;
    }
    throw new Error(`bench: no SOA from the ${kind} primary`);
  } finally {
    socket.close();
  }
}

/** One run of the generator in its own process (its CPU is its own). `once`: each host once, then stop. */
async function runGatewayLoad(
  ctx: WrkContext,
  load: {
    port: number;
    zone: string;
    hosts: KeyedHost[];
    concurrency: number;
    seconds: number;
    once?: boolean;
    /** Filled with the indexes of the hosts answered NOERROR. */
    answered?: Set<number>;
  },
): Promise<GatewayMeasurement> {
  const job: GatewayJob = {
    port: load.port,
    zone: load.zone,
    hosts: load.hosts,
    concurrency: load.concurrency,
    seconds: load.seconds,
    addressBase: reserveAddresses(Math.ceil(load.seconds) * ADDRESSES_PER_SECOND),
    timeoutMs: 5_000,
    ...(load.once ? { once: true } : {}),
  };
  // The keys' secrets: in a file only the bench can read, never on the command line.
  const jobFile = path.join(ctx.lab.dir, `gateway-job-${process.pid}.json`);
  await writePrivateFile(jobFile, JSON.stringify(job));
  const rcvbuf0 = await udpReceiveBufferErrors();
  const gatewayDrops0 = await socketDrops(load.port);
  const stdout = await new Promise<string>((resolve, reject) =>
    execFile(
      process.execPath,
      [GATEWAY_LOAD_SCRIPT, jobFile],
      { timeout: (load.seconds + 30) * 1000, maxBuffer: 1 << 20 },
      (err, out, errOut) =>
        err ? reject(new Error(`gateway load generator failed: ${err.message} ${errOut}`)) : resolve(out),
    ),
  );
  const line = stdout.split('\n').find((l) => l.startsWith('GW '));
  if (!line) throw new Error(`gateway load generator printed no result: ${stdout.slice(0, 500)}`);
  const r = JSON.parse(line.slice(3)) as GatewayLoadResult;
  const ok = r.rcodes.NOERROR ?? 0;
  const errors = r.sent - ok;
  // As wrk counts: answers within the time bound over the time bound. A message the kernel dropped near the end
  // would otherwise stretch the run by the generator's timeout, and the rate with it.
  const window = load.once ? r.seconds : Math.min(r.seconds, load.seconds);
  const m: GatewayMeasurement = {
    ok,
    errors,
    seconds: round(window, 3),
    rps: round(window > 0 ? (load.once ? ok : r.okInTime) / window : 0, 1),
    p50Ms: r.p50Ms,
    p99Ms: r.p99Ms,
    rcodes: r.rcodes,
    timeouts: r.timeouts,
    hostsAnswered: r.answered.length,
    udpReceiveBufferErrors: (await udpReceiveBufferErrors()) - rcvbuf0,
    gatewaySocketDrops: (await socketDrops(load.port)) - gatewayDrops0,
  };
  if (r.firstError !== undefined) m.firstError = r.firstError;
  for (const i of r.answered) load.answered?.add(i);
  if (r.sent > 0) m.clientCpuMsPerRequest = round(r.cpuMs / r.sent, 3);
  return m;
}

/**
 * The kernel's count of UDP datagrams dropped because a socket's receive buffer was full (/proc/net/snmp,
 * RcvbufErrors; the whole machine's, so another program's drops would count too).
 */
async function udpReceiveBufferErrors(): Promise<number> {
  const snmp = await readFile('/proc/net/snmp', 'utf8').catch(() => '');
  const [names, values] = snmp.split('\n').filter((l) => l.startsWith('Udp: '));
  if (names === undefined || values === undefined) return 0;
  const i = names.split(' ').indexOf('RcvbufErrors');
  return i < 0 ? 0 : Number(values.split(' ')[i] ?? 0);
}

/** Datagrams dropped by the UDP sockets bound to 127.0.0.1:`port` (/proc/net/udp's last column): the gateway's. */
async function socketDrops(port: number): Promise<number> {
  const table = await readFile('/proc/net/udp', 'utf8').catch(() => '');
  const local = `0100007F:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  let drops = 0;
  for (const line of table.split('\n')) {
    const fields = line.trim().split(/\s+/);
    if (fields[1] === local) drops += Number(fields[fields.length - 1] ?? 0);
  }
  return drops;
}

/** Medians over the rounds of each party's CPU per request. */
function cpuOf(ms: readonly Measurement[]): PartyCpu {
  const med = (f: (m: Measurement) => number | undefined) => round(median(ms.map((m) => f(m) ?? 0)), 3);
  const withNs = ms.some((m) => m.nameserverCpuMsPerRequest !== undefined);
  const cpu: PartyCpu = {
    server: med((m) => m.cpuMsPerRequest),
    redis: med((m) => m.redisCpuMsPerRequest),
    client: med((m) => m.clientCpuMsPerRequest),
    total: med(
      (m) =>
        (m.cpuMsPerRequest ?? 0) +
        (m.redisCpuMsPerRequest ?? 0) +
        (m.nameserverCpuMsPerRequest ?? 0) +
        (m.clientCpuMsPerRequest ?? 0),
    ),
  };
  if (withNs) cpu.nameserver = med((m) => m.nameserverCpuMsPerRequest);
  return cpu;
}

/** ", GATEWAY ERRORS: …" when a gateway measurement had any. */
function gatewayErrors(ms: readonly GatewayMeasurement[]): string {
  const bad = ms.filter((m) => m.errors > 0);
  return bad.length === 0
    ? ''
    : `; GATEWAY ERRORS: ${bad.map((m) => `${m.errors} (${JSON.stringify(m.rcodes)}, ${m.timeouts} timeouts, kernel UDP receive buffer drops ${m.udpReceiveBufferErrors} (at the gateway's socket ${m.gatewaySocketDrops}), first ${m.firstError})`).join(', ')}`;
}
