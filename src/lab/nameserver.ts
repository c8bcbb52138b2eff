/**
 * Private knotd / named / pdns_server primaries for one dynamic zone, configured from the operator
 * examples in config/ (the same snippets the README shows), on a free loopback port. Knot and BIND
 * primaries can also notify secondaries (src/lab/secondary.ts), let them transfer the zone with
 * their own TSIG key, and sign the zone (DNSSEC).
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { writePrivateFile } from './files.js';
import { findBinary, requireBinary } from './binaries.js';
import { renderTemplate } from './paths.js';
import { PDNS_BINARIES, preparePdns } from './pdns.js';
import { keepLines, onFreePort, ServerProcess } from './process.js';
import type { Endpoint } from './sentinel.js';
import type { TsigKey } from './tsig.js';

export type LabKind = 'knot' | 'bind' | 'pdns';

/** Every primary the lab can start, in the order tests and the bench list them. */
export const LAB_KINDS: readonly LabKind[] = ['knot', 'bind', 'pdns'];

/** The server binary of each kind (what a process listing shows). */
export const DAEMONS: Readonly<Record<LabKind, string>> = { knot: 'knotd', bind: 'named', pdns: 'pdns_server' };

/** Display names of the kinds. */
export const PRODUCTS: Readonly<Record<LabKind, string>> = { knot: 'Knot DNS', bind: 'BIND', pdns: 'PowerDNS' };

/** The binaries (table names of binaries.ts) startNameServer needs for `kind`, dig included. */
export function serverBinaries(kind: LabKind): string[] {
  return [...(kind === 'pdns' ? PDNS_BINARIES : [DAEMONS[kind]]), 'dig'];
}

export interface NameServer {
  kind: LabKind;
  host: string;
  port: number;
  /** Zone apex, lowercase, no trailing dot. */
  zone: string;
  key: TsigKey;
  /** The key secondaries transfer the zone with: NameServerOptions.transferKey, else `key`. */
  transferKey: TsigKey;
  dir: string;
  /** The server process while it runs (the bench reads its CPU time). */
  readonly pid: number | undefined;
  /** SIGTERM and wait (SIGKILL after 5 s). */
  stop(): Promise<void>;
  /** Start again on the same port and directory; the journal keeps earlier updates. */
  start(): Promise<void>;
  /** Records as `dig +short` prints them (sorted), queried over TCP straight at this server. */
  query(name: string, type: string, opts?: QueryOptions): Promise<string[]>;
  /** The SOA serial it serves (BIND with dnssecSigning: the signed zone's, not the unsigned one's). */
  serial(): Promise<number>;
  /**
   * The lines the server logged about NOTIFY, transfers (AXFR/IXFR), refreshes and DNSSEC signing,
   * since it was first started (the last 1000): e.g. `IXFR, outgoing` (Knot) or `IXFR started` (BIND).
   */
  transferLog(): string[];
}

export interface QueryOptions {
  /** `+dnssec`: the RRSIG lines come with the records (`SOA 13 3 60 …`). */
  dnssec?: boolean;
}

export interface NameServerOptions {
  dir: string;
  zone: string;
  key: TsigKey;
  port?: number;
  /** Extra zone-file lines (relative or absolute owner names), e.g. 'cname.dyn.example. 60 IN CNAME x.example.' */
  records?: string[];
  /**
   * Accept updates only at these names (labels under the zone) and below, as an operator's
   * per-name ACL would: Knot `update-owner`, BIND `grant … subdomain`. Default: the whole zone.
   */
  updatableNames?: string[];
  /** A second key the server knows (its signatures verify) but that no update rule grants. */
  ungrantedKey?: TsigKey;
  /**
   * Secondaries (knot, bind): sent a NOTIFY, signed with `transferKey`, whenever the zone changes.
   * Whoever signs with `transferKey` may transfer the zone (IXFR from the journal, or AXFR).
   */
  notify?: Endpoint[];
  /** The key transfers (and NOTIFYs) are signed with (knot, bind). Default: `key`, which may transfer already. */
  transferKey?: TsigKey;
  /**
   * Sign the zone and serve it signed (knot, bind): Knot `dnssec-signing: on` with its default
   * policy (the serial steps once per change: signing and update share it); BIND `dnssec-policy
   * default; inline-signing yes;`, whose served serial runs ahead of the unsigned zone's. Ready once
   * the SOA comes with its RRSIG; updates survive stop()/start() as without signing.
   */
  dnssecSigning?: boolean;
}

