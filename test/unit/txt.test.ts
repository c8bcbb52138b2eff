/**
 * ACME TXT records (docs/protocol.md, "ACME TXT records"): the value check and parameters (core/txt, core/params), the
 * plan and wire bytes of a TXT set, and the use case (app/txt) over fakes of its ports.
 */
import type { SecondaryWait } from '../../src/app/propagation.js';
import { expect } from 'chai';
import type { HostChange, Lease, Publisher } from '../../src/app/ports.js';
import { TxtFault, TxtService, type TxtAdmission, type TxtAdmitRequest, type TxtGate } from '../../src/app/txt.js';
import { DnsUpdateError } from '../../src/core/errors.js';
import type { Logger } from '../../src/core/log.js';
import { parseUpdateParams } from '../../src/core/params.js';
import {
  acmeNameOf,
  isValidTxtValue,
  parseTxtAsk,
  storedTxt,
  txtHostname,
  txtValueOfKeyAuthorization,
} from '../../src/core/txt.js';
import type { HostRecord } from '../../src/core/types.js';
import { planChange } from '../../src/dns/plan.js';
import { encodeUpdate } from '../../src/core/dns-wire.js';

const quiet: Logger = { debug() {}, info() {}, warn() {}, error() {} };
const VALUE = 'LoqXcYV8q5ONbJQxbmR7SCTNo3tiAXDfowyjxAjEuX0';

describe('core/txt: ACME TXT values and parameters', () => {
  it('accepts printable ASCII of 1 to 255 bytes, nothing else', () => {
    expect(isValidTxtValue(VALUE)).to.equal(true);
    expect(isValidTxtValue('a b "c" \\ ~')).to.equal(true);
    expect(isValidTxtValue('x'.repeat(255))).to.equal(true);
    expect(isValidTxtValue('x'.repeat(256))).to.equal(false);
    expect(isValidTxtValue('')).to.equal(false);
    expect(isValidTxtValue('a\nb')).to.equal(false);
    expect(isValidTxtValue('tab\there')).to.equal(false);
    expect(isValidTxtValue('bücher')).to.equal(false);
  });

  it('txt= sets, clear=true removes all, both remove one value; an invalid value is invalid', () => {
    expect(parseTxtAsk(undefined, undefined)).to.equal(undefined);
    expect(parseTxtAsk(undefined, 'false')).to.equal(undefined);
    expect(parseTxtAsk(VALUE, undefined)).to.deep.equal({ op: 'set', value: VALUE });
    expect(parseTxtAsk(undefined, 'TRUE')).to.deep.equal({ op: 'clear' });
    expect(parseTxtAsk(VALUE, 'yes')).to.deep.equal({ op: 'remove', value: VALUE });
    expect(parseTxtAsk('', undefined)).to.deep.equal({ op: 'invalid' });
    expect(parseTxtAsk('x'.repeat(256), 'true')).to.deep.equal({ op: 'invalid' });
  });

  it('a TXT request may name its host as _acme-challenge.<host>; an address update may not', () => {
    expect(txtHostname('_acme-challenge.Home.Dyn.Example.Org.')).to.equal('home.dyn.example.org');
    expect(txtHostname('home.dyn.example.org')).to.equal('home.dyn.example.org');
    const txt = parseUpdateParams(
      new Map([
        ['hostname', ['_acme-challenge.h.dyn.example.org']],
        ['txt', [VALUE]],
      ]),
    );
    expect(txt.hosts[0]!.fqdn).to.equal('h.dyn.example.org');
    expect(txt.txt).to.deep.equal({ op: 'set', value: VALUE });
    expect(txt.systemSupported).to.equal(true);
    const address = parseUpdateParams(new Map([['hostname', ['_acme-challenge.h.dyn.example.org']]]));
    expect(address.hosts[0]!.fqdn).to.equal(undefined);
    expect(address.txt).to.equal(undefined);
  });

  it('an invalid value makes the request badsys (systemSupported false)', () => {
    const p = parseUpdateParams(
      new Map([
        ['hostname', ['h.dyn.example.org']],
        ['txt', ['a\u0001b']],
      ]),
    );
    expect(p.systemSupported).to.equal(false);
  });

  it('the challenge name fits in 253 characters or there is none; RAW mode value = base64url(sha256(keyAuth))', () => {
    expect(acmeNameOf('h.dyn.example.org')).to.equal('_acme-challenge.h.dyn.example.org');
    const long = `${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(37)}.example.org`;
    expect(acmeNameOf(long)).to.equal(undefined);
    // RFC 8555 §8.4: the digest of the key authorization, base64url without padding.
    expect(txtValueOfKeyAuthorization('token.thumbprint')).to.match(/^[A-Za-z0-9_-]{43}$/);
    expect(storedTxt({})).to.deep.equal({});
    expect(storedTxt({ txt: [] })).to.deep.equal({ txt: [] });
  });
});

