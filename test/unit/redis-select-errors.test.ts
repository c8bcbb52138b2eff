/**
 * Which errors of the connect-time SELECT end the client for good. ioredis emits 'error' with
 * the failed command attached; only a database the server does not have is fatal. A moment of
 * maxclients, a busy script or a loading server can be filed under the SELECT too (whichever
 * command the error reply lands on) and must only reconnect. Which command a refused connection's
 * reply lands on depends on timing, so the real-server tests cannot force these cases: here the
 * client gets exactly the events ioredis emits for them.
 */
import { expect } from 'chai';
import { createRedis, fatalErrorOf } from '../../src/store/redis.js';
import { RecordingLogger } from '../support/store-server.js';

function selectError(message: string): Error {
  return Object.assign(new Error(message), { command: { name: 'select', args: ['1'] } });
}

describe('redis: a refused SELECT', () => {
  // Nothing listens on port 1: the client keeps retrying in the background; only its events matter.
  const open = () =>
    createRedis({ url: 'redis://127.0.0.1:1/1', keyPrefix: 'ddns:', commandTimeoutMs: 500 }, new RecordingLogger());

  for (const message of [
    'ERR DB index is out of range',
    'ERR invalid DB index',
    'ERR SELECT is not allowed in cluster mode',
  ]) {
    it(`"${message}" is fatal: the client gives up with an error that names it`, () => {
      const redis = open();
      try {
        redis.emit('error', selectError(message));
        expect(fatalErrorOf(redis)?.message).to.include(message);
      } finally {
        redis.disconnect();
      }
    });
  }

  for (const message of [
    'ERR max number of clients reached',
    'BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSCRIPT.',
    'LOADING Redis is loading the dataset in memory',
  ]) {
    it(`"${message.slice(0, 40)}…" is transient: the client stays usable`, () => {
      const redis = open();
      try {
        redis.emit('error', selectError(message));
        expect(fatalErrorOf(redis)).to.equal(undefined);
      } finally {
        redis.disconnect();
      }
    });
  }
});
