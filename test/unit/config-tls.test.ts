/**
 * `listen` entries with `tls`: the two PEM paths resolved like secretFile paths, plain and
 * HTTPS entries side by side, mistakes named by their setting, PEM text pasted in place of a
 * path never repeated; a world-readable key file warned about.
 */
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { configError as configErrorOf } from '../support/config-errors.js';
import { fileURLToPath } from 'node:url';
import { configWarnings, loadConfig, parseConfig, type ParseOptions } from '../../src/config/load.js';

const zone = {
  name: 'dyn.example.org',
  primary: '127.0.0.1:53',
  key: { name: 'ddns-key', secret: randomBytes(32).toString('base64') },
};
const opts = (env: NodeJS.ProcessEnv = {}): ParseOptions => ({ env, baseDir: '/etc/ddns-bridge', readFile: () => '' });
const tlsEntry = (tls: unknown, port = 443) => ({ host: '0.0.0.0', port, tls });

const configError = (json: unknown, o: ParseOptions = opts()) => configErrorOf(json, o);

describe('config: listen entries with tls', () => {
  it('takes plain and HTTPS entries side by side; paths resolved like secretFile (relative, ${VAR:-default})', () => {
    const c = parseConfig(
      {
        listen: [
          '127.0.0.1:8245',
          tlsEntry({ certFile: 'tls/fullchain.pem', keyFile: '/etc/ssl/private/ddns.key' }),
          tlsEntry({ certFile: '${CREDENTIALS_DIRECTORY:-/srv}/c.pem', keyFile: '${X:-/srv}/k.pem' }, 8443),
        ],
        zones: [zone],
      },
      opts({ CREDENTIALS_DIRECTORY: '/run/credentials/ddns-bridge.service' }),
    );
    expect(c.listen).to.deep.equal([
      { host: '127.0.0.1', port: 8245 },
      tlsEntry({ certFile: '/etc/ddns-bridge/tls/fullchain.pem', keyFile: '/etc/ssl/private/ddns.key' }),
      tlsEntry({ certFile: '/run/credentials/ddns-bridge.service/c.pem', keyFile: '/srv/k.pem' }, 8443),
    ]);
    expect(Object.isFrozen(c.listen[1]!.tls)).to.equal(true);
  });

  it('an object entry without tls stays plain HTTP', () => {
    const c = parseConfig({ listen: [{ host: '127.0.0.1', port: 80 }], zones: [zone] }, opts());
    expect(c.listen).to.deep.equal([{ host: '127.0.0.1', port: 80 }]);
  });

  // [what, the tls value, the setting the error names (after `listen[1].`), its message]
  const cases: [string, unknown, string, RegExp][] = [
    ['tls not an object', 'yes', 'tls', /expected an object, got a string/],
    ['no keyFile', { certFile: 'c.pem' }, 'tls.keyFile', /required setting is missing/],
    ['no certFile', { keyFile: 'k.pem' }, 'tls.certFile', /required setting is missing/],
    ['a path not a string', { certFile: 'c.pem', keyFile: 42 }, 'tls.keyFile', /expected a string, got a number/],
    ['an empty path', { certFile: ' ', keyFile: 'k.pem' }, 'tls.certFile', /expected the path of a PEM file$/],
    ['an unknown setting', { certFile: 'c', keyFile: 'k', passphrase: 'x' }, 'tls.passphrase', /unknown setting/],
    ['an unset variable', { certFile: '${NOPE}/c.pem', keyFile: 'k.pem' }, 'tls.certFile', /NOPE .*is not set/],
  ];
  for (const [what, tls, key, message] of cases) {
    it(`${what}: the error names listen[1].${key}`, () => {
      const err = configError({ listen: ['127.0.0.1:8245', tlsEntry(tls)], zones: [zone] });
      expect(err.key).to.equal(`listen[1].${key}`);
      expect(err.message).to.match(message);
    });
  }

  it('PEM text pasted in place of a path is refused without being repeated', () => {
    const pem = `-----BEGIN PRIVATE KEY-----\n${randomBytes(48).toString('base64')}\n-----END PRIVATE KEY-----\n`;
    const err = configError({ listen: [tlsEntry({ certFile: 'c.pem', keyFile: pem })], zones: [zone] });
    expect(err.key).to.equal('listen[0].tls.keyFile');
    expect(err.message).to.match(/expected the path of a PEM file, not its content/);
    expect(err.message).not.to.include(pem.split('\n')[1]!);
  });

  it('the same address twice is refused even when one is HTTPS', () => {
    const listen = ['0.0.0.0:443', tlsEntry({ certFile: 'c.pem', keyFile: 'k.pem' })];
    const err = configError({ listen, zones: [zone] });
    expect(err.key).to.equal('listen[1]');
    expect(err.message).to.match(/listed twice/);
  });

  it('the shipped HTTPS example is valid: plain on loopback, HTTPS on [::]:443', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'config-tls-'));
    try {
      await writeFile(path.join(dir, 'ddns-key.secret'), `${randomBytes(32).toString('base64')}\n`, { mode: 0o600 });
      const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
      const example = path.join(root, 'config/ddns-bridge.https.example.json');
      const c = await loadConfig(example, { CREDENTIALS_DIRECTORY: dir });
      expect(c.listen).to.deep.equal([
        { host: '127.0.0.1', port: 8245 },
        {
          host: '::',
          port: 443,
          tls: { certFile: '/etc/ddns-bridge/tls/fullchain.pem', keyFile: '/etc/ddns-bridge/tls/privkey.pem' },
        },
      ]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  describe('configWarnings', () => {
    let dir: string;
    before(async () => {
      dir = await mkdtemp(path.join(os.tmpdir(), 'config-tls-'));
    });
    after(async () => rm(dir, { recursive: true, force: true }));

    async function warningsFor(keyMode: number): Promise<string[]> {
      const key = path.join(dir, 'key.pem');
      await writeFile(key, 'not read here');
      await chmod(key, keyMode);
      const file = path.join(dir, 'config.json');
      const listen = [tlsEntry({ certFile: 'cert.pem', keyFile: 'key.pem' })];
      await writeFile(file, JSON.stringify({ listen, zones: [{ ...zone, key: { name: 'k', secretEnv: 'X' } }] }));
      return configWarnings(file, {});
    }

    it('warns about a key file everyone can read, naming the setting', async () => {
      expect(await warningsFor(0o644)).to.deep.equal([
        `listen[0].tls.keyFile: ${path.join(dir, 'key.pem')} is readable by everyone (mode 0644); ` +
          "chmod 600 it (or 640 for the service's group)",
      ]);
    });

    it('a key file readable by its owner or its group (ssl-cert) is fine', async () => {
      expect(await warningsFor(0o600)).to.deep.equal([]);
      expect(await warningsFor(0o640)).to.deep.equal([]);
    });
  });
});
