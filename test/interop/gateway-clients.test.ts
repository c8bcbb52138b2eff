/**
 * The RFC 2136 gateway with real clients: nsupdate (`-k FILE`, and the key given on its input),
 * knsupdate `-k FILE`, and ddclient 3.10 `protocol=nsupdate`, through the real serve process, with
 * Knot, BIND and PowerDNS as the primary. Records are read from the primary with dig; the counting
 * proxy between the bridge and the primary tells whether an UPDATE reached it. The recipes are
 * those of docs/clients.md, "RFC 2136 clients". Secrets go into mode-0600 files or the client's
 * standard input, never into argv.
 */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { requireBinary, serverBinaries, writePrivateFile, type LabKind } from '../../src/lab/index.js';
import { BridgeEnv, ROOT, ZONE } from '../support/bridge.js';
import { clientDir, requireInterop, runDdclient, uniqueHost, type ProcResult } from './support.js';

// ---- the recipes (docs/clients.md, "RFC 2136 clients") ------------------------------------

/** A gateway key as `token add H --tsig` prints it. */
export interface GatewayKey {
  name: string;
  algorithm: string;
  secret: string;
}

/** The BIND key file for `nsupdate -k FILE` (and ddclient's `password=`). */
export function bindKeyFile(key: GatewayKey): string {
  return `key "${key.name}" {\n\talgorithm ${key.algorithm};\n\tsecret "${key.secret}";\n};\n`;
}

/** The key file for `knsupdate -k FILE`: the one line nsupdate's `-y` takes. */
export function knotKeyLine(key: GatewayKey): string {
  return `${key.algorithm}:${key.name}:${key.secret}\n`;
}

/** The Knot `key:` section `token add` prints too (for knotc/knotd configs: knsupdate misreads it). */
export function knotKeySection(key: GatewayKey): string {
  return `key:\n  - id: ${key.name}\n    algorithm: ${key.algorithm}\n    secret: ${key.secret}\n`;
}

/** nsupdate's `key` command: the key on its input instead of `-y` (which would put it in argv). */
export function nsupdateKeyCommand(key: GatewayKey): string {
  return `key ${key.algorithm}:${key.name} ${key.secret}\n`;
}

/** One host's addresses, each family replaced (delete the RRset, add the address). */
export interface AddressChange {
  host: string;
  ttl: number;
  a?: string;
  aaaa?: string;
}

function replaceLines(c: AddressChange): string[] {
  const lines: string[] = [];
  for (const [type, value] of [
    ['A', c.a],
    ['AAAA', c.aaaa],
  ] as const) {
    if (value === undefined) continue;
    lines.push(`update delete ${c.host} ${type}`, `update add ${c.host} ${c.ttl} ${type} ${value}`);
  }
  return lines;
}

/** nsupdate's commands: it finds the zone itself (one SOA query to the gateway). */
export function nsupdateCommands(server: string, port: number, change: AddressChange | string[]): string {
  const updates = Array.isArray(change) ? change : replaceLines(change);
  return [`server ${server} ${port}`, ...updates, 'send', ''].join('\n');
}

/** knsupdate's commands: it needs `zone` (it does not look the zone up). */
export function knsupdateCommands(
  server: string,
  port: number,
  zone: string,
  change: AddressChange | string[],
): string {
  const updates = Array.isArray(change) ? change : replaceLines(change);
  return [`server ${server} ${port}`, `zone ${zone}`, ...updates, 'send', ''].join('\n');
}

export interface DdclientNsupdate {
  /** `HOST:PORT` of the gateway. */
  server: string;
  zone: string;
  /** nsupdate's path: ddclient runs `LOGIN -k PASSWORD`. */
  nsupdate: string;
  /** The BIND key file. */
  keyFile: string;
  /** How ddclient learns the address (`use=web, …`; the tests: `use=ip, ip=ADDR`). */
  use: string;
  host: string;
}

/** ddclient.conf for `protocol=nsupdate`: ddclient pipes the same commands to `nsupdate -k`. */
export function ddclientNsupdateConfig(o: DdclientNsupdate): string {
  return [
    'protocol=nsupdate',
    `server=${o.server}`,
    `zone=${o.zone}`,
    `login=${o.nsupdate}`,
    `password=${o.keyFile}`,
    'ttl=60',
    o.use,
    o.host,
    '',
  ].join('\n');
}

// ---- running them ----------------------------------------------------------------------------

