/**
 * Passwords come from stdin (one line) when it is not a terminal, else from a prompt
 * without echo. Never from argv.
 */
import { MAX_PASSWORD_LENGTH } from '../core/limits.js';

export async function readPassword(prompt: string, input: NodeJS.ReadStream = process.stdin): Promise<string> {
  const password = input.isTTY ? await promptHidden(prompt, input) : await readLine(input);
  if (password.length === 0) throw new Error('empty password');
  // Updates refuse a longer one as malformed credentials: the account could never log in.
  if (password.length > MAX_PASSWORD_LENGTH) {
    throw new Error(`password too long: ${password.length} characters, at most ${MAX_PASSWORD_LENGTH}`);
  }
  return password;
}

async function readLine(input: NodeJS.ReadableStream): Promise<string> {
  let data = '';
  for await (const chunk of input) {
    data += chunk.toString();
    const nl = data.indexOf('\n');
    if (nl !== -1) return data.slice(0, nl).replace(/\r$/, '');
  }
  return data.replace(/\r$/, '');
}

function promptHidden(prompt: string, input: NodeJS.ReadStream): Promise<string> {
  return new Promise((resolve, reject) => {
    process.stderr.write(prompt);
    input.setRawMode(true);
    input.resume();
    let value = '';
    const onData = (buf: Buffer) => {
      for (const ch of buf.toString('utf8')) {
        if (ch === '\r' || ch === '\n') return finish(() => resolve(value));
        if (ch === '\u0003') return finish(() => reject(new Error('interrupted')));
        if (ch === '\u007f' || ch === '\b') value = value.slice(0, -1);
        else value += ch;
      }
    };
    const finish = (done: () => void) => {
      input.off('data', onData);
      input.setRawMode(false);
      input.pause();
      process.stderr.write('\n');
      done();
    };
    input.on('data', onData);
  });
}
