/**
 * The config loader: one JSON file → the validated, deep-frozen Config of schema.ts.
 * Every mistake is a ConfigError naming the dotted path of the setting
 * (`zones[1].primary: expected host:port`); unknown keys are mistakes too.
 */
import { readFileSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { isIPv6 } from 'node:net';
import { checkCidr, parseAddress } from '../core/addresses.js';
import { ADDRESS_CLASSES, type AddressClass } from '../core/address-classes.js';
import { ConfigError } from '../core/errors.js';
import { zoneOf } from '../core/names.js';
import { parseStaticName, STATIC_NAME_FORMS } from '../core/static-names.js';
import {
  TSIG_ALGORITHMS,
  type Config,
  type AdminConfig,
  type DialectsConfig,
  type GatewayConfig,
  type ListenConfig,
  type TlsFilesConfig,
  type TsigAlgorithm,
  type ZoneConfig,
} from './schema.js';
import { describe, isObject, Section } from './reader.js';
import {
  loadMasterSecret,
  loadPassword,
  loadSecret,
  resolveSecretPath,
  type SecretContext,
  type SecretSource,
} from './secret.js';

/** The placeholder names from the protocol documentation; real agents are never blocked by default. */
export const DEFAULT_BLOCKED_AGENTS: readonly string[] = [
  'Company - Device - Version Number',
  'Company - Device - Version',
  'Company Device Version',
];

const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;

export interface ParseOptions {
  env: NodeJS.ProcessEnv;
  /** Directory that relative secretFile paths are resolved against (the config file's). */
  baseDir: string;
  readFile: (path: string) => string;
}

export async function loadConfig(file: string, env: NodeJS.ProcessEnv = {}): Promise<Config> {
  const json = parseJson(await readConfigText(file), file);
  return parseConfig(json, {
    env,
    baseDir: path.dirname(path.resolve(file)),
    readFile: (p) => readFileSync(p, 'utf8'),
  });
}

async function readConfigText(file: string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch (err) {
    throw new ConfigError(
      file,
      `cannot read the config file (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
    );
  }
}

/** JSON.parse, but the error gives line and column only: V8 quotes the text, which may hold a secret. */
export function parseJson(text: string, file: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    const position = /position (\d+)/.exec((err as Error).message);
    if (!position) throw new ConfigError(file, 'invalid JSON');
    const before = text.slice(0, Number(position[1]));
    const line = before.split('\n').length;
    const column = before.length - before.lastIndexOf('\n');
    throw new ConfigError(file, `invalid JSON at line ${line}, column ${column}`);
  }
}

export function parseConfig(json: unknown, opts: ParseOptions): Config {
  const top = Section.of('', json);
  const config: Config = {
    listen: readListen(top, opts),
    basePath: readBasePath(top),
    trustedProxies: readTrustedProxies(top),
    http: readHttp(top.section('http')),
    redis: readRedis(top.section('redis'), opts),
    zones: readZones(top, opts),
    dns: readDns(top.section('dns')),
    frequency: readFrequency(top.section('frequency')),
    mx: readMx(top.section('mx')),
    agents: readAgents(top.section('agents')),
    junk: readJunk(top.section('junk')),
    credentials: readCredentials(top.section('credentials')),
    log: readLog(top.section('log')),
    addresses: readAddresses(top.section('addresses')),
    hosts: readHosts(top.section('hosts')),
    acme: readAcme(top.section('acme')),
    update: readUpdate(top.section('update')),
  };
  const admin = top.has('admin') ? readAdmin(top.section('admin'), config.listen, opts) : undefined;
  if (admin) Object.assign(config, { admin });
  const gateway = top.has('gateway') ? readGateway(top.section('gateway'), config, opts) : undefined;
  if (gateway) Object.assign(config, { gateway });
  const dialects = top.has('dialects') ? readDialects(top.section('dialects'), config) : undefined;
  if (dialects) Object.assign(config, { dialects });
  top.done();
  return deepFreeze(config);
}

// ---- listen, basePath, trustedProxies -------------------------------------------------

function readListen(top: Section, opts: ParseOptions): ListenConfig[] {
  const items = top.array('listen', ['127.0.0.1:8245', '[::1]:8245']);
  if (items.length === 0) throw new ConfigError('listen', 'needs at least one address');
  const seen = new Set<string>();
  return items.map((item, i) => {
    const key = top.itemPath('listen', i);
    let endpoint: ListenConfig;
    if (typeof item === 'string') {
      const parsed = parseHostPort(item, undefined);
      if (!parsed) throw new ConfigError(key, 'expected "host:port" or "[v6]:port"');
      endpoint = parsed;
    } else if (isObject(item)) {
      const s = Section.of(key, item);
      const host = s.string('host');
      const port = s.integer('port', -1, { min: 0, max: 65535 });
      const tls = s.has('tls') ? readTlsFiles(s.section('tls'), opts) : undefined;
      s.done();
      if (port < 0) throw new ConfigError(`${key}.port`, 'required setting is missing');
      endpoint = { host: host.replace(/^\[(.*)\]$/, '$1'), port, ...(tls ? { tls } : {}) };
    } else {
      throw new ConfigError(key, `expected "host:port" or {"host", "port"[, "tls"]}, got ${describe(item)}`);
    }
    if (!parseAddress(endpoint.host) && !isHostName(endpoint.host))
      throw new ConfigError(key, `"${endpoint.host}" is not an address or host name`);
    const id = `${endpoint.host}|${endpoint.port}`;
    if (seen.has(id)) throw new ConfigError(key, 'listed twice');
    seen.add(id);
    return endpoint;
  });
}

/**
 * `admin`: the listener of /metrics, /healthz, /readyz and the provisioning API (docs/operators.md,
 * "The admin listener"). Never on an update listener's address: its API is not for the internet.
 */
function readAdmin(s: Section, updateListeners: readonly ListenConfig[], opts: ParseOptions): AdminConfig {
  const items = s.array('listen', ['127.0.0.1:9245']);
  if (items.length === 0) throw new ConfigError(s.keyPath('listen'), 'needs at least one address');
  const seen = new Set<string>();
  const listen = items.map((item, i) => {
    const key = s.itemPath('listen', i);
    const parsed = typeof item === 'string' ? parseHostPort(item, undefined) : undefined;
    if (!parsed || (!parseAddress(parsed.host) && !isHostName(parsed.host)))
      throw new ConfigError(key, 'expected "host:port" or "[v6]:port"');
    const id = `${parsed.host}|${parsed.port}`;
    if (seen.has(id)) throw new ConfigError(key, 'listed twice');
    seen.add(id);
    // Port 0 (any free port, in tests) never collides.
    const clash = updateListeners.findIndex(
      (l) =>
        parsed.port !== 0 &&
        l.port === parsed.port &&
        (l.host === parsed.host || isWildcard(l.host) || isWildcard(parsed.host)),
    );
    if (clash !== -1) throw new ConfigError(key, `is the address of an update listener (listen[${clash}])`);
    return parsed;
  });
  const sources = secretSourcesOf(s, { file: 'tokenFile', env: 'tokenEnv' });
  const maxConnections = s.integer('maxConnections', DEFAULT_ADMIN_MAX_CONNECTIONS, { min: 1 });
  s.done();
  if (sources.length !== 1) throw new ConfigError(s.path, 'needs exactly one of tokenFile, tokenEnv');
  const ctx: SecretContext = { env: opts.env, baseDir: opts.baseDir, readFile: opts.readFile };
  const token = loadPassword(sources[0]!, ctx);
  // A bearer token is one word (RFC 6750: no spaces).
  if (/\s/.test(token)) throw new ConfigError(sources[0]!.key, 'expected a token without spaces');
  // Guessable tokens would make the provisioning API an account factory for anyone who can reach it.
  if (token.length < MIN_ADMIN_TOKEN_LENGTH)
    throw new ConfigError(sources[0]!.key, `expected a token of at least ${MIN_ADMIN_TOKEN_LENGTH} characters`);
  return { listen, token, maxConnections };
}

/**
 * `gateway`: the RFC 2136 listener (UDP and TCP) and the master secret of its keys. Never on an address of the
 * other listeners (TCP would clash).
 */
function readGateway(s: Section, config: Config, opts: ParseOptions): GatewayConfig {
  const items = s.array('listen', ['127.0.0.1:5353', '[::1]:5353']);
  if (items.length === 0) throw new ConfigError(s.keyPath('listen'), 'needs at least one address');
  const taken = [...config.listen, ...(config.admin?.listen ?? [])];
  const seen = new Set<string>();
  const listen = items.map((item, i) => {
    const key = s.itemPath('listen', i);
    const parsed = typeof item === 'string' ? parseHostPort(item, undefined) : undefined;
    if (!parsed || !parseAddress(parsed.host)) throw new ConfigError(key, 'expected "address:port" or "[v6]:port"');
    const id = `${parsed.host}|${parsed.port}`;
    if (seen.has(id)) throw new ConfigError(key, 'listed twice');
    seen.add(id);
    const clash = taken.find(
      (l) =>
        parsed.port !== 0 &&
        l.port === parsed.port &&
        (l.host === parsed.host || isWildcard(l.host) || isWildcard(parsed.host)),
    );
    if (clash !== undefined)
      throw new ConfigError(key, `is the address of another listener (${clash.host}:${clash.port})`);
    return parsed;
  });
  const keyFile = s.optionalString('keyFile');
  const ratePerSource = s.integer('ratePerSource', DEFAULT_GATEWAY_RATE, { min: 1, max: 100000 });
  const maxConnections = s.integer('maxConnections', DEFAULT_GATEWAY_MAX_CONNECTIONS, { min: 1 });
  s.done();
  if (keyFile === undefined) throw new ConfigError(s.keyPath('keyFile'), 'required setting is missing');
  const ctx: SecretContext = { env: opts.env, baseDir: opts.baseDir, readFile: opts.readFile };
  const masterSecret = loadMasterSecret({ kind: 'file', key: s.keyPath('keyFile'), path: keyFile }, ctx);
  return { listen, masterSecret, ratePerSource, maxConnections };
}

/** `dialects`: the client dialects' own settings (docs/protocol.md, "DuckDNS"). */
function readDialects(s: Section, config: Config): DialectsConfig {
  const dialects: DialectsConfig = {};
  if (s.has('duckdns')) {
    const d = s.section('duckdns');
    const raw = d.optionalString('zone');
    d.done();
    if (raw !== undefined) {
      const zone = normalizeZoneName(raw);
      if (zone === undefined || !config.zones.some((z) => z.name === zone))
        throw new ConfigError(
          d.keyPath('zone'),
          `expected the name of a configured zone (zones[].name), got ${JSON.stringify(raw)}`,
        );
      dialects.duckdns = { zone };
    } else dialects.duckdns = {};
  }
  s.done();
  return dialects;
}

/** Messages per second from one source: a client sends a handful per change (SOA lookups, the UPDATE). */
export const DEFAULT_GATEWAY_RATE = 20;
export const DEFAULT_GATEWAY_MAX_CONNECTIONS = 256;

/** The shortest admin token accepted (`openssl rand -hex 32` gives 64). */
export const MIN_ADMIN_TOKEN_LENGTH = 32;
/** Scrapers, probes and the operator's scripts: a few connections at a time, not thousands. */
export const DEFAULT_ADMIN_MAX_CONNECTIONS = 100;

function isWildcard(host: string): boolean {
  return host === '0.0.0.0' || host === '::';
}

/**
 * `listen[i].tls`: the two PEM files, resolved like secretFile paths (against the config
 * file's directory, `${VAR:-default}` expanded). They are read when the listener starts and on
 * every SIGHUP, not here: the admin commands need no certificate.
 */
function readTlsFiles(t: Section, opts: ParseOptions): TlsFilesConfig {
  const file = (name: string): string => {
    const raw = t.string(name);
    // PEM text pasted in place of the path is never repeated (it may be the private key).
    if (raw.includes('-----BEGIN') || /[\r\n]/.test(raw)) {
      throw new ConfigError(t.keyPath(name), 'expected the path of a PEM file, not its content');
    }
    if (raw.trim() === '') throw new ConfigError(t.keyPath(name), 'expected the path of a PEM file');
    return resolveSecretPath(raw, opts.baseDir, opts.env, t.keyPath(name));
  };
  const tls = { certFile: file('certFile'), keyFile: file('keyFile') };
  t.done();
  return tls;
}

function readBasePath(top: Section): string {
  const raw = top.string('basePath', '').trim();
  const base = raw.replace(/\/+$/, '');
  if (base !== '' && (!base.startsWith('/') || !/^[A-Za-z0-9._~\-/]+$/.test(base) || base.includes('//'))) {
    throw new ConfigError('basePath', 'expected "" or a path such as "/ddns" (letters, digits, - . _ ~ and /)');
  }
  return base;
}

function readTrustedProxies(top: Section): string[] {
  return top.array('trustedProxies', []).map((item, i) => {
    const key = top.itemPath('trustedProxies', i);
    if (typeof item !== 'string') throw new ConfigError(key, 'expected an address or CIDR block such as "10.0.0.0/8"');
    const cidr = checkCidr(item);
    // A zone index gets its own message (a zoned address used to throw here: issue 27).
    if ('problem' in cidr) {
      throw new ConfigError(
        key,
        item.includes('%') ? cidr.problem : 'expected an address or CIDR block such as "10.0.0.0/8"',
      );
    }
    return item.trim();
  });
}

// ---- sections with plain values -------------------------------------------------------

function readHttp(s: Section): Config['http'] {
  const realm = s.string('realm', 'ddns-bridge');
  // The realm goes into WWW-Authenticate inside quotes.
  if (realm === '' || !/^[\x20-\x7e]+$/.test(realm) || /["\\]/.test(realm)) {
    throw new ConfigError(s.keyPath('realm'), 'expected printable ASCII without quotes or backslashes');
  }
  // It is sent on every 401, and clients that scan a reply for an address (ddclient) must
  // find none in the headers (docs/protocol.md, "The reply").
  if (/\d{1,3}(?:\.\d{1,3}){3}/.test(realm) || /[0-9a-f]*:[0-9a-f]*:/i.test(realm)) {
    throw new ConfigError(s.keyPath('realm'), 'must not contain anything that looks like an IP address');
  }
  const http = {
    realm,
    maxBodyBytes: s.integer('maxBodyBytes', 4096, { min: 1 }),
    headersTimeoutMs: s.seconds('headersTimeout', 10, { positive: true }),
    requestTimeoutMs: s.seconds('requestTimeout', 15, { positive: true }),
    keepAliveTimeoutMs: s.seconds('keepAliveTimeout', 5),
    maxHeaderBytes: s.integer('maxHeaderBytes', 8192, { min: 1024 }),
    maxConnections: s.integer('maxConnections', 10000, { min: 1 }),
    queryCredentials: s.boolean('queryCredentials', false),
  };
  s.done();
  return http;
}

function readRedis(s: Section, opts: ParseOptions): Config['redis'] {
  const url = s.string('url', 'redis://127.0.0.1:6379/0').trim();
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  // The URL may hold a password: never repeat it in the message.
  const tcp = parsed !== undefined && ['redis:', 'rediss:'].includes(parsed.protocol) && parsed.hostname !== '';
  // A Redis on the same machine over its Unix socket (unix:///run/redis/redis.sock?db=0):
  // cheaper per command than loopback TCP.
  const unix =
    parsed !== undefined && parsed.protocol === 'unix:' && parsed.hostname === '' && parsed.pathname.length > 1;
  if (!tcp && !unix) {
    throw new ConfigError(s.keyPath('url'), 'expected redis://host:port/db, rediss://… or unix:///path/to/redis.sock');
  }
  if (unix) {
    // The database goes in ?db=N (a path ending in /N would name a socket that is not there).
    const db = parsed!.searchParams.get('db');
    if (db !== null && !/^\d{1,5}$/.test(db))
      throw new ConfigError(s.keyPath('url'), 'expected ?db=N with a database number');
    if (/\/\d+$/.test(parsed!.pathname) || parsed!.pathname.endsWith('/')) {
      throw new ConfigError(
        s.keyPath('url'),
        'expected the socket file as the path (unix:///run/redis/redis.sock?db=0)',
      );
    }
  }
  // A database that cannot be selected would leave the client in database 0 (ioredis logs the
  // failed SELECT and goes on): only a number, checked by the server when connecting.
  if (tcp && !/^\/?(\d{1,5})?$/.test(parsed!.pathname)) {
    throw new ConfigError(s.keyPath('url'), 'expected a database number as the path (redis://host:port/0)');
  }
  // The password may stay out of the config file (docs/operators.md, "The command line": secrets from files or the
  // environment).
  const passwordSources = secretSourcesOf(s, { file: 'passwordFile', env: 'passwordEnv' });
  if (passwordSources.length > 1) throw new ConfigError(s.path, 'give at most one of passwordFile, passwordEnv');
  if (passwordSources.length > 0 && parsed!.password !== '') {
    throw new ConfigError(
      s.keyPath('url'),
      `holds a password as well as ${passwordSources[0]!.key.split('.').pop()}: give it once`,
    );
  }
  const ctx: SecretContext = { env: opts.env, baseDir: opts.baseDir, readFile: opts.readFile };
  const password = passwordSources.length > 0 ? loadPassword(passwordSources[0]!, ctx) : undefined;
  const waitReplicas = s.integer('waitReplicas', 0, { min: 0, max: 1000 });
  const redis = {
    url,
    ...(password !== undefined ? { password } : {}),
    keyPrefix: s.string('keyPrefix', 'ddns:'),
    commandTimeoutMs: s.seconds('commandTimeout', 2, { positive: true }),
    ...readSentinels(s, parsed!),
    ...(waitReplicas > 0 ? { waitReplicas } : {}),
  };
  s.done();
  return redis;
}

/** redis.sentinels and sentinelName (docs/operators.md, "Redis failover"): both or neither. */
function readSentinels(s: Section, url: URL): Pick<Config['redis'], 'sentinels' | 'sentinelName'> {
  const name = s.optionalString('sentinelName');
  // raw() also lists the key among the known ones (an unknown key's error names them).
  if (s.raw('sentinels') === undefined) {
    if (name !== undefined) throw new ConfigError(s.keyPath('sentinelName'), 'needs redis.sentinels beside it');
    return {};
  }
  const seen = new Set<string>();
  const sentinels = s.array('sentinels').map((item, i) => {
    const key = s.itemPath('sentinels', i);
    const parsed = typeof item === 'string' ? parseHostPort(item, 26379) : undefined;
    if (!parsed) throw new ConfigError(key, 'expected "host:port" or "[v6]:port" of a Redis Sentinel');
    const id = `${parsed.host}|${parsed.port}`;
    if (seen.has(id)) throw new ConfigError(key, 'listed twice');
    seen.add(id);
    return parsed;
  });
  if (sentinels.length === 0) throw new ConfigError(s.keyPath('sentinels'), 'needs at least one sentinel');
  if (name === undefined || name.trim() === '')
    throw new ConfigError(s.keyPath('sentinelName'), 'required with redis.sentinels (the master group name)');
  // The Sentinels name the primary's address: the URL gives only the database and password.
  if (url.protocol === 'unix:')
    throw new ConfigError(s.keyPath('sentinels'), 'cannot be used with a unix:// redis.url (use redis://…/db)');
  if (url.protocol === 'rediss:')
    throw new ConfigError(s.keyPath('sentinels'), 'TLS (rediss://) is not supported with Sentinels');
  return { sentinels, sentinelName: name.trim() };
}

function readDns(s: Section): Config['dns'] {
  const dns = {
    ttl: s.integer('ttl', 60, { min: 0, max: 2147483647 }),
    timeoutMs: s.seconds('timeout', 3, { positive: true }),
    // Measured best or equal for Knot (4 vs 16 vs 1) and better than 16 for BIND (which wants 1, per zone).
    maxInFlight: s.integer('maxInFlight', 4, { min: 1, max: 1000 }),
    fudge: s.integer('fudge', 300, { min: 0, max: 65535 }),
    clockOffsetSeconds: s.integer('clockOffset', 0),
  };
  s.done();
  return dns;
}

function readFrequency(s: Section): Config['frequency'] {
  const f = {
    minIntervalMs: s.seconds('minInterval', 60),
    donatorMinIntervalMs: s.seconds('donatorMinInterval', 15),
    maxFrequent: s.integer('maxFrequent', 3, { min: 0 }),
    echoMinIntervalMs: s.seconds('echoMinInterval', 60),
    echoCooldownMs: s.seconds('echoCooldown', 3600),
    txtLimit: s.integer('txtLimit', 30, { min: 0 }),
    txtWindowMs: s.seconds('txtWindow', 3600, { positive: true }),
  };
  s.done();
  return f;
}

function readMx(s: Section): Config['mx'] {
  const resolvers = s.array('resolvers', ['127.0.0.1:53']).map((item, i) => {
    const key = s.itemPath('resolvers', i);
    const parsed = typeof item === 'string' ? parseHostPort(item, 53) : undefined;
    // By address only: a resolver's own name could not be looked up (c-ares refuses it, and
    // every MX would then count as unresolvable and be deleted).
    if (!parsed || !parseAddress(parsed.host))
      throw new ConfigError(key, 'expected an IP address, "address:port" or "[IPv6 address]:port"');
    return (item as string).trim();
  });
  if (resolvers.length === 0) throw new ConfigError(s.keyPath('resolvers'), 'needs at least one resolver');
  const mx = { resolvers, timeoutMs: s.seconds('timeout', 1, { positive: true }) };
  s.done();
  return mx;
}

function readAgents(s: Section): Config['agents'] {
  const blocked = s.array('blocked', DEFAULT_BLOCKED_AGENTS).map((item, i) => {
    if (typeof item !== 'string' || item.trim() === '') {
      throw new ConfigError(s.itemPath('blocked', i), 'expected a non-empty User-Agent string or * pattern');
    }
    return item;
  });
  s.done();
  return { blocked };
}

function readJunk(s: Section): Config['junk'] {
  const junk = {
    threshold: s.integer('threshold', 20, { min: 1 }),
    windowMs: s.seconds('window', 300, { positive: true }),
    blockMs: s.seconds('block', 3600, { positive: true }),
  };
  s.done();
  return junk;
}

function readCredentials(s: Section): Config['credentials'] {
  const c = {
    maxFailures: s.integer('maxFailures', 10, { min: 1 }),
    windowMs: s.seconds('window', 600, { positive: true }),
    // 0 would be SET … PX 0, which Redis rejects: every counted failure would answer 911.
    cooldownMs: s.seconds('cooldown', 900, { positive: true }),
    cacheTtlMs: s.seconds('cacheTtl', 3600),
    cacheSize: s.integer('cacheSize', 10000, { min: 0 }),
  };
  s.done();
  return c;
}

/** `addresses.refuse`: address classes never published (docs/protocol.md, "Address classes"). */
function readAddresses(s: Section): Config['addresses'] {
  const items = s.array('refuse', []);
  const refuse = items.map((item, i) => {
    if (typeof item !== 'string' || !(ADDRESS_CLASSES as readonly string[]).includes(item))
      throw new ConfigError(s.itemPath('refuse', i), `expected one of ${ADDRESS_CLASSES.join(', ')}`);
    return item as AddressClass;
  });
  s.done();
  return { refuse: [...new Set(refuse)] };
}

/** `hosts`: the quiet-host sweep (docs/operators.md, "Quiet hosts"). */
function readHosts(s: Section): Config['hosts'] {
  const quietSweepIntervalMs = s.seconds('quietSweepInterval', 600, { positive: true });
  const closeQuietAfterMs = s.seconds('closeQuietAfter', 0);
  s.done();
  return closeQuietAfterMs > 0 ? { quietSweepIntervalMs, closeQuietAfterMs } : { quietSweepIntervalMs };
}

function readAcme(s: Section): Config['acme'] {
  const propagationTimeoutMs = s.seconds('propagationTimeout', 60, { positive: true });
  s.done();
  return { propagationTimeoutMs };
}

function readUpdate(s: Section): Config['update'] {
  const waitForSecondaries = s.boolean('waitForSecondaries', false);
  s.done();
  return { waitForSecondaries };
}

function readLog(s: Section): Config['log'] {
  const level = s.string('level', 'info');
  if (!(LOG_LEVELS as readonly string[]).includes(level)) {
    throw new ConfigError(s.keyPath('level'), `expected one of ${LOG_LEVELS.join(', ')}`);
  }
  s.done();
  return { level: level as Config['log']['level'] };
}

// ---- zones ----------------------------------------------------------------------------

function readZones(top: Section, opts: ParseOptions): ZoneConfig[] {
  const items = top.array('zones');
  if (items.length === 0) throw new ConfigError('zones', 'needs at least one zone');
  const seen = new Map<string, number>();
  const zones = items.map((item, i) => {
    const z = Section.of(top.itemPath('zones', i), item);
    const name = normalizeZoneName(z.string('name'));
    if (!name) throw new ConfigError(z.keyPath('name'), 'expected a domain name such as "dyn.example.org"');
    const earlier = seen.get(name);
    if (earlier !== undefined)
      throw new ConfigError(z.keyPath('name'), `zone ${name} is already configured as zones[${earlier}]`);
    seen.set(name, i);
    const primary = parseHostPort(z.string('primary'), 53);
    if (!primary) throw new ConfigError(z.keyPath('primary'), 'expected host:port');
    const key = readKey(z.section('key'), opts);
    const maxInFlight = z.has('maxInFlight') ? z.integer('maxInFlight', 1, { min: 1, max: 1000 }) : undefined;
    const staticNames = readStaticNames(z, name);
    const secondaries = z.has('secondaries') ? readSecondaries(z) : undefined;
    z.done();
    return {
      name,
      primary,
      key,
      staticNames,
      ...(maxInFlight === undefined ? {} : { maxInFlight }),
      ...(secondaries === undefined ? {} : { secondaries }),
    };
  });
  checkStaticNamesOfNestedZones(top, zones);
  return zones;
}

/** `zones[i].staticNames`: names the operator keeps in the zone (core/static-names.ts), as patterns; each once. */
function readStaticNames(z: Section, zone: string): string[] {
  const seen = new Map<string, number>();
  return z.array('staticNames', []).map((item, j) => {
    const key = z.itemPath('staticNames', j);
    if (typeof item !== 'string')
      throw new ConfigError(key, `expected a name such as ${STATIC_NAME_FORMS}, got ${describe(item)}`);
    const parsed = parseStaticName(item, zone);
    if ('problem' in parsed) throw new ConfigError(key, parsed.problem);
    const earlier = seen.get(parsed.pattern);
    if (earlier !== undefined)
      throw new ConfigError(key, `${parsed.pattern} is listed already (${z.itemPath('staticNames', earlier)})`);
    seen.set(parsed.pattern, j);
    return parsed.pattern;
  });
}

/**
 * A static name at or below the apex of another configured zone (a child zone) belongs to that zone: its records
 * are there, and hosts there are checked against that zone's list. Listed in the parent it would do nothing.
 */
function checkStaticNamesOfNestedZones(top: Section, zones: readonly ZoneConfig[]): void {
  const names = zones.map((z) => z.name);
  zones.forEach((zone, i) => {
    zone.staticNames.forEach((pattern, j) => {
      const below = pattern.startsWith('*.');
      const name = below ? pattern.slice(2) : pattern;
      const owner = names.includes(name) ? name : zoneOf(name, names);
      if (owner === zone.name || owner === undefined) return;
      const where = `the zone ${owner} (zones[${names.indexOf(owner)}]), configured too`;
      throw new ConfigError(
        `${top.itemPath('zones', i)}.staticNames[${j}]`,
        name === owner && !below
          ? `${name} is the apex of ${where}`
          : `${pattern} is in ${where}: list ${below ? 'its names' : 'it'} in that zone's staticNames`,
      );
    });
  });
}

