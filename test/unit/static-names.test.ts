/**
 * Static names (core/static-names.ts): a configured entry as a pattern, which names a pattern covers, and why a
 * name cannot be a host (its own name or its wildcard name is static), through the registration check too.
 */
import { expect } from 'chai';
import { checkRegistration } from '../../src/core/registration.js';
import {
  hostsAtStaticNames,
  NO_STATIC_NAMES,
  parseStaticName,
  staticNameMatch,
  staticNameProblem,
  staticNamesByZone,
} from '../../src/core/static-names.js';

const ZONE = 'dyn.example.org';

const pattern = (raw: string, zone = ZONE) => {
  const parsed = parseStaticName(raw, zone);
  if ('problem' in parsed) return expect.fail(`${raw}: ${parsed.problem}`);
  return parsed.pattern;
};
const problem = (raw: string, zone = ZONE) => {
  const parsed = parseStaticName(raw, zone);
  if ('pattern' in parsed) return expect.fail(`${raw}: accepted as ${parsed.pattern}`);
  return parsed.problem;
};

describe('core/static-names: parseStaticName', () => {
  it('a label or relative name is below the zone; case and spaces around are ignored', () => {
    expect(pattern('www')).to.equal(`www.${ZONE}`);
    expect(pattern(' VPN.Office ')).to.equal(`vpn.office.${ZONE}`);
    expect(pattern('_dmarc')).to.equal(`_dmarc.${ZONE}`);
  });

  it('an FQDN in the zone, with or without its trailing dot, is that name', () => {
    expect(pattern(`mail.${ZONE}`)).to.equal(`mail.${ZONE}`);
    expect(pattern(`Mail.${ZONE.toUpperCase()}.`)).to.equal(`mail.${ZONE}`);
    expect(pattern(`*.lab.${ZONE}.`)).to.equal(`*.lab.${ZONE}`);
  });

  it('`*.` first is a pattern for the names below', () => {
    expect(pattern('*.lab')).to.equal(`*.lab.${ZONE}`);
    expect(pattern('*.a.b')).to.equal(`*.a.b.${ZONE}`);
  });

  it('refuses `*` alone (every name of the zone), the apex, and an FQDN outside the zone', () => {
    for (const all of ['*', '*.', `*.${ZONE}`, `*.${ZONE}.`]) expect(problem(all), all).to.match(/"\*" alone/);
    expect(problem(`${ZONE}.`)).to.match(/zone apex/);
    expect(problem(ZONE)).to.match(/zone apex/);
    expect(problem('www.example.net.')).to.equal(`www.example.net is not in the zone ${ZONE}`);
    // Without the dot a name is relative: www.example.net.<zone>.
    expect(pattern('www.example.net')).to.equal(`www.example.net.${ZONE}`);
  });

  it('refuses a `*` not first, bad labels, and a name over 253 characters', () => {
    expect(problem('a.*.b')).to.match(/only as the first label/);
    expect(problem('*.*.b')).to.match(/only as the first label/);
    expect(problem('w*w')).to.match(/"w\*w" is not a label/);
    expect(problem('')).to.match(/expected a name/);
    expect(problem('a..b')).to.match(/"" is not a label/);
    expect(problem('-www')).to.match(/"-www" is not a label/);
    expect(problem('a b')).to.match(/is not a label/);
    expect(problem('x'.repeat(64))).to.match(/is not a label/);
    const long = Array(4).fill('x'.repeat(60)).join('.');
    expect(problem(long)).to.match(/longer than 253/);
  });
});

