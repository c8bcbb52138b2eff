/**
 * `ddns-bridge host import FILE|-`: bulk registration, one `FQDN ACCOUNT [TYPE]` per line.
 * Every line is validated as `host add` would (name, zone, static names, type, account); the valid ones
 * go to Redis in pipelined batches (BulkHostImporter). An existing host is never overwritten:
 * with the line's owner and type it counts as unchanged (so an import can be run again after
 * fixing its rejected lines), else the line is rejected. Rejected lines are reported by
 * number, sorted, after the import.
 */
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { DEFAULT_HOST_TYPE, type HostType } from '../../core/types.js';
import { checkRegistration } from '../../core/registration.js';
import { NO_STATIC_NAMES, staticNamesByZone, type StaticNamesByZone } from '../../core/static-names.js';
import {
  BulkHostImporter,
  openStore,
  shadowingMessage,
  type BulkImportOptions,
  type ImportOutcome,
} from '../../store/index.js';
import type { CommandContext } from '../context.js';

export interface ImportSummary {
  imported: number;
  /** Lines naming a host registered already, with the same owner and type. */
  unchanged: number;
  rejected: number;
}

export interface Rejection {
  line: number;
  reason: string;
}

/** Where the lines go: a store importer (with its account cache), the configured zones and their static names. */
export interface ImportTarget {
  importer: Pick<BulkHostImporter, 'accountExists' | 'push' | 'finish'>;
  zones: readonly string[];
  /** Absent: none (the benchmark's zone has none). */
  staticNames?: StaticNamesByZone;
}

/**
 * Validate and import every line; `onReject` gets each rejected line (in completion order).
 * The importer must have been created with `outcomeHandler(summary, onReject)` as its callback.
 */
export async function importLines(
  lines: AsyncIterable<string> | Iterable<string>,
  target: ImportTarget,
  onReject: (r: Rejection) => void,
  summary: ImportSummary,
): Promise<ImportSummary> {
  let lineNo = 0;
  for await (const raw of lines) {
    lineNo++;
    const parsed = parseLine(raw, target.zones, target.staticNames ?? NO_STATIC_NAMES);
    if (parsed === undefined) continue;
    if (typeof parsed === 'string') {
      summary.rejected++;
      onReject({ line: lineNo, reason: parsed });
      continue;
    }
    if (!(await target.importer.accountExists(parsed.account))) {
      summary.rejected++;
      onReject({ line: lineNo, reason: `no such account: ${parsed.account}` });
      continue;
    }
    await target.importer.push(parsed, lineNo);
  }
  await target.importer.finish();
  return summary;
}

/** The importer callback that counts outcomes into `summary` and reports rejections. */
export function outcomeHandler(summary: ImportSummary, onReject: (r: Rejection) => void) {
  return (entry: { fqdn: string; account: string }, outcome: ImportOutcome, line: number): void => {
    if (outcome.kind === 'ok') {
      summary.imported++;
      return;
    }
    if (outcome.kind === 'same') {
      summary.unchanged++;
      return;
    }
    summary.rejected++;
    onReject({ line, reason: rejectionReason(entry, outcome) });
  };
}

function rejectionReason(entry: { fqdn: string; account: string }, outcome: ImportOutcome): string {
  switch (outcome.kind) {
    case 'exists':
      return `host ${entry.fqdn} already exists (owner ${outcome.owner || '?'}, type ${outcome.type || '?'}); left unchanged`;
    case 'shadowing':
      return shadowingMessage(entry.fqdn, outcome.relation, outcome.other, outcome.owner);
    default:
      return `no such account: ${entry.account}`;
  }
}

/** undefined = blank or comment; a string = why the line is rejected. */
export function parseLine(
  raw: string,
  zones: readonly string[],
  staticNames: StaticNamesByZone,
): { fqdn: string; account: string; type: HostType; between: string[] } | string | undefined {
  const hash = raw.search(/(^|\s)#/);
  const text = (hash >= 0 ? raw.slice(0, hash) : raw).trim();
  if (text === '') return undefined;
  const fields = text.split(/\s+/);
  if (fields.length < 2 || fields.length > 3)
    return `expected "FQDN ACCOUNT [TYPE]", got ${fields.length} field${fields.length === 1 ? '' : 's'}`;
  const [name, account, type = DEFAULT_HOST_TYPE] = fields as [string, string, string?];
  const checked = checkRegistration(name, type, zones, staticNames);
  return 'problem' in checked ? checked.problem : { ...checked, account };
}

/** The command: read FILE (or stdin for `-`), import, print the summary; false when a line was rejected. */
export async function hostImport(
  ctx: CommandContext,
  file: string,
  out: (line: string) => void,
  err: (line: string) => void,
  stdin: Readable = process.stdin,
  opts: BulkImportOptions = {},
): Promise<boolean> {
  const input = file === '-' ? stdin : createReadStream(file);
  const opened = new Promise<void>((resolve, reject) => {
    if (file === '-') return resolve();
    input.once('open', () => resolve());
    input.once('error', reject);
  });
  try {
    await opened;
  } catch (e) {
    err(`ddns-bridge: cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    return false;
  }
  const store = openStore(ctx.config, ctx.logger);
  const rejections: Rejection[] = [];
  const summary: ImportSummary = { imported: 0, unchanged: 0, rejected: 0 };
  const onReject = (r: Rejection) => rejections.push(r);
  let completed = false;
  try {
    const zones = ctx.config.zones.map((z) => z.name);
    await store.hosts.indexNesting(zones);
    const importer = new BulkHostImporter(store.redis, store.keys, outcomeHandler(summary, onReject), opts);
    const lines = createInterface({ input, crlfDelay: Infinity });
    const staticNames = staticNamesByZone(ctx.config.zones);
    await importLines(lines, { importer, zones, staticNames }, onReject, summary);
    completed = true;
  } finally {
    await store.close();
    if (!completed) input.destroy();
    // Also after a failure (Redis lost): what was written stays written, so say how much.
    rejections.sort((a, b) => a.line - b.line);
    for (const r of rejections) err(`line ${r.line}: ${r.reason}`);
    out(
      `imported ${summary.imported}, unchanged ${summary.unchanged}, rejected ${summary.rejected}${completed ? '' : ' (stopped early)'}`,
    );
  }
  return summary.rejected === 0;
}
