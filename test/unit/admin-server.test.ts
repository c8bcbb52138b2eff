/** The admin listener's own process safety (src/admin/server.ts); its API is tested end to end in admin-api. */
import { expect } from 'chai';
import type http from 'node:http';
import { AdminListener } from '../../src/admin/server.js';

describe('admin/server: an error event of a listening server', () => {
  it('is logged, not thrown (an unhandled error event would end the process)', async () => {
    const lines: string[] = [];
    const listener = new AdminListener({
      admin: {} as ConstructorParameters<typeof AdminListener>[0]['admin'],
      token: 't'.repeat(32),
      metrics: { contentType: 'text/plain', render: async () => '' },
      readiness: { report: async () => ({ ready: true, failed: [], checks: {} }) },
      version: '0.0.0',
      logger: { debug() {}, info() {}, warn() {}, error: (msg: string) => lines.push(msg) },
      limits: {
        maxConnections: 4,
        headersTimeoutMs: 1000,
        requestTimeoutMs: 2000,
        keepAliveTimeoutMs: 1000,
        maxHeaderBytes: 16_384,
      },
    });
    await listener.listen('127.0.0.1', 0);
    try {
      const [server] = (listener as unknown as { servers: http.Server[] }).servers;
      const err = Object.assign(new Error('accept EMFILE'), { code: 'EMFILE', syscall: 'accept' });
      expect(() => server!.emit('error', err)).to.not.throw();
      expect(lines).to.deep.equal(['admin listener error']);
    } finally {
      await listener.close();
    }
  });
});
