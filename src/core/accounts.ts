/**
 * The one account-name rule (pure): `account add`, the /v1 API schema, the account store and
 * `import-all` all use it, so a name one of them accepts the others can show and remove.
 * No ':' (HTTP Basic splits the login at the first one), no spaces, no glob characters.
 */
export const ACCOUNT_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}$/;

/** The rule in words, for error messages and the API schema. */
export const ACCOUNT_NAME_RULE = '1-64 of letters, digits and . _ @ + - (a letter or digit first)';

export function isAccountName(name: string): boolean {
  return ACCOUNT_NAME_PATTERN.test(name);
}

/** A scrypt cost: N = 2^ln, block size r, parallelisation p (the `$scrypt$ln=…,r=…,p=…$` hash format). */
export interface ScryptCostBound {
  ln: number;
  r: number;
  p: number;
}

/**
 * The most a stored password hash may cost: what `account add` writes (auth's DEFAULT_SCRYPT_COST,
 * about 32 MiB and tens of milliseconds per login). `import-all` refuses a hash that asks for more
 * in any parameter: the authenticator would spend that on every login (docs/operators.md, "Restore").
 */
export const MAX_SCRYPT_COST: Readonly<ScryptCostBound> = Object.freeze({ ln: 15, r: 8, p: 1 });

const SCRYPT_COST = /^\$scrypt\$ln=(\d+),r=(\d+),p=(\d+)\$/;

/** Why the scrypt hash `hash` costs more than `max` allows, or undefined (also for text in no scrypt format). */
export function scryptCostProblem(hash: string, max: ScryptCostBound = MAX_SCRYPT_COST): string | undefined {
  const m = SCRYPT_COST.exec(hash);
  if (m === null) return undefined;
  const [ln, r, p] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (ln <= max.ln && r <= max.r && p <= max.p) return undefined;
  return (
    `its scrypt cost ln=${ln},r=${r},p=${p} is above ln=${max.ln},r=${max.r},p=${max.p} ` +
    '(what account add writes; each parameter at most that)'
  );
}
