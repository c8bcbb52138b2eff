/** `token add|list|remove`: scoped update tokens (docs/security.md, "Update tokens"). */
import { newToken, newTokenId, tokenHash } from '../../auth/index.js';
import { ConflictError, InvalidInputError } from '../../core/errors.js';
import {
  noteProblem,
  parseDuration,
  parseSourceList,
  TOKEN_ID_PATTERN,
  type TokenRecord,
} from '../../core/update-tokens.js';
import type { CommandContext } from '../context.js';
import { hostName, withStore, type Out } from './admin.js';

export interface TokenAddOptions {
  expires?: string;
  from?: string;
  note?: string;
}

/** Make a token for a registered host; the token itself is printed once, alone on the last line. */
export async function tokenAdd(ctx: CommandContext, name: string, opts: TokenAddOptions, out: Out): Promise<void> {
  const fqdn = hostName(name);
  const expiresInMs = opts.expires === undefined ? undefined : parseDuration(opts.expires);
  if (opts.expires !== undefined && expiresInMs === undefined) {
    throw new InvalidInputError(
      `--expires: expected a duration such as 90m, 12h, 30d or 8w, not ${JSON.stringify(opts.expires)}`,
    );
  }
  const sources = opts.from === undefined ? { from: [] } : parseSourceList(opts.from);
  if ('problem' in sources) throw new InvalidInputError(`--from: ${sources.problem}`);
  const note = opts.note ?? '';
  const problem = noteProblem(note);
  if (problem !== undefined) throw new InvalidInputError(`--note: ${problem}`);

  const token = newToken();
  const record = await withStore(ctx, async (s) => {
    // A random 48-bit id is taken only by bad luck: try another.
    for (let attempt = 0; ; attempt++) {
      try {
        return await s.tokens.add({
          id: newTokenId(),
          hash: tokenHash(token),
          fqdn,
          expiresInMs,
          from: sources.from,
          note,
        });
      } catch (err) {
        if (!(err instanceof ConflictError) || attempt >= 2) throw err;
      }
    }
  });
  out(`token ${record.id} for ${record.fqdn} (account ${record.account}), ${describe(record)}`);
  out('It is shown only now: use it as the password, with the host name (or the account) as the user.');
  out(token);
}

export async function tokenList(ctx: CommandContext, name: string | undefined, json: boolean, out: Out): Promise<void> {
  const fqdn = name === undefined ? undefined : hostName(name);
  const tokens = await withStore(ctx, (s) => s.tokens.list(fqdn));
  if (json) {
    out(JSON.stringify(tokens.map(tokenView)));
    return;
  }
  for (const t of tokens) {
    const v = tokenView(t);
    out(
      [
        v.id,
        v.host,
        `created ${v.created}`,
        `expires ${v.expires ?? 'never'}`,
        `used ${v.lastUsed ?? 'never'}`,
        `from ${v.from.join(',') || 'anywhere'}`,
        v.note,
      ].join('\t'),
    );
  }
}

export async function tokenRemove(ctx: CommandContext, id: string, out: Out): Promise<void> {
  const wanted = id.trim().toLowerCase();
  if (!TOKEN_ID_PATTERN.test(wanted))
    throw new InvalidInputError(`not a token id (12 hex digits, see token list): ${JSON.stringify(id)}`);
  const removed = await withStore(ctx, (s) => s.tokens.remove(wanted));
  out(`token ${removed.id} of ${removed.fqdn} removed`);
}

function tokenView(t: TokenRecord) {
  const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
  return {
    id: t.id,
    host: t.fqdn,
    account: t.account,
    created: iso(t.createdAt)!,
    expires: iso(t.expiresAt),
    lastUsed: iso(t.lastUsedAt),
    from: t.from,
    note: t.note,
  };
}

function describe(t: TokenRecord): string {
  const expires = t.expiresAt === null ? 'never expires' : `expires ${new Date(t.expiresAt).toISOString()}`;
  return `${expires}, ${t.from.length === 0 ? 'usable from anywhere' : `usable from ${t.from.join(',')}`}`;
}
