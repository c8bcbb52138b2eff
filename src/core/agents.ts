/**
 * User-Agent block-list matching (pure). A pattern is an exact string, or a glob where
 * `*` stands for any run of characters (possibly empty). Matching is case-sensitive:
 * block lists name exact client strings.
 *
 * Globs are matched by a linear scan, never compiled to a RegExp: a backtracking regex for
 * `*a*b*c*` takes polynomial time in the agent's length, so one crafted User-Agent could
 * stall a worker for seconds (no credentials needed).
 */

/** True when `userAgent` matches `pattern` (exact, or `*` glob). */
export function agentMatches(pattern: string, userAgent: string): boolean {
  if (!pattern.includes('*')) return pattern === userAgent;
  return globMatches(compileGlob(pattern), userAgent);
}

/** A compiled block list: exact strings in a Set, globs split at their `*`. */
export class AgentMatcher {
  private readonly exact: Set<string>;
  private readonly globs: Glob[];

  constructor(patterns: Iterable<string>) {
    this.exact = new Set();
    this.globs = [];
    for (const pattern of patterns) {
      if (pattern.length === 0) continue; // an empty pattern would never be a valid agent
      if (pattern.includes('*')) this.globs.push(compileGlob(pattern));
      else this.exact.add(pattern);
    }
  }

  matches(userAgent: string): boolean {
    if (this.exact.has(userAgent)) return true;
    for (const glob of this.globs) if (globMatches(glob, userAgent)) return true;
    return false;
  }

  get size(): number {
    return this.exact.size + this.globs.length;
  }
}

/** `prefix*middle[0]*…*middle[n]*suffix`; empty middles (from `**`) are dropped. */
interface Glob {
  prefix: string;
  middle: string[];
  suffix: string;
}

function compileGlob(pattern: string): Glob {
  const parts = pattern.split('*');
  return {
    prefix: parts[0]!,
    middle: parts.slice(1, -1).filter((p) => p.length > 0),
    suffix: parts[parts.length - 1]!,
  };
}

/**
 * At most one pass over the agent per part. Taking each middle part at its leftmost
 * occurrence after the previous one is always safe with only `*` wildcards: any later
 * match would leave less room for the rest.
 */
function globMatches(glob: Glob, text: string): boolean {
  const end = text.length - glob.suffix.length; // the suffix may not overlap the prefix
  if (end < glob.prefix.length || !text.startsWith(glob.prefix) || !text.endsWith(glob.suffix)) return false;
  let at = glob.prefix.length;
  for (const part of glob.middle) {
    const found = text.indexOf(part, at);
    if (found === -1 || found + part.length > end) return false;
    at = found + part.length;
  }
  return true;
}
