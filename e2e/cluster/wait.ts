import { setTimeout as sleep } from "node:timers/promises";

/** Options of {@link waitFor}. */
export interface WaitOptions {
  timeoutMs: number;
  intervalMs?: number;
  /** Checked on every round; a string ends the wait at once with that reason (e.g. "etcd exited"). */
  abort?: () => string | undefined;
}

/**
 * Polls `probe` until it returns a value other than undefined. Errors thrown by the probe count as "not yet";
 * the last one is the cause of the timeout error, so a timeout still says what went wrong.
 */
export async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, opts: WaitOptions): Promise<T> {
  const deadline = Date.now() + opts.timeoutMs;
  let lastError: unknown;
  for (;;) {
    const reason = opts.abort?.();
    if (reason !== undefined) throw new Error(`${what}: ${reason}`, { cause: lastError });
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() >= deadline) {
      throw new Error(`${what}: not done after ${opts.timeoutMs / 1000}s`, { cause: lastError });
    }
    await sleep(opts.intervalMs ?? 100);
  }
}
