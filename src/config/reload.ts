/**
 * What a reload (SIGHUP, `systemctl reload`) may change in a running service: the limits and
 * lists the request path reads on every request, and the log level. Everything a process
 * built its sockets and clients from (listeners, zones, Redis, DNS) needs a restart: such a
 * change is reported and left as it was (docs/operators.md, "Reload").
 */
import { isDeepStrictEqual } from 'node:util';
import { deepFreeze } from './load.js';
import type { Config } from './schema.js';

/** Settings a reload applies. */
export const LIVE_SETTINGS = [
  'agents',
  'frequency',
  'junk',
  'credentials',
  'log',
  'addresses',
  'acme',
  'update',
] as const;

/** Settings of the credential cache: read when the cache is made, so they too need a restart. */
const CACHE_SETTINGS = ['cacheTtlMs', 'cacheSize'] as const;

const CONFIG_NAMES: Record<string, string> = { cacheTtlMs: 'cacheTtl', cacheSize: 'cacheSize' };

export interface ReloadPlan {
  /** The config to run with from now on: the old one with the live settings of the new. */
  config: Config;
  /** Live settings whose value changed (`frequency`, `agents.blocked`, …). */
  changed: string[];
  /** Settings that changed but need a restart (`listen`, `zones`, `redis`, …): left as they were. */
  needsRestart: string[];
}

export function planReload(current: Config, next: Config): ReloadPlan {
  const changed: string[] = [];
  const needsRestart: string[] = [];
  const keys = new Set([...Object.keys(current), ...Object.keys(next)]) as Set<keyof Config>;
  for (const key of keys) {
    if (isDeepStrictEqual(current[key], next[key])) continue;
    if ((LIVE_SETTINGS as readonly string[]).includes(key)) changed.push(key);
    else needsRestart.push(key);
  }
  const credentials = { ...next.credentials };
  for (const k of CACHE_SETTINGS) {
    if (current.credentials[k] !== next.credentials[k]) {
      needsRestart.push(`credentials.${CONFIG_NAMES[k]}`);
      credentials[k] = current.credentials[k];
    }
  }
  const config: Config = {
    ...current,
    agents: next.agents,
    frequency: next.frequency,
    junk: next.junk,
    credentials,
    log: next.log,
    addresses: next.addresses,
    acme: next.acme,
    update: next.update,
  };
  const stillChanged = changed.filter((k) => !isDeepStrictEqual(current[k as keyof Config], config[k as keyof Config]));
  return { config: deepFreeze(config), changed: stillChanged, needsRestart };
}
