/** The `admin` section, and what a reload may change (config/reload.ts). */
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { parseConfig, type ParseOptions } from '../../src/config/load.js';
import { planReload } from '../../src/config/reload.js';
import { contextOf } from '../../src/cli/context.js';
import { configError, parseOptions } from '../support/config-errors.js';

const SECRET = randomBytes(32).toString('base64');
const TOKEN = 'f'.repeat(64);
const zones = [{ name: 'dyn.example.org', primary: '127.0.0.1:53', key: { name: 'ddns-key', secret: SECRET } }];

const opts = parseOptions;

const withToken = opts({ '/etc/ddns-bridge/admin.token': `${TOKEN}\n` });

describe('config: admin', () => {
  it('absent: no admin listener; present: listen (default 127.0.0.1:9245) and the token from a file or the environment', () => {
    expect(parseConfig({ zones }, opts())).to.not.have.property('admin');
    const fromFile = parseConfig({ zones, admin: { tokenFile: 'admin.token' } }, withToken);
    expect(fromFile.admin).to.deep.equal({
      listen: [{ host: '127.0.0.1', port: 9245 }],
      token: TOKEN,
      maxConnections: 100,
    });
    const fromEnv = parseConfig(
      { zones, admin: { listen: ['[::1]:9300', '127.0.0.1:0'], tokenEnv: 'ADMIN_TOKEN', maxConnections: 8 } },
      opts({}, { ADMIN_TOKEN: TOKEN }),
    );
    expect(fromEnv.admin).to.deep.equal({
      listen: [
        { host: '::1', port: 9300 },
        { host: '127.0.0.1', port: 0 },
      ],
      token: TOKEN,
      maxConnections: 8,
    });
  });

  it('errors name the setting and never repeat the token', () => {
    const cases: [unknown, ParseOptions, string, string][] = [
      [{ admin: {} }, withToken, 'admin', 'needs exactly one of tokenFile, tokenEnv'],
      [{ admin: { tokenFile: 'admin.token', tokenEnv: 'X' } }, opts({}, { X: TOKEN }), 'admin', 'needs exactly one'],
      [{ admin: { tokenEnv: 'SHORT' } }, opts({}, { SHORT: 'abc123' }), 'admin.tokenEnv', 'at least 32 characters'],
      [{ admin: { tokenFile: 'nope' } }, withToken, 'admin.tokenFile', 'cannot read the file named here'],
      [
        { admin: { tokenEnv: 'SPACED' } },
        opts({}, { SPACED: `${TOKEN} ${TOKEN}` }),
        'admin.tokenEnv',
        'without spaces',
      ],
      [{ admin: { listen: [], tokenFile: 'admin.token' } }, withToken, 'admin.listen', 'needs at least one address'],
      [
        { admin: { listen: ['nonsense'], tokenFile: 'admin.token' } },
        withToken,
        'admin.listen[0]',
        'expected "host:port"',
      ],
      [
        { admin: { listen: ['127.0.0.1:9245', '127.0.0.1:9245'], tokenFile: 'admin.token' } },
        withToken,
        'admin.listen[1]',
        'listed twice',
      ],
      // Never an update listener's address, also through a wildcard on either side.
      [
        { listen: ['127.0.0.1:8245'], admin: { listen: ['127.0.0.1:8245'], tokenFile: 'admin.token' } },
        withToken,
        'admin.listen[0]',
        'is the address of an update listener (listen[0])',
      ],
      [
        { listen: ['[::]:8245'], admin: { listen: ['127.0.0.1:8245'], tokenFile: 'admin.token' } },
        withToken,
        'admin.listen[0]',
        'update listener',
      ],
      [
        { listen: ['127.0.0.1:8245'], admin: { listen: ['0.0.0.0:8245'], tokenFile: 'admin.token' } },
        withToken,
        'admin.listen[0]',
        'update listener',
      ],
      [{ admin: { tokenFile: 'admin.token', port: 1 } }, withToken, 'admin.port', 'unknown setting'],
      [{ admin: { tokenFile: 'admin.token', maxConnections: 0 } }, withToken, 'admin.maxConnections', ''],
    ];
    for (const [extra, o, key, message] of cases) {
      const err = configError({ zones, ...(extra as object) }, o);
      expect(err.key, JSON.stringify(extra)).to.equal(key);
      expect(err.message, JSON.stringify(extra)).to.include(message);
      expect(err.message).to.not.include(TOKEN);
      expect(err.message).to.not.include('abc123');
    }
  });

  it('the log masks the admin token', () => {
    const lines: string[] = [];
    const ctx = contextOf(parseConfig({ zones, admin: { tokenFile: 'admin.token' } }, withToken));
    (ctx.logger as unknown as { write: (l: string) => void }).write = (l) => lines.push(l);
    ctx.logger.info('oops', { header: `Bearer ${TOKEN}` });
    expect(lines.join('')).to.include('"msg":"oops"');
    expect(lines.join('')).to.not.include(TOKEN);
  });
});

describe('config: planReload', () => {
  const base = parseConfig({ zones }, opts());
  const next = (extra: Record<string, unknown>) => parseConfig({ zones, ...extra }, opts());

  it('the same file: nothing changed, nothing needs a restart', () => {
    const plan = planReload(base, next({}));
    expect(plan.changed).to.deep.equal([]);
    expect(plan.needsRestart).to.deep.equal([]);
    expect(plan.config).to.deep.equal(base);
  });

  it('takes the live settings of the new file, keeps the rest of the old, and says which is which', () => {
    const plan = planReload(
      base,
      next({
        agents: { blocked: ['x/1.0'] },
        frequency: { minInterval: 5 },
        junk: { threshold: 7 },
        credentials: { maxFailures: 3, cacheTtl: 10 },
        log: { level: 'debug' },
        listen: ['127.0.0.1:1'],
        dns: { timeout: 9 },
        redis: { url: 'redis://127.0.0.1:6380/1' },
      }),
    );
    expect(plan.changed).to.deep.equal(['frequency', 'agents', 'junk', 'credentials', 'log']);
    expect(plan.needsRestart).to.deep.equal(['listen', 'redis', 'dns', 'credentials.cacheTtl']);
    expect(plan.config.agents.blocked).to.deep.equal(['x/1.0']);
    expect(plan.config.frequency.minIntervalMs).to.equal(5000);
    expect(plan.config.credentials.maxFailures).to.equal(3);
    expect(plan.config.credentials.cacheTtlMs).to.equal(base.credentials.cacheTtlMs);
    expect(plan.config.log.level).to.equal('debug');
    expect(plan.config.listen).to.equal(base.listen);
    expect(plan.config.redis).to.equal(base.redis);
    expect(plan.config.dns).to.equal(base.dns);
    expect(Object.isFrozen(plan.config.credentials)).to.equal(true);
  });

  it('only the cache settings changed: credentials is not reported as changed, the cache needs a restart', () => {
    const plan = planReload(base, next({ credentials: { cacheSize: 5 } }));
    expect(plan.changed).to.deep.equal([]);
    expect(plan.needsRestart).to.deep.equal(['credentials.cacheSize']);
  });
});
