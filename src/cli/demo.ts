/**
 * `ddns-bridge demo`: a private redis-server and knotd (or named, or pdns_server) with a generated zone and
 * TSIG key in a temporary directory, the bridge on loopback, a demo account and host.
 * Runs until SIGINT/SIGTERM/SIGHUP, then stops everything and removes the directory.
 */
import { randomBytes } from 'node:crypto';
import { chmod, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { hashPassword, newTokenId, TsigKeyring, tsigKeyHash } from '../auth/index.js';
import { loadConfig } from '../config/load.js';
import {
  DAEMONS,
  ensureInstalled,
  freePort,
  generateTsigKey,
  makeTempDir,
  PRODUCTS,
  removeDir,
  serverBinaries,
  startNameServer,
  startRedis,
  type LabKind,
  type NameServer,
  type RedisServer,
} from '../lab/index.js';
import { buildBridge, type Bridge } from './compose.js';
import { JsonLogger } from './logger.js';
import type { Out } from './commands/admin.js';

export const DEMO_ZONE = 'dyn.example.test';
export const DEMO_HOST = `myhost.${DEMO_ZONE}`;
export const DEMO_ACCOUNT = 'demo';
/** Records the demo zone holds beside its hosts, listed in its config as static names; `mail` is an mx target. */
export const DEMO_STATIC_RECORDS = [{ name: 'mail', type: 'A', data: '192.0.2.25' }] as const;

export interface DemoOptions {
  json: boolean;
  nameserver: LabKind;
  port?: number;
}

/**
 * SIGINT/SIGTERM/SIGHUP, listened for from the very start: a signal during set-up (seconds;
 * minutes when packages are installed first) must still stop the servers already started and
 * remove the directory with the TSIG secret, which node's default handler (exit at once,
 * without 'exit' handlers) would not. SIGHUP is a closed terminal or a dropped ssh session;
 * redis-server and knotd/named read it as "reload" and would stay running.
 */
const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

class StopSignals {
  requested = false;
  readonly signalled: Promise<void>;
  private readonly handler: () => void;

  constructor() {
    let resolve!: () => void;
    this.signalled = new Promise((r) => (resolve = r));
    // Kept until dispose(): a second Ctrl-C while cleaning up must not cut the cleanup short.
    this.handler = () => {
      this.requested = true;
      resolve();
    };
    for (const signal of STOP_SIGNALS) process.on(signal, this.handler);
  }

  /** Between set-up steps: stop here when a signal came (see Interrupted). */
  check(): void {
    if (this.requested) throw new Interrupted();
  }

  dispose(): void {
    for (const signal of STOP_SIGNALS) process.off(signal, this.handler);
  }
}

/** Set-up stopped by a signal: not an error, the demo ends as when stopped while running. */
class Interrupted extends Error {}

export async function demo(opts: DemoOptions, out: Out, err: Out): Promise<void> {
  const progress = (line: string) => err(`demo: ${line}`);
  const stop = new StopSignals();
  let dir: string | undefined;
  let redis: RedisServer | undefined;
  let ns: NameServer | undefined;
  let bridge: Bridge | undefined;
  const cleanup = async () => {
    await bridge?.close().catch(() => undefined);
    await ns?.stop().catch(() => undefined);
    await redis?.stop().catch(() => undefined);
    if (dir) await removeDir(dir).catch(() => undefined);
  };

  try {
    await ensureInstalled({ binaries: ['redis-server', ...serverBinaries(opts.nameserver)] }, progress);
    stop.check();
    // Each step's result is kept before the check: cleanup() must see what was started.
    dir = await makeTempDir('ddns-bridge-demo-');
    stop.check();
    progress(`working directory ${dir}`);
    redis = await startRedis({ dir, appendonly: true });
    stop.check();
    const key = generateTsigKey('ddns-key', 'hmac-sha256');
    ns = await startNameServer(opts.nameserver, {
      dir,
      zone: DEMO_ZONE,
      key,
      records: DEMO_STATIC_RECORDS.map((r) => `${r.name}.${DEMO_ZONE}. 3600 IN ${r.type} ${r.data}`),
    });
    stop.check();
    progress(`${DAEMONS[opts.nameserver]} on 127.0.0.1:${ns.port}, redis on 127.0.0.1:${redis.port}`);

    const port = opts.port ?? (await freePort());
    const secretFile = path.join(dir, 'ddns-key.secret');
    await writeFile(secretFile, key.secret + '\n', { mode: 0o600 });
    const configPath = path.join(dir, 'config.json');
    // The RFC 2136 gateway too, with a key for the demo host (docs/protocol.md, "RFC 2136 gateway").
    const master = randomBytes(32);
    const gatewayKeyFile = path.join(dir, 'gateway.key');
    await writeFile(gatewayKeyFile, master.toString('base64') + '\n', { mode: 0o600 });
    const gatewayPort = await freePort();
    const configJson = {
      listen: [`127.0.0.1:${port}`],
      redis: { url: redis.url, keyPrefix: 'ddns:' },
      zones: [
        {
          name: DEMO_ZONE,
          primary: `127.0.0.1:${ns.port}`,
          key: { name: key.name, algorithm: key.algorithm, secretFile },
          // The zone's own records beside the hosts: not drift (`reconcile` agrees on a fresh demo).
          staticNames: DEMO_STATIC_RECORDS.map((r) => r.name),
        },
      ],
      mx: { resolvers: [`127.0.0.1:${ns.port}`], timeout: 1 },
      gateway: { listen: [`127.0.0.1:${gatewayPort}`], keyFile: gatewayKeyFile },
      log: { level: 'info' },
    };
    await writeFile(configPath, JSON.stringify(configJson, null, 2) + '\n');
    await chmod(configPath, 0o600);

    const config = await loadConfig(configPath, {});
    const logger = new JsonLogger(config.log.level);
    logger.addSecret(key.secret);
    bridge = buildBridge(config, logger);
    const password = randomBytes(9).toString('base64url');
    await bridge.store.accounts.create({
      name: DEMO_ACCOUNT,
      passwordHash: await hashPassword(password),
      donator: true,
      createdAt: Date.now(),
    });
    await bridge.store.hosts.add(DEMO_HOST, DEMO_ACCOUNT, 'dynamic');
    const keyId = newTokenId();
    await bridge.store.tokens.add({
      id: keyId,
      hash: tsigKeyHash(keyId),
      fqdn: DEMO_HOST,
      from: [],
      note: 'demo',
      tsig: 'hmac-sha256',
    });
    const gatewayKey = new TsigKeyring(master).key(keyId, DEMO_HOST, 'hmac-sha256');
    logger.addSecret(gatewayKey.secret.toString('base64'));
    const nsupdateKeyFile = path.join(dir, 'demo-host.tsig');
    await writeFile(
      nsupdateKeyFile,
      `key "${gatewayKey.name}" {\n\talgorithm hmac-sha256;\n\tsecret "${gatewayKey.secret.toString('base64')}";\n};\n`,
      { mode: 0o600 },
    );
    stop.check();
    // The port it bound: a free one, or the system's pick for --port 0 (then in the config too).
    const bound = await bridge.http.listen('127.0.0.1', port);
    if (bound !== port) {
      configJson.listen = [`127.0.0.1:${bound}`];
      await writeFile(configPath, JSON.stringify(configJson, null, 2) + '\n');
    }
    await bridge.gateway?.listen();
    stop.check();
    const url = `http://127.0.0.1:${bound}`;

    if (opts.json) {
      out(
        JSON.stringify({
          url,
          config: configPath,
          zone: DEMO_ZONE,
          nameserver: {
            kind: opts.nameserver,
            host: '127.0.0.1',
            port: ns.port,
            key: { name: key.name, algorithm: key.algorithm, secret: key.secret },
          },
          account: { name: DEMO_ACCOUNT, password },
          hostname: DEMO_HOST,
          gateway: { host: '127.0.0.1', port: gatewayPort, keyFile: nsupdateKeyFile },
        }),
      );
    } else {
      const lines = [
        '',
        `ddns-bridge demo is running (${PRODUCTS[opts.nameserver]} + Redis in ${dir})`,
        '',
        `  account:  ${DEMO_ACCOUNT} / ${password}  (a donator: offline=YES works)`,
        `  host:     ${DEMO_HOST}`,
        `  config:   ${configPath}`,
        '',
        'Update the host (prints "good 203.0.113.7", then "nochg 203.0.113.7" when repeated):',
        `  curl -u '${DEMO_ACCOUNT}:${password}' -A 'demo-client/1.0 you@example.test' '${url}/nic/update?hostname=${DEMO_HOST}&myip=203.0.113.7'`,
        '',
        'See what the nameserver publishes:',
        `  dig @127.0.0.1 -p ${ns.port} +short ${DEMO_HOST} A`,
        '',
        'More to try: &myip=203.0.113.7,2001:db8::7  &wildcard=ON  &mx=mail.' + DEMO_ZONE + '&backmx=YES  &offline=YES',
        `  curl '${url}/checkip'`,
        `  node ${process.argv[1] ?? 'dist/src/cli/main.js'} host show ${DEMO_HOST} --json --config ${configPath}`,
        '',
        "Or over RFC 2136, with the host's own TSIG key (it can change this host and nothing else):",
        `  printf 'server 127.0.0.1 ${gatewayPort}\\nupdate add ${DEMO_HOST} 60 A 203.0.113.8\\nsend\\n' | nsupdate -k ${nsupdateKeyFile}`,
        '',
        'Press Ctrl-C to stop; everything above is removed.',
      ];
      for (const l of lines) out(l);
    }

    await stop.signalled;
    progress('stopping');
  } catch (e) {
    // A step may also fail because of the signal (a terminal's Ctrl-C reaches the servers too).
    if (!stop.requested) throw e;
    progress('interrupted while starting; stopping');
  } finally {
    await cleanup();
    stop.dispose();
  }
}
