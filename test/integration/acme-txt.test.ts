/**
 * ACME TXT records end to end (docs/protocol.md, "ACME TXT records" and "ACME client APIs"): the real serve process
 * on redis-server and a lab primary (knotd, named), driven over raw sockets on the update path (`txt=`, `clear=`)
 * and the two ACME client APIs (lego httpreq: /acme/present and /acme/cleanup; acme-dns: /update); what DNS holds is
 * read back from the primary, the stored set from Redis.
 */
import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import { requireBinariesOrSkip, serverBinaries, type LabKind } from '../../src/lab/index.js';
import { HOST_FIELDS, Keys } from '../../src/store/keys.js';
import { BridgeEnv, ZONE, expectedReply, parseHttp, type HttpResult } from '../support/bridge.js';

const OK = (body: string) => expectedReply(200, 'OK', body);
const KEYS = new Keys('ddns:');
const UA = 'acme-txt-test/1.0';
const TXT_LIMIT = 6;
const NAMESERVERS: { kind: LabKind; binaries: string[] }[] = [
  { kind: 'knot', binaries: ['redis-server', 'knotd', 'kdig'] },
  { kind: 'bind', binaries: ['redis-server', 'named', 'dig'] },
  { kind: 'pdns', binaries: ['redis-server', ...serverBinaries('pdns')] },
];

/** ACME-shaped values: 43 base64url characters. */
const value = (n: number) => `${'V'.repeat(40)}${String(n).padStart(3, '0')}`;
const V1 = value(1);
const V2 = value(2);
const V3 = value(3);

let seq = 0;

