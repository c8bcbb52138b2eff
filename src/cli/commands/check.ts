/**
 * `ddns-bridge check`: config valid, each HTTPS certificate usable and not about to expire,
 * Redis reachable, no host below a host of another account, no host at a static name (registered
 * before the name was listed: FAILED), each zone's key accepted by its primary;
 * warnings for secrets readable by others and for trustedProxies wider than proxies (config/trusted-proxies.ts).
 */
import { configWarnings } from '../../config/load.js';
import type { Config } from '../../config/schema.js';
import { hostsAtStaticNames } from '../../core/static-names.js';
import { trustedProxyWarnings } from '../../config/trusted-proxies.js';
import { DnsSerialProbe, probeZone } from '../../dns/index.js';
import { PROPAGATION_TIMINGS, PropagationWatcher, type SecondaryStatus } from '../../app/propagation.js';
import { NO_TELEMETRY } from '../../core/telemetry.js';
import { daysLeft, readTlsPair, summarize } from '../../http/tls.js';
import { openStore } from '../../store/index.js';
import type { CommandContext } from '../context.js';
import type { Out } from './admin.js';

export async function check(
  ctx: CommandContext,
  configPath: string,
  env: NodeJS.ProcessEnv,
  out: Out,
  err: Out,
): Promise<boolean> {
  let ok = true;
  out(`config ${configPath}: ok`);
  for (const w of await configWarnings(configPath, env)) err(`warning: ${w}`);
  for (const w of trustedProxyWarnings(ctx.config)) err(`warning: ${w}`);
  if (!(await checkCertificates(ctx.config, new Date(), out, err))) ok = false;

  const store = openStore(ctx.config, ctx.logger);
  try {
    await store.ping();
    out(`redis ${redactUrl(ctx.config.redis.url)}: ok`);
    // Registered before host add refused them (docs/security.md, "No shadowing").
    const pairs = await store.hosts.shadowingPairs();
    if (pairs.length === 0) out('hosts: none lies below a host of another account');
    for (const p of pairs) {
      err(
        `warning: host ${p.lower} (account ${p.lowerOwner}) lies below ${p.upper} (account ${p.upperOwner}): ` +
          `the wildcard of ${p.upper} can answer for it; remove one of them`,
      );
    }
    if (ctx.config.zones.some((z) => z.staticNames.length > 0)) {
      const atStatic = hostsAtStaticNames(await store.hosts.list(), ctx.config.zones);
      if (atStatic.length === 0) out('hosts: none at a static name');
      for (const { host, problem } of atStatic) {
        ok = false;
        err(`host ${host.fqdn} (account ${host.account}): FAILED: ${problem}; ${STATIC_NAME_HOST_ADVICE}`);
      }
    }
  } catch (e) {
    ok = false;
    err(`redis ${redactUrl(ctx.config.redis.url)}: FAILED: ${(e as Error).message}`);
  } finally {
    await store.close().catch(() => undefined);
  }

  const results = await Promise.all(
    ctx.config.zones.map(async (zone) => ({ zone, result: await probeZone(zone, ctx.config.dns) })),
  );
  for (const { zone, result } of results) {
    const where = `zone ${zone.name} (primary ${zone.primary.host}:${zone.primary.port}, key ${zone.key.name})`;
    if (result.ok) out(`${where}: ok`);
    else {
      ok = false;
      err(`${where}: FAILED: ${result.reason}`);
    }
  }
  // Secondaries: a lagging or silent one is a warning, never a failure (it must not stop the update service).
  for (const line of await secondaryLines(ctx.config)) (line.warning ? err : out)(line.text);
  return ok;
}

/** One line per secondary (docs/operators.md, "Secondaries"): its serial against the primary's. */
export async function secondaryLines(config: Config): Promise<{ text: string; warning: boolean }[]> {
  return (await secondaryStatuses(config)).map(secondaryLine);
}

/** Every secondary of the zones (all, or those named) asked once, beside its primary. */
export async function secondaryStatuses(config: Config, zones?: readonly string[]): Promise<SecondaryStatus[]> {
  const probe = new DnsSerialProbe(config.zones, PROPAGATION_TIMINGS.queryTimeoutMs);
  const watched = probe.watchedZones.filter((z) => zones === undefined || zones.includes(z));
  if (watched.length === 0) return [];
  return new PropagationWatcher(watched, probe, NO_TELEMETRY).checkAll();
}

export function secondaryLine(s: SecondaryStatus): { text: string; warning: boolean } {
  const where = `zone ${s.zone} secondary ${s.secondary}`;
  if (!s.up) return { text: `warning: ${where}: does not answer for the zone`, warning: true };
  if (s.primarySerial === null)
    return { text: `warning: ${where}: serial ${s.serial}, primary not answering`, warning: true };
  if (s.behind === 0) return { text: `${where}: serial ${s.serial}, current`, warning: false };
  return {
    text: `warning: ${where}: serial ${s.serial}, ${s.behind} behind the primary's ${s.primarySerial}`,
    warning: true,
  };
}

/** What a host at a static name does, and the way out. */
const STATIC_NAME_HOST_ADVICE =
  "its updates overwrite the operator's records until the host (host remove) or the name is removed";

/** A certificate that expires sooner than this is worth a warning: certbot renews 30 days ahead. */
export const CERTIFICATE_WARNING_DAYS = 14;

/**
 * One line per HTTPS listener: ok, a warning when its certificate expires within
 * CERTIFICATE_WARNING_DAYS, FAILED when the pair cannot be used or has expired.
 */
export async function checkCertificates(
  config: Pick<Config, 'listen'>,
  now: Date,
  out: Out,
  err: Out,
): Promise<boolean> {
  let ok = true;
  for (const [i, l] of config.listen.entries()) {
    if (!l.tls) continue;
    const setting = `listen[${i}].tls`;
    const where = `https ${l.host.includes(':') ? `[${l.host}]` : l.host}:${l.port} (${setting})`;
    let pair;
    try {
      pair = await readTlsPair({ ...l.tls, setting });
    } catch (e) {
      ok = false;
      err(`${where}: FAILED: ${(e as Error).message}`);
      continue;
    }
    const { subject, notAfter } = summarize(pair.leaf);
    const certificate = `the certificate in ${l.tls.certFile} (${subject})`;
    const days = daysLeft(pair.leaf, now);
    if (new Date(pair.leaf.validFrom) > now) {
      ok = false;
      err(`${where}: FAILED: ${certificate} is not valid before ${new Date(pair.leaf.validFrom).toISOString()}`);
    } else if (new Date(pair.leaf.validTo) <= now) {
      ok = false;
      err(`${where}: FAILED: ${certificate} expired at ${notAfter}`);
    } else if (days < CERTIFICATE_WARNING_DAYS) {
      out(`${where}: ok, ${subject}, valid until ${notAfter}`);
      const advice = 'renew it, then reload the service (SIGHUP)';
      err(`warning: ${setting}.certFile: ${certificate} expires in ${days} day(s), at ${notAfter}; ${advice}`);
    } else {
      out(`${where}: ok, ${subject}, valid until ${notAfter}`);
    }
  }
  return ok;
}

/** Redis URLs may carry a password: never print it. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    if (u.searchParams.has('password')) u.searchParams.set('password', '***');
    return u.toString();
  } catch {
    return '(unparsable url)';
  }
}
