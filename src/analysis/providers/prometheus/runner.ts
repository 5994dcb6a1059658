import type { SampleRange } from "../../checks.js";
import { PrometheusError, UnexpectedResultError } from "./errors.js";
import type { CheckOutcome, MetricsProvider } from "./provider.js";

/** The error outcome for a rejection: typed errors keep their reason, anything else counts as unexpected. */
export function errorOutcome(rejection: unknown): CheckOutcome {
  if (rejection instanceof PrometheusError) {
    return { kind: "error", message: rejection.message, reason: rejection.reason };
  }
  const message = rejection instanceof Error ? rejection.message : String(rejection);
  return { kind: "error", message, reason: "UnexpectedResult" };
}

/** A query to be answered with samples over a range (a judged metric's). */
export interface RangeQuery {
  query: string;
  range: SampleRange;
}

/**
 * Runs every query at once and returns one outcome per query, in the same order. Never rejects: a failed
 * query (after the provider's retries) becomes `{ kind: "error", message, reason }`, so one bad check
 * cannot hide the values of the others.
 */
export function runChecks(
  provider: MetricsProvider,
  queries: readonly (string | RangeQuery)[],
): Promise<CheckOutcome[]> {
  return Promise.all(
    queries.map(async (one): Promise<CheckOutcome> => {
      try {
        if (typeof one === "string") return await provider.query(one);
        if (provider.queryRange === undefined) throw new UnexpectedResultError("this provider answers no ranges");
        return await provider.queryRange(one.query, one.range);
      } catch (rejection) {
        return errorOutcome(rejection);
      }
    }),
  );
}
