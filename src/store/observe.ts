/**
 * Who hears of every store call (storeCall in redis.ts: commands, pipelines, scripts): its
 * operation, time and failure, for the metrics (docs/operators.md, "Metrics"). Module-level as
 * storeCall is: every bridge of the process that observes hears every call.
 */
import { performance } from 'node:perf_hooks';

/** One store call finished: its operation name (`host get`, a script's), seconds, and whether it failed. */
export type StoreCallObserver = (operation: string, seconds: number, failed: boolean) => void;

const observers = new Set<StoreCallObserver>();

/** Hear every store call from now on; returns the function that stops it. */
export function observeStoreCalls(observer: StoreCallObserver): () => void {
  observers.add(observer);
  return () => {
    observers.delete(observer);
  };
}

/** What storeCall reads before the call: performance.now(), or 0 while nobody listens. */
export function storeCallStart(): number {
  return observers.size === 0 ? 0 : performance.now();
}

/** Tell the observers a call that started at `startedAt` (storeCallStart) finished. */
export function storeCallDone(operation: string, startedAt: number, failed: boolean): void {
  if (observers.size === 0 || startedAt === 0) return;
  const seconds = (performance.now() - startedAt) / 1000;
  for (const observe of observers) observe(operation, seconds, failed);
}