/** What the log lines of transferLog() match. */
const TRANSFER_LINES = /notify|[ai]xfr|transfer|refresh|dnssec|serial|frozen/i;

const HOST = '127.0.0.1';

export function startKnot(opts: NameServerOptions): Promise<NameServer> {
  return startNameServer('knot', opts);
}

export function startNamed(opts: NameServerOptions): Promise<NameServer> {
  return startNameServer('bind', opts);
}

export async function startNameServer(kind: LabKind, opts: NameServerOptions): Promise<NameServer> {
  if (kind === 'pdns' && (opts.notify || opts.transferKey || opts.dnssecSigning)) {
    throw new Error('lab: notify, transferKey and dnssecSigning are for knot and bind, not the PowerDNS primary');
  }
  const binary = requireBinary(DAEMONS[kind]);
  if (kind === 'pdns') for (const b of PDNS_BINARIES) requireBinary(b);
  digBinary(); // fail now, not at the first readiness probe
  const zone = opts.zone.toLowerCase().replace(/\.$/, '');
  const dir = path.resolve(opts.dir);
  const zoneText = await renderTemplate('zone.example', { ZONE: zone });
  const extra = (opts.records ?? []).map((r) => r.trimEnd()).join('\n');
  await writePrivateFile(path.join(dir, `${zone}.zone`), `${zoneText.trimEnd()}\n${extra}${extra ? '\n' : ''}`);

  const zoneFile = path.join(dir, `${zone}.zone`);
  return onFreePort(opts.port, async (port) => {
    const args =
      kind === 'pdns'
        ? await preparePdns(dir, port, { ...opts, zone, zoneFile })
        : await writeConfig(kind, dir, port, zone, opts);
    const proc = new ServerProcess(`${DAEMONS[kind]} on ${HOST}:${port}`, binary, args, dir);
    const transferLog = keepLines(proc, TRANSFER_LINES);
    // Signed: ready once the SOA comes with its RRSIG (named serves the unsigned copy first).
    const ready = opts.dnssecSigning
      ? async () => (await digQuery(port, zone, 'SOA', { dnssec: true })).some((l) => l.startsWith('SOA '))
      : async () => (await digQuery(port, zone, 'SOA')).length > 0;
    const start = async (): Promise<void> => {
      proc.spawn();
      await proc.waitUntilReady(port, ready);
    };
    await start();
    return {
      kind,
      host: HOST,
      port,
      zone,
      key: opts.key,
      transferKey: opts.transferKey ?? opts.key,
      dir,
      get pid() {
        return proc.pid;
      },
      stop: () => proc.stop(),
      start,
      query: (name, type, queryOpts) => digQuery(port, name, type, queryOpts),
      serial: () => soaSerial(port, zone),
      transferLog,
    };
  });
}

/** The SOA serial `zone` has at 127.0.0.1:`port`; rejects when the server does not serve the zone. */
export async function soaSerial(port: number, zone: string): Promise<number> {
  const soa = await digQuery(port, zone, 'SOA');
  const serial = Number(soa[0]?.split(/\s+/)[2]);
  if (!Number.isInteger(serial)) throw new Error(`lab: no SOA serial for ${zone} on port ${port}`);
  return serial;
}

