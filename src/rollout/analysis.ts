import type { MetricResult } from "../api/types.js";
import type { AnalysisCheck } from "./checks.js";
import type { QueryOutcome } from "./types.js";

/** Reasons a metric result carries; "ok" when it passed a threshold. */
export type MetricReason =
  "ok" | "NoFailingSeries" | "NonEmptyResult" | "BelowMin" | "AboveMax" | "NoData" | "QueryFailed";

/** A number as people read it in a status line: at most three decimals, no trailing zeros. */
export function formatNumber(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  return String(Math.round(value * 1000) / 1000);
}

function result(check: AnalysisCheck, fields: Omit<MetricResult, "name" | "min" | "max">): MetricResult {
  return {
    name: check.name,
    ...(check.min !== undefined ? { min: check.min } : {}),
    ...(check.max !== undefined ? { max: check.max } : {}),
    ...fields,
  };
}

function scoreSeed(check: AnalysisCheck, outcome: Exclude<QueryOutcome, { kind: "error" }>): MetricResult {
  const values = outcome.kind === "value" ? [outcome.value] : outcome.kind === "values" ? outcome.values : [];
  const first = values[0];
  if (first === undefined) {
    return result(check, { passed: true, reason: "NoFailingSeries", message: "returned no failing series" });
  }
  const series = values.length === 1 ? "1 failing series" : `${values.length} failing series`;
  return result(check, {
    passed: false,
    reason: "NonEmptyResult",
    ...(Number.isFinite(first) ? { value: first } : {}),
    message: `returned ${series} (value ${formatNumber(first)})`,
  });
}

function scoreThreshold(check: AnalysisCheck, outcome: Exclude<QueryOutcome, { kind: "error" }>): MetricResult {
  const value = outcome.kind === "value" ? outcome.value : outcome.kind === "values" ? outcome.values[0] : undefined;
  if (value === undefined) {
    return result(check, { passed: false, reason: "NoData", message: "had no data" });
  }
  // 0/0 (a success rate without any request) is NaN: no traffic is no evidence, and never promotes.
  if (!Number.isFinite(value)) {
    return result(check, { passed: false, reason: "NoData", message: `had no data (${String(value)})` });
  }
  const shown = formatNumber(value);
  if (check.min !== undefined && value < check.min) {
    return result(check, {
      value,
      passed: false,
      reason: "BelowMin",
      message: `${shown} < ${formatNumber(check.min)}`,
    });
  }
  if (check.max !== undefined && value > check.max) {
    return result(check, {
      value,
      passed: false,
      reason: "AboveMax",
      message: `${shown} > ${formatNumber(check.max)}`,
    });
  }
  const bounds = [
    ...(check.min !== undefined ? [`≥ ${formatNumber(check.min)}`] : []),
    ...(check.max !== undefined ? [`≤ ${formatNumber(check.max)}`] : []),
  ];
  return result(check, { value, passed: true, reason: "ok", message: [shown, ...bounds].join(" ") });
}

/** Judges one check's raw query outcome against the check. Pure; used by the metrics code. */
export function scoreCheck(check: AnalysisCheck, outcome: QueryOutcome): MetricResult {
  if (outcome.kind === "error") {
    return result(check, { passed: false, reason: "QueryFailed", message: `query failed: ${outcome.message}` });
  }
  return check.mode === "seed" ? scoreSeed(check, outcome) : scoreThreshold(check, outcome);
}

/** What one analysis means for the test. */
export type Verdict =
  | { kind: "passed" }
  /** `decisive` is the failure to report: the first that is not merely a failed query, if any. */
  | { kind: "failed"; decisive: MetricResult }
  /** Nothing was learnt: only queries failed (and they are not to count), or no result came back. */
  | { kind: "inconclusive"; message: string };

/**
 * The analysis passes iff every result passed. When every failure is a failed query and
 * `failWhenPrometheusFails` is false, it is inconclusive: Prometheus' trouble says nothing about the image.
 * An empty result list is inconclusive too, never a pass: missing data never promotes.
 */
export function judgeAnalysis(results: readonly MetricResult[], failWhenPrometheusFails: boolean): Verdict {
  if (results.length === 0) return { kind: "inconclusive", message: "no check was run" };
  const failures = results.filter((r) => !r.passed);
  const first = failures[0];
  if (first === undefined) return { kind: "passed" };
  const real = failures.find((r) => r.reason !== "QueryFailed");
  if (real !== undefined) return { kind: "failed", decisive: real };
  if (failWhenPrometheusFails) return { kind: "failed", decisive: first };
  return { kind: "inconclusive", message: failures.map(describeResult).join("; ") };
}

/** One result as a phrase: "request-success-rate 99.7 ≥ 99", "prometheusQuery returned 1 failing series (value 7)". */
export function describeResult(r: MetricResult): string {
  if (r.message !== undefined && r.message !== "") return `${r.name} ${r.message}`;
  if (r.value !== undefined) return `${r.name} ${formatNumber(r.value)} (${r.reason})`;
  return `${r.name} ${r.reason}`;
}
