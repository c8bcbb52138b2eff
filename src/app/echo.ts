/**
 * The address echo (/checkip): tells a client its public address. The frequency rule
 * applies per requesting address, and per host name when the request carries valid
 * credentials and a hostname.
 */
import { StoreUnavailableError } from '../core/errors.js';
import type { Logger } from '../core/log.js';
import { normalizeHostname } from '../core/names.js';
import { hostnameList } from '../core/params.js';
import type { Authenticator, Credentials, EchoGate, HostGate } from './ports.js';

export interface EchoRequest {
  clientIp: string;
  credentials: Credentials | 'missing' | 'malformed';
  /** For the junk-block check of the admission's guard (the echo itself never answers badagent). */
  userAgent?: string;
  hostname: string | undefined;
}

export type EchoReply = { kind: 'address'; address: string } | { kind: 'token'; token: 'abuse' | '911' };

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
      hosts: HostGate;
      settings: EchoSettings;
      leaseMs: number;
      logger: Logger;
    },
  ) {}

  async echo(req: EchoRequest): Promise<EchoReply> {
    const { settings } = this.deps;
    try {
      const byAddress = await this.deps.echoGate.admit(
        req.clientIp,
        settings.echoMinIntervalMs,
        settings.maxFrequent,
        settings.echoCooldownMs,
      );
      if (byAddress === 'abuse') return { kind: 'token', token: 'abuse' };
      // The distinct valid names, as an update of the same list would count them (none past its limit).
      const names = [...new Set((hostnameList(req.hostname ?? '') ?? []).map(normalizeHostname).filter((n) => n !== undefined))];
      if (typeof req.credentials === 'object' && names.length > 0) {
        const auth = await this.deps.authenticator.authenticate(req.credentials, req.clientIp);
        if (auth.ok) {
          // The login checks again at each admission: a password changed since stops it.
          const guard = { sourceIp: req.clientIp, userAgent: req.userAgent?.trim() ?? '', login: auth.login };
          // Every name of the list is counted (SPEC §7: per host name as in §5).
          const admissions = await Promise.all(
            names.map((fqdn) =>
              this.deps.hosts.admit({
                fqdn,
                account: auth.account.name,
                minIntervalMs: auth.account.donator ? settings.donatorMinIntervalMs : settings.minIntervalMs,
                maxFrequent: settings.maxFrequent,
                expect: null,
                leaseMs: this.deps.leaseMs,
                guard,
              }),
            ),
          );
          if (admissions.some((a) => a.kind === 'abuse')) return { kind: 'token', token: 'abuse' };
        }
      }
      return { kind: 'address', address: req.clientIp };
    } catch (err) {
      if (err instanceof StoreUnavailableError) {
        this.deps.logger.warn('state store unavailable', { error: err.message });
        return { kind: 'token', token: '911' };
      }
      throw err;
    }
  }
}