/** Run a client with `input` on its standard input; killed (by its pid) after 20 s. */
function runWithInput(cmd: string, args: string[], input: string, cwd: string): Promise<ProcResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let output = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      output += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      output += d.toString();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, output });
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(input);
  });
}

interface Rfc2136Client {
  label: string;
  binary: 'nsupdate' | 'knsupdate';
  /** Run `updates` (or replace the addresses) for `key` against the gateway on 127.0.0.1:`port`. */
  run(dir: string, key: GatewayKey, port: number, change: AddressChange | string[]): Promise<ProcResult>;
  /** Exit status and output when the gateway answers REFUSED, and when the MAC is wrong. */
  refused: { code: number; output: RegExp };
  badsig: { code: number; output: RegExp };
}

const NSUPDATE_REFUSED = { code: 2, output: /^update failed: REFUSED$/m };
const NSUPDATE_BADSIG = {
  code: 2,
  output: /^; TSIG error with server: tsig indicates error\nupdate failed: NOTAUTH\(BADSIG\)$/m,
};

const CLIENTS: readonly Rfc2136Client[] = [
  {
    label: 'nsupdate -k FILE',
    binary: 'nsupdate',
    async run(dir, key, port, change) {
      const file = path.join(dir, 'H.key');
      await writePrivateFile(file, bindKeyFile(key));
      return runWithInput('nsupdate', ['-k', file], nsupdateCommands('127.0.0.1', port, change), dir);
    },
    refused: NSUPDATE_REFUSED,
    badsig: NSUPDATE_BADSIG,
  },
  {
    label: 'nsupdate, the key on its input',
    binary: 'nsupdate',
    run(dir, key, port, change) {
      return runWithInput('nsupdate', [], nsupdateKeyCommand(key) + nsupdateCommands('127.0.0.1', port, change), dir);
    },
    refused: NSUPDATE_REFUSED,
    badsig: NSUPDATE_BADSIG,
  },
  {
    label: 'knsupdate -k FILE',
    binary: 'knsupdate',
    async run(dir, key, port, change) {
      const file = path.join(dir, 'H.knsupdate-key');
      await writePrivateFile(file, knotKeyLine(key));
      return runWithInput('knsupdate', ['-k', file], knsupdateCommands('127.0.0.1', port, ZONE, change), dir);
    },
    refused: {
      code: 1,
      output: /^;; ERROR: update failed with error 'REFUSED'\n;; ->>HEADER<<- opcode: UPDATE; status: REFUSED;/m,
    },
    badsig: {
      code: 1,
      output:
        /^;; ERROR: reply verification \(failed to verify TSIG\)\n;; ->>HEADER<<- opcode: UPDATE; status: BADSIG;/m,
    },
  },
];

const ACCOUNT = { name: 'gwuser', password: 'gwuser-account-pw' };

/** `token add H --tsig`: the key from its second line; the snippets it prints must be the recipes' files. */
async function addGatewayKey(env: BridgeEnv, host: string): Promise<GatewayKey> {
  const out = await env.cliOk(['token', 'add', host, '--tsig']);
  const m = /^It is shown only now\. Key name (\S+), algorithm (\S+), secret (\S+)$/m.exec(out);
  expect(m, out).to.not.equal(null);
  const key = { name: m![1]!, algorithm: m![2]!, secret: m![3]! };
  expect(out).to.include(
    `# nsupdate -y, and the one line of a knsupdate -k FILE (certbot, lego: name, algorithm, secret)\n${knotKeyLine(key)}`,
  );
  expect(out).to.include(`# BIND key file (nsupdate -k FILE)\n${bindKeyFile(key)}`);
  expect(out).to.include(`# Knot key section (knot.conf)\n${knotKeySection(key)}`);
  return key;
}

/** The client ran: its exit status, and its output in the assertion message. */
function expectExit(r: ProcResult, code: number, key: GatewayKey): void {
  const shown = r.output.split(key.secret).join('<secret>');
  expect(r.code, `exit ${r.code} ${r.signal ?? ''}\n${shown}`).to.equal(code);
}

function startGatewayEnv(kind: LabKind): Promise<BridgeEnv> {
  return BridgeEnv.start({
    kind,
    gateway: true,
    countDns: true,
    config: {
      frequency: { minInterval: 0.05, donatorMinInterval: 0.05, echoMinInterval: 0.05 },
      dns: { timeout: 5 },
    },
  });
}

