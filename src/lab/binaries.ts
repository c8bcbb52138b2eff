/** Finding the real server and client binaries, and installing them when allowed. */
import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import path from 'node:path';

/** Debian 12 package that ships each binary the project uses. */
export const DEBIAN_PACKAGES: Readonly<Record<string, string>> = {
  'redis-server': 'redis-server',
  'redis-cli': 'redis-tools',
  knotd: 'knot',
  keymgr: 'knot',
  knotc: 'knot',
  kdig: 'knot-dnsutils',
  knsupdate: 'knot-dnsutils',
  named: 'bind9',
  'tsig-keygen': 'bind9',
  'named-checkconf': 'bind9-utils',
  dig: 'bind9-dnsutils',
  nsupdate: 'bind9-dnsutils',
  ddclient: 'ddclient',
  inadyn: 'inadyn',
  curl: 'curl',
  wget: 'wget',
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

export function debianPackageFor(binary: string): string {
  return DEBIAN_PACKAGES[binary] ?? binary;
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

/**
 * For tests: when a binary is missing, fail under CI (CI=true) and skip otherwise, with a
 * message naming the packages. `ctx` is a mocha context (`this` in before/it).
 */
export function requireBinariesOrSkip(ctx: { skip(): void }, names: readonly string[]): void {
  const missing = missingBinaries(names);
  if (missing.length === 0) return;
  const pkgs = [...new Set(missing.map(debianPackageFor))].join(' ');
  const message = `missing ${missing.join(', ')} (apt-get install ${pkgs})`;
  if (process.env.CI === 'true') throw new Error(`${message}; required when CI=true`);
  console.warn(`      skipped: ${message}`);
  ctx.skip();
}

/**
 * Make sure every binary is present. Missing ones are installed with apt-get when running as
 * root (`apt-get update` once, only if the first install attempt fails); otherwise this throws
 * an Error stating the exact command to run.
 */
export async function ensureInstalled(
  packages: readonly { binary: string; debianPackage: string }[],
  log: (line: string) => void,
): Promise<void> {
  const missing = packages.filter((p) => findBinary(p.binary) === undefined);
  if (missing.length === 0) return;
  const pkgs = [...new Set(missing.map((p) => p.debianPackage))];
  const command = `apt-get install -y --no-install-recommends ${pkgs.join(' ')}`;
  const names = missing.map((p) => p.binary).join(', ');
  if (process.getuid?.() !== 0) {
    throw new Error(`missing ${names}; install with: sudo ${command}`);
  }
  log(`installing ${pkgs.join(' ')} (missing ${names})`);
  const install = ['install', '-y', '--no-install-recommends', ...pkgs];
  if ((await runLogged('apt-get', install, log)) !== 0) {
    log('apt-get install failed; running apt-get update and trying again');
    await runLogged('apt-get', ['update'], log);
    const code = await runLogged('apt-get', install, log);
    if (code !== 0) throw new Error(`${command} failed with exit status ${code}`);
  }
  const still = missing.filter((p) => findBinary(p.binary) === undefined);
  if (still.length > 0) {
    throw new Error(`still missing after ${command}: ${still.map((p) => p.binary).join(', ')}`);
  }
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
