import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError } from '../../src/core/errors.js';
import { configError as configErrorOf, parseOptions } from '../support/config-errors.js';
import {
  configWarnings,
  DEFAULT_BLOCKED_AGENTS,
  loadConfig,
  parseConfig,
  type ParseOptions,
} from '../../src/config/load.js';
import { redactUrl } from '../../src/cli/commands/check.js';
import { contextOf } from '../../src/cli/context.js';
import { connectionOf } from '../../src/store/redis.js';

const SECRET = randomBytes(32).toString('base64');
const SECRET_BYTES = Buffer.from(SECRET, 'base64');

const zone = (extra: Record<string, unknown> = {}) => ({
  name: 'dyn.example.org',
  primary: '127.0.0.1:53',
  key: { name: 'ddns-key', secret: SECRET },
  ...extra,
});

const opts = parseOptions;

const configError = (json: unknown, o: ParseOptions = opts()) => configErrorOf(json, o);

describe('config: parseConfig', () => {
  it('fills every default from a minimal file, durations converted to ms', () => {
    const c = parseConfig({ zones: [zone()] }, opts());
    const { zones, ...rest } = c;
    expect(rest).to.deep.equal({
      listen: [
        { host: '127.0.0.1', port: 8245 },
        { host: '::1', port: 8245 },
      ],
      basePath: '',
      trustedProxies: [],
      http: {
        realm: 'ddns-bridge',
        maxBodyBytes: 4096,
        headersTimeoutMs: 10_000,
        requestTimeoutMs: 15_000,
        keepAliveTimeoutMs: 5_000,
        maxHeaderBytes: 8192,
        maxConnections: 10000,
        queryCredentials: false,
      },
      redis: { url: 'redis://127.0.0.1:6379/0', keyPrefix: 'ddns:', commandTimeoutMs: 2000 },
      dns: { ttl: 60, timeoutMs: 3000, maxInFlight: 4, fudge: 300, clockOffsetSeconds: 0 },
      frequency: {
        minIntervalMs: 60_000,
        donatorMinIntervalMs: 15_000,
        maxFrequent: 3,
        echoMinIntervalMs: 60_000,
        echoCooldownMs: 3_600_000,
        txtLimit: 30,
        txtWindowMs: 3_600_000,
      },
      mx: { resolvers: ['127.0.0.1:53'], timeoutMs: 1000 },
      agents: {
        blocked: ['Company - Device - Version Number', 'Company - Device - Version', 'Company Device Version'],
      },
      junk: { threshold: 20, windowMs: 300_000, blockMs: 3_600_000 },
      credentials: { maxFailures: 10, windowMs: 600_000, cooldownMs: 900_000, cacheTtlMs: 3_600_000, cacheSize: 10000 },
      log: { level: 'info' },
      addresses: { refuse: [] },
      hosts: { quietSweepIntervalMs: 600_000 },
      acme: { propagationTimeoutMs: 60_000 },
      update: { waitForSecondaries: false },
    });
    expect(zones).to.have.length(1);
    expect(zones[0]!.name).to.equal('dyn.example.org');
    expect(zones[0]!.primary).to.deep.equal({ host: '127.0.0.1', port: 53 });
    expect(zones[0]!.key.name).to.equal('ddns-key');
    expect(zones[0]!.key.algorithm).to.equal('hmac-sha256');
    expect(zones[0]!.key.secret.equals(SECRET_BYTES)).to.equal(true);
    expect(zones[0]!.staticNames).to.deep.equal([]);
    expect(DEFAULT_BLOCKED_AGENTS).to.deep.equal(c.agents.blocked);
  });

  it("takes a zone's own maxInFlight (1–1000); without it the zone has none of its own", () => {
    const c = parseConfig({ zones: [zone({ maxInFlight: 1 }), zone({ name: 'b.example' })] }, opts());
    expect(c.zones[0]!.maxInFlight).to.equal(1);
    expect(c.zones[1]).to.not.have.property('maxInFlight');
    for (const bad of [0, 1.5, 1001, '2']) {
      expect(() => parseConfig({ zones: [zone({ maxInFlight: bad })] }, opts()), String(bad)).to.throw(
        ConfigError,
        /zones\[0\]\.maxInFlight/,
      );
    }
  });

  it('takes a zone’s secondaries (host:port, port 53 by default, and "auto"); refuses junk, repeats, auto twice', () => {
    const c = parseConfig(
      { zones: [zone({ secondaries: ['192.0.2.1:5300', 'ns2.example.org', 'auto', '[2001:db8::1]:53'] })] },
      opts(),
    );
    expect(c.zones[0]!.secondaries).to.deep.equal({
      servers: [
        { host: '192.0.2.1', port: 5300 },
        { host: 'ns2.example.org', port: 53 },
        { host: '2001:db8::1', port: 53 },
      ],
      auto: true,
    });
    expect(parseConfig({ zones: [zone()] }, opts()).zones[0]).to.not.have.property('secondaries');
    const cases: [unknown, RegExp][] = [
      [['192.0.2.1:99999'], /zones\[0\]\.secondaries\[0\]: expected "host:port"/],
      [[7], /zones\[0\]\.secondaries\[0\]/],
      [['192.0.2.1', '192.0.2.1:53'], /zones\[0\]\.secondaries\[1\]: 192\.0\.2\.1:53 is already listed/],
      [['auto', 'auto'], /zones\[0\]\.secondaries\[1\]: "auto" is already listed/],
      ['auto', /zones\[0\]\.secondaries/],
    ];
    for (const [bad, message] of cases)
      expect(() => parseConfig({ zones: [zone({ secondaries: bad })] }, opts()), JSON.stringify(bad)).to.throw(
        ConfigError,
        message,
      );
    expect(
      parseConfig({ zones: [zone()], acme: { propagationTimeout: 5 }, update: { waitForSecondaries: true } }, opts()),
    ).to.deep.include({
      acme: { propagationTimeoutMs: 5000 },
      update: { waitForSecondaries: true },
    });
  });

  it('takes a Redis on its Unix socket (unix:///path?db=N); the path is percent-decoded for the connection', () => {
    const c = parseConfig({ redis: { url: 'unix:///run/redis/redis.sock?db=2' }, zones: [zone()] }, opts());
    expect(c.redis.url).to.equal('unix:///run/redis/redis.sock?db=2');
    expect(connectionOf(c.redis.url)).to.deep.equal({ path: '/run/redis/redis.sock', db: 2 });
    expect(connectionOf('unix:///tmp/my%20dir/r.sock?password=p%40ss')).to.deep.equal({
      path: '/tmp/my dir/r.sock',
      db: 0,
      password: 'p@ss',
    });
    expect(connectionOf('redis://127.0.0.1:6379/0')).to.equal('redis://127.0.0.1:6379/0');
  });

  it('redis.url: a path that is not a database number is refused (it would leave the client in database 0)', () => {
    for (const url of [
      'redis://127.0.0.1:6379/abc',
      'redis://127.0.0.1:6379/0/x',
      'redis://:hunter2@127.0.0.1:6379/db1',
    ]) {
      const err = configError({ redis: { url }, zones: [zone()] });
      expect(err.key, url).to.equal('redis.url');
      expect(err.message)
        .to.match(/database number/)
        .and.not.include('hunter2');
    }
    for (const url of [
      'redis://127.0.0.1:6379',
      'redis://127.0.0.1:6379/',
      'redis://127.0.0.1:6379/15',
      'rediss://r.example:6380/3',
    ]) {
      expect(parseConfig({ redis: { url }, zones: [zone()] }, opts()).redis.url, url).to.equal(url);
    }
  });

  it('redis.passwordFile / passwordEnv: the Redis password from a file or the environment, never repeated in errors', () => {
    const pw = 'S3cret pass:word';
    const fromFile = parseConfig(
      { redis: { passwordFile: 'redis.pw' }, zones: [zone()] },
      opts({ '/etc/ddns-bridge/redis.pw': `${pw}\n` }),
    );
    expect(fromFile.redis.password).to.equal(pw);
    const fromEnv = parseConfig({ redis: { passwordEnv: 'REDIS_PW' }, zones: [zone()] }, opts({}, { REDIS_PW: pw }));
    expect(fromEnv.redis.password).to.equal(pw);
    expect(parseConfig({ zones: [zone()] }, opts()).redis).to.not.have.property('password');
    const checks: [unknown, ParseOptions, string, RegExp][] = [
      [
        { redis: { passwordFile: 'nope.pw' } },
        opts(),
        'redis.passwordFile',
        /: cannot read the file named here \(ENOENT\)$/,
      ],
      [
        { redis: { passwordEnv: 'REDIS_PW' } },
        opts(),
        'redis.passwordEnv',
        /: the environment variable named here is not set$/,
      ],
      [{ redis: { passwordEnv: pw } }, opts(), 'redis.passwordEnv', /name of an environment variable/],
      [
        { redis: { passwordFile: 'two.pw' } },
        opts({ '/etc/ddns-bridge/two.pw': `${pw}\nmore\n` }),
        'redis.passwordFile',
        /one line/,
      ],
      [{ redis: { passwordFile: 'a', passwordEnv: 'B' } }, opts(), 'redis', /at most one/],
      [
        { redis: { url: `redis://:${encodeURIComponent(pw)}@127.0.0.1:6379/0`, passwordEnv: 'REDIS_PW' } },
        opts({}, { REDIS_PW: pw }),
        'redis.url',
        /password as well/,
      ],
    ];
    for (const [json, o, key, message] of checks) {
      const err = configError({ ...(json as object), zones: [zone()] }, o);
      expect(err.key, String(message)).to.equal(key);
      expect(err.message).to.match(message);
      expect(err.message).to.not.include(pw).and.not.include(encodeURIComponent(pw)).and.not.include('more');
    }
  });

  it('a Redis password pasted where its file or variable belongs is not repeated, whatever its shape', () => {
    // Redis's `ACL GENPASS` prints 64 lowercase hex digits: nothing like a base64 TSIG secret.
    const genpass = 'f774bc50a4c1d2e3f405162738495a6b7c8d9e0f11223344556677889900aabb';
    for (const pasted of [genpass, `x${genpass}`, 'S3cr3tRedisPw_XyZ']) {
      for (const redis of [{ passwordFile: pasted }, { passwordEnv: pasted }]) {
        const err = configError({ redis, zones: [zone()] }, opts());
        expect(err.key).to.match(/^redis\.password(File|Env)$/);
        expect(err.message, JSON.stringify(redis)).to.not.include(pasted).and.not.include(genpass);
      }
    }
  });

  it("the logger of a command's context masks the Redis password (from a file or the URL) and the TSIG secrets", () => {
    const pw = 'f774bc50a4c1d2e3f405162738495a6b';
    const urlPw = 'p@ss"in\\url';
    const lines: string[] = [];
    const write = process.stderr.write;
    process.stderr.write = (line: string) => lines.push(line) > 0;
    try {
      const fromFile = contextOf(
        parseConfig(
          { redis: { passwordFile: 'redis.pw' }, zones: [zone()] },
          opts({ '/etc/ddns-bridge/redis.pw': `${pw}\n` }),
        ),
      );
      fromFile.logger.error('oops', { error: `AUTH ${pw} failed` });
      const fromUrl = contextOf(
        parseConfig(
          { redis: { url: `redis://:${encodeURIComponent(urlPw)}@127.0.0.1:6379/0` }, zones: [zone()] },
          opts(),
        ),
      );
      fromUrl.logger.error('oops', { error: `AUTH ${urlPw} failed` });
    } finally {
      process.stderr.write = write;
    }
    expect(lines).to.have.length(2);
    for (const line of lines) expect(line).to.include('AUTH [redacted] failed');
    expect(lines.join(''))
      .to.not.include(pw)
      .and.not.include(urlPw)
      .and.not.include(JSON.stringify(urlPw).slice(1, -1));
  });

  it('takes fractional seconds, listen objects, normalises zone names, default primary port', () => {
    const c = parseConfig(
      {
        listen: [{ host: '0.0.0.0', port: 80 }, '[2001:db8::1]:8080', 'localhost:8245'],
        basePath: '/ddns/',
        dns: { timeout: 0.5, clockOffset: -400 },
        redis: { commandTimeout: 0.25 },
        http: { realm: 'DDNS: example v2.0' },
        mx: { resolvers: ['192.0.2.53', '[2001:db8::53]:5353', '::1'] },
        zones: [
          zone({ name: 'Dyn.Example.ORG.', primary: '[::1]:5353' }),
          zone({ name: 'b.example', primary: 'ns1.example.net' }),
        ],
      },
      opts(),
    );
    expect(c.http.realm).to.equal('DDNS: example v2.0');
    expect(c.mx.resolvers).to.deep.equal(['192.0.2.53', '[2001:db8::53]:5353', '::1']);
    expect(c.listen).to.deep.equal([
      { host: '0.0.0.0', port: 80 },
      { host: '2001:db8::1', port: 8080 },
      { host: 'localhost', port: 8245 },
    ]);
    expect(c.basePath).to.equal('/ddns');
    expect(c.dns.timeoutMs).to.equal(500);
    expect(c.dns.clockOffsetSeconds).to.equal(-400);
    expect(c.redis.commandTimeoutMs).to.equal(250);
    expect(c.zones.map((z) => z.name)).to.deep.equal(['dyn.example.org', 'b.example']);
    expect(c.zones.map((z) => z.primary)).to.deep.equal([
      { host: '::1', port: 5353 },
      { host: 'ns1.example.net', port: 53 },
    ]);
  });

  it('returns a deep-frozen object', () => {
    const c = parseConfig({ zones: [zone()], trustedProxies: ['10.0.0.0/8'] }, opts());
    expect(Object.isFrozen(c)).to.equal(true);
    expect(Object.isFrozen(c.http)).to.equal(true);
    expect(Object.isFrozen(c.zones)).to.equal(true);
    expect(Object.isFrozen(c.zones[0]!.primary)).to.equal(true);
    expect(Object.isFrozen(c.zones[0]!.key)).to.equal(true);
    expect(() => {
      (c.http as { realm: string }).realm = 'x';
    }).to.throw(TypeError);
    expect(() => (c.trustedProxies as string[]).push('0.0.0.0/0')).to.throw(TypeError);
  });

  describe('errors name the offending setting', () => {
    const cases: [string, unknown, string, RegExp?][] = [
      ['zones missing', {}, 'zones', /missing/],
      ['zones empty', { zones: [] }, 'zones', /at least one/],
      [
        'bad primary',
        { zones: [zone(), zone({ name: 'b.example', primary: 'ns:port' })] },
        'zones[1].primary',
        /expected host:port/,
      ],
      ['primary port too big', { zones: [zone({ primary: '127.0.0.1:70000' })] }, 'zones[0].primary'],
      [
        'duplicate zone',
        { zones: [zone(), zone({ name: 'DYN.example.org.' })] },
        'zones[1].name',
        /already configured as zones\[0\]/,
      ],
      ['bad zone name', { zones: [zone({ name: 'bad name' })] }, 'zones[0].name'],
      [
        'bad algorithm',
        { zones: [zone({ key: { name: 'k', algorithm: 'hmac-md5', secret: SECRET } })] },
        'zones[0].key.algorithm',
      ],
      [
        'two secret sources',
        { zones: [zone({ key: { name: 'k', secret: SECRET, secretEnv: 'X' } })] },
        'zones[0].key',
        /exactly one/,
      ],
      ['no secret source', { zones: [zone({ key: { name: 'k' } })] }, 'zones[0].key', /exactly one/],
      ['key name missing', { zones: [zone({ key: { secret: SECRET } })] }, 'zones[0].key.name', /missing/],
      // Labels of 63 each, 319 in all: no DNS name, so no TSIG record could carry it.
      [
        'key name too long for DNS',
        { zones: [zone({ key: { name: Array(5).fill('k'.repeat(63)).join('.'), secret: SECRET } })] },
        'zones[0].key.name',
        /key name/,
      ],
      ['bad listen string', { listen: ['127.0.0.1:8245', '127.0.0.1'], zones: [zone()] }, 'listen[1]', /host:port/],
      ['bad listen object', { listen: [{ host: '127.0.0.1', port: 'x' }], zones: [zone()] }, 'listen[0].port'],
      ['empty listen', { listen: [], zones: [zone()] }, 'listen'],
      ['bad proxy', { trustedProxies: ['10.0.0.0/33'], zones: [zone()] }, 'trustedProxies[0]', /CIDR/],
      [
        'wrong type',
        { http: { maxBodyBytes: '4096' }, zones: [zone()] },
        'http.maxBodyBytes',
        /a number, got a string/,
      ],
      ['not an integer', { http: { maxConnections: 1.5 }, zones: [zone()] }, 'http.maxConnections', /integer/],
      [
        'not a boolean',
        { http: { queryCredentials: 'yes' }, zones: [zone()] },
        'http.queryCredentials',
        /expected true or false, got a string/,
      ],
      ['negative duration', { dns: { timeout: -1 }, zones: [zone()] }, 'dns.timeout', /at least 0/],
      ['zero timeout', { dns: { timeout: 0 }, zones: [zone()] }, 'dns.timeout', /more than 0/],
      [
        'zero credentials cooldown',
        { credentials: { cooldown: 0 }, zones: [zone()] },
        'credentials.cooldown',
        /must be more than 0 seconds, got 0$/,
      ],
      [
        'credentials cooldown under 1 ms',
        { credentials: { cooldown: 0.0001 }, zones: [zone()] },
        'credentials.cooldown',
        /at least 0\.001 seconds/,
      ],
      ['section not an object', { frequency: [], zones: [zone()] }, 'frequency', /an object/],
      ['bad redis url', { redis: { url: 'http://x' }, zones: [zone()] }, 'redis.url'],
      ['unix socket url without a path', { redis: { url: 'unix://' }, zones: [zone()] }, 'redis.url'],
      ['unix socket url with a host', { redis: { url: 'unix://host/run/redis.sock' }, zones: [zone()] }, 'redis.url'],
      [
        'unix socket url with the db in the path',
        { redis: { url: 'unix:///run/redis.sock/0' }, zones: [zone()] },
        'redis.url',
        /\?db=0/,
      ],
      [
        'unix socket url with a bad db',
        { redis: { url: 'unix:///run/redis.sock?db=x' }, zones: [zone()] },
        'redis.url',
        /db=N/,
      ],
      ['bad log level', { log: { level: 'verbose' }, zones: [zone()] }, 'log.level'],
      ['bad basePath', { basePath: 'ddns', zones: [zone()] }, 'basePath'],
      ['bad resolver', { mx: { resolvers: ['not a host'] }, zones: [zone()] }, 'mx.resolvers[0]'],
      [
        'resolver by name',
        { mx: { resolvers: ['127.0.0.1', 'ns1.example.net:53'] }, zones: [zone()] },
        'mx.resolvers[1]',
        /IP address/,
      ],
      ['empty agent', { agents: { blocked: ['ok', ''] }, zones: [zone()] }, 'agents.blocked[1]'],
      ['realm with a quote', { http: { realm: 'a"b' }, zones: [zone()] }, 'http.realm'],
      [
        'realm with an IPv4 address',
        { http: { realm: 'ddns 192.0.2.1' }, zones: [zone()] },
        'http.realm',
        /IP address/,
      ],
      [
        'realm with an IPv6 address',
        { http: { realm: 'ddns at 2001:db8::1' }, zones: [zone()] },
        'http.realm',
        /IP address/,
      ],
      ['unknown top-level key', { zones: [zone()], lisen: [] }, 'lisen', /unknown setting/],
      ['unknown nested key', { http: { realmm: 'x' }, zones: [zone()] }, 'http.realmm', /unknown setting/],
      ['unknown zone key', { zones: [zone({ ttl: 60 })] }, 'zones[0].ttl', /unknown setting/],
      [
        'unknown key setting',
        { zones: [zone({ key: { name: 'k', secret: SECRET, secrt: 'x' } })] },
        'zones[0].key.secrt',
        /unknown setting/,
      ],
      ['top level not an object', [1, 2], '(top level)'],
    ];
    for (const [title, json, key, message] of cases) {
      it(`${title} → ${key}`, () => {
        const err = configError(json);
        expect(err.key).to.equal(key);
        expect(err.message.startsWith(`config: ${key}: `), err.message).to.equal(true);
        if (message) expect(err.message).to.match(message);
        expect(err.code).to.equal('ERR_CONFIG');
      });
    }
  });

  describe('key secrets', () => {
    const withKey = (key: Record<string, unknown>) => ({ zones: [zone({ key: { name: 'ddns-key', ...key } })] });
    const secretOf = (json: unknown, o: ParseOptions) => parseConfig(json, o).zones[0]!.key.secret;

    it('reads a bare base64 file, relative to the config directory', () => {
      const s = secretOf(
        withKey({ secretFile: 'ddns-key.secret' }),
        opts({ '/etc/ddns-bridge/ddns-key.secret': `${SECRET}\n` }),
      );
      expect(s.equals(SECRET_BYTES)).to.equal(true);
    });

    it('reads a BIND key file as printed by tsig-keygen', () => {
      const text = `key "ddns-key" {\n\talgorithm hmac-sha256;\n\tsecret "${SECRET}";\n};\n`;
      const s = secretOf(withKey({ secretFile: '/keys/bind.key' }), opts({ '/keys/bind.key': text }));
      expect(s.equals(SECRET_BYTES)).to.equal(true);
    });

    it('reads a Knot keymgr snippet', () => {
      const text = `# hmac-sha256:ddns-key:${SECRET}\nkey:\n  - id: ddns-key\n    algorithm: hmac-sha256\n    secret: ${SECRET}\n`;
      const s = secretOf(withKey({ secretFile: '/keys/knot.conf' }), opts({ '/keys/knot.conf': text }));
      expect(s.equals(SECRET_BYTES)).to.equal(true);
    });

    it('expands ${VAR:-default} in secretFile (systemd credentials)', () => {
      const json = withKey({ secretFile: '${CREDENTIALS_DIRECTORY:-/etc/ddns-bridge}/ddns-key.secret' });
      const files = {
        '/run/credentials/x/ddns-key.secret': SECRET,
        '/etc/ddns-bridge/ddns-key.secret': randomBytes(32).toString('base64'),
      };
      expect(
        secretOf(json, opts(files, { CREDENTIALS_DIRECTORY: '/run/credentials/x' })).equals(SECRET_BYTES),
      ).to.equal(true);
      expect(secretOf(json, opts(files, {})).equals(SECRET_BYTES)).to.equal(false);
      const err = configError(withKey({ secretFile: '${NOPE}/k' }));
      expect(err.key).to.equal('zones[0].key.secretFile');
      expect(err.message).to.match(/NOPE/);
    });

    it('reads secretEnv and inline secret', () => {
      expect(
        secretOf(withKey({ secretEnv: 'DDNS_KEY' }), opts({}, { DDNS_KEY: SECRET })).equals(SECRET_BYTES),
      ).to.equal(true);
      expect(secretOf(withKey({ secret: SECRET }), opts()).equals(SECRET_BYTES)).to.equal(true);
    });

    it('names the file or variable on failure, never the secret', () => {
      const short = Buffer.from('only-12-bytes').toString('base64');
      const checks: [unknown, ParseOptions, string, RegExp][] = [
        [
          withKey({ secretFile: 'missing.secret' }),
          opts(),
          'zones[0].key.secretFile',
          /\/etc\/ddns-bridge\/missing\.secret.*ENOENT/,
        ],
        [withKey({ secretFile: '/k' }), opts({ '/k': short }), 'zones[0].key.secretFile', /\/k.*at least 16 bytes/],
        [withKey({ secretFile: '/k' }), opts({ '/k': 'two words\n' }), 'zones[0].key.secretFile', /\/k holds neither/],
        [
          withKey({ secretFile: '/k' }),
          opts({ '/k': `key "other" { algorithm hmac-sha256; secret "${SECRET}"; };` }),
          'zones[0].key.secretFile',
          /"other"/,
        ],
        [
          withKey({ secretFile: '/k' }),
          opts({ '/k': `key "ddns-key" { algorithm hmac-sha512; secret "${SECRET}"; };` }),
          'zones[0].key.secretFile',
          /hmac-sha512/,
        ],
        [withKey({ secretEnv: 'DDNS_KEY' }), opts(), 'zones[0].key.secretEnv', /DDNS_KEY is not set/],
        [
          withKey({ secretEnv: 'DDNS_KEY' }),
          opts({}, { DDNS_KEY: short }),
          'zones[0].key.secretEnv',
          /DDNS_KEY.*base64/,
        ],
        [withKey({ secret: short }), opts(), 'zones[0].key.secret', /inline secret.*base64/],
        [withKey({ secret: `${SECRET}!` }), opts(), 'zones[0].key.secret', /base64/],
      ];
      for (const [json, o, key, message] of checks) {
        const err = configError(json, o);
        expect(err.key).to.equal(key);
        expect(err.message).to.match(message);
        expect(err.message).to.not.include(short);
        expect(err.message).to.not.include(SECRET);
      }
    });

    /** No piece of `secret` of 8 or more characters appears in `text` (a path may split it at '/'). */
    const leaksNothingOf = (text: string, secret: string) => {
      for (const piece of secret.split(/[/=]/).filter((p) => p.length >= 8)) expect(text).to.not.include(piece);
    };

    it('a secret pasted into secretEnv is rejected as not a variable name, without repeating it', () => {
      const err = configError(withKey({ secretEnv: SECRET }), opts({}, {}));
      expect(err.key).to.equal('zones[0].key.secretEnv');
      expect(err.message).to.match(/expected the name of an environment variable .*not its value$/);
      leaksNothingOf(err.message, SECRET);
      // base64 without + / = is also a valid variable name: still not repeated when unset
      const nameLike = Buffer.from('BogusTsigSecretForTheTests1234567890XYZ').toString('base64');
      const unset = configError(withKey({ secretEnv: nameLike }), opts({}, {}));
      expect(unset.message).to.match(
        /the environment variable named here \(the name looks like a base64 secret\) is not set/,
      );
      leaksNothingOf(unset.message, nameLike);
      // a real name is still named
      expect(configError(withKey({ secretEnv: 'DDNS_KEY' })).message).to.match(
        /environment variable DDNS_KEY is not set/,
      );
    });

    it('a secret pasted into secretFile is not repeated: it looks like a secret, not a path', () => {
      const err = configError(withKey({ secretFile: SECRET }), opts());
      expect(err.key).to.equal('zones[0].key.secretFile');
      expect(err.message).to.match(
        /cannot read the file named here \(ENOENT\); the value looks like a base64 secret, not a path/,
      );
      leaksNothingOf(err.message, SECRET);
      // even when a file of that name exists but holds no secret
      const named = path.resolve('/etc/ddns-bridge', SECRET);
      const bad = configError(withKey({ secretFile: SECRET }), opts({ [named]: 'two words\n' }));
      expect(bad.message).to.match(/the file named here holds neither/);
      leaksNothingOf(bad.message, SECRET);
    });
  });
});