for (const kind of ['knot', 'bind', 'pdns'] as const) {
  describe(`RFC 2136 gateway: nsupdate and knsupdate (${kind} primary)`, function () {
    this.timeout(30_000);
    let env: BridgeEnv;
    /** Another host of the same account, with an address set over HTTP. */
    let other: string;
    const OTHER_ADDRESS = '192.0.2.200';

    before(async function () {
      requireInterop(this, [...serverBinaries(kind), 'nsupdate', 'knsupdate']);
      env = await startGatewayEnv(kind);
      await env.addAccount(ACCOUNT.name, ACCOUNT.password);
      other = uniqueHost('gw-other');
      await env.addHost(other, ACCOUNT.name);
      const set = await env.get(`/nic/update?hostname=${other}&myip=${OTHER_ADDRESS}`, {
        auth: [ACCOUNT.name, ACCOUNT.password],
      });
      expect(set.body).to.equal(`good ${OTHER_ADDRESS}\n`);
    });
    after(async () => env?.stop());

    CLIENTS.forEach((client, i) => {
      describe(client.label, () => {
        let host: string;
        let key: GatewayKey;
        let dir: string;
        const a = `192.0.2.${10 + i}`;
        const aaaa = `2001:db8::${10 + i}`;

        before(async () => {
          host = uniqueHost(`gw-${client.binary}`);
          await env.addHost(host, ACCOUNT.name);
          key = await addGatewayKey(env, host);
          dir = await clientDir(env, client.binary);
        });

        /** What the primary serves for the host and the other host. */
        async function records(): Promise<Record<string, string[]>> {
          return {
            A: await env.ns.query(host, 'A'),
            AAAA: await env.ns.query(host, 'AAAA'),
            MX: await env.ns.query(host, 'MX'),
            NS: await env.ns.query(host, 'NS'),
            TXT: await env.ns.query(host, 'TXT'),
            otherA: await env.ns.query(other, 'A'),
          };
        }

        it('replaces A and AAAA (delete + add each): exit 0, the primary serves both', async () => {
          const before = env.dnsMessages('update');
          const r = await client.run(dir, key, env.gatewayPort, { host, ttl: 60, a, aaaa });
          expectExit(r, 0, key);
          expect(r.output, 'silent on success').to.equal('');
          expect(await env.ns.query(host, 'A')).to.deep.equal([a]);
          expect(await env.ns.query(host, 'AAAA')).to.deep.equal([aaaa]);
          expect(env.dnsMessages('update')).to.be.greaterThan(before);
        });

        it('a new A alone: exit 0, the primary serves it, the AAAA stays', async () => {
          const r = await client.run(dir, key, env.gatewayPort, { host, ttl: 60, a: `198.51.100.${10 + i}` });
          expectExit(r, 0, key);
          expect(await env.ns.query(host, 'A')).to.deep.equal([`198.51.100.${10 + i}`]);
          expect(await env.ns.query(host, 'AAAA')).to.deep.equal([aaaa]);
          // back to the first address for the tests below
          expectExit(await client.run(dir, key, env.gatewayPort, { host, ttl: 60, a }), 0, key);
          expect(await env.ns.query(host, 'A')).to.deep.equal([a]);
        });

        it('the same values again: exit 0, no UPDATE reaches the primary', async () => {
          const before = env.dnsMessages('update');
          const r = await client.run(dir, key, env.gatewayPort, { host, ttl: 60, a, aaaa });
          expectExit(r, 0, key);
          expect(env.dnsMessages('update')).to.equal(before);
          expect(await env.ns.query(host, 'A')).to.deep.equal([a]);
        });

        const outOfScope: [string, (h: string, o: string) => string[]][] = [
          [
            'the A of another host of the account',
            (_h, o) => [`update delete ${o} A`, `update add ${o} 60 A 192.0.2.99`],
          ],
          ['an MX at its own host', (h) => [`update add ${h} 60 MX 10 mail.${ZONE}`]],
          ['an NS at its own host', (h) => [`update add ${h} 60 NS ns1.${ZONE}`]],
          [
            'a TXT at the host itself (only _acme-challenge.H may hold one)',
            (h) => [`update add ${h} 60 TXT "not-here"`],
          ],
        ];
        for (const [what, updates] of outOfScope) {
          it(`out of scope, ${what}: REFUSED, the zone unchanged, no UPDATE to the primary`, async () => {
            const was = await records();
            expect(was.otherA).to.deep.equal([OTHER_ADDRESS]);
            const before = env.dnsMessages('update');
            const r = await client.run(dir, key, env.gatewayPort, updates(host, other));
            expectExit(r, client.refused.code, key);
            expect(r.output).to.match(client.refused.output);
            expect(env.dnsMessages('update')).to.equal(before);
            expect(await records()).to.deep.equal(was);
          });
        }

        it('a wrong secret: the client reports the TSIG error (BADSIG), nothing changes', async () => {
          const was = await records();
          const before = env.dnsMessages('update');
          const wrong = { ...key, secret: randomBytes(32).toString('base64') };
          const r = await client.run(dir, wrong, env.gatewayPort, { host, ttl: 60, a: '203.0.113.66' });
          expectExit(r, client.badsig.code, wrong);
          expect(r.output).to.match(client.badsig.output);
          expect(env.dnsMessages('update')).to.equal(before);
          expect(await records()).to.deep.equal(was);
        });

        if (client.binary === 'knsupdate') {
          it("knsupdate -k with the Knot key: section: it signs as key name 'key.', BADKEY, nothing changes", async () => {
            const was = await records();
            const before = env.dnsMessages('update');
            const file = path.join(dir, 'H.knot-key.yaml');
            await writePrivateFile(file, knotKeySection(key));
            const r = await runWithInput(
              'knsupdate',
              ['-k', file],
              knsupdateCommands('127.0.0.1', env.gatewayPort, ZONE, { host, ttl: 60, a: '203.0.113.67' }),
              dir,
            );
            expectExit(r, 1, key);
            expect(r.output).to.match(
              /^;; ERROR: reply verification \(failed to verify TSIG\)\n;; ->>HEADER<<- opcode: UPDATE; status: BADKEY;/m,
            );
            expect(r.output).to.match(/^key\.\s+0\s+ANY\s+TSIG\s/m);
            expect(env.dnsMessages('update')).to.equal(before);
            expect(await records()).to.deep.equal(was);
          });
        }
      });
    });

    if (kind === 'knot') {
      describe('ddclient 3.10, protocol=nsupdate', () => {
        let host: string;
        let keyFile: string;
        let dir: string;
        let nsupdatePath: string;

        before(async function () {
          requireInterop(this, ['ddclient', 'nsupdate']);
          nsupdatePath = requireBinary('nsupdate');
          host = uniqueHost('gw-ddclient');
          await env.addHost(host, ACCOUNT.name);
          const key = await addGatewayKey(env, host);
          dir = await clientDir(env, 'ddclient');
          keyFile = path.join(dir, 'H.key');
          await writePrivateFile(keyFile, bindKeyFile(key));
        });

        const conf = (ip: string): string =>
          ddclientNsupdateConfig({
            server: `127.0.0.1:${env.gatewayPort}`,
            zone: ZONE,
            nsupdate: nsupdatePath,
            keyFile,
            use: `use=ip, ip=${ip}`,
            host,
          });

        it('keeps the host current: the first run sets the address, a later one with a new address moves it', async () => {
          const first = await runDdclient(dir, conf('192.0.2.77'));
          expect(first.code, first.output).to.equal(0);
          expect(first.output).to.include(`SUCCESS:  updating ${host}: 1: IP address set to 192.0.2.77`);
          expect(first.output).not.to.match(/FAILED/);
          expect(await env.ns.query(host, 'A')).to.deep.equal(['192.0.2.77']);

          // ddclient 3.10 never marks an nsupdate success "good" in its cache, so the next change waits
          // min-error-interval (5 minutes) after it, as after a failure (docs/clients.md says so).
          const before = env.dnsMessages('update');
          const held = await runDdclient(dir, conf('192.0.2.78'), { keepCache: true });
          expect(held.code, held.output).to.equal(0);
          expect(held.output).to.include(`WARNING:  skipping update of ${host} from 192.0.2.77 to 192.0.2.78.`);
          expect(held.output).to.include('WARNING:  Wait at least 5 minutes between update attempts.');
          expect(env.dnsMessages('update')).to.equal(before);
          expect(await env.ns.query(host, 'A')).to.deep.equal(['192.0.2.77']);

          // Past that interval (here: without the cache) the new address goes out.
          const second = await runDdclient(dir, conf('192.0.2.78'));
          expect(second.code, second.output).to.equal(0);
          expect(second.output).to.include(`SUCCESS:  updating ${host}: 1: IP address set to 192.0.2.78`);
          expect(second.output).not.to.match(/FAILED/);
          expect(await env.ns.query(host, 'A')).to.deep.equal(['192.0.2.78']);
          expect(env.dnsMessages('update')).to.be.greaterThan(before);
        });

        it('the same address again (cache removed): SUCCESS, no UPDATE reaches the primary', async () => {
          const before = env.dnsMessages('update');
          const again = await runDdclient(dir, conf('192.0.2.78'));
          expect(again.code, again.output).to.equal(0);
          expect(again.output).to.include(`SUCCESS:  updating ${host}: 1: IP address set to 192.0.2.78`);
          expect(env.dnsMessages('update')).to.equal(before);
          expect(await env.ns.query(host, 'A')).to.deep.equal(['192.0.2.78']);
        });

        it('an IPv6 address: the AAAA is set, the A stays', async () => {
          const r = await runDdclient(dir, conf('2001:db8::77'));
          expect(r.code, r.output).to.equal(0);
          expect(r.output).to.include(`SUCCESS:  updating ${host}: 1: IP address set to 2001:db8::77`);
          expect(await env.ns.query(host, 'AAAA')).to.deep.equal(['2001:db8::77']);
          expect(await env.ns.query(host, 'A')).to.deep.equal(['192.0.2.78']);
        });

        it('a wrong secret in the key file: FAILED, exit 1, nothing changes', async () => {
          const wrongDir = await clientDir(env, 'ddclient-wrong');
          const wrongKey = path.join(wrongDir, 'H.key');
          const name = /^key "([^"]+)"/.exec(await readFile(keyFile, 'utf8'))![1]!;
          const wrong = { name, algorithm: 'hmac-sha256', secret: randomBytes(32).toString('base64') };
          await writePrivateFile(wrongKey, bindKeyFile(wrong));
          const before = env.dnsMessages('update');
          const r = await runDdclient(
            wrongDir,
            ddclientNsupdateConfig({
              server: `127.0.0.1:${env.gatewayPort}`,
              zone: ZONE,
              nsupdate: nsupdatePath,
              keyFile: wrongKey,
              use: 'use=ip, ip=192.0.2.79',
              host,
            }),
          );
          const shown = r.output.split(wrong.secret).join('<secret>');
          expect(r.code, shown).to.equal(1);
          expect(shown).to.include(`FAILED:   updating ${host}`);
          expect(shown).to.include('update failed: NOTAUTH(BADSIG)');
          expect(env.dnsMessages('update')).to.equal(before);
          expect(await env.ns.query(host, 'A')).to.deep.equal(['192.0.2.78']);
        });
      });
    }
  });
}