/** `secondaries`: `host:port` items (port 53 when left out) and at most one `"auto"`. */
function readSecondaries(z: Section): NonNullable<ZoneConfig['secondaries']> {
  let auto = false;
  const servers: { host: string; port: number }[] = [];
  z.array('secondaries').forEach((item, i) => {
    const key = z.itemPath('secondaries', i);
    if (item === 'auto') {
      if (auto) throw new ConfigError(key, '"auto" is already listed');
      auto = true;
      return;
    }
    const parsed = typeof item === 'string' ? parseHostPort(item, 53) : undefined;
    if (!parsed) throw new ConfigError(key, 'expected "host:port", "[IPv6 address]:port" or "auto"');
    if (servers.some((s) => s.host === parsed.host && s.port === parsed.port))
      throw new ConfigError(key, `${parsed.host}:${parsed.port} is already listed`);
    servers.push(parsed);
  });
  return { servers, auto };
}

function readKey(k: Section, opts: ParseOptions): ZoneConfig['key'] {
  const rawName = k.string('name');
  const name = rawName.trim().toLowerCase().replace(/\.$/, '');
  // A DNS name (it is the TSIG record's owner): labels of at most 63, at most 253 in all.
  if (name.length > 253 || !/^[a-z0-9_](?:[a-z0-9_-]{0,62})(?:\.[a-z0-9_](?:[a-z0-9_-]{0,62}))*$/.test(name)) {
    throw new ConfigError(k.keyPath('name'), 'expected a key name such as "ddns-key"');
  }
  const rawAlgorithm = k.string('algorithm', 'hmac-sha256').trim().toLowerCase().replace(/\.$/, '');
  if (!(TSIG_ALGORITHMS as readonly string[]).includes(rawAlgorithm)) {
    throw new ConfigError(k.keyPath('algorithm'), `expected one of ${TSIG_ALGORITHMS.join(', ')}`);
  }
  const algorithm = rawAlgorithm as TsigAlgorithm;

  const sources = secretSourcesOf(k, { file: 'secretFile', env: 'secretEnv', inline: 'secret' });
  k.done();
  if (sources.length !== 1) {
    throw new ConfigError(k.path, `needs exactly one of secretFile, secretEnv, secret (got ${sources.length})`);
  }
  const ctx: SecretContext = { env: opts.env, baseDir: opts.baseDir, readFile: opts.readFile };
  return { name, algorithm, secret: loadSecret(sources[0]!, ctx, { name, algorithm }) };
}

