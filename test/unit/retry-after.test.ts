/** `Retry-After` on the answers that say "come back later" (docs/protocol.md, "Retry-After"). */
import { expect } from 'chai';
import { retryAfterOf, retryAfterSeconds } from '../../src/core/outcomes.js';
import { encodeReply, outcomeReply, updateReply } from '../../src/http/reply.js';

const header = (raw: Buffer) => /\r\nRetry-After: (\d+)\r\n/.exec(raw.toString('latin1'))?.[1];

describe('Retry-After', () => {
  it('911 and dnserr: 10 s plus up to 9 s of jitter; abuse: an hour; nothing else', () => {
    expect(retryAfterSeconds('unavailable', () => 0)).to.equal(10);
    expect(retryAfterSeconds('dns-failed', () => 0.999)).to.equal(19);
    expect(retryAfterSeconds('abuse')).to.equal(3600);
    for (const o of ['changed', 'unchanged', 'bad-credentials', 'bad-agent', 'not-owner', 'closed'] as const)
      expect(retryAfterSeconds(o), o).to.equal(undefined);
    expect(retryAfterOf(['changed', 'dns-failed', 'abuse'], () => 0)).to.equal(3600);
    expect(retryAfterOf(['changed', 'unchanged'])).to.equal(undefined);
  });

  it('on the wire: 911, a dnserr line among good ones, abuse; never on good, nochg or badauth', () => {
    const seconds = Number(header(encodeReply(outcomeReply('unavailable', 'r'))));
    expect(seconds).to.be.within(10, 19);
    const mixed = updateReply(
      { kind: 'hosts', lines: [{ outcome: 'changed', addresses: '192.0.2.1' }, { outcome: 'dns-failed' }] },
      'r',
    );
    expect(Number(header(encodeReply(mixed)))).to.be.within(10, 19);
    expect(header(encodeReply(updateReply({ kind: 'hosts', lines: [{ outcome: 'abuse' }] }, 'r')))).to.equal('3600');
    expect(header(encodeReply(updateReply({ kind: 'hosts', lines: [{ outcome: 'changed' }] }, 'r')))).to.equal(
      undefined,
    );
    const badauth = encodeReply(outcomeReply('bad-credentials', 'r')).toString('latin1');
    expect(badauth).to.include('WWW-Authenticate: Basic realm="r"').and.not.include('Retry-After');
  });
});