// ---- the doc shows what the tests run --------------------------------------------------------

describe('docs/clients.md: the RFC 2136 recipes are the ones the tests run', () => {
  let section: string;
  const key: GatewayKey = { name: 'NAME', algorithm: 'hmac-sha256', secret: 'SECRET' };
  const change: AddressChange = { host: 'H', ttl: 60, a: '192.0.2.10', aaaa: '2001:db8::10' };

  before(async () => {
    const doc = await readFile(path.join(ROOT, 'docs/clients.md'), 'utf8');
    const start = doc.indexOf('\n## RFC 2136 clients\n');
    expect(start).to.be.greaterThan(-1);
    const end = doc.indexOf('\n## ', start + 1);
    section = doc.slice(start, end === -1 ? undefined : end);
  });

  it('nsupdate -k: the BIND key file and the commands', () => {
    expect(section).to.include('nsupdate -k H.key');
    expect(section).to.include(bindKeyFile(key));
    expect(section).to.include(nsupdateCommands('GW', 5353, change));
  });

  it('nsupdate with the key on its input (not -y, which puts the secret in argv)', () => {
    expect(section).to.include(nsupdateKeyCommand(key) + nsupdateCommands('GW', 5353, change));
  });

  it('knsupdate -k: the one-line key file and the commands with zone', () => {
    expect(section).to.include('knsupdate -k H.knsupdate-key');
    expect(section).to.include(knotKeyLine(key));
    expect(section).to.include(knsupdateCommands('GW', 5353, 'ZONE', change));
  });

  it('ddclient.conf with protocol=nsupdate', () => {
    expect(section).to.include(
      ddclientNsupdateConfig({
        server: 'GW:5353',
        zone: 'ZONE',
        nsupdate: '/usr/bin/nsupdate',
        keyFile: '/etc/ddclient/H.key',
        use: 'use=web, web=http://ddns.example.org:8245/checkip',
        host: 'H',
      }),
    );
  });
});
