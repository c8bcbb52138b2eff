/**
 * The SerialProbe port (app/propagation.ts) over DNS: SOA serials asked straight at a zone's primary and at its
 * secondaries (UDP, no recursion, authoritative answers only), and the secondaries of a zone: the configured ones
 * and, with `auto`, its NS names resolved through the primary's own records (docs/operators.md, "Secondaries").
 */
import { randomInt } from 'node:crypto';
import { createSocket } from 'node:dgram';
import { isIP, isIPv6 } from 'node:net';
import dnsPacket from 'dns-packet';
import type { Secondary, SecondaryWait, SerialProbe, ServedExpectation } from '../app/propagation.js';
import type { ZoneConfig } from '../config/schema.js';
import { canonicalIPv6 } from '../core/addresses.js';

type Answer = dnsPacket.Packet & { flag_aa?: boolean; rcode?: string };
/** A record of an answer section, its data as dns-packet decodes it for the type. */
const dataOf = (r: unknown): unknown => (r as { data?: unknown }).data;

/** One query over UDP to one server; rejects on no answer in time, a socket error or an answer not ours. */
export function queryServer(
  server: { host: string; port: number },
  name: string,
  type: 'SOA' | 'NS' | 'A' | 'AAAA' | 'TXT',
  timeoutMs: number,
): Promise<Answer> {
  return new Promise<Answer>((resolve, reject) => {
    const socket = createSocket(isIPv6(server.host) ? 'udp6' : 'udp4');
    const id = randomInt(0, 0x10000);
    let done = false;
    const finish = (err: Error | undefined, answer?: Answer): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.close();
      if (err) reject(err);
      else resolve(answer!);
    };
    const timer = setTimeout(() => finish(new Error(`no answer from ${server.host}:${server.port}`)), timeoutMs);
    socket.on('error', (err) => finish(err));
    socket.on('message', (msg) => {
      let packet: Answer;
      try {
        packet = dnsPacket.decode(msg);
      } catch {
        return;
      }
      if (packet.id === id && packet.type === 'response') finish(undefined, packet);
    });
    try {
      // Connected: the kernel drops datagrams from anyone else.
      socket.connect(server.port, server.host, (err?: Error) => {
        if (err) return finish(err);
        socket.send(dnsPacket.encode({ type: 'query', id, flags: 0, questions: [{ type, name }] }));
      });
    } catch (err) {
      finish(err as Error);
    }
  });
}

const owner = (name: string) => name.toLowerCase().replace(/\.$/, '');

/** The serial `server` serves for `zone`, from an authoritative answer; rejects otherwise. */
export async function soaSerial(
  server: { host: string; port: number },
  zone: string,
  timeoutMs: number,
): Promise<number> {
  const answer = await queryServer(server, zone, 'SOA', timeoutMs);
  const soa = (answer.answers ?? []).find((r) => r.type === 'SOA' && owner(r.name) === zone);
  if (answer.rcode !== 'NOERROR' || !answer.flag_aa || soa === undefined)
    throw new Error(`${server.host}:${server.port} does not serve ${zone} (${answer.rcode ?? 'no rcode'})`);
  return (dataOf(soa) as { serial: number }).serial;
}

/** The values of an RRset `server` serves at `name` (authoritative; none: []); rejects when it does not answer. */
export async function recordValues(
  server: { host: string; port: number },
  name: string,
  type: 'A' | 'AAAA' | 'TXT',
  timeoutMs: number,
): Promise<string[]> {
  if (type === 'TXT') return txtValues(server, name, timeoutMs);
  const answer = await queryServer(server, name, type, timeoutMs);
  if ((answer.rcode !== 'NOERROR' && answer.rcode !== 'NXDOMAIN') || !answer.flag_aa)
    throw new Error(`${server.host}:${server.port} gives no authoritative answer for ${name}`);
  // dns-packet shortens an IPv6 address its own way; the store keeps RFC 5952's.
  const text = (r: unknown) => (type === 'AAAA' ? canonicalIPv6(String(dataOf(r))) : String(dataOf(r)));
  return (answer.answers ?? []).filter((r) => r.type === type && owner(r.name) === owner(name)).map(text);
}

function matches(values: readonly string[], expected: ServedExpectation): boolean {
  if ('includes' in expected) return values.includes(expected.includes);
  return values.length === expected.exactly.length && expected.exactly.every((v) => values.includes(v));
}

/** The TXT values `server` serves at `name` (authoritative; none: []); rejects when it does not answer. */
export async function txtValues(
  server: { host: string; port: number },
  name: string,
  timeoutMs: number,
): Promise<string[]> {
  const answer = await queryServer(server, name, 'TXT', timeoutMs);
  if ((answer.rcode !== 'NOERROR' && answer.rcode !== 'NXDOMAIN') || !answer.flag_aa)
    throw new Error(`${server.host}:${server.port} gives no authoritative answer for ${name}`);
  return (answer.answers ?? [])
    .filter((r) => r.type === 'TXT' && owner(r.name) === owner(name))
    .map((r) => (dataOf(r) as Buffer[]).map((b) => b.toString()).join(''));
}

