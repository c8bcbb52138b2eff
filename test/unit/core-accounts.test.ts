/** The one account-name rule and the scrypt cost bound of import-all (src/core/accounts.ts). */
import { expect } from 'chai';
import { DEFAULT_SCRYPT_COST, hashPassword } from '../../src/auth/index.js';
import { isAccountName, MAX_SCRYPT_COST, scryptCostProblem } from '../../src/core/accounts.js';

describe('core: accounts', () => {
  it('account names: 1-64 of letters, digits and . _ @ + -, a letter or digit first', () => {
    for (const name of ['a', 'ann', 'Ann.Smith', 'x_y', 'me@example.org', 'a+b-c', '9', 'a'.repeat(64)]) {
      expect(isAccountName(name), name).to.equal(true);
    }
    for (const name of ['', '-a', '.a', '*x', '{a}', 'a:b', 'a b', ' a', 'a\n', 'ä', 'a/b', 'a'.repeat(65)]) {
      expect(isAccountName(name), JSON.stringify(name)).to.equal(false);
    }
  });

  it('the scrypt bound is what account add writes (auth DEFAULT_SCRYPT_COST), and its hashes pass it', async () => {
    expect({ ...MAX_SCRYPT_COST }).to.deep.equal({ ...DEFAULT_SCRYPT_COST });
    expect(scryptCostProblem(await hashPassword('pw'))).to.equal(undefined);
    expect(scryptCostProblem(await hashPassword('pw', { ln: 4, r: 8, p: 1 }))).to.equal(undefined);
  });

  it('a cost above the bound in any parameter is named', () => {
    const hash = (cost: string) => `$scrypt$${cost}$c2FsdHNhbHRzYWx0c2FsdA$aGFzaGhhc2hoYXNoaGFzaA`;
    expect(scryptCostProblem(hash('ln=20,r=4,p=16'))).to.equal(
      'its scrypt cost ln=20,r=4,p=16 is above ln=15,r=8,p=1 (what account add writes; each parameter at most that)',
    );
    for (const cost of ['ln=16,r=8,p=1', 'ln=15,r=9,p=1', 'ln=15,r=8,p=2', 'ln=14,r=16,p=1']) {
      expect(scryptCostProblem(hash(cost)), cost).to.be.a('string');
    }
    expect(scryptCostProblem(hash('ln=15,r=8,p=1'))).to.equal(undefined);
  });
});
