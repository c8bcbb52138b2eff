/** Authentication: scrypt password hashes, the verified-credential cache, the authenticator. */
export {
  DEFAULT_SCRYPT_COST,
  hashPassword,
  isPasswordHash,
  passwordHashCost,
  verifyPassword,
  type ScryptCost,
} from './password.js';
export { CredentialCache, type CredentialCacheOptions } from './credential-cache.js';
export { PasswordAuthenticator, DEFAULT_PARALLEL_HASHES, type AuthenticatorOptions } from './authenticator.js';
export { CachedTokenAuthenticator } from './token-authenticator.js';
export { newToken, newTokenId, tokenHash } from './update-token.js';
export { TsigKeyring, tsigKeyHash, tsigKeyId, tsigKeyName } from './tsig-keys.js';
