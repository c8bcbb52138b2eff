import { expect } from 'chai';
import type { HostChange } from '../../src/app/ports.js';
import { emptyDnsState, type TargetState } from '../../src/core/types.js';
import { planChange } from '../../src/dns/plan.js';
import { encodeUpdate, type UpdateOperation } from '../../src/core/dns-wire.js';

const HOST = 'h.dyn.example.org';
const WILD = '*.h.dyn.example.org';

function change(target: Partial<TargetState>): HostChange {
  return {
    fqdn: HOST,
    zone: 'dyn.example.org',
    previous: emptyDnsState(),
    target: { ipv4: null, ipv6: null, wildcard: false, mx: null, backmx: false, offline: false, ...target },
  };
}

/** Operations as short strings, in order: `-name TYPE` deletes an RRset, `+name TTL TYPE data` adds. */
function ops(updates: readonly UpdateOperation[]): string[] {
  return updates.map((u) => {
    if (u.kind === 'delete-rrset') return `-${u.name} ${u.type}`;
    const d = u.data;
    const text =
      d.type === 'MX'
        ? `${d.preference} ${d.exchange}`
        : d.type === 'CNAME'
          ? d.target
          : d.type === 'TXT'
            ? d.text
            : d.address;
    return `+${u.name} ${u.ttl} ${d.type} ${text}`;
  });
}

