/**
 * The address echo (/checkip): tells a client its public address. The frequency rule
 * applies per requesting address, and per host name when the request carries valid
 * credentials and a hostname.
 */
import { StoreUnavailableError } from '../core/errors.js';
import type { EchoOutcome } from '../core/outcomes.js';
import type { Logger } from '../core/log.js';
import { normalizeHostname } from '../core/names.js';
import { hostnameList } from '../core/params.js';
import type {
  AccountView,
  AdmitGuard,
  Authenticator,
  Credentials,
  EchoGate,
  HostGate,
  TokenAuthenticator,
} from './ports.js';

export interface EchoRequest {
  clientIp: string;
  credentials: Credentials | 'missing' | 'malformed';
  /** For the junk-block check of the admission's guard (the echo itself never answers badagent). */
  userAgent: string | undefined;
  hostname: string | undefined;
}

export type EchoReply = { kind: 'address'; address: string } | { kind: 'refused'; outcome: EchoOutcome };

export interface EchoSettings {
  echoMinIntervalMs: number;
  echoCooldownMs: number;
  minIntervalMs: number;
  donatorMinIntervalMs: number;
  maxFrequent: number;
}

export class EchoService {
  constructor(
    private readonly deps: {
      echoGate: EchoGate;
      authenticator: Authenticator;
      tokens: TokenAuthenticator;
      hosts: HostGate;
      settings: EchoSettings;
      leaseMs: number;
      logger: Logger;
    },
  ) {}

  /**
   * The account these credentials log in to, with the guard its admissions carry (the login
   * checks again in Redis: a password changed or a token revoked since stops them). A token
   * counts for its own host `only`.
   */
  private async login(
    credentials: Credentials,
    sourceIp: string,
    userAgent: string,
  ): Promise<{ account: AccountView; guard: AdmitGuard; only?: string } | undefined> {
    const token = await this.deps.tokens.login(credentials, sourceIp, userAgent);
    if (token === 'agent' || token === 'login') return undefined; // refused; nothing counted
    if (token !== undefined) return { account: token.account, guard: { sourceIp, userAgent, token }, only: token.fqdn };
    const auth = await this.deps.authenticator.authenticate(credentials, sourceIp);
    if (!auth.ok) return undefined;
    return { account: auth.account, guard: { sourceIp, userAgent, login: auth.login, passwordOnly: true } };
  }

  async echo(req: EchoRequest): Promise<EchoReply> {
    const { settings } = this.deps;
    try {
      const byAddress = await this.deps.echoGate.admit(
        req.clientIp,
        settings.echoMinIntervalMs,
        settings.maxFrequent,
        settings.echoCooldownMs,
      );
      if (byAddress === 'abuse') return { kind: 'refused', outcome: 'abuse' };
      // The distinct valid names, as an update of the same list would count them (none past its limit).
      const names = [
        ...new Set((hostnameList(req.hostname ?? '') ?? []).map(normalizeHostname).filter((n) => n !== undefined)),
      ];
      if (typeof req.credentials === 'object' && names.length > 0) {
        const login = await this.login(req.credentials, req.clientIp, req.userAgent?.trim() ?? '');
        if (login !== undefined) {
          // Every name of the list the login may update is counted (per host name, as an update is).
          // An ACME-only token updates no address: it counts nothing (its host's frequency rule is the
          // address updates' alone, docs/security.md, "Update tokens").
          const acmeOnly = 'token' in login.guard && login.guard.token.acmeOnly === true;
          const counted = acmeOnly ? [] : login.only === undefined ? names : names.filter((n) => n === login.only);
          const { guard } = login;
          // A token for none of the names: its checks all the same, so a right token costs what a wrong one does.
          if (counted.length === 0 && 'token' in guard && (await this.deps.tokens.check(guard)) === 'stale') {
            this.deps.tokens.forget(guard.token);
          }
          const admissions = await Promise.all(
            counted.map((fqdn) =>
              this.deps.hosts.admit({
                fqdn,
                account: login.account.name,
                minIntervalMs: login.account.donator ? settings.donatorMinIntervalMs : settings.minIntervalMs,
                maxFrequent: settings.maxFrequent,
                expect: null,
                leaseMs: this.deps.leaseMs,
                guard,
              }),
            ),
          );
          // Revoked or expired meanwhile: looked up afresh next time.
          if ('token' in guard && admissions.some((a) => a.kind === 'refused' && a.check === 'stale')) {
            this.deps.tokens.forget(guard.token);
          }
          if (admissions.some((a) => a.kind === 'rejected' && a.outcome === 'abuse'))
            return { kind: 'refused', outcome: 'abuse' };
        }
      }
      return { kind: 'address', address: req.clientIp };
    } catch (err) {
      if (err instanceof StoreUnavailableError) {
        this.deps.logger.warn('state store unavailable', { error: err.message });
        return { kind: 'refused', outcome: 'unavailable' };
      }
      throw err;
    }
  }
}
