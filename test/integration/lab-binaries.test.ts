/** The binary → Debian package tables that the demo, `npm test` and .ci/run install from. */
import { expect } from 'chai';
import {
  aptInstallCommand,
  DEBIAN_PACKAGES,
  EVERYTHING,
  missingPackages,
  PERL_MODULE_PACKAGES,
  PYTHON_MODULE_PACKAGES,
  requireBinariesOrSkip,
  requirePythonModulesOrSkip,
} from '../../src/lab/index.js';

describe('lab: binaries and their Debian packages', () => {
  let savedPath: string | undefined;
  beforeEach(() => (savedPath = process.env.PATH));
  afterEach(() => (process.env.PATH = savedPath));

  it('names what is missing and the packages that bring it, each package once, sorted', () => {
    process.env.PATH = '/nonexistent';
    // Found on neither PATH nor /usr/sbin, /sbin: these live in /usr/bin.
    expect(missingPackages({ binaries: ['nsupdate', 'dig', 'curl'] })).to.deep.equal({
      names: ['nsupdate', 'dig', 'curl'],
      packages: ['bind9-dnsutils', 'curl'],
    });
    expect(aptInstallCommand(['bind9-dnsutils', 'curl'])).to.equal(
      'apt-get install -y --no-install-recommends bind9-dnsutils curl',
    );
  });

  it('npm test installs every table entry, the Perl and Python modules included', () => {
    expect(EVERYTHING.binaries).to.have.members(Object.keys(DEBIAN_PACKAGES));
    expect(EVERYTHING.perlModules).to.deep.equal(['IO::Socket::SSL']);
    expect(PERL_MODULE_PACKAGES['IO::Socket::SSL']).to.equal('libio-socket-ssl-perl');
    expect(EVERYTHING.pythonModules).to.deep.equal(['certbot_dns_rfc2136']);
    expect(PYTHON_MODULE_PACKAGES['certbot_dns_rfc2136']).to.equal('python3-certbot-dns-rfc2136');
    for (const b of ['redis-server', 'knotd', 'named', 'ddclient', 'inadyn', 'nginx', 'openssl']) {
      expect(DEBIAN_PACKAGES, b).to.have.property(b);
    }
  });

  it('a test may only require a binary the tables know (so that npm test installs it)', () => {
    const ctx = { skip: () => expect.fail('not a skip') };
    expect(() => requireBinariesOrSkip(ctx, ['sh'])).to.throw(/sh: add to the tables in src\/lab\/binaries\.ts/);
    expect(() => requireBinariesOrSkip(ctx, ['constructor'])).to.throw(/constructor: add to the tables/);
    expect(() => requirePythonModulesOrSkip(ctx, ['os'])).to.throw(/os: add to the tables/);
  });
});
