/**
 * Published as Redis says: for a sample of hosts, the address the registry records must be
 * the A record the zone's primary serves (asked over UDP, one datagram each: no dig process
 * per host).
 */
import { createSocket } from 'node:dgram';
import dnsPacket from 'dns-packet';
import type { LabKind } from '../src/lab/index.js';
import type { BenchLab } from './lab.js';
import type { SampleCheck } from './report-types.js';

/** `n` indexes spread evenly over [from, from + count). */
export function spread(from: number, count: number, n: number): number[] {
  const k = Math.min(n, count);
  return Array.from({ length: k }, (_, i) => from + Math.floor((i * count) / k));
}

/**
 * Compare each host's recorded address with the primary's A record. A disagreement may be a
 * change still in flight (a request wrk left when its time was up): such hosts are asked
 * again until `settleMs` has passed, the time a lease takes to run out and be repaired.
 */
export async function checkSample(
  lab: BenchLab,
  kind: LabKind,
  fqdns: readonly string[],
  settleMs = 10_000,
): Promise<SampleCheck> {
  const ns = lab.nameservers.get(kind)!;
  const socket = createSocket('udp4');
  const ask = primaryAsker(socket, ns.host, ns.port);
  const deadline = performance.now() + settleMs;
  const disagreement = new Map<string, string>();
  const check = async (fqdn: string): Promise<void> => {
    const [record, published] = await Promise.all([
      lab.store.hosts.get(fqdn),
      ask(fqdn).catch((err: Error) => [`(${err.message})`]),
    ]);
    const recorded = record?.ipv4 ?? null;
    if (recorded !== null && published.length === 1 && published[0] === recorded) disagreement.delete(fqdn);
    else disagreement.set(fqdn, `${fqdn}: Redis ${recorded ?? 'no address'}, DNS ${published.join(' ') || 'no A'}`);
  };
  let pending = [...fqdns];
  try {
    for (;;) {
      await Promise.all(pending.map(check));
      pending = [...disagreement.keys()];
      if (pending.length === 0 || performance.now() > deadline) break;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  } finally {
    socket.close();
  }
  const result: SampleCheck = { checked: fqdns.length, matched: fqdns.length - disagreement.size };
  const first = disagreement.values().next();
  if (!first.done) result.firstMismatch = first.value;
  return result;
}

/**
 * The A records at a name, as the primary answers a non-recursive query (sorted; [] for
 * none). An unanswered query is asked again, up to three times 1 s apart, then rejects.
 */
function primaryAsker(
  socket: ReturnType<typeof createSocket>,
  host: string,
  port: number,
): (name: string) => Promise<string[]> {
  const waiting = new Map<number, (answer: dnsPacket.Packet) => void>();
  let nextId = 1;
  socket.on('message', (msg) => {
    let packet: dnsPacket.Packet;
    try {
      packet = dnsPacket.decode(msg);
    } catch {
      return;
    }
    if (packet.id !== undefined) waiting.get(packet.id)?.(packet);
  });
  return async (name) => {
    const id = nextId++ & 0xffff;
    const query = dnsPacket.encode({ type: 'query', id, flags: 0, questions: [{ type: 'A', name }] });
    try {
      for (let attempt = 0; attempt < 3; attempt++) {
        const answer = await new Promise<dnsPacket.Packet | undefined>((resolve) => {
          const timer = setTimeout(() => resolve(undefined), 1000);
          waiting.set(id, (p) => {
            clearTimeout(timer);
            resolve(p);
          });
          socket.send(query, port, host);
        });
        if (answer) {
          const rcode = (answer as { rcode?: string }).rcode;
          if (rcode !== 'NOERROR' && rcode !== 'NXDOMAIN') throw new Error(`${name}: the primary answered ${rcode}`);
          return (answer.answers ?? []).flatMap((a) => (a.type === 'A' ? [a.data] : [])).sort();
        }
      }
      throw new Error(`${name}: no answer from the primary at ${host}:${port}`);
    } finally {
      waiting.delete(id);
    }
  };
}