describe('dns plan (docs/protocol.md, "What goes into DNS")', () => {
  it('always starts with the "host CNAME does not exist" prerequisite; without wildcard adds nothing else', () => {
    for (const target of [
      {},
      { offline: true },
      { offline: true, wildcard: true },
      { ipv4: '192.0.2.1', mx: 'mx.example.net', backmx: true },
    ]) {
      expect(planChange(change(target), 60).prerequisites).to.deep.equal([
        { kind: 'rrset-absent', name: HOST, type: 'CNAME' },
      ]);
    }
  });

  it('wildcard addresses also need "*.host CNAME does not exist": the primary would ignore the adds beside one', () => {
    expect(planChange(change({ ipv4: '192.0.2.1', wildcard: true }), 60).prerequisites).to.deep.equal([
      { kind: 'rrset-absent', name: HOST, type: 'CNAME' },
      { kind: 'rrset-absent', name: WILD, type: 'CNAME' },
    ]);
  });

  it('leave: a family neither asked for nor stored is not touched at host (nor at *.host with wildcard on)', () => {
    const leave = { ipv4: false, ipv6: true };
    expect(ops(planChange({ ...change({ ipv4: '192.0.2.1' }), leave }, 60).updates)).to.deep.equal([
      `-${HOST} A`,
      `+${HOST} 60 A 192.0.2.1`,
      `-${WILD} A`,
      `-${WILD} AAAA`, // wildcard OFF deletes both families at *.host (docs/protocol.md, "What goes into DNS")
      `-${HOST} MX`,
    ]);
    expect(ops(planChange({ ...change({ ipv4: '192.0.2.1', wildcard: true }), leave }, 60).updates)).to.deep.equal([
      `-${HOST} A`,
      `+${HOST} 60 A 192.0.2.1`,
      `-${WILD} A`,
      `+${WILD} 60 A 192.0.2.1`,
      `-${HOST} MX`,
    ]);
    // A family with an address in the target is always replaced; offline deletes everything.
    expect(
      ops(
        planChange({ ...change({ ipv4: '192.0.2.1', ipv6: '2001:db8::1' }), leave: { ipv4: true, ipv6: true } }, 60)
          .updates,
      ),
    ).to.include.members([`-${HOST} A`, `-${HOST} AAAA`]);
    expect(
      ops(planChange({ ...change({ offline: true }), leave: { ipv4: true, ipv6: true } }, 60).updates),
    ).to.deep.equal([`-${HOST} A`, `-${HOST} AAAA`, `-${WILD} A`, `-${WILD} AAAA`]);
  });

  it('IPv4 only: replaces A, deletes AAAA, wildcard and MX', () => {
    const plan = planChange(change({ ipv4: '192.0.2.1' }), 60);
    expect(plan).to.include({ fqdn: HOST, zone: 'dyn.example.org' });
    expect(ops(plan.updates)).to.deep.equal([
      `-${HOST} A`,
      `+${HOST} 60 A 192.0.2.1`,
      `-${HOST} AAAA`,
      `-${WILD} A`,
      `-${WILD} AAAA`,
      `-${HOST} MX`,
    ]);
  });

  it('IPv6 only', () => {
    expect(ops(planChange(change({ ipv6: '2001:db8::7' }), 60).updates)).to.deep.equal([
      `-${HOST} A`,
      `-${HOST} AAAA`,
      `+${HOST} 60 AAAA 2001:db8::7`,
      `-${WILD} A`,
      `-${WILD} AAAA`,
      `-${HOST} MX`,
    ]);
  });

  it('dual stack with wildcard: the same addresses at *.host, TTL from config', () => {
    expect(
      ops(planChange(change({ ipv4: '192.0.2.1', ipv6: '2001:db8::7', wildcard: true }), 300).updates),
    ).to.deep.equal([
      `-${HOST} A`,
      `+${HOST} 300 A 192.0.2.1`,
      `-${HOST} AAAA`,
      `+${HOST} 300 AAAA 2001:db8::7`,
      `-${WILD} A`,
      `-${WILD} AAAA`,
      `+${WILD} 300 A 192.0.2.1`,
      `+${WILD} 300 AAAA 2001:db8::7`,
      `-${HOST} MX`,
    ]);
  });

  it('wildcard on with one family adds only that family at *.host', () => {
    const added = ops(planChange(change({ ipv4: '192.0.2.1', wildcard: true }), 60).updates).filter((o) =>
      o.startsWith(`+${WILD}`),
    );
    expect(added).to.deep.equal([`+${WILD} 60 A 192.0.2.1`]);
  });

  it('MX with backmx=NO: one MX 10 <mx>', () => {
    const updates = ops(planChange(change({ ipv4: '192.0.2.1', mx: 'mx.example.net' }), 60).updates);
    expect(updates.slice(-2)).to.deep.equal([`-${HOST} MX`, `+${HOST} 60 MX 10 mx.example.net`]);
  });

  it('MX with backmx=YES: MX 10 <host> then MX 20 <mx>', () => {
    const updates = ops(planChange(change({ ipv4: '192.0.2.1', mx: 'mx.example.net', backmx: true }), 60).updates);
    expect(updates.slice(-3)).to.deep.equal([
      `-${HOST} MX`,
      `+${HOST} 60 MX 10 ${HOST}`,
      `+${HOST} 60 MX 20 mx.example.net`,
    ]);
  });

  it('mx null: deletes the MX RRset, adds none (backmx is irrelevant)', () => {
    const updates = ops(planChange(change({ ipv4: '192.0.2.1', mx: null, backmx: true }), 60).updates);
    expect(updates.filter((o) => o.includes(' MX'))).to.deep.equal([`-${HOST} MX`]);
  });

  it('offline: deletes A and AAAA at host and *.host, leaves MX alone, adds nothing', () => {
    const plan = planChange(change({ offline: true, mx: 'mx.example.net', backmx: true, wildcard: true }), 60);
    expect(ops(plan.updates)).to.deep.equal([`-${HOST} A`, `-${HOST} AAAA`, `-${WILD} A`, `-${WILD} AAAA`]);
  });

  it('never contains an untyped (ANY) delete', () => {
    const plan = planChange(
      change({ ipv4: '192.0.2.1', ipv6: '2001:db8::1', wildcard: true, mx: 'm.example.net', backmx: true }),
      60,
    );
    for (const u of plan.updates) if (u.kind === 'delete-rrset') expect(['A', 'AAAA', 'MX']).to.include(u.type);
  });

  it('a name of 252 or 253 characters (no room for "*."): no wildcard deletes, and it encodes', () => {
    const zone = 'dyn.example.org';
    for (const length of [251, 252, 253]) {
      const label = (n: number) => 'a'.repeat(n);
      // labels of at most 63 characters, then one that makes up the length
      let fqdn = zone;
      while (fqdn.length + 64 <= length) fqdn = `${label(63)}.${fqdn}`;
      fqdn = `${label(length - fqdn.length - 1)}.${fqdn}`;
      expect(fqdn).to.have.length(length);
      const c = { ...change({ ipv4: '192.0.2.1' }), fqdn, zone };
      for (const plan of [planChange(c, 60), planChange({ ...c, target: { ...c.target, offline: true } }, 60)]) {
        const wildcards = plan.updates.filter((u) => u.name.startsWith('*.'));
        expect(wildcards, `${length} characters`).to.have.length(length === 251 ? 2 : 0);
        expect(() =>
          encodeUpdate({ id: 1, zone, prerequisites: plan.prerequisites, updates: plan.updates }),
        ).to.not.throw();
      }
    }
  });
});
