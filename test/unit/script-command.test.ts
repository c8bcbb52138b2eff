/**
 * ScriptCommand (src/store/script.ts): a script call written as one Buffer must be byte for byte what ioredis's own
 * command writes as a string for the same arguments: the RESP framing, and each argument's length in UTF-8 bytes
 * (a User-Agent or an account name may hold any character).
 */
import { expect } from 'chai';
import { Command } from 'ioredis';
import { blindDigest } from '../../src/store/lua.js';
import { ScriptCommand } from '../../src/store/script.js';

/** ioredis's bytes for the command (its string, as the socket would encode it) and ours. */
function bytesOf(name: string, args: string[]): { ioredis: Buffer; ours: Buffer } {
  const plain = new Command(name, args, { replyEncoding: 'utf8' });
  const ours = new ScriptCommand(name, [], { replyEncoding: 'utf8' });
  ours.args = args;
  const written = plain.toWritable({});
  return { ioredis: typeof written === 'string' ? Buffer.from(written, 'utf8') : written, ours: ours.toWritable() };
}

describe('store: a script call written as one Buffer', () => {
  it('is the same bytes as ioredis writes, for ASCII, empty, long and multibyte arguments', () => {
    const cases: string[][] = [
      ['0123456789abcdef0123456789abcdef01234567', '2', 'ddns:h:host.example.org', 'ddns:pending', 'nochg', ''],
      ['sha', '0'],
      ['sha', '1', 'k', 'x'.repeat(10_000), '9', '10', '99', '100'],
      ['sha', '1', 'ddns:a:jürgen', 'Mozilla/5.0 (ünïcödé; 日本語) 🚀', '\u00e9', '', 'a\r\nb'],
    ];
    for (const args of cases) {
      const { ioredis, ours } = bytesOf('evalsha', args);
      expect(ours.equals(ioredis), JSON.stringify(args).slice(0, 80)).to.equal(true);
    }
  });

  it('fills every byte it allocates (no stale memory from the pool reaches the socket)', () => {
    // Fill node's pool with a marker first: a byte the command did not write would show it.
    for (let i = 0; i < 64; i++) Buffer.allocUnsafe(64).fill(0xee);
    const args = ['sha', '1', 'k', blindDigest('0123456789abcdef0123456789abcdef01234567'), 'ü'];
    const { ioredis, ours } = bytesOf('evalsha', args);
    expect(ours.length).to.equal(ioredis.length);
    expect(ours.equals(ioredis)).to.equal(true);
  });
});
