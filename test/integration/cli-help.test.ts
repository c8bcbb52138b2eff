/**
 * `ddns-bridge --help` and each command's help never break a word, at any width (issue 28,
 * item 7): a word cut in two shows as two tokens, so the words of the help must be the same at
 * every width, and the descriptions known to have been cut ("prove each zo / ne key") read whole.
 */
import { expect } from 'chai';
import { runCli } from '../support/bridge.js';

const COMMANDS = [[], ['account'], ['host'], ['token', 'add'], ['export'], ['check'], ['reconcile'], ['demo']];
const WIDTHS = [20, 41, 57, 80, 132];

const words = (text: string): string[] => text.split(/\s+/).filter(Boolean).sort();

describe('cli: help text at every terminal width', function () {
  this.timeout(60_000);

  for (const command of COMMANDS) {
    it(`ddns-bridge ${[...command, '--help'].join(' ')}: the same words at widths ${WIDTHS.join(', ')}`, async () => {
      const outputs = await Promise.all(
        WIDTHS.map((w) => runCli([...command, '--help'], undefined, { COLUMNS: String(w) })),
      );
      for (const r of outputs) expect(r.code, r.stderr).to.equal(0);
      const reference = words(outputs[WIDTHS.indexOf(80)]!.stdout);
      outputs.forEach((r, i) => expect(words(r.stdout), `width ${WIDTHS[i]}:\n${r.stdout}`).to.deep.equal(reference));
      // Nor glued to a hint: `stored state[boolean]` was two words run together.
      for (const r of outputs) expect(r.stdout).not.to.match(/[\w)]\[(boolean|string|number|default|required|array)/);
      // No line is longer than 80 columns unless one word is longer than its column.
      if (command.length === 0) {
        const text80 = outputs[WIDTHS.indexOf(80)]!.stdout;
        expect(text80).to.include('prove each\n').and.include('zone key against its primary');
        expect(text80).to.match(/compare each zone \(a signed transfer\) with\n\s+Redis;/);
        expect(Math.max(...text80.split('\n').map((l) => l.length))).to.be.at.most(80);
      }
    });
  }
});
