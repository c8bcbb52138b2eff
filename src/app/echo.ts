/**
 * The address echo (/checkip): tells a client its public address. The frequency rule
 * applies per requesting address, and per host name when the request carries valid
 * credentials and a hostname.
 */
import { StoreUnavailableError } from '../core/errors.js';
import type { Logger } from '../core/log.js';
import { normalizeHostname } from '../core/names.js';
import type { Authenticator, Credentials, EchoGate, HostGate } from './ports.js';

export interface EchoRequest {
  clientIp: string;
  credentials: Credentials | 'missing' | 'malformed';
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
      if (typeof req.credentials === 'object' && req.hostname) {
        const fqdn = normalizeHostname(req.hostname.split(',')[0] ?? '');
        const auth = fqdn ? await this.deps.authenticator.authenticate(req.credentials, req.clientIp) : undefined;
        if (fqdn && auth?.ok) {
          const admission = await this.deps.hosts.admit({
            fqdn,
            account: auth.account.name,
            minIntervalMs: auth.account.donator ? settings.donatorMinIntervalMs : settings.minIntervalMs,
            maxFrequent: settings.maxFrequent,
            expect: null,
            leaseMs: this.deps.leaseMs,
          });
          if (admission.kind === 'abuse') return { kind: 'token', token: 'abuse' };
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
