/**
 * The DuckDNS dialect's table (docs/protocol.md, "DuckDNS"): each refusal's exact bytes, its log line and its metric
 * series, on a real bridge (built in this process with a PrometheusTelemetry, as `serve` builds it) in front of real
 * redis-server and knotd or named. The records are read back from the primary.
 */
import { expect } from 'chai';
import { requireBinariesOrSkip, type LabKind } from '../../src/lab/index.js';
import { loadConfig } from '../../src/config/load.js';
import { buildBridge, type Bridge } from '../../src/cli/compose.js';
import { PrometheusTelemetry } from '../../src/metrics/index.js';
import { BridgeEnv, ZONE, expectedReply, parseHttp } from '../support/bridge.js';
import { RecordingLogger } from '../support/store-server.js';

const UA = 'duckdns-tests/1.0 tests@example.test';
/** A zone whose primary nobody answers (nothing listens on port 1). */
const DOWN_ZONE = 'down.example.test';
const ACCOUNT: [string, string] = ['duck', 'duck-account-pw-1'];

function parse(text: string): Map<string, number> {
  const series = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const space = line.lastIndexOf(' ');
    series.set(line.slice(0, space), Number(line.slice(space + 1)));
  }
  return series;
}

for (const kind of ['knot', 'bind'] as LabKind[]) {
  describe(`DuckDNS: replies, log lines and metrics (${kind})`, function () {
    this.timeout(60000);
    let env: BridgeEnv;
    let bridge: Bridge | undefined;
    let telemetry: PrometheusTelemetry;
    let logger: RecordingLogger;
    let port: number;
    const label = `duck-${process.pid}`;
    const host = `${label}.${ZONE}`;
    const other = `duck-other-${process.pid}.${ZONE}`;
    const downHost = `duck-${process.pid}.${DOWN_ZONE}`;
    let token = '';
    let otherToken = '';
    let downToken = '';

    before(async function () {
      requireBinariesOrSkip(this, ['redis-server', kind === 'knot' ? 'knotd' : 'named']);
      env = await BridgeEnv.start({
        kind,
        serves: 0,
        config: {
          frequency: { minInterval: 0.05, donatorMinInterval: 0.05, txtLimit: 2 },
          dns: { timeout: 2 },
          dialects: { duckdns: { zone: ZONE } },
        },
      });
      const zone = (env.config['zones'] as Record<string, unknown>[])[0]!;
      await env.writeConfig({ zones: [zone, { ...zone, name: DOWN_ZONE, primary: '127.0.0.1:1' }] });
      await env.addAccount(...ACCOUNT);
      const tokenOf = async (fqdn: string): Promise<string> => {
        await env.addHost(fqdn, ACCOUNT[0]);
        return (await env.cliOk(['token', 'add', fqdn])).trimEnd().split('\n').at(-1)!;
      };
      token = await tokenOf(host);
      otherToken = await tokenOf(other);
      downToken = await tokenOf(downHost);
      telemetry = new PrometheusTelemetry();
      logger = new RecordingLogger();
      bridge = buildBridge(await loadConfig(env.configPath, {}), logger, { telemetry });
      port = await bridge.http.listen('127.0.0.1', 0);
    });
    after(async () => {
      await bridge?.close();
      await env?.stop();
    });

    /** One request; what it moved on /metrics (`token`: the route duckdns, status 200) and the log lines it made. */
    async function duck(query: string, ua: string | null = UA) {
      const before = parse(await telemetry.render());
      const since = logger.lines.length;
      const r = await env.get(`/update?${query}`, { ua, port });
      const after = parse(await telemetry.render());
      const moved = [...after.keys()]
        .filter((s) => s.startsWith('ddns_bridge_http_requests_total{'))
        .filter((s) => (after.get(s) ?? 0) !== (before.get(s) ?? 0));
      const logs = logger.lines.slice(since).filter((l) => l.msg === 'duckdns update refused');
      return { r, moved, logs: logs.map((l) => l.fields) };
    }
    const series = (token: string) => `ddns_bridge_http_requests_total{route="duckdns",token="${token}",status="200"}`;
    const OK = expectedReply(200, 'OK', 'OK');
    const KO = expectedReply(200, 'OK', 'KO');

    it('OK (2 bytes, no newline) counted as good, then as nochg; no log line', async () => {
      const set = await duck(`domains=${label}&token=${token}&ip=192.0.2.61`);
      expect(set.r.raw.toString('latin1')).to.equal(OK);
      expect(set.moved).to.deep.equal([series('good')]);
      expect(set.logs).to.deep.equal([]);
      expect(await env.ns.query(host, 'A')).to.deep.equal(['192.0.2.61']);
      const same = await duck(`domains=${host}&token=${token}&ip=192.0.2.61&verbose=true`);
      expect(same.r.raw.toString('latin1')).to.equal(expectedReply(200, 'OK', 'OK\n192.0.2.61\n\nNOCHANGE'));
      expect(same.moved).to.deep.equal([series('nochg')]);
    });

    const refusals: [string, () => string, string, Record<string, unknown>, (string | null)?][] = [
      ['no User-Agent', () => `domains=${label}&token=${token}`, 'badagent', { outcome: 'badagent' }, null],
      ['no token', () => `domains=${label}`, 'badauth', { outcome: 'badauth' }],
      ['a wrong token', () => `domains=${label}&token=${'B'.repeat(32)}`, 'badauth', { outcome: 'badauth' }],
      ['an account password', () => `domains=${label}&token=${ACCOUNT[1]}`, 'badauth', { outcome: 'badauth' }],
      ["another host's token", () => `domains=${label}&token=${otherToken}`, 'badauth', { outcome: 'badauth' }],
      [
        'a second domain not of the token',
        () => `domains=${label},${other}&token=${token}&ip=192.0.2.61`,
        '!yours',
        { outcome: '!yours' },
      ],
      ['no domains', () => `token=${token}`, 'notfqdn', { outcome: 'notfqdn', reason: 'no domains' }],
      [
        'a further domain that is no name',
        () => `domains=${label},-bad-&token=${token}&ip=192.0.2.61`,
        'notfqdn',
        { outcome: 'notfqdn' },
      ],
      [
        'a malformed ip',
        () => `domains=${label}&token=${token}&ip=192.0.2`,
        'other',
        { outcome: 'other', reason: 'ip is not an address' },
      ],
      ['an empty txt without clear', () => `domains=${label}&token=${token}&txt=`, 'badsys', { outcome: 'badsys' }],
    ];
    for (const [what, query, metric, log, ua] of refusals) {
      it(`${what}: KO, the log line, the series token="${metric}"`, async () => {
        const { r, moved, logs } = await duck(query(), ua === null ? null : UA);
        expect(r.raw.toString('latin1')).to.equal(KO);
        expect(moved).to.deep.equal([series(metric)]);
        expect(logs).to.deep.equal([{ reply: 'KO', ...log }]);
      });
    }

    it('dnserr: KO with Retry-After 10 to 19', async () => {
      const { r, moved, logs } = await duck(`domains=${downHost}&token=${downToken}&ip=192.0.2.62`);
      expect(r.body).to.equal('KO');
      expect(Number(r.headers['retry-after'])).to.be.within(10, 19);
      expect(moved).to.deep.equal([series('dnserr')]);
      expect(logs).to.deep.equal([{ reply: 'KO', outcome: 'dnserr' }]);
    });

    it('abuse (past frequency.txtLimit): KO with Retry-After 3600', async () => {
      for (const v of ['duck-txt-value-1', 'duck-txt-value-2'])
        expect((await duck(`domains=${label}&token=${token}&txt=${v}`)).r.body).to.equal('OK');
      const { r, moved, logs } = await duck(`domains=${label}&token=${token}&txt=duck-txt-value-3`);
      expect(r.raw.toString('latin1')).to.equal(expectedReply(200, 'OK', 'KO', ['Retry-After: 3600']));
      expect(moved).to.deep.equal([series('abuse')]);
      expect(logs).to.deep.equal([{ reply: 'KO', outcome: 'abuse' }]);
    });

    it('under basePath too: GET {basePath}/update is DuckDNS', async () => {
      const config = { ...(await loadConfig(env.configPath, {})), basePath: '/ddns' };
      const based = buildBridge(config, new RecordingLogger());
      try {
        const basedPort = await based.http.listen('127.0.0.1', 0);
        const q = `domains=${label}&token=${token}&ip=192.0.2.63&verbose=true`;
        const r = await env.get(`/ddns/update?${q}`, { ua: UA, port: basedPort });
        expect(r.raw.toString('latin1')).to.equal(expectedReply(200, 'OK', 'OK\n192.0.2.63\n\nUPDATED'));
        expect(await env.ns.query(host, 'A')).to.deep.equal(['192.0.2.63']);
      } finally {
        await based.close();
      }
    });

    it('HEAD /update: 405 as before; POST /update: still acme-dns', async () => {
      const head = parseHttp(
        await env.raw(`HEAD /update?domains=${label} HTTP/1.0\r\nUser-Agent: ${UA}\r\n\r\n`, port),
      );
      expect(head.status).to.equal(405);
      const post = parseHttp(
        await env.raw(`POST /update HTTP/1.0\r\nUser-Agent: ${UA}\r\nContent-Length: 2\r\n\r\n{}`, port),
      );
      expect(post.body).to.equal('{"error": "malformed_json_payload"}');
    });
  });
}
