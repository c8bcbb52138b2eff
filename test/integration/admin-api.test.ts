/**
 * The admin listener on a real serve process (Redis, Knot): health, readiness, the bearer
 * token, the provisioning API end to end (a sign-up, then an update with the token it gave),
 * its errors, and the OpenAPI document checked against the routes and the answers.
 */
import { expect } from 'chai';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Redis } from 'ioredis';
import { OPERATIONS } from '../../src/admin/api.js';
import { freePort, makeTempDir, removeDir, requireBinariesOrSkip } from '../../src/lab/index.js';
import { Keys } from '../../src/store/keys.js';
import { AGENT_LIST_CACHE_MS } from '../../src/store/index.js';
import { BridgeEnv, rawRequest, ZONE } from '../support/bridge.js';
import { buildMessage, readAnswer, sign, udp } from '../support/gateway-client.js';
import { Serve } from '../support/serve-process.js';

const TOKEN = 'a'.repeat(24) + '0123456789abcdef0123456789abcdef';
const SUFFIX = `${process.pid}`;
const KEYS = new Keys('ddns:');

interface Answer {
  status: number;
  headers: Headers;
  text: string;
  json: unknown;
}

describe('admin listener: health, metrics, provisioning API (knot)', function () {
  this.timeout(120_000);
  let env: BridgeEnv;
  let adminPort: number;
  let raw: Redis;
  let tokenDir: string | undefined;

  async function call(method: string, p: string, body?: unknown, token: string | null = TOKEN): Promise<Answer> {
    const headers: Record<string, string> = {};
    if (token !== null) headers.authorization = `Bearer ${token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const r = await fetch(`http://127.0.0.1:${adminPort}${p}`, {
      method,
      headers,
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await r.text();
    let json: unknown;
    try {
      json = text === '' ? undefined : JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: r.status, headers: r.headers, text, json };
  }

  before(async function () {
    requireBinariesOrSkip(this, ['redis-server', 'knotd', 'kdig']);
    adminPort = await freePort();
    tokenDir = await makeTempDir('admin-token-');
    const tokenFile = path.join(tokenDir, 'admin.token');
    await writeFile(tokenFile, TOKEN + '\n', { mode: 0o600 });
    env = await BridgeEnv.start({
      kind: 'knot',
      gateway: true,
      config: {
        admin: { listen: [`127.0.0.1:${adminPort}`], tokenFile },
        frequency: { minInterval: 0.001, donatorMinInterval: 0.001 },
      },
    });
    raw = new Redis(env.redis.url);
  });

  after(async () => {
    raw?.disconnect();
    await env?.stop();
    if (tokenDir) await removeDir(tokenDir);
  });

  it('POST /v1/hosts/{fqdn}/tokens with tsig: a gateway key, shown once, that the gateway takes; counted on /metrics', async () => {
    const account = `gwkey-${SUFFIX}`;
    const fqdn = `gwkey-${SUFFIX}.${ZONE}`;
    expect((await call('POST', '/v1/accounts', { name: account, password: 'account-password-1' })).status).to.equal(
      201,
    );
    expect((await call('POST', '/v1/hosts', { fqdn, account })).status).to.equal(201);
    const r = await call('POST', `/v1/hosts/${fqdn}/tokens`, { tsig: true, algorithm: 'hmac-sha512', acmeOnly: true });
    expect(r.status).to.equal(201);
    const made = r.json as {
      id: string;
      token: null;
      tsig: string;
      key: { name: string; algorithm: string; secret: string; nsupdate: string; bind: string; knot: string };
    };
    expect(made.token).to.equal(null);
    expect(made.tsig).to.equal('hmac-sha512');
    expect(made.key.name).to.equal(`${made.id}.${fqdn}`);
    expect(Buffer.from(made.key.secret, 'base64')).to.have.length(64);
    expect(made.key.nsupdate).to.equal(`hmac-sha512:${made.key.name}:${made.key.secret}`);
    expect(made.key.bind).to.include(`secret "${made.key.secret}";`);
    expect(made.key.knot).to.include(`secret: ${made.key.secret}`);
    const listed = await call('GET', `/v1/hosts/${fqdn}/tokens`);
    expect(listed.json).to.deep.include.members([
      { ...(listed.json as object[])[0], id: made.id, tsig: 'hmac-sha512' },
    ]);
    expect(listed.text).to.not.include(made.key.secret);
    expect((await raw.keys('*')).join(' ')).to.not.include(made.key.secret);
    // The key signs an SOA query the gateway answers, signed.
    const key = {
      name: made.key.name,
      algorithm: 'hmac-sha512' as const,
      secret: Buffer.from(made.key.secret, 'base64'),
    };
    const { message, mac } = sign(buildMessage({ opcode: 0, zone: [{ name: fqdn }] }), key);
    const answer = readAnswer(await udp(env.gatewayPort, message), key, mac);
    expect([answer.rcode, answer.verified]).to.deep.equal(['NOERROR', true]);
    const metrics = (await call('GET', '/metrics', undefined, null)).text;
    expect(metrics).to.match(/ddns_bridge_gateway_requests_total\{opcode="QUERY",rcode="NOERROR"\} [1-9]/);
    // Without a gateway the same request is refused (here the config has one: the CLI without it, below).
    const http = await call('POST', `/v1/hosts/${fqdn}/tokens`, { tsig: true, algorithm: 'hmac-md5' });
    expect(http.status).to.equal(400);
  });

  it('GET /healthz: 200 {"status":"ok"}, no token needed', async () => {
    const r = await call('GET', '/healthz', undefined, null);
    expect(r.status).to.equal(200);
    expect(r.text).to.equal('{"status":"ok"}\n');
    expect(r.headers.get('content-type')).to.equal('application/json');
  });

  it('GET /readyz: 200 once the zone answered a signed probe; the checks named only to the token', async () => {
    let r = await call('GET', '/readyz', undefined, null);
    for (let i = 0; i < 50 && r.status !== 200; i++) {
      await new Promise((res) => setTimeout(res, 100));
      r = await call('GET', '/readyz', undefined, null);
    }
    expect(r.status).to.equal(200);
    // Without the token: whether, and which checks failed; nothing of the checks themselves.
    expect(r.text).to.equal('{"ready":true,"failed":[]}\n');
    // A wrong token is no token.
    expect((await call('GET', '/readyz', undefined, TOKEN.slice(0, -1))).text).to.equal('{"ready":true,"failed":[]}\n');
    r = await call('GET', '/readyz');
    expect(r.status).to.equal(200);
    const body = r.json as { ready: boolean; failed: string[]; checks: Record<string, { ok: boolean }> };
    expect(body.ready).to.equal(true);
    expect(body.failed).to.deep.equal([]);
    expect(Object.keys(body.checks)).to.deep.equal(['redis', `zone ${ZONE}`]);
    expect(body.checks.redis!.ok).to.equal(true);
  });

  it('GET /metrics: Prometheus text, no token needed', async () => {
    const r = await call('GET', '/metrics', undefined, null);
    expect(r.status).to.equal(200);
    expect(r.headers.get('content-type')).to.match(/^text\/plain; version=0\.0\.4/);
    expect(r.text).to.include('# TYPE ddns_bridge_http_requests_total counter');
  });

  it('/v1 without a token, or with a wrong one: 401 JSON, and nothing is told about the path', async () => {
    const expected = '{"error":"ERR_UNAUTHORIZED","message":"a valid admin bearer token is required"}\n';
    for (const token of [null, 'wrong', TOKEN.slice(0, -1), TOKEN + 'x', TOKEN.toUpperCase()]) {
      for (const p of ['/v1/accounts', '/v1/no-such-thing', '/v1/openapi.json']) {
        const r = await call('GET', p, undefined, token);
        expect(r.status, `${p} ${token}`).to.equal(401);
        expect(r.text).to.equal(expected);
        expect(r.headers.get('www-authenticate')).to.equal('Bearer realm="ddns-bridge admin"');
      }
    }
    // The exact bytes, over a plain socket.
    const bytes = await rawRequest('127.0.0.1', adminPort, 'GET /v1/accounts HTTP/1.0\r\n\r\n');
    expect(bytes.toString()).to.match(/^HTTP\/1\.1 401 Unauthorized\r\n/);
    expect(bytes.toString().endsWith(`\r\n\r\n${expected}`)).to.equal(true);
  });

  it('request targets URL cannot read (`//[/`, a bad port, %-junk): 400 JSON, and the process stays up', async () => {
    const expected = '{"error":"ERR_INVALID_INPUT","message":"the request target is not a valid URL"}\n';
    for (const target of ['//[/', 'http://a:99999999/', 'http://%zz/', '//[::1', 'http://[/v1/accounts']) {
      const bytes = await rawRequest(
        '127.0.0.1',
        adminPort,
        `GET ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
      );
      const text = bytes.toString();
      expect(text, target).to.match(/^HTTP\/1\.1 400 Bad Request\r\n/);
      expect(text.endsWith(`\r\n\r\n${expected}`), text).to.equal(true);
    }
    // Still serving, on both listeners.
    expect((await call('GET', '/healthz', undefined, null)).status).to.equal(200);
    expect((await env.get('/nic/checkip')).status).to.equal(200);
  });

  it('a whole sign-up over HTTP (account, host, token), then an update with the token: good, in DNS', async () => {
    const account = `signup${SUFFIX}`;
    const fqdn = `signup-${SUFFIX}.${ZONE}`;
    let r = await call('POST', '/v1/accounts', { name: account, password: 'account-password-1' });
    expect(r.status).to.equal(201);
    expect(r.json).to.include({ name: account, donator: false });
    r = await call('POST', '/v1/hosts', { fqdn, account });
    expect(r.status).to.equal(201);
    expect(r.json).to.include({ fqdn, owner: account, type: 'dynamic', state: 'active' });
    r = await call('POST', `/v1/hosts/${fqdn}/tokens`, { note: 'router', expires: '30d' });
    expect(r.status).to.equal(201);
    const minted = r.json as { id: string; token: string; host: string; note: string };
    expect(minted.host).to.equal(fqdn);
    expect(minted.note).to.equal('router');
    expect(minted.token).to.match(/^[A-Za-z0-9_-]{32}$/);

    const update = await env.get(`/nic/update?hostname=${fqdn}&myip=192.0.2.77`, {
      auth: [fqdn, minted.token],
      ua: 'AdminApiTest/1.0',
    });
    expect(update.body).to.equal('good 192.0.2.77\n');
    expect(await env.ns.query(fqdn, 'A')).to.deep.equal(['192.0.2.77']);

    r = await call('GET', `/v1/hosts/${fqdn}`);
    expect(r.status).to.equal(200);
    expect(r.json).to.include({ ipv4: '192.0.2.77', repair: null });
    // The last request and the day's counts (docs/operators.md, "The last request of a host").
    const last = r.json as { lastRequest: Record<string, unknown>; requests24h: unknown };
    expect(last.lastRequest).to.deep.include({ reply: 'good', userAgent: 'AdminApiTest/1.0', source: '127.0.0.1' });
    expect(last.requests24h).to.deep.equal({ good: 1, nochg: 0, refused: 0, failed: 0 });
    r = await call('GET', `/v1/hosts/${fqdn}/tokens`);
    expect((r.json as { id: string; lastUsed: string | null }[]).map((t) => t.id)).to.deep.equal([minted.id]);
    expect((r.json as { lastUsed: string | null }[])[0]!.lastUsed).to.be.a('string');
    // The token is never shown again, nor stored.
    expect(r.text).to.not.include(minted.token);
    expect((await raw.keys('*')).join(' ')).to.not.include(minted.token);

    // The account password works too, and changing it over the API takes effect at once.
    expect(
      (await env.get(`/nic/update?hostname=${fqdn}&myip=192.0.2.78`, { auth: [account, 'account-password-1'] })).body,
    ).to.equal('good 192.0.2.78\n');
    r = await call('PUT', `/v1/accounts/${account}/password`, { password: 'account-password-2' });
    expect(r.status).to.equal(204);
    expect(r.text).to.equal('');
    expect(
      (await env.get(`/nic/update?hostname=${fqdn}&myip=192.0.2.79`, { auth: [account, 'account-password-1'] })).body,
    ).to.equal('badauth\n');
    // A refused login is not the host's request: the last one is still the good one before it.
    r = await call('GET', `/v1/hosts/${fqdn}`);
    expect((r.json as { lastRequest: unknown }).lastRequest).to.deep.include({
      reply: 'good',
      userAgent: 'ddns-bridge-tests/1.0 tests@example.test',
    });
    expect((r.json as { requests24h: unknown }).requests24h).to.deep.equal({
      good: 2,
      nochg: 0,
      refused: 0,
      failed: 0,
    });

    // Revoke the token: the next update with it is refused.
    expect((await call('DELETE', `/v1/tokens/${minted.id}`)).status).to.equal(204);
    const refused = await env.get(`/nic/update?hostname=${fqdn}&myip=192.0.2.80`, { auth: [fqdn, minted.token] });
    expect(refused.body).to.equal('badauth\n');

    // Delete the host: its record leaves DNS, then the account can go.
    expect((await call('DELETE', `/v1/accounts/${account}`)).status).to.equal(409);
    expect((await call('DELETE', `/v1/hosts/${fqdn}`)).status).to.equal(204);
    expect(await env.ns.query(fqdn, 'A')).to.deep.equal([]);
    expect((await call('GET', `/v1/hosts/${fqdn}`)).status).to.equal(404);
    expect((await call('DELETE', `/v1/accounts/${account}`)).status).to.equal(204);
    expect((await call('GET', `/v1/accounts/${account}`)).status).to.equal(404);
  });

  it('accounts: list, show with hosts, donator; host list by account; state changes', async () => {
    const account = `lister${SUFFIX}`;
    const fqdn = `lister-${SUFFIX}.${ZONE}`;
    expect(
      (await call('POST', '/v1/accounts', { name: account, password: 'pw-lister', donator: true })).status,
    ).to.equal(201);
    expect((await call('POST', '/v1/hosts', { fqdn, account, type: 'static' })).status).to.equal(201);
    const list = (await call('GET', '/v1/accounts')).json as { name: string; donator: boolean }[];
    expect(list.find((a) => a.name === account)).to.include({ donator: true });
    expect((await call('PUT', `/v1/accounts/${account}/donator`, { donator: false })).status).to.equal(204);
    const shown = (await call('GET', `/v1/accounts/${account}`)).json as { donator: boolean; hosts: string[] };
    expect(shown).to.include({ donator: false });
    expect(shown.hosts).to.deep.equal([fqdn]);
    const hosts = (await call('GET', `/v1/hosts?account=${account}`)).json as { fqdn: string; type: string }[];
    expect(hosts.map((h) => [h.fqdn, h.type])).to.deep.equal([[fqdn, 'static']]);
    expect((await call('GET', `/v1/hosts?account=nobody${SUFFIX}`)).status).to.equal(404);

    expect((await call('POST', `/v1/hosts/${fqdn}/block`)).json).to.deep.equal({ fqdn, state: 'blocked' });
    const again = await call('POST', `/v1/hosts/${fqdn}/block`);
    expect(again.status).to.equal(409);
    expect(again.json).to.deep.equal({ error: 'ERR_CONFLICT', message: `host ${fqdn} is blocked: cannot block` });
    expect((await call('POST', `/v1/hosts/${fqdn}/unblock`)).json).to.deep.equal({ fqdn, state: 'active' });
    expect((await call('POST', `/v1/hosts/${fqdn}/close`)).json).to.deep.equal({ fqdn, state: 'closed' });
    expect((await call('POST', `/v1/hosts/${fqdn}/reopen`)).json).to.deep.equal({ fqdn, state: 'active' });
    expect((await env.cliOk(['host', 'show', fqdn, '--json'])).includes('"state":"active"')).to.equal(true);
  });

  it('User-Agent blocks: add, list (config first), remove (URL-encoded), 404 and 409', async () => {
    const agent = `BadBot/${SUFFIX} (x)`;
    const r = await call('POST', '/v1/agents/blocked', { pattern: agent });
    expect(r.status).to.equal(201);
    expect(r.json).to.deep.equal({ pattern: agent, source: 'redis' });
    const listed = (await call('GET', '/v1/agents/blocked')).json as { pattern: string; source: string }[];
    expect(listed).to.deep.include({ pattern: agent, source: 'redis' });
    expect(listed[0]!.source).to.equal('config');
    // Each frontend reads the Redis list again after AGENT_LIST_CACHE_MS.
    await new Promise((res) => setTimeout(res, AGENT_LIST_CACHE_MS + 200));
    const blocked = await env.get(`/nic/update?hostname=x.${ZONE}&myip=192.0.2.1`, { auth: ['a', 'b'], ua: agent });
    expect(blocked.body).to.equal('badagent\n');
    expect((await call('DELETE', `/v1/agents/blocked/${encodeURIComponent(agent)}`)).status).to.equal(204);
    expect((await call('DELETE', `/v1/agents/blocked/${encodeURIComponent(agent)}`)).status).to.equal(404);
    const configPattern = listed[0]!.pattern;
    const fromConfig = await call('DELETE', `/v1/agents/blocked/${encodeURIComponent(configPattern)}`);
    expect(fromConfig.status).to.equal(409);
  });

  it('bad requests: 400 naming the field, 404, 405 with Allow, 409, 413, 415 — and nothing written', async () => {
    const before = await raw.dbsize();
    const cases: [string, string, unknown, number, Record<string, unknown>][] = [
      ['POST', '/v1/accounts', '{"name":', 400, { error: 'ERR_INVALID_INPUT', message: 'the body is not valid JSON' }],
      ['POST', '/v1/accounts', { name: 'x' }, 400, { error: 'ERR_INVALID_INPUT', field: 'password' }],
      ['POST', '/v1/accounts', { name: 'x', password: 'p', admin: true }, 400, { field: 'admin' }],
      ['POST', '/v1/accounts', { name: 'x', password: 7 }, 400, { field: 'password' }],
      ['POST', '/v1/accounts', { name: '-bad name', password: 'p' }, 400, { error: 'ERR_INVALID_INPUT' }],
      ['POST', '/v1/accounts', { name: 'x', password: '' }, 400, { field: 'password' }],
      ['POST', '/v1/hosts', { fqdn: 'elsewhere.example.com', account: 'x' }, 400, { error: 'ERR_INVALID_INPUT' }],
      [
        'POST',
        '/v1/hosts',
        { fqdn: `nobody-${SUFFIX}.${ZONE}`, account: `nobody${SUFFIX}` },
        404,
        { error: 'ERR_NOT_FOUND' },
      ],
      ['POST', `/v1/hosts/nohost-${SUFFIX}.${ZONE}/tokens`, {}, 404, { error: 'ERR_NOT_FOUND' }],
      ['POST', `/v1/hosts/nohost-${SUFFIX}.${ZONE}/tokens`, { expires: 'soon' }, 400, { field: 'expires' }],
      ['DELETE', '/v1/tokens/not-an-id', undefined, 400, { error: 'ERR_INVALID_INPUT' }],
      ['DELETE', '/v1/tokens/0123456789ab', undefined, 404, { error: 'ERR_NOT_FOUND' }],
      ['GET', '/v1/nothing', undefined, 404, { error: 'ERR_NOT_FOUND', message: 'no such path: /v1/nothing' }],
      ['PATCH', '/v1/accounts', undefined, 405, { error: 'ERR_METHOD_NOT_ALLOWED' }],
      ['GET', '/v1/accounts/%E0%A4%A', undefined, 400, { field: 'name' }],
    ];
    for (const [method, p, body, status, fields] of cases) {
      const r = await call(method, p, body);
      expect(r.status, `${method} ${p} ${JSON.stringify(body)}`).to.equal(status);
      expect(r.json, `${method} ${p}`).to.include(fields);
      expect(Object.keys(r.json as object)).to.include.members(['error', 'message']);
    }
    const notAllowed = await call('PATCH', '/v1/accounts');
    expect(notAllowed.headers.get('allow')).to.equal('POST, GET');
    const plain = await fetch(`http://127.0.0.1:${adminPort}/v1/accounts`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'text/plain' },
      body: '{"name":"x","password":"p"}',
    });
    expect(plain.status).to.equal(415);
    const huge = await call('POST', '/v1/accounts', { name: 'x', password: 'p'.repeat(70_000) });
    expect(huge.status).to.equal(413);
    expect(await raw.dbsize()).to.equal(before);
    // A duplicate: 409, the first one untouched.
    const name = `dup${SUFFIX}`;
    expect((await call('POST', '/v1/accounts', { name, password: 'first' })).status).to.equal(201);
    const hash = await raw.hgetall(KEYS.account(name));
    const dup = await call('POST', '/v1/accounts', { name, password: 'second' });
    expect(dup.status).to.equal(409);
    expect(dup.json).to.deep.equal({ error: 'ERR_CONFLICT', message: `account ${name} exists` });
    expect(await raw.hgetall(KEYS.account(name))).to.deep.equal(hash);
  });

  it('a zoned address in from, an account name outside the rule: 400 naming the field, exact body, nothing written', async () => {
    const account = `zoned${SUFFIX}`;
    const fqdn = `zoned-${SUFFIX}.${ZONE}`;
    expect((await call('POST', '/v1/accounts', { name: account, password: 'zoned-password-1' })).status).to.equal(201);
    expect((await call('POST', '/v1/hosts', { fqdn, account })).status).to.equal(201);
    const before = await raw.dbsize();
    const zoned = (text: string) =>
      JSON.stringify({
        error: 'ERR_INVALID_INPUT',
        message: `from: "${text}" has a zone index (%eth0): a CIDR block names addresses, not an interface; leave out %eth0`,
        field: 'from',
      }) + '\n';
    for (const [from, text] of [
      ['fe80::1%eth0', 'fe80::1%eth0'],
      ['fe80::1%eth0/64', 'fe80::1%eth0/64'],
      [['192.0.2.0/24', 'fe80::1%eth0'], 'fe80::1%eth0'],
    ] as const) {
      const r = await call('POST', `/v1/hosts/${fqdn}/tokens`, { from });
      expect(r.status, JSON.stringify(from)).to.equal(400);
      expect(r.text, JSON.stringify(from)).to.equal(zoned(text));
    }
    // The one account-name rule (core/accounts.ts), in the schema the OpenAPI document publishes.
    for (const name of ['*x', '{a}', 'a:b']) {
      const r = await call('POST', '/v1/accounts', { name, password: 'p' });
      expect(r.status, name).to.equal(400);
      expect(r.text, name).to.equal(
        JSON.stringify({
          error: 'ERR_INVALID_INPUT',
          message: 'name: must match pattern "^[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}$"',
          field: 'name',
        }) + '\n',
      );
    }
    expect(await raw.dbsize()).to.equal(before);
    expect((await call('GET', `/v1/hosts/${fqdn}/tokens`)).json).to.deep.equal([]);
  });

  it('secrets stay out of the log: no password, no admin token', async () => {
    await call('POST', '/v1/accounts', { name: `logged${SUFFIX}`, password: 'never-in-the-log-42' });
    await call('GET', '/v1/accounts', undefined, 'never-in-the-log-token');
    const log = env.logs.join('');
    expect(log).to.include('"admin request"');
    expect(log).to.not.include('never-in-the-log-42');
    expect(log).to.not.include('never-in-the-log-token');
    expect(log).to.not.include(TOKEN);
  });

  describe('GET /v1/openapi.json', () => {
    let doc: Record<string, unknown>;
    before(async () => {
      const r = await call('GET', '/v1/openapi.json');
      expect(r.status).to.equal(200);
      doc = r.json as Record<string, unknown>;
    });

    it('is a valid OpenAPI 3.1 document', async () => {
      const validator = new Validator();
      const result = await validator.validate(doc);
      expect(result.errors ?? [], JSON.stringify(result.errors)).to.deep.equal([]);
      expect(result.valid).to.equal(true);
      expect(validator.version).to.equal('3.1');
    });

    it('lists exactly the routes the listener serves, and each answers (no 404 route, no 405)', async () => {
      const paths = doc.paths as Record<string, Record<string, unknown>>;
      const documented = Object.entries(paths).flatMap(([p, ops]) =>
        Object.keys(ops).map((m) => `${m.toUpperCase()} ${p}`),
      );
      const served = [...OPERATIONS.map((o) => `${o.method} ${o.path}`), 'GET /v1/openapi.json'];
      expect([...documented].sort()).to.deep.equal([...served].sort());
      for (const entry of documented) {
        const [method, template] = entry.split(' ') as [string, string];
        const p = template.replace(/\{[^}]+\}/g, 'probe-value');
        const r = await call(method, p, method === 'POST' || method === 'PUT' ? {} : undefined);
        expect(r.status, entry).to.not.equal(405);
        if (r.status === 404) expect((r.json as { message: string }).message, entry).to.not.match(/^no such path/);
      }
    });

    it('the answers of the API match the schemas it documents', async () => {
      const ajv = new Ajv2020({ strict: false });
      ajv.addFormat('date-time', true);
      const components = (doc.components as { schemas: Record<string, unknown> }).schemas;
      ajv.addSchema({ $id: 'doc', components: { schemas: components } });
      const schemaFor = (p: string, method: string, status: number) => {
        const ops = (doc.paths as Record<string, Record<string, { responses: Record<string, unknown> }>>)[p]!;
        const response = ops[method]!.responses[String(status)] as { content?: Record<string, { schema: unknown }> };
        const schema = JSON.parse(
          JSON.stringify(response.content!['application/json']!.schema).replaceAll('"#/components', '"doc#/components'),
        );
        return ajv.compile(schema as object);
      };
      const account = `schema${SUFFIX}`;
      const fqdn = `schema-${SUFFIX}.${ZONE}`;
      const checks: [string, string, unknown, string, number][] = [
        ['POST', '/v1/accounts', { name: account, password: 'pw' }, '/v1/accounts', 201],
        ['GET', '/v1/accounts', undefined, '/v1/accounts', 200],
        ['POST', '/v1/hosts', { fqdn, account }, '/v1/hosts', 201],
        ['GET', `/v1/accounts/${account}`, undefined, '/v1/accounts/{name}', 200],
        ['GET', `/v1/hosts/${fqdn}`, undefined, '/v1/hosts/{fqdn}', 200],
        ['GET', '/v1/hosts', undefined, '/v1/hosts', 200],
        ['POST', `/v1/hosts/${fqdn}/tokens`, { from: ['192.0.2.0/24'] }, '/v1/hosts/{fqdn}/tokens', 201],
        ['GET', `/v1/hosts/${fqdn}/tokens`, undefined, '/v1/hosts/{fqdn}/tokens', 200],
        ['POST', `/v1/hosts/${fqdn}/block`, undefined, '/v1/hosts/{fqdn}/block', 200],
        ['GET', '/v1/agents/blocked', undefined, '/v1/agents/blocked', 200],
        ['GET', '/v1/nothing-here', undefined, '/v1/accounts/{name}', 404],
      ];
      for (const [method, p, body, template, status] of checks) {
        const r = await call(method, p, body);
        expect(r.status, `${method} ${p}`).to.equal(status);
        const validate = schemaFor(template, method === 'GET' && status === 404 ? 'get' : method.toLowerCase(), status);
        expect(validate(r.json), `${method} ${p}: ${JSON.stringify(validate.errors)}`).to.equal(true);
      }
    });
  });

  describe('a load balancer drains a frontend whose Redis is gone', () => {
    it('/readyz: 503 naming redis while it is down, 200 again once it is back; /healthz stays 200', async () => {
      const logged = (msg: string): number => env.logs.join('').split(`"msg":"${msg}"`).length - 1;
      const failedBefore = logged('readiness check failed');
      await env.redis.stop();
      try {
        // Without the token: only the name of the failed check, never Redis's error text.
        for (let i = 0; i < 3; i++) {
          const r = await call('GET', '/readyz', undefined, null);
          expect(r.status).to.equal(503);
          expect(r.text).to.equal('{"ready":false,"failed":["redis"]}\n');
        }
        // With it: the reason too.
        const r = await call('GET', '/readyz');
        expect(r.status).to.equal(503);
        const body = r.json as { ready: boolean; failed: string[]; checks: { redis: { ok: boolean; reason: string } } };
        expect(body.ready).to.equal(false);
        expect(body.failed).to.deep.equal(['redis']);
        expect(body.checks.redis.reason).to.be.a('string').and.not.equal('');
        // The log has it once for the four probes (once per change of state, not per probe).
        expect(logged('readiness check failed') - failedBefore).to.equal(1);
        expect((await call('GET', '/healthz', undefined, null)).status).to.equal(200);
        // The API says so too: 503, not a hang.
        const api = await call('GET', '/v1/accounts');
        expect(api.status).to.equal(503);
        expect((api.json as { error: string }).error).to.equal('ERR_STORE_UNAVAILABLE');
      } finally {
        await env.redis.start();
      }
      let r = await call('GET', '/readyz', undefined, null);
      for (let i = 0; i < 50 && r.status !== 200; i++) {
        await new Promise((res) => setTimeout(res, 100));
        r = await call('GET', '/readyz', undefined, null);
      }
      expect(r.status).to.equal(200);
    });
  });
});

