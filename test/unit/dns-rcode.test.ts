import { expect } from 'chai';
import { hintFor, rcodeFailure, rcodeName, responseFailure } from '../../src/dns/rcode.js';
import type { TsigVerdict } from '../../src/core/tsig.js';

const ZONE = 'dyn.example.org';
const ok: TsigVerdict = {
  ok: true,
  tsig: {
    keyName: 'k',
    algorithm: 'hmac-sha256',
    timeSigned: 0,
    fudge: 300,
    mac: Buffer.alloc(32),
    originalId: 1,
    error: 0,
    otherData: Buffer.alloc(0),
  },
};
const failed = (
  reason: Extract<TsigVerdict, { ok: false }>['reason'],
  extra: Partial<Extract<TsigVerdict, { ok: false }>> = {},
): TsigVerdict => ({
  ok: false,
  reason,
  detail: 'detail',
  ...extra,
});

describe('dns rcode → outcome (docs/protocol.md, "What goes into DNS")', () => {
  it('NOERROR with a valid TSIG is success', () => {
    expect(responseFailure(ZONE, 0, ok)).to.equal(undefined);
    expect(rcodeFailure(ZONE, 0)).to.equal(undefined);
  });

  it('SERVFAIL is retryable; the final rcodes are not', () => {
    expect(responseFailure(ZONE, 2, ok)).to.include({
      code: 'ERR_DNS_RCODE',
      rcode: 'SERVFAIL',
      retryable: true,
      zone: ZONE,
    });
    for (const [code, name] of [
      [1, 'FORMERR'],
      [5, 'REFUSED'],
      [9, 'NOTAUTH'],
      [10, 'NOTZONE'],
      [7, 'YXRRSET'],
    ] as const) {
      expect(responseFailure(ZONE, code, ok)).to.include({ code: 'ERR_DNS_RCODE', rcode: name, retryable: false });
    }
  });

  it('messages carry an operator hint naming the likely misconfiguration', () => {
    expect(responseFailure(ZONE, 5, ok)!.message).to.match(/update-policy \/ acl/);
    expect(responseFailure(ZONE, 9, ok)!.message).to.match(/acl/);
    expect(responseFailure(ZONE, 10, ok)!.message).to.match(/zone name/);
    expect(responseFailure(ZONE, 7, ok)!.message).to.match(/CNAME/);
    expect(responseFailure(ZONE, 5, ok)!.message).to.match(/^zone dyn\.example\.org: /);
  });

  it('TSIG errors reported by the primary map to BADSIG / BADKEY / BADTIME, never retryable', () => {
    expect(responseFailure(ZONE, 9, failed('server-badsig'))).to.include({
      code: 'ERR_DNS_TSIG',
      rcode: 'BADSIG',
      retryable: false,
    });
    expect(responseFailure(ZONE, 9, failed('server-badsig'))!.message).to.match(/secret mismatch/);
    expect(responseFailure(ZONE, 9, failed('server-badkey'))).to.include({ code: 'ERR_DNS_TSIG', rcode: 'BADKEY' });
    const badtime = responseFailure(ZONE, 9, failed('server-badtime', { skewSeconds: 3600 }))!;
    expect(badtime).to.include({ code: 'ERR_DNS_TSIG', rcode: 'BADTIME', retryable: false });
    expect(badtime.message)
      .to.match(/3600 s/)
      .and.match(/clock skew/);
  });

  it('a response we cannot verify is a TSIG failure even with NOERROR', () => {
    for (const reason of [
      'bad-mac',
      'key-mismatch',
      'algorithm-mismatch',
      'bad-time',
      'truncated-mac',
      'malformed',
      'unsigned',
    ] as const) {
      expect(responseFailure(ZONE, 0, failed(reason)), reason).to.include({ code: 'ERR_DNS_TSIG', retryable: false });
    }
    expect(responseFailure(ZONE, 0, failed('bad-mac'))!.rcode).to.equal('BADSIG');
    expect(responseFailure(ZONE, 0, failed('bad-time'))!.rcode).to.equal('BADTIME');
  });

  it('an unsigned error answer is reported by its rcode', () => {
    expect(responseFailure(ZONE, 9, failed('unsigned'))).to.include({
      code: 'ERR_DNS_RCODE',
      rcode: 'NOTAUTH',
      retryable: false,
    });
    expect(responseFailure(ZONE, 2, failed('unsigned'))).to.include({ rcode: 'SERVFAIL', retryable: true });
  });

  it('only an answer whose MAC verifies is a known refusal; any other may be forged and hide a NOERROR → maybeApplied', () => {
    expect(responseFailure(ZONE, 5, ok)).to.include({ maybeApplied: false });
    expect(responseFailure(ZONE, 9, failed('server-badtime', { macVerified: true, skewSeconds: 3600 }))).to.include({
      rcode: 'BADTIME',
      maybeApplied: false,
    });
    expect(
      responseFailure(ZONE, 5, failed('bad-time', { macVerified: true })),
      'verified, outside the time window',
    ).to.include({ maybeApplied: false });
    expect(
      responseFailure(ZONE, 0, failed('bad-time', { macVerified: true })),
      'a verified NOERROR was applied',
    ).to.include({ maybeApplied: true });
    expect(responseFailure(ZONE, 5, failed('unsigned'))).to.include({
      code: 'ERR_DNS_RCODE',
      rcode: 'REFUSED',
      maybeApplied: true,
    });
    const unverified = [
      'server-badsig',
      'server-badkey',
      'server-badtime',
      'server-badtrunc',
      'server-error',
      'bad-mac',
      'key-mismatch',
      'algorithm-mismatch',
      'truncated-mac',
      'malformed',
    ] as const;
    for (const reason of unverified) {
      for (const rcode of [0, 9])
        expect(responseFailure(ZONE, rcode, failed(reason)), `${reason} rcode ${rcode}`).to.include({
          code: 'ERR_DNS_TSIG',
          maybeApplied: true,
        });
    }
  });

  it('names every rcode, unknown ones by number', () => {
    expect(rcodeName(8)).to.equal('NXRRSET');
    expect(rcodeName(18)).to.equal('BADTIME');
    expect(rcodeName(15)).to.equal('RCODE15');
    expect(hintFor(undefined, 'ERR_DNS_CONNECTION')).to.match(/reach the primary/);
  });
});
