/**
 * Finding the real server and client binaries, and installing them when allowed.
 *
 * The one place that knows which Debian package ships what: the demo installs from these
 * tables, `npm test` installs from them as root (test/support/packages.ts) and .ci/run calls
 * that same installer. A test may only require a binary or Perl module named here.
 */
import { execFile, execFileSync, spawn } from 'node:child_process';
import { accessSync, appendFileSync, constants, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** Debian 12 package that ships each binary the project (lab, demo, tests) uses. */
export const DEBIAN_PACKAGES: Readonly<Record<string, string>> = {
  'redis-server': 'redis-server',
  'redis-sentinel': 'redis-sentinel',
  'redis-cli': 'redis-tools',
  knotd: 'knot',
  keymgr: 'knot',
  knotc: 'knot',
  kdig: 'knot-dnsutils',
  knsupdate: 'knot-dnsutils',
  named: 'bind9',
  'tsig-keygen': 'bind9',
  'named-checkconf': 'bind9-utils',
  pdns_server: 'pdns-server',
  // The gsqlite3 backend ships no binary; it depends on pdns-server, so this brings both.
  pdnsutil: 'pdns-backend-sqlite3',
  // Creates the PowerDNS lab database from the backend's schema.
  sqlite3: 'sqlite3',
  dig: 'bind9-dnsutils',
  nsupdate: 'bind9-dnsutils',
  ddclient: 'ddclient',
  inadyn: 'inadyn',
  curl: 'curl',
  wget: 'wget',
  // Debian 12's `nginx` ships /usr/sbin/nginx; nginx-light only adds a module on top.
  nginx: 'nginx',
  openssl: 'openssl',
  // `promtool check metrics` lints what GET /metrics serves.
  promtool: 'prometheus',
  // `systemd-analyze verify` checks the shipped unit file.
  'systemd-analyze': 'systemd',
  // ACME DNS-01 end to end: a test CA and two real clients (docs/clients.md, "Certificates").
  pebble: 'pebble',
  lego: 'lego',
  certbot: 'certbot',
  // The bench's HTTP load generator (bench/wrk.ts): C, lighter per request than a Node one.
  wrk: 'wrk',
};

/** Debian 12 package of each Perl module a client needs: ddclient's HTTPS (only recommended by ddclient). */
export const PERL_MODULE_PACKAGES: Readonly<Record<string, string>> = {
  'IO::Socket::SSL': 'libio-socket-ssl-perl',
};

/**
 * Debian 12 package of each Python module a client needs: certbot's dns-rfc2136 plugin (the RFC 2136 gateway's
 * certificate recipe; certbot only suggests it).
 */
export const PYTHON_MODULE_PACKAGES: Readonly<Record<string, string>> = {
  certbot_dns_rfc2136: 'python3-certbot-dns-rfc2136',
};

/** Binaries, Perl and Python modules something needs. */
export interface Needs {
  binaries?: readonly string[];
  perlModules?: readonly string[];
  pythonModules?: readonly string[];
}

/** Everything in the tables above: what `npm test` and .ci/run install. */
export const EVERYTHING: Needs = {
  binaries: Object.keys(DEBIAN_PACKAGES),
  perlModules: Object.keys(PERL_MODULE_PACKAGES),
  pythonModules: Object.keys(PYTHON_MODULE_PACKAGES),
};

const EXTRA_DIRS = ['/usr/local/sbin', '/usr/sbin', '/sbin'];

/** Absolute path of an executable named `name` on PATH, /usr/sbin or /sbin; undefined if none. */
export function findBinary(name: string): string | undefined {
  const dirs = [...(process.env.PATH ?? '').split(path.delimiter).filter(Boolean), ...EXTRA_DIRS];
  for (const dir of dirs) {
    const candidate = path.join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // keep looking
    }
  }
  return undefined;
}

