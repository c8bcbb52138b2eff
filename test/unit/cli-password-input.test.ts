/** cli/password-input: the password line from stdin, and the limits updates can carry. */
import { expect } from 'chai';
import { Readable } from 'node:stream';
import { readPassword } from '../../src/cli/password-input.js';
import { MAX_PASSWORD_LENGTH } from '../../src/core/limits.js';
import { parseBasicAuth } from '../../src/http/request.js';

/** stdin that is not a terminal, holding `text`. */
const stdin = (text: string) => Readable.from([text]) as unknown as NodeJS.ReadStream;

async function rejection(text: string): Promise<Error> {
  try {
    await readPassword('Password: ', stdin(text));
  } catch (err) {
    return err as Error;
  }
  return expect.fail(`expected ${JSON.stringify(text.slice(0, 20))}… to be refused`);
}

const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

describe('cli/password-input', () => {
  it('reads one line from stdin (CR LF or LF), the rest ignored', async () => {
    expect(await readPassword('Password: ', stdin('s3cret\r\nnext\n'))).to.equal('s3cret');
    expect(await readPassword('Password: ', stdin('no newline'))).to.equal('no newline');
  });

  it('refuses an empty password', async () => {
    expect((await rejection('\n')).message).to.equal('empty password');
  });

  it(`takes a password of ${MAX_PASSWORD_LENGTH} characters, also multi-byte ones`, async () => {
    const ascii = 'p'.repeat(MAX_PASSWORD_LENGTH);
    const euros = '€'.repeat(MAX_PASSWORD_LENGTH);
    expect(await readPassword('Password: ', stdin(`${ascii}\n`))).to.equal(ascii);
    expect(await readPassword('Password: ', stdin(`${euros}\n`))).to.equal(euros);
  });

  it('refuses a longer password with a clear message, without repeating it', async () => {
    const long = 'q'.repeat(1100);
    const err = await rejection(`${long}\n`);
    expect(err.message).to.equal(`password too long: 1100 characters, at most ${MAX_PASSWORD_LENGTH}`);
    expect(err.message).to.not.include('qqqqqqqq');
    expect((await rejection(`${'€'.repeat(MAX_PASSWORD_LENGTH + 1)}\n`)).message).to.match(/^password too long/);
  });

  it('the limit is the one updates enforce: the longest accepted password still logs in', () => {
    for (const pw of ['p'.repeat(MAX_PASSWORD_LENGTH), '€'.repeat(MAX_PASSWORD_LENGTH)]) {
      expect(parseBasicAuth(basic('lena', pw))).to.deep.equal({ user: 'lena', password: pw });
    }
    expect(parseBasicAuth(basic('lena', 'p'.repeat(MAX_PASSWORD_LENGTH + 1)))).to.equal('malformed');
  });
});
