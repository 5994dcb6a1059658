/**
 * Time as a dependency. Everything in the controller runtime that waits or reads the time takes a `Clock`,
 * so tests move time forward by hand instead of sleeping (see controller/fake-clock.test-helpers.ts).
 */

/** A scheduled callback that can be cancelled. */
export interface Timer {
  cancel(): void;
}

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Runs `fn` once after `delayMs` (at least zero). */
  schedule(fn: () => void, delayMs: number): Timer;
}

/** The real clock: `Date.now` and `setTimeout`. */
export const systemClock: Clock = {
  now: () => Date.now(),
  schedule(fn, delayMs) {
    const handle = setTimeout(fn, Math.max(0, delayMs));
    return { cancel: () => clearTimeout(handle) };
  },
};

/**
 * Resolves after `delayMs` on `clock`, or as soon as `signal` aborts (it never rejects: callers check
 * `signal.aborted` afterwards, so a shutdown during a backoff is not an error).
 */
export function sleep(clock: Clock, delayMs: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const onAbort = (): void => {
      timer.cancel();
      resolve();
    };
    const timer = clock.schedule(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, delayMs);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
