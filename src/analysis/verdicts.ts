import type { MetricResult } from "../api/types.js";
import type { AnalysisCheck } from "./checks.js";
import { Z_CRITICAL, judgeComparison, readFigures } from "./comparison.js";
import { formatNumber } from "./format.js";
import { decisiveForScore, judgePair, scoreResult, scoredByTheScore } from "./judged.js";
import type { QueryOutcome } from "./outcome.js";

/** Reasons a metric result carries; "ok" when it passed a threshold. */
export type MetricReason =
  | "ok"
  | "TrafficShown"
  | "NoTraffic"
  | "TooFewRequests"
  | "NoFailingSeries"
  | "NonEmptyResult"
  | "BelowMin"
  | "AboveMax"
  | "NoData"
  | "QueryFailed"
  | "ErrorRatioWorse"
  | "LatencyWorse"
  | "TooFewSamples"
  | "LatencyUnmeasured"
  | "WebhookAnswered"
  | "WebhookRejected"
  | "Increased"
  | "Decreased"
  | "ScorePassed"
  | "ScoreMarginal"
  | "ScoreFailed"
  | "CriticalMetricFailed"
  | "ScoreUnjudged";

/** Reasons that are a rule broken by what was measured: they fail a step, evidence of traffic or not. */
const VIOLATIONS: ReadonlySet<string> = new Set<MetricReason>([
  "NonEmptyResult",
  "BelowMin",
  "AboveMax",
  "ErrorRatioWorse",
  "LatencyWorse",
  "WebhookRejected",
  "ScoreFailed",
  "CriticalMetricFailed",
]);

/** Reasons of a comparison that reached no verdict: the analysis is inconclusive, never passed. */
const UNJUDGED: ReadonlySet<string> = new Set<MetricReason>(["TooFewSamples", "LatencyUnmeasured", "ScoreUnjudged"]);

export { formatNumber } from "./format.js";

function thresholdRule(check: AnalysisCheck): string {
  return [
    ...(check.min !== undefined ? [`≥ ${formatNumber(check.min)}`] : []),
    ...(check.max !== undefined ? [`≤ ${formatNumber(check.max)}`] : []),
  ].join(" and ");
}

/** The rule a check's value is judged by, in words. */
export function checkRule(check: AnalysisCheck): string {
  switch (check.mode) {
    case "traffic":
      return `≥ ${formatNumber(check.min ?? 1)} requests to the secondary in the step`;
    case "seed":
      return "no series (any series is a failure)";
    case "threshold":
      return `every series ${thresholdRule(check)}`;
    case "webhook":
      return "answers 2xx";
    case "judge":
      return "the secondary's samples not shifted from the primary's (Mann-Whitney U, ADR 0030)";
    case "compare": {
      const c = check.compare;
      return c === undefined
        ? "secondary no worse than the primary"
        : `≥ ${c.minSamples} requests on each track; the secondary's 5xx ratio not above the primary's (one-sided two-proportion z ≤ ${Z_CRITICAL}, or at most ${c.errorMarginPercent} points more); p99 ratio ≤ ${c.latencyRatioMax}${
            c.latencyMaxMs !== undefined
              ? ` (without a primary p99: ≤ ${formatNumber(c.latencyMaxMs)} ms)`
              : " (no verdict without a p99 on both tracks)"
          }`;
    }
  }
}

function result(check: AnalysisCheck, fields: Omit<MetricResult, "name" | "min" | "max">): MetricResult {
  return {
    name: check.name,
    kind: check.mode,
    ...(check.min !== undefined ? { min: check.min } : {}),
    ...(check.max !== undefined ? { max: check.max } : {}),
    ...fields,
    query: check.query,
    ...(check.window !== undefined ? { window: check.window } : {}),
    rule: checkRule(check),
    ...(check.template !== undefined ? { template: check.template } : {}),
  };
}

type DataOutcome = Exclude<QueryOutcome, { kind: "error" }>;

function valuesOf(outcome: DataOutcome): number[] {
  return outcome.kind === "value" ? [outcome.value] : outcome.kind === "values" ? outcome.values : [];
}

