/**
 * `ddns-bridge export [FILE|-]` and `ddns-bridge import-all FILE|- [--merge]` (docs/operators.md,
 * "Backups"): the use cases of app/backup.ts on the store's backup adapter.
 */
import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open, rename, stat, unlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import {
  exportBackup,
  importBackup,
  type BackupCounts,
  type ImportReport,
  type RecordChecks,
} from '../../app/backup.js';
import type { BackupTarget } from '../../app/ports.js';
import { isPasswordHash, tokenHash, tsigKeyHash } from '../../auth/index.js';
import { InvalidInputError } from '../../core/errors.js';
import { staticNamesByZone } from '../../core/static-names.js';
import { openStore, RedisBackupStore, type Store } from '../../store/index.js';
import type { CommandContext } from '../context.js';

type Out = (line: string) => void;

/** Bytes gathered before one write (a few hundred lines). */
const CHUNK = 64 * 1024;

/** tokenHash's form: base64url of an HMAC-SHA256, whatever the token. */
const TOKEN_HASH = new RegExp(`^[A-Za-z0-9_-]{${tokenHash('').length}}$`);

const CHECKS: RecordChecks = {
  isPasswordHash,
  isTokenHash: (hash) => TOKEN_HASH.test(hash),
  tsigKeyHash,
};

function backupStore(store: Store): RedisBackupStore {
  return new RedisBackupStore(store.redis, store.keys, store.accounts, store.hosts, store.agents);
}

/**
 * Write the export to `file` (mode 0600: it holds password hashes; a temporary file renamed into
 * place once complete and synced, so a failed run never leaves a partial backup under that name)
 * or, for `-`, to `stdout`. The summary goes to `out` (to `err` for `-`: stdout is the export).
 */
export async function exportCommand(
  ctx: CommandContext,
  file: string,
  out: Out,
  err: Out,
  stdout: Writable = process.stdout,
): Promise<void> {
  const store = openStore(ctx.config, ctx.logger);
  try {
    const source = backupStore(store);
    if (file === '-') {
      const counts = await writeLines(new StreamSink(stdout), (write) => exportBackup(source, write));
      err(`exported ${describe(counts)}`);
      return;
    }
    const temp = path.join(path.dirname(file), `.${path.basename(file)}.${randomBytes(4).toString('hex')}.tmp`);
    let handle: FileHandle;
    try {
      handle = await open(temp, 'wx', 0o600);
    } catch (e) {
      throw new InvalidInputError(`cannot write ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    }
    let counts: BackupCounts;
    try {
      try {
        counts = await writeLines(new FileSink(handle), (write) => exportBackup(source, write));
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(temp, file);
    } catch (e) {
      await unlink(temp).catch(() => undefined);
      throw e;
    }
    out(`exported ${describe(counts)} to ${file}`);
  } finally {
    await store.close();
  }
}

/**
 * Restore an export from `file` (`-`: stdin, read whole first: the file is read twice, to
 * validate, then to write). Conflicts go to `err` by line number; false when there was one.
 */
export async function importAllCommand(
  ctx: CommandContext,
  file: string,
  merge: boolean,
  out: Out,
  err: Out,
  stdin: Readable = process.stdin,
): Promise<boolean> {
  let lines: () => AsyncIterable<string>;
  if (file === '-') {
    const text = await readAll(stdin);
    const all = text.split(/\r?\n/);
    if (all.at(-1) === '') all.pop();
    lines = () => iterate(all);
  } else {
    try {
      if (!(await stat(file)).isFile()) throw new InvalidInputError(`cannot read ${file}: not a file`);
    } catch (e) {
      if (e instanceof InvalidInputError) throw e;
      throw new InvalidInputError(`cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    }
    lines = () => readLines(file);
  }
  const zones = ctx.config.zones.map((z) => z.name);
  // The store is opened once the file has proved valid.
  const withTarget = async (use: (target: BackupTarget) => Promise<ImportReport>) => {
    const store = openStore(ctx.config, ctx.logger);
    try {
      return await use(backupStore(store));
    } finally {
      await store.close();
    }
  };
  const staticNames = staticNamesByZone(ctx.config.zones);
  const report = await importBackup(withTarget, lines, { merge, zones, staticNames, checks: CHECKS });
  for (const c of report.conflicts) err(`line ${c.line}: ${c.message}`);
  out(
    `restored ${describe(report.restored)}; unchanged ${describe(report.unchanged)}; ` +
      `${report.conflicts.length} conflict${report.conflicts.length === 1 ? '' : 's'}`,
  );
  return report.conflicts.length === 0;
}

function describe(c: BackupCounts): string {
  const n = (count: number, what: string) => `${count} ${what}${count === 1 ? '' : 's'}`;
  return [n(c.accounts, 'account'), n(c.hosts, 'host'), n(c.tokens, 'token'), n(c.agentBlocks, 'agent block')].join(
    ', ',
  );
}

interface Sink {
  write(chunk: string): Promise<void>;
}

class FileSink implements Sink {
  constructor(private readonly handle: FileHandle) {}

  async write(chunk: string): Promise<void> {
    await this.handle.write(chunk);
  }
}

class StreamSink implements Sink {
  constructor(private readonly stream: Writable) {}

  write(chunk: string): Promise<void> {
    return new Promise((resolve, reject) => {
      const onError = (e: Error) => reject(e);
      this.stream.once('error', onError);
      const done = () => {
        this.stream.off('error', onError);
        resolve();
      };
      if (this.stream.write(chunk)) done();
      else this.stream.once('drain', done);
    });
  }
}

/** Run `produce` with a line writer that gathers lines into chunks for `sink`. */
async function writeLines<T>(sink: Sink, produce: (write: (line: string) => Promise<void>) => Promise<T>): Promise<T> {
  let buffer = '';
  const result = await produce(async (line) => {
    buffer += line + '\n';
    if (buffer.length >= CHUNK) {
      const chunk = buffer;
      buffer = '';
      await sink.write(chunk);
    }
  });
  if (buffer !== '') await sink.write(buffer);
  return result;
}

async function readAll(stream: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk)));
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * The lines of `file`, read from the first call of next() on: readline drops the lines it reads
 * before its iterator is asked for them.
 */
async function* readLines(file: string): AsyncGenerator<string> {
  yield* createInterface({ input: createReadStream(file), crlfDelay: Infinity });
}

async function* iterate(lines: readonly string[]): AsyncGenerator<string> {
  yield* lines;
}
