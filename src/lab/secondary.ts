/**
 * Private knotd / named secondaries of the lab's dynamic zone, configured from the operator examples
 * config/knot/knot-secondary.conf.example and config/bind/named-secondary.conf.example: they transfer
 * the zone from a primary with a TSIG key (AXFR, then IXFR) and refresh on its NOTIFY. Short refresh
 * timers (refreshSeconds) let a secondary that was stopped or frozen catch up on its own.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { requireBinary } from './binaries.js';
import { freePort, writePrivateFile } from './files.js';
import {
  DAEMONS,
  digQuery,
  soaSerial,
  startNameServer,
  type NameServer,
  type NameServerOptions,
  type QueryOptions,
} from './nameserver.js';
import { renderTemplate } from './paths.js';
import { keepLines, onFreePort, PortInUseError, ServerProcess } from './process.js';
import type { Endpoint } from './sentinel.js';
import type { TsigKey } from './tsig.js';

export type SecondaryKind = 'knot' | 'bind';

/** The binaries (table names of binaries.ts) startSecondary needs for `kind`, dig included. */
export function secondaryBinaries(kind: SecondaryKind): string[] {
  return kind === 'knot' ? ['knotd', 'knotc', 'dig'] : ['named', 'dig'];
}

export interface SecondaryOptions {
  dir: string;
  zone: string;
  /** The primary to transfer from; NOTIFY is accepted from its address. */
  primary: Endpoint;
  /** The key the primary lets transfer the zone (its NameServer.transferKey). */
  transferKey: TsigKey;
  port?: number;
  /**
   * The longest wait between two refreshes (SOA queries to the primary), whatever the zone's SOA
   * says (3600): Knot `refresh-max-interval` (at least 2), BIND `max-refresh-time`. Retries after
   * a failed refresh come after at most 1 s (Knot) or this long (BIND). Default 2.
   */
  refreshSeconds?: number;
  /**
   * Ready once the server answers on its port (false), or once it also serves the zone (true, the
   * default: the primary must be up to transfer from).
   */
  waitForZone?: boolean;
}

export interface Secondary extends Endpoint {
  kind: SecondaryKind;
  /** Zone apex, lowercase, no trailing dot. */
  zone: string;
  dir: string;
  primary: Endpoint;
  transferKey: TsigKey;
  /** The server process while it runs. */
  readonly pid: number | undefined;
  /** SIGTERM and wait (SIGKILL after 5 s). */
  stop(): Promise<void>;
  /** Start again on the same port and directory, from its copy of the zone; ready once it serves it. */
  start(): Promise<void>;
  /** Records as `dig +short` prints them (sorted), queried over TCP straight at this server. */
  query(name: string, type: string, opts?: QueryOptions): Promise<string[]>;
  /** The SOA serial it serves; rejects while it has no copy of the zone. */
  serial(): Promise<number>;
  /**
   * Resolves once it serves `target`'s serial: a number, or a server whose serial() is read again at
   * every check (a signing primary's moves on its own). Rejects after `timeoutMs` (10 s) with what it logged.
   */
  waitForSerial(target: number | { serial(): Promise<number> }, timeoutMs?: number): Promise<void>;
  /**
   * The lines it logged about NOTIFY, transfers and refreshes since it was first started (the last
   * 1000). Knot: `notify, incoming, … serial N`, `IXFR, incoming, … started`; BIND: `received notify
   * for zone`, `notify from …: serial N`, `Transfer completed: … (serial N)`.
   */
  transferLog(): string[];
}

export interface KnotSecondary extends Secondary {
  kind: 'knot';
  /** `knotc zone-freeze`: the zone keeps what it has; refreshes and transfers wait until thaw(). */
  freeze(): Promise<void>;
  /** `knotc zone-thaw`: the refresh a NOTIFY or a timer asked for meanwhile runs now. */
  thaw(): Promise<void>;
  /** `knotc zone-status`: e.g. `[zone.] role: slave | serial: 3 | freeze: yes | refresh: frozen | …`. */
  zoneStatus(): Promise<string>;
}

export interface BindSecondary extends Secondary {
  kind: 'bind';
}

