/**
 * Messages per second per source address (a token bucket: `rate` a second, bursts of twice that). A gateway answer
 * is never much larger than its question, and this bounds how often a source can ask: no amplification.
 */

/** Sources remembered at most; past it, those whose bucket has refilled are forgotten. */
const MAX_SOURCES = 50_000;
const SWEEP_MS = 10_000;

export class SourceRate {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly rate: number,
    private readonly clock: () => number = () => Date.now(),
  ) {
    this.sweeper = setInterval(() => this.sweep(), SWEEP_MS);
    this.sweeper.unref();
  }

  /** Whether `source` may send one more message now. */
  take(source: string): boolean {
    const now = this.clock();
    const burst = this.rate * 2;
    const bucket = this.buckets.get(source);
    if (bucket === undefined) {
      if (this.buckets.size >= MAX_SOURCES) this.sweep();
      this.buckets.set(source, { tokens: burst - 1, at: now });
      return true;
    }
    bucket.tokens = Math.min(burst, bucket.tokens + ((now - bucket.at) / 1000) * this.rate);
    bucket.at = now;
    if (bucket.tokens < 1) return false;
    bucket.tokens -= 1;
    return true;
  }

  stop(): void {
    clearInterval(this.sweeper);
  }

  /** Forget sources whose bucket is full again: they are as good as new. */
  private sweep(): void {
    const now = this.clock();
    const burst = this.rate * 2;
    for (const [source, b] of this.buckets) {
      if (b.tokens + ((now - b.at) / 1000) * this.rate >= burst) this.buckets.delete(source);
    }
  }
}
