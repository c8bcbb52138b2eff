/**
 * A private PowerDNS Authoritative 4.7 primary (gsqlite3 backend) for one dynamic zone, set up
 * from the operator examples in config/pdns/: pdns.conf.example as the config and the pdnsutil
 * commands of pdnsutil.example for the zone, the key and the zone metadata.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { requireBinary } from './binaries.js';
import { writePrivateFile } from './files.js';
import { configPath, fillPlaceholders, renderTemplate } from './paths.js';
import type { TsigKey } from './tsig.js';

/** The SQLite schema Debian's pdns-backend-sqlite3 ships (outside /usr/share/doc, which slim images drop). */
const SCHEMA_FILES = [
  '/usr/share/pdns-backend-sqlite3/schema/schema.sqlite3.sql',
  '/usr/share/doc/pdns-backend-sqlite3/schema.sqlite3.sql',
];

/** Binaries a pdns lab server needs: the server, pdnsutil for the zone and metadata, sqlite3 for the schema. */
export const PDNS_BINARIES = ['pdns_server', 'pdnsutil', 'sqlite3'] as const;

export interface PdnsSetup {
  zone: string;
  key: TsigKey;
  /** Zone file to load (already written). */
  zoneFile: string;
  updatableNames?: readonly string[];
  ungrantedKey?: TsigKey;
}

/**
 * Write pdns.conf (from the example, on `port`) into `dir`; on the first call also create the
 * database and run the example's pdnsutil commands. Returns the pdns_server arguments.
 */
export async function preparePdns(dir: string, port: number, setup: PdnsSetup): Promise<string[]> {
  const conf = await renderTemplate('pdns/pdns.conf.example', { DIR: dir, PORT: String(port) });
  const policy = setup.updatableNames ? path.join(dir, 'update-policy.lua') : undefined;
  if (policy) await writePrivateFile(policy, policyScript(setup.key.name, setup.zone, setup.updatableNames!));
  const extra = policy ? `lua-dnsupdate-policy-script=${policy}\n` : '';
  await writePrivateFile(path.join(dir, 'pdns.conf'), `${conf.trimEnd()}\n${extra}`);
  const db = path.join(dir, 'pdns.sqlite3');
  if (!existsSync(db)) await createDatabase(dir, db, setup);
  return [`--config-dir=${dir}`];
}

async function createDatabase(dir: string, db: string, setup: PdnsSetup): Promise<void> {
  const schema = SCHEMA_FILES.find((f) => existsSync(f));
  if (!schema) throw new Error(`lab: no PowerDNS SQLite schema (${SCHEMA_FILES[0]}): install pdns-backend-sqlite3`);
  // Keys go in over stdin, never argv (what `pdnsutil import-tsig-key` stores).
  const keys = [setup.key, ...(setup.ungrantedKey ? [setup.ungrantedKey] : [])]
    .map(
      (k) =>
        `INSERT INTO tsigkeys (name, algorithm, secret) VALUES (${sql(k.name)}, ${sql(k.algorithm)}, ${sql(k.secret)});`,
    )
    .join('\n');
  await run(requireBinary('sqlite3'), [db], dir, `${await readFile(schema, 'utf8')}\n${keys}\n`);
  const template = await readFile(configPath('pdns', 'pdnsutil.example'), 'utf8');
  const pdnsutil = requireBinary('pdnsutil');
  const vars = {
    ZONE: setup.zone,
    ZONE_FILE: setup.zoneFile,
    KEY_NAME: setup.key.name,
    KEY_ALGORITHM: setup.key.algorithm,
  };
  for (const line of pdnsutilCommands(template)) {
    const args = fillPlaceholders(line, vars).split(/\s+/).slice(1);
    if (args[0] === 'generate-tsig-key') continue; // the test's own key is inserted above
    await run(pdnsutil, [`--config-dir=${dir}`, ...args], dir);
  }
}

/** The command lines of pdnsutil.example (comments and blank lines dropped). */
export function pdnsutilCommands(text: string): string[] {
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.startsWith('pdnsutil '));
}

/**
 * A lua-dnsupdate-policy-script that lets `keyName` change A, AAAA, MX and TXT at `names` (labels
 * under `zone`) and below. PowerDNS skips a record the script denies and still answers NOERROR.
 */
function policyScript(keyName: string, zone: string, names: readonly string[]): string {
  const dns = names.map((n) => `newDN(${lua(`${n}.${zone}`)})`).join(', ');
  return `-- ddns-bridge lab: per-name update rule (docs/operators.md, "PowerDNS")
local names = { ${dns} }
local types = { [1] = true, [28] = true, [15] = true, [16] = true } -- A, AAAA, MX, TXT
function updatepolicy(request)
  if not request:getTsigName():equal(${lua(keyName)}) then return false end
  if not types[request:getQType()] then return false end
  for _, n in ipairs(names) do
    if request:getQName():isPartOf(n) then return true end
  end
  return false
end
`;
}

const sql = (s: string): string => `'${s.replace(/'/g, "''")}'`;
const lua = (s: string): string => JSON.stringify(s);

function run(binary: string, args: string[], cwd: string, stdin?: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = execFile(binary, args, { cwd, timeout: 10_000 }, (err, stdout, stderr) => {
      if (err)
        reject(
          new Error(`lab: ${path.basename(binary)} ${args[1] ?? args[0]} failed: ${stderr || stdout || err.message}`),
        );
      else resolve();
    });
    if (stdin !== undefined) child.stdin?.end(stdin);
  });
}
