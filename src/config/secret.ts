/**
 * Where a TSIG secret comes from: a file (bare base64, a BIND `key` statement as printed by
 * `tsig-keygen`, or a Knot `keymgr -t` snippet), an environment variable, or inline.
 * Errors name the setting and the file or variable, never the secret itself.
 */
import path from 'node:path';
import { ConfigError } from '../core/errors.js';

export const MIN_SECRET_BYTES = 16;

export type SecretSource =
  | { kind: 'file'; key: string; path: string }
  | { kind: 'env'; key: string; variable: string }
  | { kind: 'inline'; key: string; value: string };

/** A secret's text as found in a file, plus the key name/algorithm the file declares (if any). */
export interface SecretFileContent {
  secret: string;
  keyName?: string;
  algorithm?: string;
}

/**
 * Expand `${VAR}` and `${VAR:-default}` in a secretFile path, so one config works under
 * systemd (`${CREDENTIALS_DIRECTORY:-/etc/ddns-bridge}/ddns-key.secret`) and outside it.
 */
export function expandPath(raw: string, env: NodeJS.ProcessEnv, key: string): string {
  return raw.replace(
    /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g,
    (_whole, name: string, fallback: string | undefined) => {
      const value = env[name];
      if (value !== undefined && value !== '') return value;
      if (fallback !== undefined) return fallback;
      throw new ConfigError(key, `environment variable ${name} (used in the path) is not set`);
    },
  );
}

export function resolveSecretPath(raw: string, baseDir: string, env: NodeJS.ProcessEnv, key: string): string {
  return path.resolve(baseDir, expandPath(raw, env, key));
}

/** Pull the secret out of a file in any of the three accepted formats. */
export function parseSecretFile(text: string): SecretFileContent | undefined {
  // BIND: key "name" { algorithm hmac-sha256; secret "base64"; };
  const bindSecret = /\bsecret\s+"([^"]*)"\s*;/.exec(text);
  if (bindSecret) {
    const name = /\bkey\s+"?([^"\s{]+)"?\s*\{/.exec(text)?.[1];
    const algorithm = /\balgorithm\s+"?([A-Za-z0-9-]+)"?\s*;/.exec(text)?.[1];
    return { secret: bindSecret[1]!, keyName: name, algorithm };
  }
  // Knot (keymgr -t): key:\n  - id: name\n    algorithm: hmac-sha256\n    secret: base64
  const knotSecret = /^\s*secret:\s*"?([A-Za-z0-9+/=]*)"?\s*$/m.exec(text);
  if (knotSecret) {
    const name = /^\s*-?\s*id:\s*"?([^"\s]+)"?\s*$/m.exec(text)?.[1];
    const algorithm = /^\s*algorithm:\s*"?([A-Za-z0-9-]+)"?\s*$/m.exec(text)?.[1];
    return { secret: knotSecret[1]!, keyName: name, algorithm };
  }
  // A bare secret: the whole file, one token (comments with # allowed above it).
  const lines = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.length > 0 && !l.startsWith('#'));
  if (lines.length === 1 && !/\s/.test(lines[0]!)) return { secret: lines[0]! };
  return undefined;
}

/** Decode strict base64 of at least MIN_SECRET_BYTES bytes; `undefined` when it is not. */
export function decodeSecret(text: string): Buffer | undefined {
  const compact = text.trim();
  if (!/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(compact)) return undefined;
  const bytes = Buffer.from(compact, 'base64');
  return bytes.length >= MIN_SECRET_BYTES ? bytes : undefined;
}

const BAD_SECRET = `is not base64 of at least ${MIN_SECRET_BYTES} bytes`;

