/**
 * The User-Agent glob matcher (core/agents): linear, and the same answers as the former
 * RegExp compilation (`^part[\s\S]*part…$`, no flags), kept below as the oracle.
 */
import { expect } from 'chai';
import { AgentMatcher, agentMatches } from '../../src/core/agents.js';

/** The former semantics: a glob compiled to an anchored, backtracking RegExp. */
function oracle(pattern: string, userAgent: string): boolean {
  if (!pattern.includes('*')) return pattern === userAgent;
  const parts = pattern
    .replace(/\*+/g, '*')
    .split('*')
    .map((t) => t.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  return new RegExp(`^${parts.join('[\\s\\S]*')}$`).test(userAgent);
}

/** Both entry points must agree with each other (AgentMatcher ignores an empty pattern). */
function matches(pattern: string, userAgent: string): boolean {
  const single = agentMatches(pattern, userAgent);
  if (pattern.length > 0) {
    const label = `AgentMatcher ${JSON.stringify([pattern, userAgent])}`;
    expect(new AgentMatcher([pattern]).matches(userAgent), label).to.equal(single);
  }
  return single;
}

describe('core/agents glob matcher', () => {
  it('ReDoS: the crafted 7.7 KB agent against *bot*crawler*spider* gets the right answer (linear scan, no backtracking)', () => {
    const pattern = '*bot*crawler*spider*';
    const crafted = 'bot'.repeat(1000) + 'crawler'.repeat(680); // took seconds per request with the RegExp
    expect(matches(pattern, crafted)).to.equal(false);
    expect(matches(pattern, `${crafted}spider`)).to.equal(true);
    const list = new AgentMatcher(['Company - Device - Version Number', pattern]);
    expect(list.matches('x-bot/crawler+spider')).to.equal(true);
    expect(list.matches('x-Bot/crawler+spider')).to.equal(false);
  });

  it('ReDoS: a four-part glob against a 5 KB agent is answered at once (the RegExp needed minutes)', () => {
    const pattern = '*bot*crawler*spider*scanner*';
    const crafted = 'bot'.repeat(320) + 'crawler'.repeat(320) + 'spider'.repeat(320);
    expect(new AgentMatcher([pattern]).matches(crafted)).to.equal(false);
    expect(agentMatches(pattern, `${crafted}scanner`)).to.equal(true);
  });

  // [pattern, agent, matches] — each also checked against the former RegExp semantics.
  const table: [string, string, boolean][] = [
    ['Company - Device - Version Number', 'Company - Device - Version Number', true],
    ['Company - Device - Version Number', 'company - device - version number', false],
    ['Company - Device - Version Number', 'Company - Device - Version Number ', false],
    ['curl/*', 'curl/8.1.2', true],
    ['curl/*', 'curl/', true],
    ['curl/*', 'xcurl/8', false],
    ['curl/*', 'Curl/8', false],
    ['*bot*', 'Googlebot/2.1', true],
    ['*bot*', 'GoogleBOT/2.1', false],
    ['*Bot*', 'Googlebot', false],
    ['*', '', true],
    ['*', 'anything at all', true],
    ['**', '', true],
    ['a**b', 'ab', true],
    ['a**b', 'a-b', true],
    ['a*a', 'a', false],
    ['a*a', 'aa', true],
    ['ab*ba', 'aba', false],
    ['ab*ba', 'abba', true],
    ['ab*b', 'ab', false],
    ['a*ab', 'ab', false],
    ['a*ab', 'aab', true],
    ['*ab*b', 'ab', false],
    ['*ab*b', 'abb', true],
    ['*aab*ab', 'aaabab', true],
    ['a*b*c', 'abc', true],
    ['a*b*c', 'aXbYc', true],
    ['a*b*c', 'acb', false],
    ['a*b*c', 'abcx', false],
    ['*a*b*', 'ba', false],
    ['*a*b*', 'xaybz', true],
    ['a.b(c)', 'a.b(c)', true],
    ['a.b*', 'axb1', false],
    ['.*', '.x', true],
    ['.*', 'x', false],
    ['[x]*', '[x]y', true],
    ['[x]*', 'x', false],
    ['(a|b)*', '(a|b)c', true],
    ['(a|b)*', 'a', false],
    ['$*^', '$x^', true],
    ['a\\*', 'a\\b', true],
    ['a\\*', 'ab', false],
    ['+?*{2}', '+?x{2}', true],
    ['x*', 'x\nnewline', true],
    ['*\n*', 'a\nb', true],
    ['*😀*', 'x😀y', true],
    ['*😀*', 'x😁y', false],
    ['é*', 'é', true],
    ['é*', 'É', false],
  ];

  it('a table of patterns and agents: the same answers as before', () => {
    for (const [pattern, agent, expected] of table) {
      const label = JSON.stringify([pattern, agent]);
      expect(oracle(pattern, agent), `oracle ${label}`).to.equal(expected);
      expect(matches(pattern, agent), label).to.equal(expected);
    }
  });

  it('generated short patterns and agents: the same answers as the former RegExp', () => {
    // Seeded, so a failure can be replayed; short strings keep the oracle fast.
    let seed = 0x5eed;
    const rnd = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) >>> 8) / (1 << 24);
    const pick = (alphabet: string[], max: number) =>
      Array.from({ length: Math.floor(rnd() * (max + 1)) }, () => alphabet[Math.floor(rnd() * alphabet.length)]!).join(
        '',
      );
    const letters = ['a', 'b', 'A', '.', '\n', '😀'];
    for (let i = 0; i < 5000; i++) {
      const pattern = pick([...letters, '*', '*'], 7);
      const agent = pick(letters, 10);
      expect(matches(pattern, agent), JSON.stringify([pattern, agent])).to.equal(oracle(pattern, agent));
    }
  });
});