for (const { kind, binaries } of NAMESERVERS) {
  describe(`ACME TXT records (${kind})`, function () {
    this.timeout(60000);
    let env: BridgeEnv;
    let raw: Redis;
    const account = `acme-${process.pid}`;
    const password = 'acme-password-1';
    const auth: [string, string] = [account, password];

    before(async function () {
      requireBinariesOrSkip(this, binaries);
      env = await BridgeEnv.start({
        kind,
        config: {
          // The address rule as shipped (60 s, 3 frequent): TXT requests must not count toward it.
          frequency: { txtLimit: TXT_LIMIT, txtWindow: 3600 },
          junk: { threshold: 1000 },
          credentials: { maxFailures: 1000 },
        },
      });
      raw = new Redis(env.redis.url, { connectionName: 'acme-txt-test' });
      await env.addAccount(account, password);
    });

    after(async () => {
      raw?.disconnect();
      await env?.stop();
    });

    async function newHost(label: string): Promise<string> {
      const h = `${label}-${process.pid}-${++seq}.${ZONE}`;
      await env.addHost(h, account);
      return h;
    }

    const update = (query: string, creds: [string, string] = auth) =>
      env.get(`/nic/update?${query}`, { auth: creds, ua: UA });
    const challenge = async (h: string) => (await env.ns.query(`_acme-challenge.${h}`, 'TXT')).sort();
    const stored = (h: string) => raw.hget(KEYS.host(h), HOST_FIELDS.txt);

    /** A POST with a JSON body and the given headers, over a raw socket. */
    async function post(path: string, body: unknown, headers: string[]): Promise<HttpResult> {
      const text = typeof body === 'string' ? body : JSON.stringify(body);
      const lines = [
        `POST ${path} HTTP/1.1`,
        'Host: 127.0.0.1',
        'Connection: close',
        `User-Agent: ${UA}`,
        'Content-Type: application/json',
        `Content-Length: ${Buffer.byteLength(text)}`,
        ...headers,
      ];
      return parseHttp(await env.raw(`${lines.join('\r\n')}\r\n\r\n${text}`));
    }
    const basic = ([user, pass]: [string, string]) =>
      `Authorization: Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;

    it('txt= sets the TXT record at _acme-challenge.<host> (good VALUE), the same value again is nochg', async () => {
      const h = await newHost('set');
      expect((await update(`hostname=${h}&txt=${V1}`)).raw.toString()).to.equal(OK(`good ${V1}\n`));
      expect(await challenge(h)).to.deep.equal([`"${V1}"`]);
      expect(await stored(h)).to.equal(V1);
      const serial = await env.ns.serial();
      // Named as ACME clients know it, too.
      expect((await update(`hostname=_acme-challenge.${h}&txt=${V1}`)).raw.toString()).to.equal(OK(`nochg ${V1}\n`));
      expect(await env.ns.serial()).to.equal(serial);
      const shown = await env.hostJson(h);
      expect(shown.txt).to.deep.equal([V1]);
      expect(shown.addresses).to.deep.equal([]); // a TXT request sets no address
    });

    it('keeps the newest two values: a third pushes out the oldest; clear=true removes both', async () => {
      const h = await newHost('two');
      for (const v of [V1, V2]) expect((await update(`hostname=${h}&txt=${v}`)).body).to.equal(`good ${v}\n`);
      expect(await challenge(h)).to.deep.equal([`"${V1}"`, `"${V2}"`]);
      expect((await update(`hostname=${h}&txt=${V3}`)).body).to.equal(`good ${V3}\n`);
      expect(await challenge(h)).to.deep.equal([`"${V2}"`, `"${V3}"`]);
      expect(await stored(h)).to.equal(`${V2}\n${V3}`);
      expect((await update(`hostname=${h}&clear=true`)).raw.toString()).to.equal(OK('good\n'));
      expect(await challenge(h)).to.deep.equal([]);
      expect(await stored(h)).to.equal('');
      expect((await update(`hostname=${h}&clear=true`)).body).to.equal('nochg\n');
    });

    it('a value presented again is the newest: nochg, no DNS traffic, and the next new value pushes out the other', async () => {
      const h = await newHost('again');
      for (const v of [V1, V2]) expect((await update(`hostname=${h}&txt=${v}`)).body).to.equal(`good ${v}\n`);
      const serial = await env.ns.serial();
      expect((await update(`hostname=${h}&txt=${V1}`)).body).to.equal(`nochg ${V1}\n`);
      expect(await stored(h)).to.equal(`${V2}\n${V1}`);
      expect(await env.ns.serial()).to.equal(serial);
      expect((await update(`hostname=${h}&txt=${V3}`)).body).to.equal(`good ${V3}\n`);
      expect(await challenge(h)).to.deep.equal([`"${V1}"`, `"${V3}"`]);
    });

    it('clear=true with txt= removes that value only', async () => {
      const h = await newHost('one');
      await update(`hostname=${h}&txt=${V1}`);
      await update(`hostname=${h}&txt=${V2}`);
      expect((await update(`hostname=${h}&txt=${V1}&clear=true`)).body).to.equal(`good ${V1}\n`);
      expect(await challenge(h)).to.deep.equal([`"${V2}"`]);
      expect((await update(`hostname=${h}&txt=${V1}&clear=true`)).body).to.equal(`nochg ${V1}\n`);
    });

    it('TXT requests skip the address rule but have their own limit: abuse for TXT only, addresses still update', async () => {
      const h = await newHost('limit');
      // More TXT requests in a row than the address rule's 3 frequent ones: none of them is abuse.
      for (let i = 1; i <= TXT_LIMIT; i++)
        expect((await update(`hostname=${h}&txt=${value(i)}`)).body).to.equal(`good ${value(i)}\n`);
      expect((await update(`hostname=${h}&txt=${value(99)}`)).raw.toString()).to.equal(
        expectedReply(200, 'OK', 'abuse\n', ['Retry-After: 3600']),
      );
      expect(await challenge(h)).to.deep.equal([`"${value(TXT_LIMIT - 1)}"`, `"${value(TXT_LIMIT)}"`]);
      // The host is not blocked: the address update goes through.
      expect((await update(`hostname=${h}&myip=192.0.2.51`)).body).to.equal('good 192.0.2.51\n');
      expect(await env.ns.query(h, 'A')).to.deep.equal(['192.0.2.51']);
      expect((await env.hostJson(h)).state).to.equal('active');
    });

    it('a request with txt= changes only TXT: myip is ignored', async () => {
      const h = await newHost('only');
      await update(`hostname=${h}&myip=192.0.2.52`);
      expect((await update(`hostname=${h}&myip=192.0.2.53&txt=${V1}`)).body).to.equal(`good ${V1}\n`);
      expect(await env.ns.query(h, 'A')).to.deep.equal(['192.0.2.52']);
    });

    it('invalid values are badsys and change nothing', async () => {
      const h = await newHost('bad');
      await update(`hostname=${h}&txt=${V1}`);
      const before = await raw.hgetall(KEYS.host(h));
      for (const bad of ['x'.repeat(256), '%01ctrl', '%C3%BC', ''])
        expect((await update(`hostname=${h}&txt=${bad}`)).raw.toString()).to.equal(OK('badsys\n'));
      expect(await raw.hgetall(KEYS.host(h))).to.deep.equal(before);
      expect(await challenge(h)).to.deep.equal([`"${V1}"`]);
    });

    it('an --acme-only token sets and clears TXT and cannot change the address (!yours)', async () => {
      const h = await newHost('scoped');
      await update(`hostname=${h}&myip=192.0.2.54`);
      const out = (await env.cliOk(['token', 'add', h, '--acme-only'])).trimEnd().split('\n');
      expect(out[0]).to.include('ACME TXT values only');
      const token = out.at(-1)!;
      expect((await update(`hostname=${h}&txt=${V1}`, [h, token])).body).to.equal(`good ${V1}\n`);
      expect((await update(`txt=${V2}`, [h, token])).body).to.equal(`good ${V2}\n`);
      expect((await update(`hostname=${h}&myip=192.0.2.55`, [h, token])).raw.toString()).to.equal(OK('!yours\n'));
      expect((await update(`myip=192.0.2.55`, [h, token])).body).to.equal('!yours\n');
      expect(await env.ns.query(h, 'A')).to.deep.equal(['192.0.2.54']);
      expect((await update(`hostname=${h}&clear=true`, [h, token])).body).to.equal('good\n');
      expect(await challenge(h)).to.deep.equal([]);
      const listed = JSON.parse(await env.cliOk(['token', 'list', h, '--json'])) as { acmeOnly: boolean }[];
      expect(listed.map((t) => t.acmeOnly)).to.deep.equal([true]);
      // The address echo counts nothing for it: the host's frequency rule (3 frequent) is the address updates'.
      const countedBefore = await raw.hget(KEYS.host(h), HOST_FIELDS.frequentCount);
      for (let i = 0; i < 6; i++) {
        const echoed = await env.get(`/checkip?hostname=${h}`, { auth: [h, token], ua: UA });
        expect(echoed.status).to.equal(200);
      }
      expect((await env.hostJson(h)).state).to.equal('active');
      expect(await raw.hget(KEYS.host(h), HOST_FIELDS.frequentCount)).to.equal(countedBefore);
      expect((await update(`hostname=${h}&myip=192.0.2.56`)).body).to.equal('good 192.0.2.56\n');
      // DuckDNS-style clear: an empty txt= with clear=true removes every value.
      expect((await update(`hostname=${h}&txt=${V1}`, [h, token])).body).to.equal(`good ${V1}\n`);
      expect((await update(`hostname=${h}&txt=&clear=true`, [h, token])).body).to.equal('good\n');
      expect(await challenge(h)).to.deep.equal([]);
    });

    it('lego httpreq: /acme/present and /acme/cleanup (and RAW mode), exact replies; wrong credentials 401', async () => {
      const h = await newHost('httpreq');
      const present = await post('/acme/present', { fqdn: `_acme-challenge.${h}.`, value: V1 }, [basic(auth)]);
      expect(present.raw.toString()).to.equal(OK(`good ${V1}\n`));
      expect(await challenge(h)).to.deep.equal([`"${V1}"`]);
      const again = await post('/acme/present', { fqdn: `_acme-challenge.${h}.`, value: V1 }, [basic(auth)]);
      expect(again.raw.toString()).to.equal(OK(`nochg ${V1}\n`));
      const cleanup = await post('/acme/cleanup', { fqdn: `_acme-challenge.${h}.`, value: V1 }, [basic(auth)]);
      expect(cleanup.raw.toString()).to.equal(OK(`good ${V1}\n`));
      expect(await challenge(h)).to.deep.equal([]);
      // RAW mode: the value is the key authorization's digest (RFC 8555 §8.4).
      const rawMode = await post('/acme/present', { domain: h, token: 't', keyAuth: 'token.thumbprint' }, [
        basic(auth),
      ]);
      expect(rawMode.status).to.equal(200);
      const digest = createHash('sha256').update('token.thumbprint').digest('base64url');
      expect(rawMode.body).to.equal(`good ${digest}\n`);
      expect(await challenge(h)).to.deep.equal([`"${digest}"`]);
      const listed = await post('/acme/present', { fqdn: `_acme-challenge.${h}.,other.${ZONE}`, value: V2 }, [
        basic(auth),
      ]);
      expect(listed.status).to.equal(400);
      const wrong = await post('/acme/present', { fqdn: `_acme-challenge.${h}.`, value: V2 }, [
        basic([account, 'wrong']),
      ]);
      expect(wrong.raw.toString()).to.equal(
        expectedReply(401, 'Unauthorized', 'badauth\n', ['WWW-Authenticate: Basic realm="ddns-bridge"']),
      );
      const junk = await post('/acme/present', 'not json', [basic(auth)]);
      expect(junk.status).to.equal(400);
      expect((await env.get('/acme/present', { auth, ua: UA })).status).to.equal(405);
    });

    it('acme-dns: POST /update with X-Api-User / X-Api-Key answers {"txt": …}; wrong key 401 forbidden', async () => {
      const h = await newHost('acmedns');
      const token = (await env.cliOk(['token', 'add', h, '--acme-only'])).trimEnd().split('\n').at(-1)!;
      const id = (await env.cliOk(['token', 'list', h])).split('\t')[0]!;
      const json = (status: number, reason: string, body: string) =>
        expectedReply(status, reason, body).replace('text/plain', 'application/json');
      const r = await post('/update', { subdomain: h, txt: V1 }, [`X-Api-User: ${h}`, `X-Api-Key: ${token}`]);
      expect(r.raw.toString()).to.equal(json(200, 'OK', `{"txt": "${V1}"}`));
      expect(await challenge(h)).to.deep.equal([`"${V1}"`]);
      // The token's id as the user, the subdomain naming the host.
      const byId = await post('/update', { subdomain: h, txt: V2 }, [`X-Api-User: ${id}`, `X-Api-Key: ${token}`]);
      expect(byId.raw.toString()).to.equal(json(200, 'OK', `{"txt": "${V2}"}`));
      expect(await challenge(h)).to.deep.equal([`"${V1}"`, `"${V2}"`]);
      const wrong = await post('/update', { subdomain: h, txt: V3 }, [`X-Api-User: ${h}`, 'X-Api-Key: wrong']);
      expect(wrong.status).to.equal(401);
      expect(wrong.body).to.equal('{"error": "forbidden"}');
      const bad = await post('/update', { subdomain: h, txt: 'a\u0001b' }, [`X-Api-User: ${h}`, `X-Api-Key: ${token}`]);
      expect(bad.raw.toString()).to.equal(json(400, 'Bad Request', '{"error": "bad_txt"}'));
      expect(await challenge(h)).to.deep.equal([`"${V1}"`, `"${V2}"`]);
    });
  });
}