/** What `secretEnv` must hold: a variable's name, as shells and systemd spell them. */
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * A value that looks like a base64 secret pasted where a path or a variable name belongs:
 * one run of 16+ bytes' worth of base64 characters, both letter cases. Such a value is
 * never repeated in an error (a false alarm only hides the operator's own path).
 */
function looksLikeSecret(text: string): boolean {
  const compact = text.trim();
  return /^[A-Za-z0-9+/]{22,}={0,2}$/.test(compact) && /[a-z]/.test(compact) && /[A-Z]/.test(compact);
}

export interface SecretContext {
  env: NodeJS.ProcessEnv;
  baseDir: string;
  readFile: (path: string) => string;
}

/**
 * Read and check the secret of one key. `expect` is the key's configured name and algorithm:
 * a BIND or Knot file that declares a different one is a mistake worth stopping for.
 */
export function loadSecret(
  source: SecretSource,
  ctx: SecretContext,
  expect: { name: string; algorithm: string },
): Buffer {
  switch (source.kind) {
    case 'inline': {
      const secret = decodeSecret(source.value);
      if (!secret) throw new ConfigError(source.key, `the inline secret ${BAD_SECRET}`);
      return secret;
    }
    case 'env': {
      const { value, shown } = readEnv(source, ctx);
      const secret = decodeSecret(value);
      if (!secret) throw new ConfigError(source.key, `${shown} ${BAD_SECRET}`);
      return secret;
    }
    case 'file': {
      const { text, shown } = readFileOf(source, ctx);
      const parsed = parseSecretFile(text);
      if (!parsed) {
        throw new ConfigError(
          source.key,
          `${shown} holds neither a base64 secret, a BIND key statement nor a Knot key`,
        );
      }
      if (parsed.keyName !== undefined && parsed.keyName.replace(/\.$/, '').toLowerCase() !== expect.name) {
        throw new ConfigError(
          source.key,
          `${shown} defines key "${parsed.keyName}", but the key is named "${expect.name}"`,
        );
      }
      if (parsed.algorithm !== undefined && parsed.algorithm.toLowerCase() !== expect.algorithm) {
        throw new ConfigError(
          source.key,
          `${shown} says algorithm ${parsed.algorithm}, but the key is configured as ${expect.algorithm}`,
        );
      }
      const secret = decodeSecret(parsed.secret);
      if (!secret) throw new ConfigError(source.key, `the secret in ${shown} ${BAD_SECRET}`);
      return secret;
    }
  }
}

/** The shortest gateway master secret: its keys are derived from it (`openssl rand -base64 32`). */
export const MIN_MASTER_SECRET_BYTES = 32;

/**
 * The gateway's master secret (`gateway.keyFile`): a file holding base64 of at least MIN_MASTER_SECRET_BYTES
 * bytes, alone (comments with # above it allowed). Errors name the setting and the file, never the content.
 */
export function loadMasterSecret(source: Extract<SecretSource, { kind: 'file' }>, ctx: SecretContext): Buffer {
  const { text, shown } = readFileOf(source, ctx);
  const parsed = parseSecretFile(text);
  const secret = parsed !== undefined && parsed.keyName === undefined ? decodeSecret(parsed.secret) : undefined;
  if (secret === undefined || secret.length < MIN_MASTER_SECRET_BYTES) {
    throw new ConfigError(
      source.key,
      `${shown} must hold one base64 secret of at least ${MIN_MASTER_SECRET_BYTES} bytes (openssl rand -base64 32)`,
    );
  }
  return secret;
}

/**
 * A password (Redis's, not base64) from a file — its content without the final line break —
 * or an environment variable. Errors never repeat the value, nor the file's path or the
 * variable's name: a password pasted there has no shape to recognise it by (Redis's own
 * `ACL GENPASS` prints lowercase hex), so the error names only the setting.
 */
export function loadPassword(source: SecretSource, ctx: SecretContext): string {
  let value: string;
  switch (source.kind) {
    case 'inline':
      value = source.value;
      break;
    case 'env':
      value = readEnv(source, ctx, { neverShow: true }).value;
      break;
    case 'file':
      value = readFileOf(source, ctx, { neverShow: true }).text.replace(/\r?\n$/, '');
      break;
  }
  if (value === '' || /[\r\n]/.test(value))
    throw new ConfigError(source.key, 'expected the password on one line, not empty');
  return value;
}

/**
 * The value of a `*Env` setting's variable, and how errors may name it. A secret pasted in
 * place of the name never comes back in an error; with `neverShow`, no name does.
 */
function readEnv(
  source: Extract<SecretSource, { kind: 'env' }>,
  ctx: SecretContext,
  opts: { neverShow?: boolean } = {},
): { value: string; shown: string } {
  if (!ENV_NAME.test(source.variable)) {
    throw new ConfigError(
      source.key,
      'expected the name of an environment variable (letters, digits and _, not starting with a digit), not its value',
    );
  }
  const shown = opts.neverShow
    ? 'the environment variable named here'
    : looksLikeSecret(source.variable)
      ? 'the environment variable named here (the name looks like a base64 secret)'
      : `environment variable ${source.variable}`;
  const value = ctx.env[source.variable];
  if (value === undefined || value.trim() === '') throw new ConfigError(source.key, `${shown} is not set`);
  return { value, shown };
}

/**
 * The text of a `*File` setting's file, and how errors may name it (never a pasted secret;
 * with `neverShow`, never the path).
 */
function readFileOf(
  source: Extract<SecretSource, { kind: 'file' }>,
  ctx: SecretContext,
  opts: { neverShow?: boolean } = {},
): { text: string; shown: string } {
  const file = resolveSecretPath(source.path, ctx.baseDir, ctx.env, source.key);
  const pasted = looksLikeSecret(source.path);
  try {
    return { text: ctx.readFile(file), shown: pasted || opts.neverShow ? 'the file named here' : file };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    if (opts.neverShow) throw new ConfigError(source.key, `cannot read the file named here (${code})`);
    if (pasted) {
      throw new ConfigError(
        source.key,
        `cannot read the file named here (${code}); the value looks like a base64 secret, not a path: put the secret in a file (mode 0600) and give its path`,
      );
    }
    throw new ConfigError(source.key, `cannot read ${file} (${code})`);
  }
}
