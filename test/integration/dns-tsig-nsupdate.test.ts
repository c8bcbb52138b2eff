/**
 * TSIG against BIND's nsupdate: the MAC of a real nsupdate request verifies with our code and
 * our own signature reproduces it, for every algorithm (test/unit/dns-tsig.test.ts has the rest).
 */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { createSocket } from 'node:dgram';
import path from 'node:path';
import { TSIG_ALGORITHMS, type TsigKeyConfig } from '../../src/config/schema.js';
import { extractTsig, signRequest, verifyMessage } from '../../src/core/tsig.js';
import { generateTsigKey, makeTempDir, removeDir, requireBinariesOrSkip, writeKeyFile } from '../../src/lab/index.js';

describe('dns tsig (RFC 8945) with nsupdate', () => {
  describe('live cross-check with nsupdate', function () {
    let dir: string;
    before(async function () {
      requireBinariesOrSkip(this, ['nsupdate']);
      dir = await makeTempDir('dns-tsig-');
    });
    after(async () => {
      if (dir) await removeDir(dir);
    });

    /** Run nsupdate with a key file against a UDP socket of ours; resolve with the first datagram. */
    async function captureNsupdate(keyFile: string): Promise<Buffer> {
      const socket = createSocket('udp4');
      await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
      const port = socket.address().port;
      const child = spawn('nsupdate', ['-t', '5', '-k', keyFile], { stdio: ['pipe', 'ignore', 'ignore'] });
      child.on('error', () => {});
      try {
        const datagram = new Promise<Buffer>((resolve, reject) => {
          socket.once('message', (m) => resolve(m));
          setTimeout(() => reject(new Error('nsupdate sent nothing within 5 s')), 5000).unref();
        });
        child.stdin.end(`server 127.0.0.1 ${port}\nzone ex.org\nupdate add h.ex.org 60 A 192.0.2.9\nsend\n`);
        return await datagram;
      } finally {
        child.kill();
        socket.close();
      }
    }

    for (const algorithm of TSIG_ALGORITHMS) {
      it(`accepts nsupdate's ${algorithm} MAC with our own clock, and reproduces it`, async () => {
        const labKey = generateTsigKey(`live-${algorithm}`, algorithm);
        const key: TsigKeyConfig = { ...labKey, secret: Buffer.from(labKey.secret, 'base64') };
        const request = await captureNsupdate(await writeKeyFile(path.join(dir, `${algorithm}.key`), labKey));
        const verdict = verifyMessage(request, key, { now: Date.now() / 1000 });
        expect(verdict, JSON.stringify(verdict)).to.include({ ok: true });
        const { tsig, unsigned } = extractTsig(request)!;
        const ours = signRequest(unsigned, key, { timeSigned: tsig.timeSigned, fudge: tsig.fudge });
        expect(ours.mac.toString('hex')).to.equal(tsig.mac.toString('hex'));
        // A different secret of the same name does not verify.
        const other = { ...key, secret: Buffer.from(generateTsigKey('x', algorithm).secret, 'base64') };
        expect(verifyMessage(request, other, { now: Date.now() / 1000 })).to.include({ ok: false, reason: 'bad-mac' });
      });
    }
  });
});