/** A secondary of either kind; `kind` tells them apart (`if (s.kind === 'knot') await s.freeze()`). */
export type LabSecondary = KnotSecondary | BindSecondary;

const HOST = '127.0.0.1';
const TRANSFER_LINES = /notify|[ai]xfr|transfer|refresh|serial|frozen/i;

export function startSecondary(kind: 'knot', opts: SecondaryOptions): Promise<KnotSecondary>;
export function startSecondary(kind: 'bind', opts: SecondaryOptions): Promise<BindSecondary>;
export function startSecondary(kind: SecondaryKind, opts: SecondaryOptions): Promise<LabSecondary>;
export async function startSecondary(kind: SecondaryKind, opts: SecondaryOptions): Promise<LabSecondary> {
  const binary = requireBinary(DAEMONS[kind]);
  const knotc = kind === 'knot' ? requireBinary('knotc') : undefined;
  const zone = opts.zone.toLowerCase().replace(/\.$/, '');
  const dir = path.resolve(opts.dir);
  const refresh = opts.refreshSeconds ?? 2;
  if (!Number.isInteger(refresh) || refresh < 1)
    throw new Error(`lab: refreshSeconds ${refresh} is not a whole number ≥ 1`);
  // knotd's control socket (its default: rundir/knot.sock); a Unix socket path has at most 107 bytes.
  const socket = path.join(dir, 'knot.sock');
  if (kind === 'knot' && Buffer.byteLength(socket) > 107) throw new Error(`lab: ${socket} is too long for a socket`);

  return onFreePort(opts.port, async (port) => {
    const args = await writeSecondaryConfig(kind, dir, port, zone, refresh, opts);
    const proc = new ServerProcess(`${DAEMONS[kind]} secondary on ${HOST}:${port}`, binary, args, dir);
    const transferLog = keepLines(proc, TRANSFER_LINES);
    const start = async (waitForZone: boolean): Promise<void> => {
      proc.spawn();
      // Any answer (SERVFAIL before the first transfer) says that it listens.
      await proc.waitUntilReady(port, async () =>
        waitForZone ? (await digQuery(port, zone, 'SOA')).length > 0 : (await digQuery(port, zone, 'SOA'), true),
      );
    };
    await start(opts.waitForZone ?? true);

    const common = {
      host: HOST,
      port,
      zone,
      dir,
      primary: { host: opts.primary.host, port: opts.primary.port },
      transferKey: opts.transferKey,
      stop: () => proc.stop(),
      start: () => start(true),
      query: (name: string, type: string, queryOpts?: QueryOptions) => digQuery(port, name, type, queryOpts),
      serial: () => soaSerial(port, zone),
      waitForSerial: async (target: number | { serial(): Promise<number> }, timeoutMs = 10_000) => {
        const deadline = Date.now() + timeoutMs;
        let seen: number | string = 'no zone';
        let serial = typeof target === 'number' ? target : NaN;
        for (;;) {
          if (typeof target !== 'number') serial = await target.serial();
          seen = await soaSerial(port, zone).catch((e: Error) => e.message);
          if (seen === serial) return;
          if (Date.now() >= deadline || !proc.running) break;
          await new Promise((r) => setTimeout(r, 50));
        }
        const log = transferLog().slice(-15).join('\n');
        throw new Error(
          `lab: ${proc.label} did not serve serial ${serial} of ${zone} within ${timeoutMs} ms (it serves: ${seen})\n${log}`,
        );
      },
      transferLog,
    };
    if (kind === 'bind') {
      return {
        ...common,
        kind,
        get pid() {
          return proc.pid;
        },
      };
    }
    const control = (...command: string[]) => runKnotc(knotc!, socket, command);
    return {
      ...common,
      kind,
      get pid() {
        return proc.pid;
      },
      freeze: async () => void (await control('-b', 'zone-freeze', zone)),
      thaw: async () => void (await control('-b', 'zone-thaw', zone)),
      zoneStatus: () => control('zone-status', zone),
    };
  });
}

