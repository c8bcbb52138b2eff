/**
 * User-Agent block-list matching (pure). A pattern is an exact string, or a glob where
 * `*` stands for any run of characters (possibly empty). Matching is case-sensitive:
 * block lists name exact client strings.
 */

/** True when `userAgent` matches `pattern` (exact, or `*` glob). */
export function agentMatches(pattern: string, userAgent: string): boolean {
  if (!pattern.includes('*')) return pattern === userAgent;
  return globToRegExp(pattern).test(userAgent);
}

/** A compiled block list: exact strings in a Set, globs as anchored regular expressions. */
export class AgentMatcher {
  private readonly exact: Set<string>;
  private readonly globs: RegExp[];

  constructor(patterns: Iterable<string>) {
    this.exact = new Set();
    this.globs = [];
    for (const pattern of patterns) {
      if (pattern.length === 0) continue; // an empty pattern would never be a valid agent
      if (pattern.includes('*')) this.globs.push(globToRegExp(pattern));
      else this.exact.add(pattern);
    }
  }

  matches(userAgent: string): boolean {
    if (this.exact.has(userAgent)) return true;
    for (const glob of this.globs) if (glob.test(userAgent)) return true;
    return false;
  }

  get size(): number {
    return this.exact.size + this.globs.length;
  }
}

function globToRegExp(pattern: string): RegExp {
  // Collapse runs of `*` first: `a**b` means the same and avoids needless backtracking.
  const parts = pattern.replace(/\*+/g, '*').split('*').map(escapeRegExp);
  return new RegExp(`^${parts.join('[\\s\\S]*')}$`);
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
