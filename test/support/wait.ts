/**
 * Waiting on a condition instead of a fixed sleep (issue 28): a test goes on as soon as what it
 * needs holds, and still fails, naming what it waited for, when it never does.
 */

export interface WaitOptions {
  /** What is waited for, for the error message ("the serve process to refresh its block list"). */
  what: string;
  /** Give up after this long (default 10 s). */
  timeoutMs?: number;
  /** Pause between two checks (default 20 ms). */
  intervalMs?: number;
}

/**
 * Resolves with the first truthy value `check` returns, checking at once and then every
 * `intervalMs`; rejects once `timeoutMs` has passed without one. An exception thrown by `check`
 * fails the wait at once (a probe that can fail transiently should catch its own errors). The
 * assertion a test makes belongs after the wait: the wait says only that it is time to look.
 */
export async function waitFor<T>(check: () => T | Promise<T>, opts: WaitOptions): Promise<NonNullable<T>> {
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const intervalMs = opts.intervalMs ?? 20;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() >= deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${opts.what}`);
    await new Promise<void>((r) => setTimeout(r, intervalMs));
  }
}