/** NS names resolved through the primary are asked again after this long. */
const AUTO_REFRESH_MS = 300_000;

/** Waits between the polls of a secondary for a record: a NOTIFY and IXFR take about a second. */
const SERVED_POLL_FIRST_MS = 100;
const SERVED_POLL_MAX_MS = 1000;

export class DnsSerialProbe implements SerialProbe, SecondaryWait {
  private readonly zones = new Map<string, ZoneConfig>();
  private readonly auto = new Map<string, { at: number; found: Secondary[] }>();

  constructor(
    zones: readonly ZoneConfig[],
    private readonly timeoutMs: number,
  ) {
    for (const z of zones) if (z.secondaries) this.zones.set(z.name, z);
  }

  /** The zones with secondaries configured: the only ones watched. */
  get watchedZones(): string[] {
    return [...this.zones.keys()];
  }

  primarySerial(zone: string): Promise<number> {
    const z = this.zoneOf(zone);
    return soaSerial(z.primary, zone, this.timeoutMs);
  }

  secondarySerial(zone: string, secondary: Secondary): Promise<number> {
    return soaSerial(secondary, zone, this.timeoutMs);
  }

  async secondaries(zone: string): Promise<readonly Secondary[]> {
    const z = this.zoneOf(zone);
    const fixed = z.secondaries!.servers.map((s) => secondaryOf(s.host, s.port));
    if (!z.secondaries!.auto) return fixed;
    const cached = this.auto.get(zone);
    let found = cached?.found;
    if (cached === undefined || Date.now() - cached.at > AUTO_REFRESH_MS) {
      // A primary that does not answer now keeps the last list.
      found = (await this.nsAddresses(z).catch(() => undefined)) ?? cached?.found ?? [];
      this.auto.set(zone, { at: Date.now(), found });
    }
    const names = new Set(fixed.map((s) => s.name));
    return [...fixed, ...found!.filter((s) => !names.has(s.name))];
  }

  /** The zone's NS names, each resolved (A and AAAA) through the primary, on port 53, the primary itself left out. */
  private async nsAddresses(z: ZoneConfig): Promise<Secondary[]> {
    const ns = await queryServer(z.primary, z.name, 'NS', this.timeoutMs);
    const names = (ns.answers ?? []).filter((r) => r.type === 'NS').map((r) => owner(dataOf(r) as string));
    const out: Secondary[] = [];
    for (const name of names) {
      if (isIP(name)) continue;
      for (const type of ['A', 'AAAA'] as const) {
        const answer = await queryServer(z.primary, name, type, this.timeoutMs).catch(() => undefined);
        for (const r of answer?.answers ?? []) {
          if (r.type !== type || owner(r.name) !== name) continue;
          const address = dataOf(r) as string;
          if (address === z.primary.host && z.primary.port === 53) continue;
          out.push(secondaryOf(address, 53));
        }
      }
    }
    return out;
  }

  /** Waits in progress end now ('timeout'), and new ones do not start: the process is stopping. */
  stop(): void {
    this.stopped = true;
    for (const wake of this.sleepers) wake();
    this.sleepers.clear();
  }

  private stopped = false;
  private readonly sleepers = new Set<() => void>();

  /** Sleep `ms`, or less if stop() comes first. */
  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.sleepers.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      timer.unref();
      this.sleepers.add(wake);
    });
  }

  async untilServed(
    zone: string,
    name: string,
    type: 'A' | 'AAAA' | 'TXT',
    expected: ServedExpectation,
    timeoutMs: number,
  ): Promise<'served' | 'timeout' | 'none'> {
    if (!this.zones.has(zone)) return 'none';
    if (this.stopped) return 'timeout';
    const deadline = Date.now() + timeoutMs;
    const secondaries = await this.secondaries(zone).catch(() => [] as readonly Secondary[]);
    if (secondaries.length === 0) return 'none';
    const served = await Promise.all(
      secondaries.map(async (s) => {
        for (let wait = SERVED_POLL_FIRST_MS; ; wait = Math.min(SERVED_POLL_MAX_MS, Math.round(wait * 1.5))) {
          const left = deadline - Date.now();
          if (left <= 0 || this.stopped) return false;
          const values = await recordValues(s, name, type, Math.min(this.timeoutMs, left)).catch(() => undefined);
          if (values !== undefined && matches(values, expected)) return true;
          await this.pause(Math.min(wait, Math.max(0, deadline - Date.now())));
        }
      }),
    );
    return served.every(Boolean) ? 'served' : 'timeout';
  }

  private zoneOf(zone: string): ZoneConfig {
    const z = this.zones.get(zone);
    if (z === undefined) throw new Error(`zone ${zone} has no secondaries configured`);
    return z;
  }
}

function secondaryOf(host: string, port: number): Secondary {
  return { name: isIPv6(host) ? `[${host}]:${port}` : `${host}:${port}`, host, port };
}