describe('config: loadConfig and configWarnings (real files)', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'config-test-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function write(name: string, content: string, mode: number): Promise<string> {
    const file = path.join(dir, name);
    await writeFile(file, content);
    await chmod(file, mode);
    return file;
  }

  it('loads a file, resolving secretFile against its directory', async () => {
    await write('k.secret', SECRET, 0o600);
    const file = await write(
      'config.json',
      JSON.stringify({ zones: [zone({ key: { name: 'ddns-key', secretFile: 'k.secret' } })] }),
      0o640,
    );
    const c = await loadConfig(file);
    expect(c.zones[0]!.key.secret.equals(SECRET_BYTES)).to.equal(true);
    expect(await configWarnings(file, {})).to.deep.equal([]);
  });

  it('reports invalid JSON by line and column without quoting the text', async () => {
    const file = await write('config.json', `{\n  "zones": [\n    {"key": {"secret": "${SECRET}"}\n  ]\n}\n`, 0o600);
    const err = await loadConfig(file).then(
      () => expect.fail('loaded invalid JSON'),
      (e: unknown) => e as ConfigError,
    );
    expect(err).to.be.instanceOf(ConfigError);
    expect(err.key).to.equal(file);
    expect(err.message).to.match(/invalid JSON at line 4, column \d+/);
    expect(err.message).to.not.include(SECRET);
  });

  it('reports a missing config file', async () => {
    const err = await loadConfig(path.join(dir, 'nope.json')).then(
      () => expect.fail('loaded a missing file'),
      (e: unknown) => e as ConfigError,
    );
    expect(err).to.be.instanceOf(ConfigError);
    expect(err.message).to.match(/ENOENT/);
  });

  it('warns about a group/world-readable secretFile and an inline secret in a readable config', async () => {
    await write('k.secret', SECRET, 0o644);
    const json = {
      zones: [zone({ key: { name: 'ddns-key', secretFile: 'k.secret' } }), zone({ name: 'b.example' })],
    };
    const file = await write('config.json', JSON.stringify(json), 0o644);
    const warnings = await configWarnings(file, {});
    expect(warnings).to.have.length(3);
    expect(warnings[0]).to.match(
      /^zones\[0\]\.key\.secretFile: .*k\.secret is readable by its group and everyone \(mode 0644\)/,
    );
    expect(warnings[1]).to.match(/^zones\[1\]\.key\.secret: .*inline/);
    expect(warnings[2]).to.match(/holds a secret and is readable .*0644/);
    for (const w of warnings) expect(w).to.not.include(SECRET);

    await chmod(file, 0o600);
    await chmod(path.join(dir, 'k.secret'), 0o400);
    const fewer = await configWarnings(file, {});
    expect(fewer).to.have.length(1);
    expect(fewer[0]).to.match(/^zones\[1\]\.key\.secret: /);
  });

  it('warns about a group-readable redis.passwordFile, never repeating the password', async () => {
    await write('k.secret', SECRET, 0o600);
    await write('redis.pw', 'hunter2hunter2\n', 0o640);
    const json = {
      redis: { passwordFile: 'redis.pw' },
      zones: [zone({ key: { name: 'ddns-key', secretFile: 'k.secret' } })],
    };
    const file = await write('config.json', JSON.stringify(json), 0o644);
    const warnings = await configWarnings(file, {});
    expect(warnings).to.have.length(1);
    expect(warnings[0]).to.match(/^redis\.passwordFile: .*redis\.pw is readable by its group \(mode 0640\)/);
    expect(warnings[0]).to.not.include('hunter2');

    await chmod(path.join(dir, 'redis.pw'), 0o600);
    expect(await configWarnings(file, {})).to.deep.equal([]);
  });

  it('warns when redis.url carries a password and the config is readable by others', async () => {
    await write('k.secret', SECRET, 0o600);
    const json = {
      redis: { url: 'redis://:hunter2hunter2@127.0.0.1:6379/0' },
      zones: [zone({ key: { name: 'ddns-key', secretFile: 'k.secret' } })],
    };
    const file = await write('config.json', JSON.stringify(json), 0o604);
    const warnings = await configWarnings(file, {});
    expect(warnings).to.have.length(1);
    expect(warnings[0]).to.match(/readable by everyone \(mode 0604\)/);
    expect(warnings[0]).to.not.include('hunter2');
  });

  it('a Unix socket URL with ?password= is a secret too', async () => {
    await write('k.secret', SECRET, 0o600);
    const json = {
      redis: { url: 'unix:///run/redis/redis.sock?db=0&password=hunter2hunter2' },
      zones: [zone({ key: { name: 'ddns-key', secretFile: 'k.secret' } })],
    };
    const file = await write('config.json', JSON.stringify(json), 0o604);
    const warnings = await configWarnings(file, {});
    expect(warnings).to.have.length(1);
    expect(warnings[0]).to.match(/readable by everyone \(mode 0604\)/);
    expect(warnings[0]).to.not.include('hunter2');
    expect(redactUrl('unix:///run/redis/redis.sock?db=0&password=hunter2hunter2')).to.equal(
      'unix:///run/redis/redis.sock?db=0&password=***',
    );
    expect(redactUrl('redis://:hunter2hunter2@127.0.0.1:6379/0')).to.not.include('hunter2');
  });

  it('the shipped example config is valid (with the secret from $CREDENTIALS_DIRECTORY)', async () => {
    await write('ddns-key.secret', `key "ddns-key" {\n\talgorithm hmac-sha256;\n\tsecret "${SECRET}";\n};\n`, 0o600);
    const example = path.resolve(
      path.dirname(fileURLToPath(import.meta.url)),
      '../../../config/ddns-bridge.example.json',
    );
    const c = await loadConfig(example, { CREDENTIALS_DIRECTORY: dir });
    expect(c.zones[0]!.name).to.equal('dyn.example.org');
    expect(c.zones[0]!.key.secret.equals(SECRET_BYTES)).to.equal(true);
    expect(c.zones[0]!.staticNames).to.deep.equal([
      'www.dyn.example.org',
      'mail.dyn.example.org',
      'vpn.office.dyn.example.org',
      '*.lab.dyn.example.org',
    ]);
    expect(c.trustedProxies).to.deep.equal(['10.0.0.0/8']);
    expect(c.agents.blocked).to.deep.equal(DEFAULT_BLOCKED_AGENTS);
  });
});