describe('dns plan and wire: the TXT set', () => {
  const base: HostChange = {
    fqdn: 'h.ex.org',
    zone: 'ex.org',
    previous: { ipv4: '192.0.2.1', ipv6: null, wildcard: false, mx: null, backmx: false },
    target: { ipv4: '192.0.2.1', ipv6: null, wildcard: false, mx: null, backmx: false, offline: false },
  };

  it('txtOnly: a CNAME prerequisite, a typed delete and one record per value at _acme-challenge; nothing else', () => {
    const plan = planChange({ ...base, txt: ['v1', 'v2'], txtOnly: true }, 60);
    expect(plan.prerequisites).to.deep.equal([
      { kind: 'rrset-absent', name: '_acme-challenge.h.ex.org', type: 'CNAME' },
    ]);
    expect(plan.updates).to.deep.equal([
      { kind: 'delete-rrset', name: '_acme-challenge.h.ex.org', type: 'TXT' },
      { kind: 'add', name: '_acme-challenge.h.ex.org', ttl: 60, data: { type: 'TXT', text: 'v1' } },
      { kind: 'add', name: '_acme-challenge.h.ex.org', ttl: 60, data: { type: 'TXT', text: 'v2' } },
    ]);
    const cleared = planChange({ ...base, txt: [], txtOnly: true }, 60);
    expect(cleared.prerequisites).to.deep.equal([]);
    expect(cleared.updates).to.deep.equal([{ kind: 'delete-rrset', name: '_acme-challenge.h.ex.org', type: 'TXT' }]);
  });

  it('an address change leaves TXT alone unless it carries the set (a republish), then appends it', () => {
    const plain = planChange(base, 60);
    expect(plain.updates.some((u) => u.name.startsWith('_acme'))).to.equal(false);
    const republish = planChange({ ...base, txt: ['v1'] }, 60);
    expect(republish.updates.slice(0, plain.updates.length)).to.deep.equal(plain.updates);
    expect(republish.updates.slice(plain.updates.length).map((u) => u.kind)).to.deep.equal(['delete-rrset', 'add']);
  });

  it('encodes a TXT record as one character-string (length byte, ASCII)', () => {
    const buf = encodeUpdate({
      id: 1,
      zone: 'ex.org',
      prerequisites: [],
      updates: [{ kind: 'add', name: 'ex.org', ttl: 60, data: { type: 'TXT', text: 'abc' } }],
    });
    // owner: a pointer to the apex; TYPE 16, CLASS IN, TTL 60, RDLENGTH 4, 03 'abc'
    expect(buf.subarray(buf.length - 16).toString('hex')).to.equal('c00c001000010000003c000403616263');
    expect(() =>
      encodeUpdate({
        id: 1,
        zone: 'ex.org',
        prerequisites: [],
        updates: [{ kind: 'add', name: 'ex.org', ttl: 60, data: { type: 'TXT', text: 'x'.repeat(256) } }],
      }),
    ).to.throw(/255 bytes/);
  });
});