// ---- helpers --------------------------------------------------------------------------

/** The settings of a section that give a secret — a file, an environment variable, inline — in that order. */
function secretSourcesOf(s: Section, names: { file: string; env: string; inline?: string }): SecretSource[] {
  const sources: SecretSource[] = [];
  const file = s.optionalString(names.file);
  const variable = s.optionalString(names.env);
  const inline = names.inline === undefined ? undefined : s.optionalString(names.inline);
  if (file !== undefined) sources.push({ kind: 'file', key: s.keyPath(names.file), path: file });
  if (variable !== undefined) sources.push({ kind: 'env', key: s.keyPath(names.env), variable });
  if (inline !== undefined) sources.push({ kind: 'inline', key: s.keyPath(names.inline!), value: inline });
  return sources;
}

function normalizeZoneName(raw: string): string | undefined {
  const name = raw.trim().toLowerCase().replace(/\.$/, '');
  const labels = name.split('.');
  if (name.length === 0 || name.length > 253) return undefined;
  // Zone names may be a single label in a lab, but each label is LDH (underscore allowed in zones).
  return labels.every((l) => /^(?!-)[a-z0-9_-]{1,63}(?<!-)$/.test(l)) ? name : undefined;
}

function isHostName(text: string): boolean {
  const name = text.toLowerCase().replace(/\.$/, '');
  return name.length > 0 && name.length <= 253 && name.split('.').every((l) => /^(?!-)[a-z0-9-]{1,63}(?<!-)$/.test(l));
}