describe('core/static-names: staticNameMatch', () => {
  const patterns = [`www.${ZONE}`, `*.lab.${ZONE}`];

  it('a name covers that name alone, any type at it', () => {
    expect(staticNameMatch(`www.${ZONE}`, patterns)).to.equal(`www.${ZONE}`);
    expect(staticNameMatch(`a.www.${ZONE}`, patterns)).to.equal(undefined);
    expect(staticNameMatch(`*.www.${ZONE}`, patterns)).to.equal(undefined);
    expect(staticNameMatch(`xwww.${ZONE}`, patterns)).to.equal(undefined);
  });

  it('`*.lab` covers every name below lab at any depth, the literal *.lab too, not lab itself', () => {
    for (const name of [`a.lab.${ZONE}`, `b.a.lab.${ZONE}`, `*.lab.${ZONE}`, `*.a.lab.${ZONE}`])
      expect(staticNameMatch(name, patterns), name).to.equal(`*.lab.${ZONE}`);
    for (const name of [`lab.${ZONE}`, `xlab.${ZONE}`, `a.xlab.${ZONE}`, ZONE])
      expect(staticNameMatch(name, patterns), name).to.equal(undefined);
  });

  it('no patterns: nothing is static', () => {
    expect(staticNameMatch(`www.${ZONE}`, [])).to.equal(undefined);
  });
});

describe('core/static-names: never a host', () => {
  const zones = [
    { name: ZONE, staticNames: [`www.${ZONE}`, `*.lab.${ZONE}`] },
    { name: 'other.example', staticNames: [] },
  ];
  const byZone = staticNamesByZone(zones);

  it('a static name, a name a pattern covers, and a name whose wildcard is static are refused', () => {
    expect(staticNameProblem(`www.${ZONE}`, ZONE, byZone)).to.equal(
      `www.${ZONE} is a static name of zone ${ZONE} (zones[].staticNames): never a host`,
    );
    expect(staticNameProblem(`pc.lab.${ZONE}`, ZONE, byZone)).to.equal(
      `pc.lab.${ZONE} is a static name of zone ${ZONE} (*.lab.${ZONE} in zones[].staticNames): never a host`,
    );
    // Every update of lab writes or deletes *.lab: the operator's records there would go.
    expect(staticNameProblem(`lab.${ZONE}`, ZONE, byZone)).to.equal(
      `lab.${ZONE} cannot be a host: its wildcard name *.lab.${ZONE}, which every update of the host rewrites, ` +
        `is a static name of zone ${ZONE} (*.lab.${ZONE} in zones[].staticNames)`,
    );
  });

  it('other names, and names of a zone without static names, can be hosts', () => {
    for (const name of [`home.${ZONE}`, `a.www.${ZONE}`, `xlab.${ZONE}`])
      expect(staticNameProblem(name, ZONE, byZone), name).to.equal(undefined);
    expect(staticNameProblem('www.other.example', 'other.example', byZone)).to.equal(undefined);
    expect(staticNameProblem(`www.${ZONE}`, ZONE, NO_STATIC_NAMES)).to.equal(undefined);
  });

  it('checkRegistration refuses them after the name and zone checks, before the type', () => {
    const zoneNames = zones.map((z) => z.name);
    expect(checkRegistration(`WWW.${ZONE}.`, 'dynamic', zoneNames, byZone)).to.deep.equal({
      problem: `www.${ZONE} is a static name of zone ${ZONE} (zones[].staticNames): never a host`,
    });
    expect(checkRegistration(`www.${ZONE}`, 'bogus', zoneNames, byZone))
      .to.have.property('problem')
      .that.match(/static/);
    expect(checkRegistration(`home.${ZONE}`, 'dynamic', zoneNames, byZone)).to.deep.equal({
      fqdn: `home.${ZONE}`,
      type: 'dynamic',
      between: [],
    });
    expect(checkRegistration(`www.${ZONE}`, 'dynamic', zoneNames, NO_STATIC_NAMES)).to.not.have.property('problem');
  });

  it('hostsAtStaticNames: the registered hosts the check would refuse now, sorted, with why', () => {
    const hosts = [`www.${ZONE}`, `home.${ZONE}`, `pc.lab.${ZONE}`, `lab.${ZONE}`, 'www.other.example'].map((fqdn) => ({
      fqdn,
      account: 'acct',
    }));
    const found = hostsAtStaticNames(hosts, zones);
    expect(found.map((f) => f.host.fqdn)).to.deep.equal([`lab.${ZONE}`, `pc.lab.${ZONE}`, `www.${ZONE}`]);
    expect(found[2]!.problem).to.equal(staticNameProblem(`www.${ZONE}`, ZONE, byZone));
    expect(hostsAtStaticNames(hosts, [{ name: ZONE, staticNames: [] }])).to.deep.equal([]);
  });
});
