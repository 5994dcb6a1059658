import pRetry from "p-retry";
import type { Logger } from "pino";
import { PrometheusError } from "./errors.js";

/** How hard a provider retries a transient failure. Kept short: a reconcile waits for the answer. */
export interface RetryPolicy {
  /** Retries after the first attempt. */
  retries: number;
  /** Delay before the first retry, in milliseconds; each next one is `factor` times longer. */
  minTimeoutMs: number;
  factor: number;
  /** No retry is started once this much time has passed since the first attempt. */
  maxRetryTimeMs: number;
}

/** 4 attempts at most, 200 + 400 + 800 ms apart: about 1.4 s of waiting on top of the attempts. */
export const DEFAULT_RETRY_POLICY: RetryPolicy = { retries: 3, minTimeoutMs: 200, factor: 2, maxRetryTimeMs: 10_000 };

/**
 * Runs `attempt` until it succeeds, fails with an error that is not retryable, or the policy is spent.
 * `attempt` must reject with `PrometheusError`s only (normalised beforehand): anything else is not retried.
 */
export function retryTransient<T>(
  attempt: () => Promise<T>,
  policy: RetryPolicy,
  log: Logger | undefined,
  context: Record<string, unknown>,
): Promise<T> {
  return pRetry(attempt, {
    retries: policy.retries,
    minTimeout: policy.minTimeoutMs,
    factor: policy.factor,
    maxRetryTime: policy.maxRetryTimeMs,
    // A pending retry must not keep a stopping controller alive.
    unref: true,
    shouldRetry: ({ error }) => error instanceof PrometheusError && error.retryable,
    onFailedAttempt: ({ error, attemptNumber, retriesLeft, retryDelay }) => {
      const retryable = error instanceof PrometheusError && error.retryable;
      log?.debug(
        { ...context, attempt: attemptNumber, retriesLeft, retryDelayMs: retryable ? retryDelay : 0, err: error },
        "metrics query attempt failed",
      );
    },
  });
}
