/**
 * `zones[].staticNames` (issue 30): read into lower-case FQDNs and `*.` patterns in the frozen Config, default
 * none; each refusal names the item (`zones[0].staticNames[2]`).
 */
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { parseConfig } from '../../src/config/load.js';
import { planReload } from '../../src/config/reload.js';
import { configError, parseOptions } from '../support/config-errors.js';

const secret = randomBytes(32).toString('base64');
const zone = (name: string, staticNames?: unknown) => ({
  name,
  primary: '127.0.0.1:53',
  key: { name: 'k', secret },
  ...(staticNames === undefined ? {} : { staticNames }),
});
const ZONE = 'dyn.example.org';
const parse = (zones: unknown[]) => parseConfig({ zones }, parseOptions());
const refusal = (zones: unknown[]) => configError({ zones }, parseOptions());

describe('config: zones[].staticNames', () => {
  it('labels, relative names, FQDNs in the zone and *. patterns, normalised; frozen; none by default', () => {
    const c = parse([
      zone('Dyn.Example.ORG.', ['www', 'VPN.office', `mail.${ZONE}`, `smtp.${ZONE}.`, '*.Lab']),
      zone('other.example'),
    ]);
    expect(c.zones[0]!.staticNames).to.deep.equal([
      `www.${ZONE}`,
      `vpn.office.${ZONE}`,
      `mail.${ZONE}`,
      `smtp.${ZONE}`,
      `*.lab.${ZONE}`,
    ]);
    expect(c.zones[1]!.staticNames).to.deep.equal([]);
    expect(Object.isFrozen(c.zones[0]!.staticNames)).to.equal(true);
    expect(parse([zone(ZONE, [])]).zones[0]!.staticNames).to.deep.equal([]);
  });

  const cases: [string, unknown[], string, string][] = [
    ['not an array', [zone(ZONE, 'www')], 'zones[0].staticNames', 'expected an array, got a string'],
    [
      'not a string',
      [zone(ZONE, ['www', 'mail', 25])],
      'zones[0].staticNames[2]',
      'expected a name such as "www", "vpn.office", "mail.<zone>." or "*.lab", got a number',
    ],
    ['`*` alone', [zone(ZONE, ['*'])], 'zones[0].staticNames[0]', '"*" alone would make every name'],
    ['the apex', [zone(ZONE, [`${ZONE}.`])], 'zones[0].staticNames[0]', `${ZONE} is the zone apex`],
    [
      'an FQDN of another zone',
      [zone(ZONE, ['www', 'www.example.net.'])],
      'zones[0].staticNames[1]',
      `www.example.net is not in the zone ${ZONE}`,
    ],
    ['a bad label', [zone(ZONE, ['a_b', 'bad label'])], 'zones[0].staticNames[1]', '"bad label" is not a label'],
    ['`*` inside', [zone(ZONE, ['a.*.b'])], 'zones[0].staticNames[0]', '"*" only as the first label'],
    [
      'the same name twice',
      [zone(ZONE, ['www', `WWW.${ZONE}.`])],
      'zones[0].staticNames[1]',
      `www.${ZONE} is listed already (zones[0].staticNames[0])`,
    ],
    [
      'a name of a configured child zone',
      [zone('example.org', ['www', 'home.dyn']), zone(ZONE)],
      'zones[0].staticNames[1]',
      `home.${ZONE} is in the zone ${ZONE} (zones[1]), configured too: list it in that zone's staticNames`,
    ],
    [
      'the apex of a configured child zone',
      [zone(ZONE), zone('example.org', ['dyn'])],
      'zones[1].staticNames[0]',
      `${ZONE} is the apex of the zone ${ZONE} (zones[0]), configured too`,
    ],
    [
      'every name of a configured child zone',
      [zone(ZONE), zone('example.org', ['*.dyn'])],
      'zones[1].staticNames[0]',
      `*.${ZONE} is in the zone ${ZONE} (zones[0]), configured too: list its names in that zone's staticNames`,
    ],
  ];
  for (const [what, zones, key, message] of cases) {
    it(`refuses ${what}, naming ${key}`, () => {
      const err = refusal(zones);
      expect(err.key).to.equal(key);
      expect(err.message).to.contain(`config: ${key}: ${message}`);
    });
  }

  it('a child zone lists its own names; the parent may list names around it', () => {
    const c = parse([zone('example.org', ['www', '*.lab']), zone(ZONE, ['www'])]);
    expect(c.zones.map((z) => z.staticNames)).to.deep.equal([
      ['www.example.org', '*.lab.example.org'],
      [`www.${ZONE}`],
    ]);
  });

  it('a reload does not apply a change: it is part of zones, which needs a restart', () => {
    const plan = planReload(parse([zone(ZONE)]), parse([zone(ZONE, ['www'])]));
    expect(plan.needsRestart).to.deep.equal(['zones']);
    expect(plan.config.zones[0]!.staticNames).to.deep.equal([]);
  });
});
