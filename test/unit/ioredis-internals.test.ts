/**
 * The ioredis internals src/store/redis.ts relies on (docs/architecture.md, "Redis client"):
 * package.json pins ioredis to one version, and this test fails when an upgrade changes what
 * the store patches, before any fault test has to find out.
 *
 * - `flushQueue(error, {offlineQueue, commandQueue})` (private): fails the commands of a lost
 *   connection at once, and those waiting when the client gives up.
 * - `sendCommand(command, stream)` reads `this.options.enableOfflineQueue` on each call: the
 *   offline queue is turned off once connected (commands then fail at once while disconnected).
 * - `stream` (the socket) while `status === 'ready'`: a turn's commands are corked into one write.
 */
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Redis } from 'ioredis';

const require = createRequire(import.meta.url);

describe('ioredis internals the store relies on', () => {
  it('the installed ioredis is the exact version package.json pins', () => {
    const pinned = (require('../../../package.json') as { dependencies: Record<string, string> }).dependencies.ioredis;
    const installed = (require('ioredis/package.json') as { version: string }).version;
    expect(pinned, 'pin an exact version: the store patches internals').to.match(/^\d+\.\d+\.\d+$/);
    expect(installed).to.equal(pinned);
  });

  it('flushQueue(error, { offlineQueue, commandQueue }) still rejects each queue on demand', () => {
    const flushQueue = (Redis.prototype as unknown as { flushQueue?: unknown }).flushQueue;
    expect(flushQueue).to.be.a('function');
    const source = String(flushQueue);
    for (const part of ['offlineQueue', 'commandQueue', '.command.reject(error)']) expect(source).to.include(part);
  });

  it('sendCommand(command, stream) reads options.enableOfflineQueue on every call', () => {
    const source = String(Redis.prototype.sendCommand);
    expect(source).to.match(/^sendCommand\(command, stream\)/);
    expect(source).to.include('this.options.enableOfflineQueue');
  });

  it('connect() keeps the socket it opened as `stream`', () => {
    // In connect's promise callback (`_this.stream = stream;`), which the exported method wraps.
    const source = readFileSync(require.resolve('ioredis/built/Redis.js'), 'utf8');
    expect(source).to.match(/\b_this\.stream = stream;/);
  });
});