async function writeSecondaryConfig(
  kind: SecondaryKind,
  dir: string,
  port: number,
  zone: string,
  refresh: number,
  opts: SecondaryOptions,
): Promise<string[]> {
  const vars = {
    DIR: dir,
    PORT: String(port),
    ZONE: zone,
    PRIMARY_ADDRESS: opts.primary.host,
    PRIMARY_PORT: String(opts.primary.port),
    KEY_NAME: opts.transferKey.name,
    KEY_ALGORITHM: opts.transferKey.algorithm,
    KEY_SECRET: opts.transferKey.secret,
  };
  const confPath = path.join(dir, kind === 'knot' ? 'knot.conf' : 'named.conf');
  const template = kind === 'knot' ? 'knot/knot-secondary.conf.example' : 'bind/named-secondary.conf.example';
  const conf = await renderTemplate(template, vars);
  // The lab's timers: the template's zone (SOA refresh 3600) would leave a secondary that missed a
  // NOTIFY behind for an hour.
  const [anchor, timers] =
    kind === 'knot'
      ? [
          '    acl: [notify-from-primary]\n',
          `    refresh-min-interval: 2\n    refresh-max-interval: ${Math.max(2, refresh)}\n` +
            '    retry-min-interval: 1\n    retry-max-interval: 1\n',
        ]
      : [
          '    primaries {',
          `    min-refresh-time 1;\n    max-refresh-time ${refresh};\n` +
            `    min-retry-time 1;\n    max-retry-time ${refresh};\n`,
        ];
  if (!conf.includes(anchor))
    throw new Error(`lab: the ${kind} secondary example has no ${JSON.stringify(anchor.trim())}`);
  await writePrivateFile(
    confPath,
    kind === 'knot' ? conf.replace(anchor, () => anchor + timers) : conf.replace(anchor, () => timers + anchor),
  );
  return kind === 'knot' ? ['-c', confPath] : ['-g', '-4', '-n', '2', '-c', confPath];
}

/** `knotc -s SOCKET COMMAND…`; resolves with its output, rejects when it fails or says so. */
function runKnotc(knotc: string, socket: string, command: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(knotc, ['-s', socket, ...command], { timeout: 10_000 }, (err, stdout, stderr) => {
      const out = `${stdout}${stderr}`.trim();
      if (err || /^error:/im.test(out))
        reject(new Error(`lab: knotc ${command.join(' ')} failed: ${out || err?.message}`));
      else resolve(out);
    });
  });
}

export interface PrimaryWithSecondaries {
  primary: NameServer;
  /** In the order asked for; each already serves the primary's serial. */
  secondaries: LabSecondary[];
}

/**
 * A Knot or BIND primary that notifies its secondaries, and the secondaries, started so that each
 * NOTIFY target's port is known before the primary starts: the secondaries' ports come from
 * freePort(); should a secondary lose its port to another process before it binds it, everything is
 * stopped and started again on other ports (twice at most). Resolves once every secondary serves
 * the primary's serial. The secondaries transfer with `primary.transferKey` (`transferKey`, else
 * the update key).
 */
export async function startPrimaryWithSecondaries(
  kind: SecondaryKind,
  primaryOpts: Omit<NameServerOptions, 'notify'>,
  secondaries: readonly { kind: SecondaryKind; dir: string; refreshSeconds?: number }[],
): Promise<PrimaryWithSecondaries> {
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    const ports = await distinctFreePorts(secondaries.length);
    const primary = await startNameServer(kind, {
      ...primaryOpts,
      notify: ports.map((port) => ({ host: HOST, port })),
    });
    const started: LabSecondary[] = [];
    try {
      for (const [i, s] of secondaries.entries()) {
        started.push(
          await startSecondary(s.kind, {
            dir: s.dir,
            zone: primary.zone,
            primary: { host: primary.host, port: primary.port },
            transferKey: primary.transferKey,
            port: ports[i],
            ...(s.refreshSeconds === undefined ? {} : { refreshSeconds: s.refreshSeconds }),
            waitForZone: false,
          }),
        );
      }
      await Promise.all(started.map((s) => s.waitForSerial(primary)));
      return { primary, secondaries: started };
    } catch (err) {
      await Promise.all(started.map((s) => s.stop()));
      await primary.stop();
      if (!(err instanceof PortInUseError)) throw err;
      lastError = err;
    }
  }
  throw lastError;
}

async function distinctFreePorts(n: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < n) ports.add(await freePort());
  return [...ports];
}
