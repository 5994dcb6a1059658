/**
 * Resolves with the promise's value, or with `undefined` as soon as `signal` aborts, so that a shutdown
 * never waits on a request that hangs. The promise keeps running; its late rejection is swallowed
 * (nobody is waiting for it any more).
 */
export function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T | undefined> {
  if (signal.aborted) {
    promise.catch(() => undefined);
    return Promise.resolve(undefined);
  }
  return new Promise<T | undefined>((resolve, reject) => {
    const onAbort = (): void => resolve(undefined);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        if (signal.aborted) return;
        reject(error instanceof Error ? error : new Error(String(error), { cause: error }));
      },
    );
  });
}
