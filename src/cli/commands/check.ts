/** `ddns-bridge check`: config valid, Redis reachable, each zone's key accepted by its primary. */
import { configWarnings } from '../../config/load.js';
import { probeZone } from '../../dns/index.js';
import { openStore } from '../../store/index.js';
import type { CommandContext } from '../context.js';
import type { Out } from './admin.js';

export async function check(ctx: CommandContext, configPath: string, env: NodeJS.ProcessEnv, out: Out, err: Out): Promise<boolean> {
  let ok = true;
  out(`config ${configPath}: ok`);
  for (const w of await configWarnings(configPath, env)) err(`warning: ${w}`);

  const store = openStore(ctx.config, ctx.logger);
  try {
    await store.ping();
    out(`redis ${redactUrl(ctx.config.redis.url)}: ok`);
  } catch (e) {
    ok = false;
    err(`redis ${redactUrl(ctx.config.redis.url)}: FAILED: ${(e as Error).message}`);
  } finally {
    await store.close().catch(() => undefined);
  }

  const results = await Promise.all(ctx.config.zones.map(async (zone) => ({ zone, result: await probeZone(zone, ctx.config.dns) })));
  for (const { zone, result } of results) {
    const where = `zone ${zone.name} (primary ${zone.primary.host}:${zone.primary.port}, key ${zone.key.name})`;
    if (result.ok) out(`${where}: ok`);
    else {
      ok = false;
      err(`${where}: FAILED: ${result.reason}`);
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