function scoreTraffic(check: AnalysisCheck, outcome: DataOutcome): MetricResult {
  const needed = check.min ?? 1;
  const within = check.window !== undefined ? ` in ${check.window}` : "";
  // Several series (a user's query without sum()): the requests are their total.
  const values = valuesOf(outcome).filter((v) => Number.isFinite(v));
  if (values.length === 0) {
    return result(check, {
      passed: false,
      reason: "NoTraffic",
      message: `found no requests to the secondary${within} (no data; ${formatNumber(needed)} needed)`,
    });
  }
  const requests = values.reduce((a, b) => a + b, 0);
  const fields = { value: requests, sampleSize: requests };
  if (requests < needed) {
    return result(check, {
      ...fields,
      passed: false,
      reason: "TooFewRequests",
      message: `${formatNumber(requests)} requests to the secondary${within} < ${formatNumber(needed)} needed`,
    });
  }
  return result(check, {
    ...fields,
    passed: true,
    reason: "TrafficShown",
    message: `${formatNumber(requests)} requests to the secondary${within} ≥ ${formatNumber(needed)}`,
  });
}

function scoreSeed(check: AnalysisCheck, outcome: DataOutcome): MetricResult {
  const values = valuesOf(outcome);
  const first = values[0];
  if (first === undefined) {
    return result(check, { passed: true, reason: "NoFailingSeries", message: "returned no failing series" });
  }
  const series = values.length === 1 ? "1 failing series" : `${values.length} failing series`;
  const labels = outcome.kind === "values" ? outcome.labels : undefined;
  return result(check, {
    passed: false,
    reason: "NonEmptyResult",
    ...(Number.isFinite(first) ? { value: first } : {}),
    ...(values.length > 1 ? { values } : {}),
    ...(labels !== undefined ? { failingSeries: labels } : {}),
    message: `returned ${series} (value ${formatNumber(first)})`,
  });
}

/** Why one series' value breaks the check's rule, or undefined when it keeps it. */
function violation(check: AnalysisCheck, value: number): { reason: MetricReason; text: string } | undefined {
  const shown = formatNumber(value);
  if (check.min !== undefined && value < check.min) {
    return { reason: "BelowMin", text: `${shown} < ${formatNumber(check.min)}` };
  }
  if (check.max !== undefined && value > check.max) {
    return { reason: "AboveMax", text: `${shown} > ${formatNumber(check.max)}` };
  }
  return undefined;
}

/**
 * Every series is judged, in the order Prometheus gave them; the check fails if any breaks the rule, and
 * names the series that did. A NaN series (0/0: a ratio without requests) is no data, never a pass.
 */
function scoreThreshold(check: AnalysisCheck, outcome: DataOutcome): MetricResult {
  const values = valuesOf(outcome);
  const labels = outcome.kind === "values" ? outcome.labels : undefined;
  const many = values.length > 1 ? { values } : {};
  const first = values[0];
  if (first === undefined) {
    return result(check, { passed: false, reason: "NoData", message: "had no data" });
  }
  const broken: { index: number; reason: MetricReason; text: string }[] = [];
  values.forEach((value, index) => {
    const v = Number.isFinite(value) ? violation(check, value) : undefined;
    if (v !== undefined) broken.push({ index, ...v });
  });
  const worst = broken[0];
  if (worst !== undefined) {
    const names = broken.map((b) => labels?.[b.index] ?? `series ${b.index + 1}`);
    const value = values[worst.index] ?? first;
    const where = values.length > 1 ? `${names.join(", ")}: ` : "";
    const count = values.length > 1 ? ` (${broken.length} of ${values.length} series)` : "";
    return result(check, {
      value,
      ...many,
      passed: false,
      reason: worst.reason,
      ...(values.length > 1 ? { failingSeries: names } : {}),
      message: `${where}${worst.text}${count}`,
    });
  }
  // 0/0 (a success rate without any request) is NaN: no traffic is no evidence, and never promotes.
  const unmeasured = values.findIndex((v) => !Number.isFinite(v));
  if (unmeasured >= 0) {
    const name = values.length > 1 ? ` for ${labels?.[unmeasured] ?? `series ${unmeasured + 1}`}` : "";
    return result(check, {
      ...many,
      passed: false,
      reason: "NoData",
      message: `had no data${name} (${String(values[unmeasured])})`,
    });
  }
  const bounds = thresholdRule(check);
  const shown = values.length > 1 ? `${values.length} series, all` : formatNumber(first);
  return result(check, {
    value: first,
    ...many,
    passed: true,
    reason: "ok",
    message: [shown, ...(bounds === "" ? [] : [bounds.replace(" and ", " ")])].join(" "),
  });
}

