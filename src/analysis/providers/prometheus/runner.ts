import { PrometheusError } from "./errors.js";
import type { CheckOutcome, MetricsProvider } from "./provider.js";

/** The error outcome for a rejection: typed errors keep their reason, anything else counts as unexpected. */
export function errorOutcome(rejection: unknown): CheckOutcome {
  if (rejection instanceof PrometheusError) {
    return { kind: "error", message: rejection.message, reason: rejection.reason };
  }
  const message = rejection instanceof Error ? rejection.message : String(rejection);
  return { kind: "error", message, reason: "UnexpectedResult" };
}

/**
 * Runs every query at once and returns one outcome per query, in the same order. Never rejects: a failed
 * query (after the provider's retries) becomes `{ kind: "error", message, reason }`, so one bad check
 * cannot hide the values of the others.
 */
export function runChecks(provider: MetricsProvider, queries: readonly string[]): Promise<CheckOutcome[]> {
  return Promise.all(
    queries.map(async (promql): Promise<CheckOutcome> => {
      try {
        return await provider.query(promql);
      } catch (rejection) {
        return errorOutcome(rejection);
      }
    }),
  );
}