/** knot.conf / named.conf from the example; returns the server's arguments. */
async function writeConfig(
  kind: 'knot' | 'bind',
  dir: string,
  port: number,
  zone: string,
  opts: NameServerOptions,
): Promise<string[]> {
  const vars = {
    DIR: dir,
    PORT: String(port),
    ZONE: zone,
    KEY_NAME: opts.key.name,
    KEY_ALGORITHM: opts.key.algorithm,
    KEY_SECRET: opts.key.secret,
  };
  const confPath = path.join(dir, kind === 'knot' ? 'knot.conf' : 'named.conf');
  const template = kind === 'knot' ? 'knot/knot.conf.example' : 'bind/named.conf.example';
  const conf = await renderTemplate(template, vars);
  let text = opts.updatableNames ? restrictUpdates(kind, conf, zone, opts.key.name, opts.updatableNames) : conf;
  if (opts.ungrantedKey) text = addKey(kind, text, opts.ungrantedKey);
  if (opts.notify || opts.transferKey) {
    text = addSecondaries(kind, text, opts.key, opts.transferKey ?? opts.key, opts.notify ?? []);
  }
  if (opts.dnssecSigning) text = addSigning(kind, text);
  await writePrivateFile(confPath, text);
  // named: -g keeps it in the foreground (so the process is ours) and logs to stderr.
  return kind === 'knot' ? ['-c', confPath] : ['-g', '-4', '-n', '2', '-c', confPath];
}

/** The config with one more key defined, and granted nothing. */
function addKey(kind: 'knot' | 'bind', conf: string, key: TsigKey): string {
  const [from, to] =
    kind === 'knot'
      ? ['\nacl:', `  - id: ${key.name}\n    algorithm: ${key.algorithm}\n    secret: ${key.secret}\n\nacl:`]
      : [
          '\nzone "',
          `\nkey "${key.name}" {\n    algorithm ${key.algorithm};\n    secret "${key.secret}";\n};\n\nzone "`,
        ];
  if (!conf.includes(from)) throw new Error(`lab: the ${kind} example config has no place for another key`);
  return conf.replace(from, to);
}

/**
 * The config with NOTIFY to `notify`, signed with `transferKey`, and transfers allowed to that key
 * (the example already lets the update key transfer, for `reconcile`).
 */
function addSecondaries(
  kind: 'knot' | 'bind',
  conf: string,
  updateKey: TsigKey,
  transferKey: TsigKey,
  notify: readonly Endpoint[],
): string {
  const own = transferKey.name !== updateKey.name;
  if (!own && transferKey.secret !== updateKey.secret) {
    throw new Error(`lab: transferKey ${transferKey.name} has the update key's name but another secret`);
  }
  let text = own ? addKey(kind, conf, transferKey) : conf;
  if (kind === 'knot') {
    const remotes = notify.map(
      (t, i) => `  - id: secondary-${i}\n    address: ${t.host}@${t.port}\n    key: ${transferKey.name}\n`,
    );
    if (remotes.length > 0) text = replaceOnce(kind, text, '\nacl:', `\nremote:\n${remotes.join('')}\nacl:`);
    const acls = ['ddns', 'ddns-transfer'];
    if (own) {
      acls.push('secondaries');
      text = replaceOnce(
        kind,
        text,
        '\nzone:',
        `  - id: secondaries\n    key: ${transferKey.name}\n    action: transfer\n\nzone:`,
      );
    }
    const notifyLine = notify.length > 0 ? `    notify: [${notify.map((_, i) => `secondary-${i}`).join(', ')}]\n` : '';
    return replaceOnce(kind, text, '    acl: [ddns, ddns-transfer]\n', `    acl: [${acls.join(', ')}]\n${notifyLine}`);
  }
  const allow = `    allow-transfer { key ${updateKey.name}; };\n`;
  const targets = notify.map((t) => `${t.host} port ${t.port} key "${transferKey.name}"; `).join('');
  return replaceOnce(
    kind,
    text,
    allow,
    (own ? `    allow-transfer { key ${updateKey.name}; key ${transferKey.name}; };\n` : allow) +
      // notify-delay 0: every change is announced at once, not at most one NOTIFY per 5 s.
      (notify.length > 0 ? `    notify explicit;\n    notify-delay 0;\n    also-notify { ${targets}};\n` : ''),
  );
}

