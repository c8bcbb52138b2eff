/** `ddns-bridge serve`: the HTTP frontend until SIGTERM/SIGINT, then a graceful stop. */
import { buildBridge } from '../compose.js';
import type { CommandContext } from '../context.js';

export async function serve(ctx: CommandContext, opts: { port?: number }): Promise<void> {
  const { config, logger } = ctx;
  const bridge = buildBridge(config, logger);
  const listeners = config.listen.map((l) => ({ host: l.host, port: opts.port ?? l.port }));
  try {
    for (const l of listeners) {
      // One server object can listen once: extra addresses get their own frontend.
      const port = await bridge.http.listen(l.host, l.port);
      logger.info('listening', { host: l.host, port, zones: config.zones.map((z) => z.name) });
    }
  } catch (err) {
    logger.error('cannot listen', { error: (err as Error).message });
    await bridge.close();
    process.exitCode = 1;
    return;
  }

  await new Promise<void>((resolve) => {
    let stopping = false;
    const stop = (signal: string) => {
      if (stopping) return;
      stopping = true;
      logger.info('stopping', { signal });
      bridge
        .close()
        .catch((err: unknown) => logger.error('error while stopping', { error: (err as Error).message }))
        .finally(resolve);
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
  logger.info('stopped');
}
