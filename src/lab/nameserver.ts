/**
 * Private knotd / named / pdns_server primaries for one dynamic zone, configured from the operator
 * examples in config/ (the same snippets the README shows), on a free loopback port.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { writePrivateFile } from './files.js';
import { findBinary, requireBinary } from './binaries.js';
import { renderTemplate } from './paths.js';
import { PDNS_BINARIES, preparePdns } from './pdns.js';
import { onFreePort, ServerProcess } from './process.js';
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
  dir: string;
  /** The server process while it runs (the bench reads its CPU time). */
  readonly pid: number | undefined;
  /** SIGTERM and wait (SIGKILL after 5 s). */
  stop(): Promise<void>;
  /** Start again on the same port and directory; the journal keeps earlier updates. */
  start(): Promise<void>;
  /** Records as `dig +short` prints them (sorted), queried over TCP straight at this server. */
  query(name: string, type: string): Promise<string[]>;
  serial(): Promise<number>;
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
}

const HOST = '127.0.0.1';

export function startKnot(opts: NameServerOptions): Promise<NameServer> {
  return startNameServer('knot', opts);
}

export function startNamed(opts: NameServerOptions): Promise<NameServer> {
  return startNameServer('bind', opts);
}

export async function startNameServer(kind: LabKind, opts: NameServerOptions): Promise<NameServer> {
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
    const start = async (): Promise<void> => {
      proc.spawn();
      await proc.waitUntilReady(port, async () => (await digQuery(port, zone, 'SOA')).length > 0);
    };
    await start();
    return {
      kind,
      host: HOST,
      port,
      zone,
      key: opts.key,
      dir,
      get pid() {
        return proc.pid;
      },
      stop: () => proc.stop(),
      start,
      query: (name, type) => digQuery(port, name, type),
      serial: async () => {
        const soa = await digQuery(port, zone, 'SOA');
        const serial = Number(soa[0]?.split(/\s+/)[2]);
        if (!Number.isInteger(serial)) throw new Error(`lab: no SOA serial for ${zone} on port ${port}`);
        return serial;
      },
    };
  });
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
  const restricted = opts.updatableNames ? restrictUpdates(kind, conf, zone, opts.key.name, opts.updatableNames) : conf;
  await writePrivateFile(
    confPath,
    opts.ungrantedKey ? addUngrantedKey(kind, restricted, opts.ungrantedKey) : restricted,
  );
  // named: -g keeps it in the foreground (so the process is ours) and logs to stderr.
  return kind === 'knot' ? ['-c', confPath] : ['-g', '-4', '-n', '2', '-c', confPath];
}

/** The config with one more key defined, and granted nothing. */
function addUngrantedKey(kind: 'knot' | 'bind', conf: string, key: TsigKey): string {
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

/** `dig @127.0.0.1 -p PORT +tcp +short +norec NAME TYPE`, lines sorted. Rejects when the server does not answer. */
export function digQuery(port: number, name: string, type: string): Promise<string[]> {
  const dig = digBinary();
  const timing = dig.kdig ? ['+time=2', '+retry=0'] : ['+time=2', '+tries=1'];
  const args = [`@${HOST}`, '-p', String(port), '+tcp', '+short', '+norec', ...timing, name, type];
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
