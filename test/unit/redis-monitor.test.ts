/** The MONITOR line parser the command-counting integration tests rely on. */
import { expect } from 'chai';
import { parseMonitorLine } from '../support/redis-monitor.js';

describe('test support: MONITOR line parsing', () => {
  it('splits the source and the quoted arguments', () => {
    expect(
      parseMonitorLine('+1795317230.654128 [0 127.0.0.1:39154] "evalsha" "ab12" "6" "ddns:h:x.example"'),
    ).to.deep.equal({
      args: ['evalsha', 'ab12', '6', 'ddns:h:x.example'],
      source: '127.0.0.1:39154',
    });
  });

  it('names a script\'s own calls "lua"', () => {
    expect(parseMonitorLine('+1.5 [3 lua] "hget" "k" "f"')).to.deep.equal({ args: ['hget', 'k', 'f'], source: 'lua' });
  });

  it('unescapes what sdscatrepr escapes, \\xHH as bytes of UTF-8', () => {
    const line = String.raw`+1.0 [0 127.0.0.1:1] "set" "a\"b\\c\r\n\t" "\xc3\xa4" ""`;
    expect(parseMonitorLine(line)!.args).to.deep.equal(['set', 'a"b\\c\r\n\t', 'ä', '']);
  });

  it('rejects what is not a monitor line', () => {
    expect(parseMonitorLine('+OK')).to.equal(undefined);
    expect(parseMonitorLine('+1.0 [0 127.0.0.1:1] "unterminated')).to.equal(undefined);
  });
});
