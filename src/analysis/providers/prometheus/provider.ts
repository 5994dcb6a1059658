/**
 * The metrics provider contract. A provider answers one PromQL query with numbers, or rejects with a typed
 * `PrometheusError` (errors.ts) once its retries are spent: it never resolves an error. `runChecks`
 * (runner.ts) is the adapter that turns rejections into `{ kind: "error" }` outcomes for the planner, so
 * the retry policy and the error kinds stay visible to whoever calls `query` directly.
 */
import type { SampleRange } from "../../checks.js";
import type { QueryOutcome } from "../../outcome.js";
import type { PrometheusErrorReason } from "./errors.js";

/** What a successful query yields: the non-error part of `QueryOutcome`. */
export type DataOutcome = Exclude<QueryOutcome, { kind: "error" }>;

/**
 * A `QueryOutcome` whose error case also says why (`reason`), so a caller can tell "Prometheus is down"
 * (which `failWhenPrometheusFails` governs) from "the query is wrong". Assignable to `QueryOutcome`.
 */
export type CheckOutcome = DataOutcome | { kind: "error"; message: string; reason: PrometheusErrorReason };

export interface MetricsProvider {
  /**
   * Evaluates `promql` as an instant query. Resolves `value` (a scalar or a single series), `values` (several
   * series, in Prometheus' order) or `empty`; NaN and ±Inf are passed through as numbers. Rejects with a
   * `PrometheusError` after transient failures have been retried.
   */
  query(promql: string): Promise<DataOutcome>;
  /**
   * Evaluates `promql` over `range` (`/api/v1/query_range`): `samples`, the one series' values in time order, or
   * `empty`. Several series reject with `UnexpectedResultError`: a judged metric measures one track.
   */
  queryRange?(promql: string, range: SampleRange): Promise<DataOutcome>;
}
