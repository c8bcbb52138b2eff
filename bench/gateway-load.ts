/**
 * The RFC 2136 gateway's load generator (gateway-rounds.ts), a child process so that its CPU is its own, as wrk's is:
 *
 *   node gateway-load.js JOBFILE   → prints one line `GW {…}` (the counts, latencies and its own CPU) and exits.
 *
 * JOBFILE (mode 0600, in the lab's directory) holds the hosts and their keys: the secrets never go on a command line.
 * Every message is a UDP UPDATE for one host, signed with that host's own key (src/core/tsig.ts signMessage), as
 * ddclient and nsupdate send it: delete the host's A RRset, add one A. `concurrency` slots each keep one message in
 * flight; slot k uses hosts k, k + concurrency, … in turn, so no two messages in flight name the same host.
 *
 * Why not dnsperf (`dnsperf -u`): it signs every message of a run with the one key of `-y` (the secret on its
 * command line, no key file), and a gateway key is good for one host only (docs/security.md, "Gateway keys"): a load
 * over many hosts needs a key per message. One generator for both loads keeps the two rows comparable.
 *
 * Answers are matched by message id and counted by RCODE; their TSIG is not verified (the server's signing is
 * measured, the client's check of it is not part of the load).
 */
import { createSocket } from 'node:dgram';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { RCODE_LIST } from '../src/core/dns-wire.js';
import { signMessage } from '../src/core/tsig.js';
import { summarize, type Measurement } from './stats.js';

export interface GatewayJob {
  port: number;
  zone: string;
  /** Each host's name and key; `address`: the nochg load's address (the one set before), else a new one each time. */
  hosts: { fqdn: string; keyName: string; secret: string; address?: string }[];
  concurrency: number;
  seconds: number;
  /** Change loads: message s carries address 10.x.y.z from `addressBase + s` (raw-dns.ts reserveAddresses). */
  addressBase: number;
  /** A message unanswered for this long counts as a timeout (an error) and its slot goes on. */
  timeoutMs: number;
  /** Each host once, then stop (setting the nochg hosts' addresses); `seconds` still bounds it. */
  once?: boolean;
}

export interface GatewayLoadResult {
  /** Answers by RCODE name (NOERROR is the only one expected). */
  rcodes: Record<string, number>;
  timeouts: number;
  sent: number;
  /** From the first message until the last answer or timeout (past the time bound by the slowest message). */
  seconds: number;
  /** NOERROR answers that came within the time bound (`job.seconds` after the start): the rate's numerator. */
  okInTime: number;
  p50Ms: number;
  p99Ms: number;
  firstError?: string;
  /** This process's CPU (user + system) over the run, ms. */
  cpuMs: number;
  /** The indexes (in the job's order) of the hosts that had a message answered NOERROR. */
  answered: number[];
}

const RCODE_NAMES: readonly string[] = RCODE_LIST;
const TYPE_A = 1;
const TYPE_SOA = 6;
const CLASS_IN = 1;
const CLASS_ANY = 255;
const OPCODE_UPDATE = 5;
const ADDRESS_SPACE = 0xffffff;

function encodeName(name: string): Buffer {
  const parts = name.split('.').filter(Boolean);
  const out = Buffer.alloc(parts.reduce((n, p) => n + p.length + 1, 1));
  let o = 0;
  for (const p of parts) {
    out[o++] = p.length;
    o += out.write(p, o, 'ascii');
  }
  return out;
}

/** The unsigned UPDATE: zone SOA IN; delete FQDN A (class ANY); add FQDN 60 IN A address. */
export function updateMessage(id: number, zone: Buffer, fqdn: Buffer, address: readonly number[]): Buffer {
  const header = Buffer.alloc(12);
  header.writeUInt16BE(id, 0);
  header.writeUInt16BE(OPCODE_UPDATE << 11, 2);
  header.writeUInt16BE(1, 4); // ZOCOUNT
  header.writeUInt16BE(2, 8); // UPCOUNT
  const zoneTail = Buffer.alloc(4);
  zoneTail.writeUInt16BE(TYPE_SOA, 0);
  zoneTail.writeUInt16BE(CLASS_IN, 2);
  const del = Buffer.alloc(10);
  del.writeUInt16BE(TYPE_A, 0);
  del.writeUInt16BE(CLASS_ANY, 2);
  const add = Buffer.alloc(14);
  add.writeUInt16BE(TYPE_A, 0);
  add.writeUInt16BE(CLASS_IN, 2);
  add.writeUInt32BE(60, 4);
  add.writeUInt16BE(4, 8);
  for (let i = 0; i < 4; i++) add[10 + i] = address[i]!;
  return Buffer.concat([header, zone, zoneTail, fqdn, del, fqdn, add]);
}