/** The config with the zone signed by the server (its default policy: ECDSA P-256 keys, NSEC). */
function addSigning(kind: 'knot' | 'bind', conf: string): string {
  return kind === 'knot'
    ? // Journal and zone file as the example has them: the file is never edited while the zone takes
      // updates, so knotd's warning about `zonefile-load: difference` (a manual edit would make a
      // malformed IXFR) does not apply; with `difference`, a restart would undo the updates.
      replaceOnce(
        kind,
        conf,
        '    journal-content: changes\n',
        '    journal-content: changes\n    dnssec-signing: on\n',
      )
    : replaceOnce(
        kind,
        conf,
        '    allow-transfer {',
        '    dnssec-policy default;\n    inline-signing yes;\n    allow-transfer {',
      );
}

function replaceOnce(kind: 'knot' | 'bind', conf: string, from: string, to: string): string {
  if (!conf.includes(from)) throw new Error(`lab: the ${kind} example config has no ${JSON.stringify(from.trim())}`);
  return conf.replace(from, () => to);
}

/** The operator example with its whole-zone update rule narrowed to `names` (and below). */
function restrictUpdates(
  kind: 'knot' | 'bind',
  conf: string,
  zone: string,
  keyName: string,
  names: readonly string[],
): string {
  const [from, to] =
    kind === 'knot'
      ? [
          '    update-type: [A, AAAA, MX, TXT]\n',
          `    update-type: [A, AAAA, MX, TXT]\n    update-owner: name\n    update-owner-match: sub-or-equal\n    update-owner-name: [${names.join(', ')}]\n`,
        ]
      : [
          `update-policy { grant ${keyName} zonesub A AAAA MX TXT; };`,
          `update-policy { ${names.map((n) => `grant ${keyName} subdomain ${n}.${zone}. A AAAA MX TXT;`).join(' ')} };`,
        ];
  if (!conf.includes(from)) throw new Error(`lab: the ${kind} example config has no whole-zone update rule to narrow`);
  return conf.replace(from, to);
}

function digBinary(): { path: string; kdig: boolean } {
  const dig = findBinary('dig');
  if (dig) return { path: dig, kdig: false };
  const kdig = findBinary('kdig');
  if (kdig) return { path: kdig, kdig: true };
  requireBinary('dig');
  throw new Error('unreachable');
}

/**
 * `dig @127.0.0.1 -p PORT +tcp +short +norec NAME TYPE` (and `+dnssec` if asked), lines sorted.
 * Rejects when the server does not answer.
 */
export function digQuery(port: number, name: string, type: string, opts: QueryOptions = {}): Promise<string[]> {
  const dig = digBinary();
  const timing = dig.kdig ? ['+time=2', '+retry=0'] : ['+time=2', '+tries=1'];
  const flags = ['+tcp', '+short', '+norec', ...(opts.dnssec ? ['+dnssec'] : []), ...timing];
  const args = [`@${HOST}`, '-p', String(port), ...flags, name, type];
  return new Promise((resolve, reject) => {
    execFile(dig.path, args, { timeout: 5000 }, (err, stdout) => {
      const lines = stdout
        .split('\n')
        .map((l) => l.trim())
        .filter((l) => l.length > 0);
      // dig +short prints ";; ..." lines on communication errors (and exits non-zero).
      if (err || lines.some((l) => l.startsWith(';;'))) {
        reject(
          new Error(
            `lab: ${path.basename(dig.path)} ${name} ${type} at ${HOST}:${port} failed: ${lines.join(' ') || err?.message}`,
          ),
        );
        return;
      }
      resolve(lines.sort());
    });
  });
}