/** A webhook's outcome is the HTTP status it answered with (after its retries): 2xx passes. */
function scoreWebhook(check: AnalysisCheck, outcome: DataOutcome): MetricResult {
  const status = valuesOf(outcome)[0];
  if (status === undefined) return result(check, { passed: false, reason: "NoData", message: "gave no answer" });
  const ok = status >= 200 && status < 300;
  return result(check, {
    value: status,
    passed: ok,
    reason: ok ? "WebhookAnswered" : "WebhookRejected",
    message: `answered ${formatNumber(status)}`,
  });
}

/** Judges one check's raw query outcome against the check. Pure; used by the metrics code. */
export function scoreCheck(check: AnalysisCheck, outcome: QueryOutcome): MetricResult {
  if (outcome.kind === "error") {
    const what = check.mode === "webhook" ? "call" : "query";
    return result(check, { passed: false, reason: "QueryFailed", message: `${what} failed: ${outcome.message}` });
  }
  switch (check.mode) {
    case "traffic":
      return scoreTraffic(check, outcome);
    case "seed":
      return scoreSeed(check, outcome);
    case "threshold":
      return scoreThreshold(check, outcome);
    case "webhook":
      return scoreWebhook(check, outcome);
    case "judge":
      // A judged metric is its two tracks' samples together: never a verdict from one of them.
      return result(check, { passed: false, reason: "NoData", message: "judged with the other track's samples" });
    case "compare":
      return result(
        check,
        judgeComparison(
          readFigures(outcome),
          check.compare ?? { minSamples: 1, errorMarginPercent: 0, latencyRatioMax: 1 },
        ),
      );
  }
}

/**
 * Scores every check of one analysis (one outcome a check, in order) and gives each result the sample size
 * the traffic check measured, so that every figure in status says how many requests it stands on.
 */
export function scoreAnalysis(checks: readonly AnalysisCheck[], outcomes: readonly QueryOutcome[]): MetricResult[] {
  const outcomeOf = (i: number): QueryOutcome =>
    outcomes[i] ?? { kind: "error", message: "the analysis provider returned no outcome" };
  const results: MetricResult[] = [];
  const judged: { check: AnalysisCheck; outcome: ReturnType<typeof judgePair>["outcome"] }[] = [];
  const primaries = new Map<string, number>();
  checks.forEach((check, i) => {
    if (check.mode !== "judge") {
      results.push(scoreCheck(check, outcomeOf(i)));
      return;
    }
    if (check.track === "primary") {
      primaries.set(check.name, i);
      return;
    }
    // The secondary's check comes after its primary's (analysisChecks): the pair is judged where it stands.
    const p = primaries.get(check.name);
    const primary = p === undefined ? undefined : checks[p];
    if (p === undefined || primary === undefined) {
      results.push(scoreCheck(check, { kind: "error", message: "the primary's samples were not asked for" }));
      return;
    }
    const pair = judgePair({
      primary,
      secondary: check,
      primaryOutcome: outcomeOf(p),
      secondaryOutcome: outcomeOf(i),
    });
    results.push(pair.result);
    judged.push({ check, outcome: pair.outcome });
  });
  // Judged metrics whose queries all failed have no score: they fail (or wait) as failed queries do.
  if (judged.some((j) => j.outcome !== "error")) results.push(scoreResult(judged));
  const sampleSize = results.find((r) => r.kind === "traffic")?.sampleSize;
  if (sampleSize === undefined) return results;
  return results.map((r) => (r.sampleSize !== undefined ? r : { ...r, sampleSize }));
}

/** Why an analysis reached no verdict. */
export type InconclusiveCause =
  /** The secondary was not shown to have served enough requests in the step (or there was no data). */
  | "NoEvidence"
  /** Prometheus gave no answer, and `failWhenPrometheusFails` is false. */
  | "PrometheusUnavailable";