/**
 * "host:port", "[v6]:port", a bare IPv6 address or a bare host (when `defaultPort` is given).
 * The host is an IP address or a host name; `undefined` when malformed.
 */
export function parseHostPort(
  raw: string,
  defaultPort: number | undefined,
): { host: string; port: number } | undefined {
  const text = raw.trim();
  let host: string;
  let portText: string | undefined;
  const bracketed = /^\[([^\]]+)\](?::(.*))?$/.exec(text);
  if (bracketed) {
    host = bracketed[1]!;
    portText = bracketed[2];
    if (!isIPv6(host)) return undefined;
  } else if (isIPv6(text)) {
    host = text;
  } else {
    const colon = text.lastIndexOf(':');
    host = colon < 0 ? text : text.slice(0, colon);
    portText = colon < 0 ? undefined : text.slice(colon + 1);
    if (!parseAddress(host) && !isHostName(host)) return undefined;
  }
  let port: number;
  if (portText === undefined) {
    if (defaultPort === undefined) return undefined;
    port = defaultPort;
  } else {
    if (!/^\d{1,5}$/.test(portText)) return undefined;
    port = Number(portText);
    if (port > 65535) return undefined;
  }
  return { host, port };
}

/** Freeze every object and array; Buffers (the secrets) cannot be frozen and are left as they are. */
export function deepFreeze<T>(value: T): T {
  if (typeof value !== 'object' || value === null || Buffer.isBuffer(value) || Object.isFrozen(value)) return value;
  for (const child of Object.values(value)) deepFreeze(child);
  return Object.freeze(value);
}

