/** `token add|list|remove`: scoped update tokens (docs/security.md, "Update tokens"). */
import { keySnippets, tokenView, type TokenOptions } from '../../app/admin.js';
import { InvalidInputError } from '../../core/errors.js';
import type { TokenRecord } from '../../core/update-tokens.js';
import type { CommandContext } from '../context.js';
import { withAdmin, type Out } from './admin.js';

export type TokenAddOptions = TokenOptions;

/** Make a token for a registered host; the token itself is printed once, alone on the last line. */
export async function tokenAdd(ctx: CommandContext, name: string, opts: TokenAddOptions, out: Out): Promise<void> {
  const made = await withAdmin(ctx, (admin) => admin.addToken(name, opts)).catch((err: unknown) => {
    // The service names the value; here it was a flag.
    if (err instanceof InvalidInputError && err.field !== undefined)
      throw new InvalidInputError(err.detail, `--${err.field}`);
    throw err;
  });
  const { record } = made;
  if (made.key !== undefined) {
    // docs/clients.md, "RFC 2136 clients": the same key in each client's form.
    const texts = keySnippets(made.key);
    out(`TSIG key ${record.id} for ${record.fqdn} (account ${record.account}), ${describe(record)}`);
    out(`It is shown only now. Key name ${made.key.name}, algorithm ${made.key.algorithm}, secret ${made.key.secret}`);
    out('');
    out('# nsupdate -y, and the one line of a knsupdate -k FILE (certbot, lego: name, algorithm, secret)');
    out(texts.nsupdate);
    out('');
    out('# BIND key file (nsupdate -k FILE)');
    out(texts.bind);
    out('');
    out('# Knot key section (knot.conf)');
    out(texts.knot);
    return;
  }
  out(`token ${record.id} for ${record.fqdn} (account ${record.account}), ${describe(record)}`);
  out('It is shown only now: use it as the password, with the host name (or the account) as the user.');
  out(made.token);
}

export async function tokenList(ctx: CommandContext, name: string | undefined, json: boolean, out: Out): Promise<void> {
  const tokens = await withAdmin(ctx, (admin) => admin.listTokens(name));
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
        v.acmeOnly ? 'acme-only' : 'any change',
        v.tsig === null ? 'http token' : `tsig ${v.tsig}`,
        v.note,
      ].join('\t'),
    );
  }
}

export async function tokenRemove(ctx: CommandContext, id: string, out: Out): Promise<void> {
  const removed = await withAdmin(ctx, (admin) => admin.removeToken(id));
  out(`token ${removed.id} of ${removed.fqdn} removed`);
}

function describe(t: TokenRecord): string {
  const expires = t.expiresAt === null ? 'never expires' : `expires ${new Date(t.expiresAt).toISOString()}`;
  const from = t.from.length === 0 ? 'usable from anywhere' : `usable from ${t.from.join(',')}`;
  return `${expires}, ${from}${t.acmeOnly ? ', ACME TXT values only' : ''}`;
}