/** What one analysis means for the test. */
export type Verdict =
  /** `trafficNotRequired`: passed without evidence of traffic, by the spec's opt-out. */
  | { kind: "passed"; trafficNotRequired?: boolean }
  /** `decisive` is the failure to report: the first rule broken, else the first other failure. */
  | { kind: "failed"; decisive: MetricResult }
  /** Nothing was learnt. `decisive` is the result that says why, when one does. */
  | { kind: "inconclusive"; cause: InconclusiveCause; message: string; decisive?: MetricResult };

/** How an analysis is judged. */
export interface JudgeOptions {
  failWhenPrometheusFails: boolean;
  /** A step passes only with evidence that the secondary served traffic (the traffic check passed). */
  requireTraffic: boolean;
}

/**
 * The verdict of one analysis, in this order:
 * 1. A rule broken by what was measured (a seed query's series, a value beyond a bound) fails, with or
 *    without evidence of traffic: failing never needs more proof than the failure.
 * 2. Without evidence that the secondary served traffic in the step (when it is required), or a comparison
 *    short of requests or of a p99 on both tracks, nothing else counts: inconclusive (`NoEvidence`), never a
 *    pass. A failed traffic query goes to 4.
 * 3. Any other failure but a failed query (no data for a metric, with traffic shown) fails.
 * 4. Failed queries fail, or are inconclusive (`PrometheusUnavailable`) when `failWhenPrometheusFails` is
 *    false: Prometheus' trouble says nothing about the image.
 * An empty result list is inconclusive too: missing data never promotes.
 */
export function judgeAnalysis(results: readonly MetricResult[], options: JudgeOptions): Verdict {
  if (results.length === 0) return { kind: "inconclusive", cause: "NoEvidence", message: "no check was run" };
  // A judged metric's verdict is the score's (judged.ts), unless its query failed.
  const failures = results.filter((r) => !r.passed && !scoredByTheScore(r));
  const broken = failures.find((r) => VIOLATIONS.has(r.reason));
  if (broken !== undefined) {
    return { kind: "failed", decisive: broken.kind === "score" ? decisiveForScore(broken, results) : broken };
  }
  // A comparison without enough requests, or without a latency measurement, on both tracks is no evidence either.
  const unsampled = results.find((r) => UNJUDGED.has(r.reason) && !scoredByTheScore(r));
  if (unsampled !== undefined) {
    return { kind: "inconclusive", cause: "NoEvidence", message: describeResult(unsampled), decisive: unsampled };
  }
  if (options.requireTraffic) {
    const traffic = results.find((r) => r.kind === "traffic");
    if (traffic === undefined) {
      return { kind: "inconclusive", cause: "NoEvidence", message: "no traffic check was run" };
    }
    if (!traffic.passed && traffic.reason !== "QueryFailed") {
      return { kind: "inconclusive", cause: "NoEvidence", message: describeResult(traffic), decisive: traffic };
    }
  }
  // The spec's own checks before the evidence: they are what its author reads first.
  const first = failures.find((r) => r.kind !== "traffic") ?? failures[0];
  if (first === undefined) {
    return options.requireTraffic ? { kind: "passed" } : { kind: "passed", trafficNotRequired: true };
  }
  const real = failures.find((r) => r.reason !== "QueryFailed");
  if (real !== undefined) return { kind: "failed", decisive: real };
  if (options.failWhenPrometheusFails) return { kind: "failed", decisive: first };
  return {
    kind: "inconclusive",
    cause: "PrometheusUnavailable",
    message: failures.map(describeResult).join("; "),
    decisive: first,
  };
}

/** One result as a phrase: "request-success-rate 99.7 ≥ 99", "prometheusQuery returned 1 failing series (value 7)". */
export function describeResult(r: MetricResult): string {
  // A template's metric says which template it came from (ADR 0031).
  const name = r.template !== undefined ? `${r.name} (${r.template})` : r.name;
  if (r.message !== undefined && r.message !== "") return `${name} ${r.message}`;
  if (r.value !== undefined) return `${name} ${formatNumber(r.value)} (${r.reason})`;
  return `${name} ${r.reason}`;
}