/** Whether `perl -M<name>` loads (false when perl itself is missing). */
export function hasPerlModule(name: string): boolean {
  try {
    execFileSync('perl', [`-M${name}`, '-e', '1'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/**
 * Whether Debian's Python imports `name` (false when it is missing): /usr/bin/python3, the interpreter of Debian's
 * certbot, not the first python3 on PATH (a pyenv or venv one does not see /usr/lib/python3/dist-packages).
 */
export function hasPythonModule(name: string): boolean {
  try {
    execFileSync('/usr/bin/python3', ['-c', `import ${name}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

export function debianPackageFor(binary: string): string {
  return Object.hasOwn(DEBIAN_PACKAGES, binary) ? DEBIAN_PACKAGES[binary]! : binary;
}

/** Like findBinary, but throws an Error that names the Debian package to install. */
export function requireBinary(name: string): string {
  const found = findBinary(name);
  if (found) return found;
  const pkg = debianPackageFor(name);
  throw new Error(`${name} not found (install the Debian package ${pkg}: apt-get install ${pkg})`);
}

export function missingBinaries(names: readonly string[]): string[] {
  return names.filter((n) => findBinary(n) === undefined);
}

/** What of `needs` is absent: the binaries and modules, and the Debian packages that bring them. */
export interface Missing {
  names: string[];
  packages: string[];
}

export function missingPackages(needs: Needs): Missing {
  const binaries = missingBinaries(needs.binaries ?? []);
  const modules = (needs.perlModules ?? []).filter((m) => !hasPerlModule(m));
  const python = (needs.pythonModules ?? []).filter((m) => !hasPythonModule(m));
  const packages = [
    ...binaries.map(debianPackageFor),
    ...modules.map((m) => (Object.hasOwn(PERL_MODULE_PACKAGES, m) ? PERL_MODULE_PACKAGES[m]! : m)),
    ...python.map((m) => (Object.hasOwn(PYTHON_MODULE_PACKAGES, m) ? PYTHON_MODULE_PACKAGES[m]! : m)),
  ];
  return { names: [...binaries, ...modules, ...python], packages: [...new Set(packages)].sort() };
}

/** The one command line that installs `packages` (run it as root). */
export function aptInstallCommand(packages: readonly string[]): string {
  return `apt-get install -y --no-install-recommends ${packages.join(' ')}`;
}

export function isRoot(): boolean {
  return process.getuid?.() === 0;
}

// ---- tests: skip (or fail under CI) when something is missing -----------------------------

/** A mocha context (`this` in before/it); `test` is the hook or test that is running. */
export interface SkipContext {
  skip(): void;
  test?: { type?: string; fullTitle(): string; parent?: { fullTitle(): string; total(): number } };
}

/** A suite (or single test) skipped because something was missing. */
export interface MissingSkip {
  title: string;
  tests: number;
  names: string[];
  packages: string[];
}

const skips = new Map<string, MissingSkip>();

/** Every suite skipped so far by requireBinariesOrSkip and its Perl and Python forms. */
export function skippedForMissing(): MissingSkip[] {
  return [...skips.values()];
}

/**
 * For tests: when a binary is missing, fail under CI (CI=true) and skip otherwise, with a
 * message naming the packages; the skip is remembered for the end-of-run summary.
 */
export function requireBinariesOrSkip(ctx: SkipContext, names: readonly string[]): void {
  requireOrSkip(ctx, { binaries: names });
}

/** requireBinariesOrSkip for Perl modules (`IO::Socket::SSL`). */
export function requirePerlModulesOrSkip(ctx: SkipContext, modules: readonly string[]): void {
  requireOrSkip(ctx, { perlModules: modules });
}

/** requireBinariesOrSkip for Python modules (`certbot_dns_rfc2136`). */
export function requirePythonModulesOrSkip(ctx: SkipContext, modules: readonly string[]): void {
  requireOrSkip(ctx, { pythonModules: modules });
}

function requireOrSkip(ctx: SkipContext, needs: Needs): void {
  const unknown = [
    ...(needs.binaries ?? []).filter((b) => !Object.hasOwn(DEBIAN_PACKAGES, b)),
    ...(needs.perlModules ?? []).filter((m) => !Object.hasOwn(PERL_MODULE_PACKAGES, m)),
    ...(needs.pythonModules ?? []).filter((m) => !Object.hasOwn(PYTHON_MODULE_PACKAGES, m)),
  ];
  if (unknown.length > 0) {
    throw new Error(`${unknown.join(', ')}: add to the tables in src/lab/binaries.ts, which npm test installs from`);
  }
  const missing = missingPackages(needs);
  if (missing.names.length === 0) return;
  const message = `missing ${missing.names.join(', ')} (apt-get install ${missing.packages.join(' ')})`;
  if (process.env.CI === 'true') throw new Error(`${message}; required when CI=true`);
  console.warn(`      skipped: ${message}`);
  recordSkip(ctx, missing);
  ctx.skip();
}

function recordSkip(ctx: SkipContext, missing: Missing): void {
  const runnable = ctx.test;
  // In a hook the whole suite is skipped; in a test, that test.
  const suite = runnable?.type === 'hook' ? runnable.parent : undefined;
  const title = suite?.fullTitle() ?? runnable?.fullTitle() ?? '(outside mocha)';
  const tests = suite ? suite.total() : 1;
  // Test files may run in other processes (mocha --parallel): the runner reads this file for its summary.
  const log = process.env.DDNS_BRIDGE_SKIP_LOG;
  if (log)
    appendFileSync(log, JSON.stringify({ title, tests, names: missing.names, packages: missing.packages }) + '\n');
  const seen = skips.get(title);
  if (!seen) {
    skips.set(title, { title, tests, names: missing.names, packages: missing.packages });
    return;
  }
  if (!suite) seen.tests += tests;
  seen.names = [...new Set([...seen.names, ...missing.names])];
  seen.packages = [...new Set([...seen.packages, ...missing.packages])].sort();
}

// ---- installing ----------------------------------------------------------------------------

/**
 * Make sure everything in `needs` is present. As root, missing packages are installed
 * (`apt-get update` once, then `apt-get install`) without letting their init scripts start
 * system daemons; a named/knotd/ddclient daemon that starts anyway is stopped. Not as root,
 * this throws an Error stating the exact command to run. Returns the packages installed.
 */
export async function ensureInstalled(needs: Needs, log: (line: string) => void): Promise<string[]> {
  const missing = missingPackages(needs);
  if (missing.names.length === 0) return [];
  const command = aptInstallCommand(missing.packages);
  const names = missing.names.join(', ');
  if (!isRoot()) throw new Error(`missing ${names}; install with: sudo ${command}`);
  log(`installing ${missing.packages.join(' ')} (missing ${names})`);
  await withoutServiceStarts(log, async () => {
    const updated = await runLogged('apt-get', ['update', '-q'], log);
    if (updated !== 0) log(`apt-get update failed with exit status ${updated}; trying the install anyway`);
    const code = await runLogged(
      'apt-get',
      ['install', '-y', '-q', '--no-install-recommends', ...missing.packages],
      log,
    );
    if (code !== 0) throw new Error(`${command} failed with exit status ${code}`);
  });
  await stopSystemDaemons(missing.packages, log);
  const still = missingPackages(needs);
  if (still.names.length > 0) throw new Error(`still missing after ${command}: ${still.names.join(', ')}`);
  return missing.packages;
}

const POLICY_RC_D = '/usr/sbin/policy-rc.d';

/**
 * Run `fn` with Debian's policy-rc.d hook refusing every service start, so installing bind9
 * or knot does not leave a system daemon on port 53. A policy the machine already has is
 * left as it is; ours is removed afterwards.
 */
async function withoutServiceStarts(log: (line: string) => void, fn: () => Promise<void>): Promise<void> {
  if (existsSync(POLICY_RC_D)) {
    log(`${POLICY_RC_D} exists: using the machine's own policy for service starts`);
    return fn();
  }
  const script =
    '#!/bin/sh\n# ddns-bridge (src/lab/binaries.ts) while installing packages; safe to delete.\nexit 101\n';
  writeFileSync(POLICY_RC_D, script, { mode: 0o755 });
  try {
    await fn();
  } finally {
    rmSync(POLICY_RC_D, { force: true });
  }
}

/** The system daemons of the packages installed here (named, knotd and pdns_server would hold port 53). */
const SYSTEM_DAEMONS = [
  { debianPackage: 'bind9', service: 'named', process: 'named', pidFile: '/run/named/named.pid' },
  { debianPackage: 'knot', service: 'knot', process: 'knotd', pidFile: '/run/knot/knot.pid' },
  { debianPackage: 'pdns-server', service: 'pdns', process: 'pdns_server', pidFile: '/run/pdns/pdns.pid' },
  { debianPackage: 'ddclient', service: 'ddclient', process: 'ddclient', pidFile: '/run/ddclient.pid' },
] as const;

/**
 * Stop the system daemon of each of `packages` that runs (as .ci/run does for all of them):
 * systemd's unit if active, else only the process its pid file names and only while that pid
 * still is that daemon (not via Debian's init scripts: named's kills every /usr/sbin/named).
 */
async function stopSystemDaemons(packages: readonly string[], log: (line: string) => void): Promise<void> {
  for (const d of SYSTEM_DAEMONS) {
    if (!packages.includes(d.debianPackage)) continue;
    if (
      existsSync('/run/systemd/system') &&
      (await exitStatus('systemctl', ['is-active', '--quiet', d.service])) === 0
    ) {
      log(`stopping the system ${d.service} service`);
      await exitStatus('systemctl', ['stop', d.service]);
    }
    const pid = Number(readOrEmpty(d.pidFile).trim());
    if (!Number.isInteger(pid) || pid <= 0) continue;
    // comm may carry a suffix: ddclient renames itself "ddclient - sleeping…".
    if (!readOrEmpty(`/proc/${pid}/comm`).startsWith(d.process)) continue;
    log(`stopping the system ${d.process} (pid ${pid})`);
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      // already gone
    }
  }
}

function readOrEmpty(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

function exitStatus(cmd: string, args: string[]): Promise<number> {
  return new Promise((resolve) => {
    execFile(cmd, args, (err) => resolve(err ? (typeof err.code === 'number' ? err.code : 1) : 0));
  });
}

function runLogged(cmd: string, args: string[], log: (line: string) => void): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, {
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const forward = (chunk: Buffer): void => {
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim()) log(line);
    };
    child.stdout.on('data', forward);
    child.stderr.on('data', forward);
    child.on('error', (err) => {
      log(`${cmd}: ${err.message}`);
      resolve(127);
    });
    child.on('close', (code) => resolve(code ?? 1));
  });
}
