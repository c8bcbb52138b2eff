/**
 * askPrimary against answers real primaries give only in odd moments (a truncated answer, one
 * of the two answers lost, silence): a scripted UDP peer on 127.0.0.1. What named and knotd
 * answer is covered by test/integration/dns-publish.test.ts.
 */
import { expect } from 'chai';
import { createSocket, type Socket } from 'node:dgram';
import dnsPacket from 'dns-packet';
import { askPrimary } from '../../src/dns/authoritative.js';

type Reply = (query: dnsPacket.DecodedPacket) => dnsPacket.Packet | undefined;

/** A UDP peer that answers each query with `reply(query)` (undefined: no answer). */
async function scriptedPrimary(reply: Reply): Promise<{ port: number; queries: string[]; close(): void }> {
  const socket: Socket = createSocket('udp4');
  const queries: string[] = [];
  socket.on('message', (msg, from) => {
    const query = dnsPacket.decode(msg);
    queries.push(query.questions?.[0]?.type ?? '?');
    const answer = reply(query);
    if (answer) socket.send(dnsPacket.encode(answer), from.port, from.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', () => resolve()));
  return { port: socket.address().port, queries, close: () => socket.close() };
}

const NAME = 'mx.dyn.example.test';
const AA = dnsPacket.AUTHORITATIVE_ANSWER;
const TC = dnsPacket.TRUNCATED_RESPONSE;

function response(query: dnsPacket.DecodedPacket, flags: number, answers: dnsPacket.Answer[] = []): dnsPacket.Packet {
  return { type: 'response', id: query.id, flags, questions: query.questions, answers };
}

describe('dns/authoritative: askPrimary and answers a primary gives only in odd moments', () => {
  const ask = async (reply: Reply, timeoutMs = 300) => {
    const peer = await scriptedPrimary(reply);
    try {
      return { view: await askPrimary({ host: '127.0.0.1', port: peer.port }, NAME, timeoutMs), queries: peer.queries };
    } finally {
      peer.close();
    }
  };

  it('the scripted peer itself: an authoritative A is an address (so the cases below differ only in what they script)', async () => {
    const r = await ask((q) =>
      response(q, AA, q.questions![0]!.type === 'A' ? [{ type: 'A', name: NAME, ttl: 60, data: '192.0.2.9' }] : []),
    );
    expect(r.view).to.equal('address');
    expect(r.queries.sort()).to.deep.equal(['A', 'AAAA']);
  });

  it('a truncated answer (TC, nothing in it): unanswered — the resolvers decide, never "none"', async () => {
    expect((await ask((q) => response(q, AA | TC))).view).to.equal('unanswered');
    // truncated for AAAA only, an authoritative empty answer for A: still not "none"
    expect((await ask((q) => response(q, q.questions![0]!.type === 'AAAA' ? AA | TC : AA))).view).to.equal(
      'unanswered',
    );
  });

  it('one of the two answers lost: unanswered once the time is up (an empty A alone says nothing of AAAA)', async () => {
    expect((await ask((q) => (q.questions![0]!.type === 'A' ? response(q, AA) : undefined))).view).to.equal(
      'unanswered',
    );
  });

  it('both answered authoritatively empty: none; silence: unreachable', async () => {
    expect((await ask((q) => response(q, AA))).view).to.equal('none');
    expect((await ask(() => undefined)).view).to.equal('unreachable');
  });

  it('an answer with another id is not ours: ignored (silence then)', async () => {
    expect((await ask((q) => ({ ...response(q, AA), id: (q.id! + 1) & 0xffff }))).view).to.equal('unreachable');
  });
});