describe('admin listener under serve --workers 2: one endpoint for all workers', function () {
  this.timeout(120_000);
  let env: BridgeEnv;
  let serve: Serve;
  let adminPort: number;
  let tokenDir: string | undefined;

  before(async function () {
    requireBinariesOrSkip(this, ['redis-server', 'knotd', 'kdig']);
    adminPort = await freePort();
    tokenDir = await makeTempDir('admin-token-');
    const tokenFile = path.join(tokenDir, 'admin.token');
    await writeFile(tokenFile, TOKEN, { mode: 0o600 });
    env = await BridgeEnv.start({
      kind: 'knot',
      serves: 0,
      config: {
        admin: { listen: [`127.0.0.1:${adminPort}`], tokenFile },
        frequency: { minInterval: 0.001, donatorMinInterval: 0.001 },
      },
    });
    // Round-robin (the primary hands out the connections): each worker gets every other one, so
    // a total that counts them all shows the two workers' metrics added up.
    serve = await Serve.start(env, 2, { NODE_CLUSTER_SCHED_POLICY: 'rr' });
  });

  after(async () => {
    await serve?.stop();
    await env?.stop();
    if (tokenDir) await removeDir(tokenDir);
  });

  it('the primary listens once; /metrics adds up both workers; /v1 provisions through the primary', async () => {
    const admins = serve.lines.filter((l) => l.msg === 'admin listening');
    expect(admins.map((l) => l.port)).to.deep.equal([adminPort]);
    const primaryPid = serve.child.pid;
    expect(admins[0]!.pid).to.equal(primaryPid);

    const auth = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
    const base = `http://127.0.0.1:${adminPort}`;
    const post = (p: string, body: unknown) =>
      fetch(base + p, { method: 'POST', headers: auth, body: JSON.stringify(body) });
    const fqdn = `workers-${SUFFIX}.${ZONE}`;
    expect((await post('/v1/accounts', { name: 'workers', password: 'workers-pw' })).status).to.equal(201);
    expect((await post('/v1/hosts', { fqdn, account: 'workers' })).status).to.equal(201);

    // Twelve updates, six through each worker (round-robin): 12 in the total means both were added up.
    const pids = new Set(serve.lines.filter((l) => l.msg === 'worker listening').map((l) => l.pid));
    expect(pids.size).to.equal(2);
    for (let i = 0; i < 12; i++) {
      const r = await env.get(`/nic/update?hostname=${fqdn}&myip=192.0.2.${100 + (i % 2)}`, {
        auth: ['workers', 'workers-pw'],
        port: serve.port,
      });
      expect(r.body).to.equal(`good 192.0.2.${100 + (i % 2)}\n`);
    }
    const metrics = await (await fetch(`${base}/metrics`)).text();
    const series = metrics
      .split('\n')
      .find((l) => l.startsWith('ddns_bridge_http_requests_total{route="update",token="good"'));
    expect(series, metrics.slice(0, 2000)).to.equal(
      'ddns_bridge_http_requests_total{route="update",token="good",status="200"} 12',
    );
    // A target URL cannot read ended the primary (and every worker with it): now a 400.
    const bad = await rawRequest('127.0.0.1', adminPort, 'GET //[/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(bad.toString()).to.match(/^HTTP\/1\.1 400 Bad Request\r\n/);
    const after = await env.get(`/nic/update?hostname=${fqdn}&myip=192.0.2.101`, {
      auth: ['workers', 'workers-pw'],
      port: serve.port,
    });
    expect(after.body).to.equal('nochg 192.0.2.101\n');
    let ready = await fetch(`${base}/readyz`);
    for (let i = 0; i < 50 && ready.status !== 200; i++) {
      await new Promise((res) => setTimeout(res, 100));
      ready = await fetch(`${base}/readyz`);
    }
    expect(ready.status).to.equal(200);
  });
});
