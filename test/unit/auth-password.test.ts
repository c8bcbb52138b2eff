import { expect } from 'chai';
import { scryptSync } from 'node:crypto';
import { hashPassword, isPasswordHash, passwordHashCost, verifyPassword } from '../../src/auth/index.js';

const FAST = { ln: 10, r: 8, p: 1 };

describe('auth/password', () => {
  it('writes the self-describing scrypt format', async () => {
    const stored = await hashPassword('s3cret', FAST);
    const m = /^\$scrypt\$ln=10,r=8,p=1\$([A-Za-z0-9+/]+)\$([A-Za-z0-9+/]+)$/.exec(stored);
    expect(m, stored).to.not.equal(null);
    expect(Buffer.from(m![1]!, 'base64')).to.have.length(16);
    expect(Buffer.from(m![2]!, 'base64')).to.have.length(32);
    expect(stored).to.not.include('s3cret');
    expect(passwordHashCost(stored)).to.deep.equal(FAST);
  });

  it('derives exactly scrypt(password, salt, N=2^ln, r, p)', async () => {
    const stored = await hashPassword('pässword', FAST);
    const [, , , salt, hash] = stored.split('$');
    const expected = scryptSync('pässword', Buffer.from(salt!, 'base64'), 32, { N: 1024, r: 8, p: 1 });
    expect(Buffer.from(hash!, 'base64').equals(expected)).to.equal(true);
  });

  it('verifies the right password and rejects others', async () => {
    const stored = await hashPassword('correct horse', FAST);
    expect(await verifyPassword('correct horse', stored)).to.equal(true);
    expect(await verifyPassword('correct horse ', stored)).to.equal(false);
    expect(await verifyPassword('', stored)).to.equal(false);
  });

  it('uses a fresh salt every time', async () => {
    const a = await hashPassword('same', FAST);
    const b = await hashPassword('same', FAST);
    expect(a).to.not.equal(b);
    expect(await verifyPassword('same', a)).to.equal(true);
    expect(await verifyPassword('same', b)).to.equal(true);
  });

  it('reads the cost back from the string (a hash made at another cost still verifies)', async () => {
    const stored = await hashPassword('pw', { ln: 11, r: 4, p: 2 });
    expect(stored.startsWith('$scrypt$ln=11,r=4,p=2$')).to.equal(true);
    expect(await verifyPassword('pw', stored)).to.equal(true);
  });

  it('verifies the default cost (ln=15, needs maxmem above the 32 MiB default)', async () => {
    const stored = await hashPassword('default cost');
    expect(stored.startsWith('$scrypt$ln=15,r=8,p=1$')).to.equal(true);
    expect(await verifyPassword('default cost', stored)).to.equal(true);
  });

  it('rejects unknown formats and out-of-bounds parameters', async () => {
    const good = await hashPassword('pw', FAST);
    const salt = good.split('$')[3]!;
    const hash = good.split('$')[4]!;
    const bad = [
      '',
      'pw',
      '$2b$10$abcdefghijklmnopqrstuuOQ8Y4Z3NfVd5p9x0JX3t2E4pKu3M9yG',
      `$scrypt$ln=10,r=8$${salt}$${hash}`,
      `$scrypt$ln=40,r=8,p=1$${salt}$${hash}`,
      `$scrypt$ln=0,r=8,p=1$${salt}$${hash}`,
      `$scrypt$ln=20,r=999,p=1$${salt}$${hash}`,
      `$scrypt$ln=10,r=8,p=1$${salt}`,
      `$scrypt$ln=10,r=8,p=1$${salt}$not*base64`,
      `$argon2id$v=19$m=65536,t=3,p=4$${salt}$${hash}`,
    ];
    for (const stored of bad) {
      expect(isPasswordHash(stored), stored).to.equal(false);
      expect(await verifyPassword('pw', stored), stored).to.equal(false);
    }
    expect(isPasswordHash(good)).to.equal(true);
  });

  it('refuses to hash with an out-of-range cost', async () => {
    let error: unknown;
    try {
      await hashPassword('pw', { ln: 31, r: 8, p: 1 });
    } catch (err) {
      error = err;
    }
    expect(error).to.be.instanceOf(RangeError);
  });
});
