/**
 * What a zone's primary holds at a name now, asked over UDP without recursion: whether the
 * name has an address, is an alias, or is missing — and only when the primary answers with
 * authority. node:dns hides the AA bit, so a referral (a name below a delegation inside the
 * zone, which the primary does not hold) would look like "no such record" there.
 */
import { createSocket } from 'node:dgram';
import { randomInt } from 'node:crypto';
import { isIPv6 } from 'node:net';
import dnsPacket from 'dns-packet';

/**
 * 'address': an A or AAAA at the name; 'alias': a CNAME at the name; 'none': an authoritative
 * NXDOMAIN or no A/AAAA; 'referral': the name is below a delegation (the primary does not
 * hold it); 'unanswered': not enough usable answers in time to tell (one of the two lost,
 * truncated); 'unreachable': the primary serves us no queries now (no answer at all, an error
 * rcode such as REFUSED, a socket that cannot reach it).
 */
export type PrimaryView = 'address' | 'alias' | 'none' | 'referral' | 'unanswered' | 'unreachable';

/** Never throws: every failure is a view. */
export function askPrimary(
  primary: { host: string; port: number },
  name: string,
  timeoutMs: number,
): Promise<PrimaryView> {
  return new Promise<PrimaryView>((resolve) => {
    const socket = createSocket(isIPv6(primary.host) ? 'udp6' : 'udp4');
    const pending = new Set<number>(); // the ids of our queries not answered yet
    const views: PrimaryView[] = [];
    let done = false;
    const finish = (view: PrimaryView): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.close();
      resolve(view);
    };
    const timer = setTimeout(() => finish(views.length === 0 ? 'unreachable' : 'unanswered'), timeoutMs);
    socket.on('error', () => finish('unreachable'));
    socket.on('message', (msg) => {
      let packet: dnsPacket.Packet;
      try {
        packet = dnsPacket.decode(msg);
      } catch {
        return;
      }
      if (packet.id === undefined || !pending.has(packet.id) || packet.type !== 'response') return;
      pending.delete(packet.id);
      views.push(viewOf(packet, name));
      // An address, an alias or a refusal decides at once; 'none' only once both types said so.
      const decided = views.find((v) => v === 'address' || v === 'alias' || v === 'unreachable');
      if (decided) return finish(decided);
      if (pending.size === 0)
        finish(views.every((v) => v === 'none') ? 'none' : views.includes('unanswered') ? 'unanswered' : 'referral');
    });
    try {
      // Connected: the kernel drops datagrams from anyone else.
      socket.connect(primary.port, primary.host, (err?: Error) => {
        if (err || done) return finish('unreachable');
        for (const type of ['A', 'AAAA'] as const) {
          let id = randomInt(0, 0x10000);
          while (pending.has(id)) id = randomInt(0, 0x10000);
          pending.add(id);
          socket.send(dnsPacket.encode({ type: 'query', id, flags: 0, questions: [{ type, name }] }));
        }
      });
    } catch {
      finish('unreachable');
    }
  });
}

function viewOf(
  packet: dnsPacket.Packet & { flag_aa?: boolean; flag_tc?: boolean; rcode?: string },
  name: string,
): PrimaryView {
  if (packet.flag_tc) return 'unanswered'; // the answer did not fit (no EDNS here): the resolvers tell
  const owner = name.toLowerCase().replace(/\.$/, '');
  const at = (packet.answers ?? []).filter((r) => r.name.toLowerCase().replace(/\.$/, '') === owner);
  if (at.some((r) => r.type === 'CNAME')) return 'alias';
  if (at.some((r) => r.type === 'A' || r.type === 'AAAA')) return 'address';
  if (packet.rcode !== 'NXDOMAIN' && packet.rcode !== 'NOERROR') return 'unreachable';
  return packet.flag_aa ? 'none' : 'referral';
}