/** This file, to run as a child process. */
export const GATEWAY_LOAD_SCRIPT = fileURLToPath(import.meta.url);

export async function runGatewayLoad(job: GatewayJob): Promise<GatewayLoadResult> {
  const cpu0 = process.cpuUsage();
  const zone = encodeName(job.zone);
  const hosts = job.hosts.map((h) => ({
    fqdn: encodeName(h.fqdn),
    key: { name: h.keyName, algorithm: 'hmac-sha256' as const, secret: Buffer.from(h.secret, 'base64') },
    address: h.address?.split('.').map(Number),
  }));
  const socket = createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  // A receive buffer that holds every answer in flight (the kernel caps it at net.core.rmem_max): a drop counted
  // while it runs is the gateway's, not the generator's (gateway-rounds.ts reads both sockets' drops).
  try {
    socket.setRecvBufferSize(4 * 1024 * 1024);
  } catch {
    // the default, then
  }
  const rcodes: Record<string, number> = {};
  const latencies: number[] = [];
  let timeouts = 0;
  let sent = 0;
  let okInTime = 0;
  let firstError: string | undefined;
  let seq = 0;
  let nextId = 0;
  const waiting = new Map<number, (rcode: number) => void>();
  socket.on('message', (msg) => {
    if (msg.length < 12) return;
    const done = waiting.get(msg.readUInt16BE(0));
    if (done) done(msg[3]! & 0x0f);
  });
  const start = performance.now();
  const deadline = start + job.seconds * 1000;
  const one = (slot: number, turn: number): Promise<void> => {
    const index = (slot + turn * job.concurrency) % hosts.length;
    const h = hosts[index]!;
    let address = h.address;
    if (address === undefined) {
      const v = (job.addressBase + seq++) % ADDRESS_SPACE;
      address = [10, (v >> 16) & 255, (v >> 8) & 255, v & 255];
    }
    let id = nextId;
    while (waiting.has(id)) id = (id + 1) & 0xffff;
    nextId = (id + 1) & 0xffff;
    const message = signMessage(updateMessage(id, zone, h.fqdn, address), h.key, {
      timeSigned: Math.floor(Date.now() / 1000),
      fudge: 300,
    }).message;
    const t = performance.now();
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        waiting.delete(id);
        timeouts++;
        firstError ??= `no answer within ${job.timeoutMs} ms`;
        resolve();
      }, job.timeoutMs);
      waiting.set(id, (rcode) => {
        clearTimeout(timer);
        waiting.delete(id);
        const name = RCODE_NAMES[rcode] ?? `RCODE${rcode}`;
        rcodes[name] = (rcodes[name] ?? 0) + 1;
        if (rcode === 0) {
          const now = performance.now();
          latencies.push(now - t);
          if (now <= deadline) okInTime++;
          answered[index] = 1;
        } else firstError ??= name;
        resolve();
      });
      sent++;
      socket.send(message, job.port, '127.0.0.1');
    });
  };
  const slots = Math.min(job.concurrency, hosts.length);
  const answered = new Uint8Array(hosts.length);
  const loop = async (slot: number): Promise<void> => {
    for (let turn = 0; performance.now() < deadline; turn++) {
      if (job.once && slot + turn * job.concurrency >= hosts.length) return;
      await one(slot, turn);
    }
  };
  await Promise.all(Array.from({ length: slots }, (_, slot) => loop(slot)));
  const seconds = (performance.now() - start) / 1000;
  socket.close();
  const m: Measurement = summarize(latencies, rcodes.NOERROR ?? 0, 0, seconds);
  const cpu = process.cpuUsage(cpu0);
  return {
    rcodes,
    timeouts,
    sent,
    seconds,
    okInTime,
    p50Ms: m.p50Ms,
    p99Ms: m.p99Ms,
    ...(firstError === undefined ? {} : { firstError }),
    cpuMs: (cpu.user + cpu.system) / 1000,
    answered: [...answered.keys()].filter((i) => answered[i] === 1),
  };
}

// As a child process: the job from the file named on the command line, the result on stdout.
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const job = JSON.parse(await readFile(process.argv[2]!, 'utf8')) as GatewayJob;
  const result = await runGatewayLoad(job);
  process.stdout.write(`GW ${JSON.stringify(result)}\n`);
}
