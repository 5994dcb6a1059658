/** A pass run again and again until stopped: the loop of the stand-ins for kube-controller-manager. */
export interface Repeating {
  /** The last error of a pass, or one it noted (conflicts with the controller's own writes are expected). */
  lastError(): unknown;
  /** Ends the loop after the pass in progress. */
  stop(): Promise<void>;
}

/**
 * Runs `pass` every `intervalMs` until stopped. A pass that throws is run again on the next round; one that
 * goes on after an error notes it with `noteError`.
 */
export function repeat(pass: (noteError: (error: unknown) => void) => Promise<void>, intervalMs: number): Repeating {
  let error: unknown;
  let stopped = false;
  const noteError = (e: unknown): void => {
    error = e;
  };
  const loop = (async () => {
    while (!stopped) {
      try {
        await pass(noteError);
      } catch (e) {
        error = e;
      }
      await new Promise((resolve) => setTimeout(resolve, intervalMs));
    }
  })();
  return {
    lastError: () => error,
    stop: async () => {
      stopped = true;
      await loop;
    },
  };
}