// ---- warnings -------------------------------------------------------------------------

/**
 * Things that work but should not stay that way: a group/world-readable secretFile, a
 * world-readable TLS keyFile, an inline secret, and a config file others can read while it holds a secret (an inline
 * TSIG secret or a password in redis.url). A config without secrets may be readable by
 * the service's group (the usual 0640 root:ddns-bridge) without a warning.
 * Best effort: an unreadable or invalid config yields no warnings (loadConfig reports it).
 */
export async function configWarnings(file: string, env: NodeJS.ProcessEnv): Promise<string[]> {
  const warnings: string[] = [];
  let json: unknown;
  try {
    json = JSON.parse(await readFile(file, 'utf8'));
  } catch {
    return warnings;
  }
  if (!isObject(json)) return warnings;
  const baseDir = path.dirname(path.resolve(file));
  let configHoldsSecret = false;

  const zones = Array.isArray(json.zones) ? json.zones : [];
  for (const [i, zone] of zones.entries()) {
    const key = isObject(zone) && isObject(zone.key) ? zone.key : undefined;
    if (!key) continue;
    if (key.secret !== undefined) {
      configHoldsSecret = true;
      warnings.push(
        `zones[${i}].key.secret: the TSIG secret is inline in ${file}; move it to a file (secretFile, mode 0600) or use secretEnv`,
      );
    }
    if (typeof key.secretFile === 'string') {
      const warning = await readableSecretFile(`zones[${i}].key.secretFile`, key.secretFile, baseDir, env);
      if (warning) warnings.push(warning);
    }
  }
  // A TLS key may be readable by a group (Debian's ssl-cert), never by everyone.
  const listen = Array.isArray(json.listen) ? json.listen : [];
  for (const [i, entry] of listen.entries()) {
    const tls = isObject(entry) && isObject(entry.tls) ? entry.tls : undefined;
    if (typeof tls?.keyFile !== 'string') continue;
    const setting = `listen[${i}].tls.keyFile`;
    let file: string;
    try {
      file = resolveSecretPath(tls.keyFile, baseDir, env, setting);
    } catch {
      continue; // unexpandable path: loadConfig reports it
    }
    const mode = await modeOf(file);
    if (mode !== undefined && (mode & 0o007) !== 0) {
      const fix = "chmod 600 it (or 640 for the service's group)";
      warnings.push(`${setting}: ${file} is readable by everyone (mode ${octal(mode)}); ${fix}`);
    }
  }
  const redis = isObject(json.redis) ? json.redis : undefined;
  if (typeof redis?.url === 'string') {
    try {
      // A socket URL can only carry its password as a parameter (unix:///…sock?password=…).
      const u = new URL(redis.url);
      if (u.password !== '' || u.searchParams.has('password')) configHoldsSecret = true;
    } catch {
      // invalid URL: loadConfig reports it
    }
  }
  if (typeof redis?.passwordFile === 'string') {
    const warning = await readableSecretFile('redis.passwordFile', redis.passwordFile, baseDir, env);
    if (warning) warnings.push(warning);
  }
  const admin = isObject(json.admin) ? json.admin : undefined;
  if (typeof admin?.tokenFile === 'string') {
    const warning = await readableSecretFile('admin.tokenFile', admin.tokenFile, baseDir, env);
    if (warning) warnings.push(warning);
  }
  if (configHoldsSecret) {
    const mode = await modeOf(file);
    if (mode !== undefined && (mode & 0o077) !== 0) {
      warnings.push(`${file} holds a secret and is readable by ${readers(mode)} (mode ${octal(mode)}); chmod 600 it`);
    }
  }
  return warnings;
}

/** A warning when the secret file a setting names is readable by others than its owner. */
async function readableSecretFile(
  setting: string,
  rawPath: string,
  baseDir: string,
  env: NodeJS.ProcessEnv,
): Promise<string | undefined> {
  let file: string;
  try {
    file = resolveSecretPath(rawPath, baseDir, env, setting);
  } catch {
    return undefined; // unexpandable path: loadConfig reports it
  }
  const mode = await modeOf(file);
  if (mode === undefined || (mode & 0o077) === 0) return undefined;
  return `${setting}: ${file} is readable by ${readers(mode)} (mode ${octal(mode)}); chmod 600 it, owned by the service user, or pass it with systemd LoadCredential=`;
}

async function modeOf(file: string): Promise<number | undefined> {
  try {
    return (await stat(file)).mode & 0o777;
  } catch {
    return undefined;
  }
}

function readers(mode: number): string {
  const who = [];
  if (mode & 0o070) who.push('its group');
  if (mode & 0o007) who.push('everyone');
  return who.join(' and ');
}

function octal(mode: number): string {
  return `0${mode.toString(8).padStart(3, '0')}`;
}
