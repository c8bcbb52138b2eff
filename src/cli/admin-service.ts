/** Wires the admin service (src/app/admin.ts) for the CLI and for the admin listener. */
import { AdminService, type AdminServiceDeps } from '../app/admin.js';
import {
  DEFAULT_SCRYPT_COST,
  hashPassword,
  newToken,
  newTokenId,
  tokenHash,
  TsigKeyring,
  tsigKeyHash,
  type ScryptCost,
} from '../auth/index.js';
import type { Config } from '../config/schema.js';
import type { Logger } from '../core/log.js';
import { staticNamesByZone } from '../core/static-names.js';
import { DnsPublisher } from '../dns/index.js';
import type { Store } from '../store/index.js';
import { leaseMs } from './compose.js';

/**
 * The secrets of a config: passwords hashed at `passwordCost` (account add's own, DEFAULT_SCRYPT_COST, unless a
 * caller in this process chose another: CommandContext.passwordCost), and with `gateway.keyFile`, gateway TSIG keys.
 */
export function adminSecretsFor(
  config: Config,
  passwordCost: ScryptCost = DEFAULT_SCRYPT_COST,
): AdminServiceDeps['secrets'] {
  const secrets: AdminServiceDeps['secrets'] = {
    hashPassword: (password) => hashPassword(password, passwordCost),
    mintToken() {
      const token = newToken();
      return { token, id: newTokenId(), hash: tokenHash(token) };
    },
  };
  if (config.gateway === undefined) return secrets;
  const keyring = new TsigKeyring(config.gateway.masterSecret);
  return {
    ...secrets,
    tsigKey(id, fqdn, algorithm) {
      const key = keyring.key(id, fqdn, algorithm);
      return { hash: tsigKeyHash(id), key: { name: key.name, algorithm, secret: key.secret.toString('base64') } };
    },
  };
}

/**
 * The admin service on a store. `publisher` deletes a removed host's records; without one,
 * each removal opens its own connections to the primary and closes them (a CLI command).
 */
export function adminServiceOn(
  store: Store,
  config: Config,
  logger: Logger,
  publisher?: DnsPublisher,
  currentConfig: () => Config = () => config,
  passwordCost?: ScryptCost,
): AdminService {
  return new AdminService({
    accounts: store.accounts,
    hosts: store.hosts,
    links: store.links,
    tokens: store.tokens,
    agents: store.agents,
    secrets: adminSecretsFor(config, passwordCost),
    zones: config.zones.map((z) => z.name),
    staticNames: staticNamesByZone(config.zones),
    configBlockedAgents: () => currentConfig().agents.blocked,
    leaseMs: leaseMs(config),
    publisher: () => {
      if (publisher) return { publisher, release: async () => undefined };
      const own = new DnsPublisher(config.zones, config.dns, logger);
      return { publisher: own, release: () => own.close() };
    },
  });
}