describe('app/txt: the TXT use case', () => {
  const host: HostRecord = {
    fqdn: 'h.ex.org',
    account: 'alice',
    type: 'dynamic',
    state: 'active',
    ipv4: '192.0.2.1',
    ipv6: null,
    wildcard: false,
    mx: null,
    backmx: false,
    updatedAt: 1,
    txt: ['old'],
  };
  const lease: Lease = { fqdn: 'h.ex.org', token: 't' };

  function setup(
    admissions: TxtAdmission[],
    publish: (c: HostChange) => Promise<void> = async () => undefined,
    secondaries?: SecondaryWait,
    waits: [string, string][] = [],
  ) {
    const calls = { admits: [] as TxtAdmitRequest[], published: [] as HostChange[], commits: [] as string[][] };
    const released: unknown[] = [];
    const gate: TxtGate = {
      admitTxt: async (req) => {
        calls.admits.push(req);
        // Past the list: the host stays held by another change.
        return admissions.shift() ?? { kind: 'busy' };
      },
      commitTxt: async (_l, values) => {
        calls.commits.push([...values]);
        return 'committed';
      },
    };
    const publisher: Publisher = {
      zoneFor: () => 'ex.org',
      publish: async (c) => {
        calls.published.push(c);
        await publish(c);
      },
      recentlyUnreachable: () => false,
    };
    const service = new TxtService({
      txt: gate,
      hosts: { release: async (_l, opts) => void released.push(opts) },
      publisher,
      settings: { txtLimit: 30, txtWindowMs: 3_600_000, propagationTimeoutMs: 1234 },
      leaseMs: 5000,
      maxBusyWaitMs: 50,
      logger: quiet,
      sleep: async () => undefined,
      ...(secondaries === undefined
        ? {}
        : {
            secondaries,
            telemetry: { secondaryWait: (zone: string, outcome: string) => waits.push([zone, outcome]) },
          }),
    });
    return { service, calls, released };
  }
  const account = { name: 'alice', donator: false };
  const change = (values: string[], repairDue = false): TxtAdmission => ({
    kind: 'change',
    host,
    lease,
    values,
    repairDue,
    families: { ipv4: false, ipv6: false },
  });

  it('publishes the set alone, then records it: good VALUE', async () => {
    const { service, calls } = setup([change(['old', VALUE])]);
    const line = await service.change('h.ex.org', 'ex.org', account, { op: 'set', value: VALUE });
    expect(line).to.deep.equal({ outcome: 'changed', addresses: VALUE });
    expect(calls.admits[0]).to.include({ fqdn: 'h.ex.org', account: 'alice', keep: 2, limit: 30 });
    expect(calls.published[0]).to.include({ txtOnly: true });
    expect(calls.published[0]!.txt).to.deep.equal(['old', VALUE]);
    expect(calls.commits).to.deep.equal([['old', VALUE]]);
  });

  it('nochg VALUE without DNS; rejections as the store says; clear shows no value', async () => {
    const { service, calls } = setup([{ kind: 'nochg' }, { kind: 'rejected', outcome: 'abuse' }, change([])]);
    expect(await service.change('h.ex.org', 'ex.org', account, { op: 'set', value: VALUE })).to.deep.equal({
      outcome: 'unchanged',
      addresses: VALUE,
    });
    expect(await service.change('h.ex.org', 'ex.org', account, { op: 'set', value: VALUE })).to.deep.equal({
      outcome: 'abuse',
    });
    expect(await service.change('h.ex.org', 'ex.org', account, { op: 'clear' })).to.deep.equal({
      outcome: 'changed',
      addresses: '',
    });
    expect(calls.published).to.have.length(1);
  });

  it('a set (changed or nochg) answers once the secondaries serve the value, within acme.propagationTimeout; clear does not wait', async () => {
    const asked: unknown[][] = [];
    let answer: 'served' | 'timeout' | 'none' = 'served';
    const wait: SecondaryWait = {
      untilServed: async (...args) => {
        asked.push(args);
        return answer;
      },
    };
    const waits: [string, string][] = [];
    const { service } = setup([change([VALUE]), { kind: 'nochg' }, change([])], undefined, wait, waits);
    expect(await service.change('h.ex.org', 'ex.org', account, { op: 'set', value: VALUE })).to.deep.include({
      outcome: 'changed',
    });
    expect(asked).to.deep.equal([['ex.org', '_acme-challenge.h.ex.org', 'TXT', { includes: VALUE }, 1234]]);
    answer = 'timeout';
    expect(await service.change('h.ex.org', 'ex.org', account, { op: 'set', value: VALUE })).to.deep.include({
      outcome: 'unchanged',
    });
    await service.change('h.ex.org', 'ex.org', account, { op: 'clear' });
    expect(asked).to.have.length(2);
    expect(waits).to.deep.equal([
      ['ex.org', 'served'],
      ['ex.org', 'timeout'],
    ]);
  });

  it('taking over an interrupted change, the stored state is published with the set', async () => {
    const { service, calls } = setup([change([VALUE], true)]);
    await service.change('h.ex.org', 'ex.org', account, { op: 'set', value: VALUE });
    expect(calls.published[0]!.txtOnly).to.equal(undefined);
    expect(calls.published[0]!.target.ipv4).to.equal('192.0.2.1');
    expect(calls.published[0]!.txt).to.deep.equal([VALUE]);
  });

  it('dnserr releases the lease (a republish when the UPDATE may have been applied), nothing recorded', async () => {
    const err = new DnsUpdateError('ERR_DNS_TIMEOUT', 'ex.org', 'timeout', { maybeApplied: true });
    const { service, calls, released } = setup([change([VALUE])], () => Promise.reject(err));
    expect(await service.change('h.ex.org', 'ex.org', account, { op: 'set', value: VALUE })).to.deep.equal({
      outcome: 'dns-failed',
    });
    expect(released).to.deep.equal([{ republishInMs: 0 }]);
    expect(calls.commits).to.deep.equal([]);
  });

  it('a host held past the wait is a fault (911); a login check that fails refuses the request', async () => {
    const busy = setup([]);
    let caught: unknown;
    await busy.service.change('h.ex.org', 'ex.org', account, { op: 'clear' }).catch((e: unknown) => (caught = e));
    expect(caught).to.be.instanceOf(TxtFault);
    const refused = setup([{ kind: 'refused', check: 'login' }]);
    expect(await refused.service.change('h.ex.org', 'ex.org', account, { op: 'clear' })).to.deep.equal({
      refused: 'login',
    });
  });
});
