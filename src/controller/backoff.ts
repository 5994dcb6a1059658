/**
 * The controller's one backoff: after the n-th failure in a row, wait `initialMs · 2^(n − 1)`, at most `maxMs`
 * (client-go's ItemExponentialFailureRateLimiter and its reflector's backoff, without jitter). The workqueue's
 * per-key retries and the informer's lists and watches use it; calls retried in place go through p-retry
 * (analysis/providers/prometheus/retry.ts, webhooks/post.ts), whose `minTimeout · factor^(attempt − 1)` is the
 * same curve.
 */
export function backoffMs(failures: number, initialMs: number, maxMs: number): number {
  if (failures < 1) return 0;
  // 2^n overflows to Infinity for a large n; the cap keeps the delay finite.
  return Math.min(initialMs * 2 ** (failures - 1), maxMs);
}
