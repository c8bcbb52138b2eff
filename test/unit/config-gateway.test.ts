/** The `gateway` section (docs/configuration.md): listeners, the master secret's file, limits. */
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { parseConfig, type ParseOptions } from '../../src/config/load.js';
import { planReload } from '../../src/config/reload.js';
import { configError, parseOptions } from '../support/config-errors.js';

const SECRET = randomBytes(32).toString('base64');
const MASTER = randomBytes(32);
const zones = [{ name: 'dyn.example.org', primary: '127.0.0.1:53', key: { name: 'ddns-key', secret: SECRET } }];
const withKey = parseOptions({
  '/etc/ddns-bridge/gateway.key': `# made with openssl rand -base64 32\n${MASTER.toString('base64')}\n`,
});

describe('config: gateway', () => {
  it('absent: no gateway; present: listen (default 127.0.0.1:5353 and [::1]:5353), the master secret, limits', () => {
    expect(parseConfig({ zones }, parseOptions())).to.not.have.property('gateway');
    const config = parseConfig({ zones, gateway: { keyFile: 'gateway.key' } }, withKey);
    expect(config.gateway).to.deep.equal({
      listen: [
        { host: '127.0.0.1', port: 5353 },
        { host: '::1', port: 5353 },
      ],
      masterSecret: MASTER,
      ratePerSource: 20,
      maxConnections: 256,
    });
    const tuned = parseConfig(
      { zones, gateway: { listen: ['[::]:53'], keyFile: 'gateway.key', ratePerSource: 5, maxConnections: 9 } },
      withKey,
    );
    expect(tuned.gateway).to.include({ ratePerSource: 5, maxConnections: 9 });
  });

  it('errors name the setting and never repeat the secret', () => {
    const short = parseOptions({ '/etc/ddns-bridge/gateway.key': randomBytes(16).toString('base64') });
    const bind = parseOptions({
      '/etc/ddns-bridge/gateway.key': `key "k" { algorithm hmac-sha256; secret "${SECRET}"; };`,
    });
    const cases: [unknown, ParseOptions, string, string][] = [
      [{ gateway: {} }, withKey, 'gateway.keyFile', 'required setting is missing'],
      [{ gateway: { keyFile: 'nope' } }, withKey, 'gateway.keyFile', 'cannot read'],
      [{ gateway: { keyFile: 'gateway.key' } }, short, 'gateway.keyFile', 'at least 32 bytes'],
      [{ gateway: { keyFile: 'gateway.key' } }, bind, 'gateway.keyFile', 'one base64 secret'],
      [{ gateway: { listen: [], keyFile: 'gateway.key' } }, withKey, 'gateway.listen', 'at least one address'],
      [
        { gateway: { listen: ['dns.example:53'], keyFile: 'gateway.key' } },
        withKey,
        'gateway.listen[0]',
        'address:port',
      ],
      [
        { listen: ['127.0.0.1:5353'], gateway: { listen: ['127.0.0.1:5353'], keyFile: 'gateway.key' } },
        withKey,
        'gateway.listen[0]',
        'is the address of another listener',
      ],
      [{ gateway: { keyFile: 'gateway.key', ratePerSource: 0 } }, withKey, 'gateway.ratePerSource', ''],
      [{ gateway: { keyFile: 'gateway.key', port: 53 } }, withKey, 'gateway.port', 'unknown setting'],
    ];
    for (const [extra, o, key, message] of cases) {
      const err = configError({ zones, ...(extra as object) }, o);
      expect(err.key, JSON.stringify(extra)).to.equal(key);
      expect(err.message, JSON.stringify(extra)).to.include(message);
      expect(err.message).to.not.include(MASTER.toString('base64'));
      expect(err.message).to.not.include(SECRET);
    }
  });

  it('a reload leaves the gateway as it is (a restart applies it)', () => {
    const before = parseConfig({ zones }, withKey);
    const after = parseConfig({ zones, gateway: { keyFile: 'gateway.key' } }, withKey);
    const plan = planReload(before, after);
    expect(plan.needsRestart).to.deep.equal(['gateway']);
    expect(plan.config).to.not.have.property('gateway');
  });
});
