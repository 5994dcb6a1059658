/**
 * The comparative judgement (`analysis.compare`): the secondary against the primary over the same window
 * (the current step), on counts. Pure. The assumptions are in docs/adr/0006-evidence-and-comparative-analysis.md.
 *
 * - Errors: a one-sided two-proportion z-test (pooled) of "the secondary's 5xx ratio is higher than the
 *   primary's". The step fails only when the difference is both significant (z above 2.326, i.e. 99 %
 *   one-sided) and larger than `errorMarginPercent` points: a primary with errors at rest is the baseline,
 *   not a failure, and a tiny but significant difference on a huge sample does not roll back. The message
 *   gives both tests with their verdicts, so that it says which of them let a worse ratio pass.
 * - Latency: judged whenever either track has a p99 in the window (`judgeLatency`): the secondary's p99
 *   over the primary's, bounded by `latencyRatioMax`; without a primary p99 to compare with, against the
 *   absolute `latencyMaxMs` when the spec sets one, else no verdict. Never a pass without a measurement.
 * - Fewer than `minSamples` requests on either track: inconclusive, never a pass.
 */
import type { MetricResult } from "../api/types.js";
import { trackSelector } from "./templates.js";
import type { QueryOutcome } from "./outcome.js";

/** The settings of the comparison, defaults filled. */
export interface CompareSettings {
  minSamples: number;
  errorMarginPercent: number;
  latencyRatioMax: number;
  /**
   * The highest p99 (ms) the secondary may have on its own, judged only when the primary has no p99 to
   * compare with: the built-in `request-duration` check's `max`, when the spec sets one (analysisChecks).
   */
  latencyMaxMs?: number;
}

/** The z above which the secondary's error ratio is significantly higher (99 % one-sided). */
export const Z_CRITICAL = 2.326;

/** The figures the comparison query returns, one series each, named by its `figure` label. */
export const FIGURES = [
  "primary_total",
  "primary_errors",
  "secondary_total",
  "secondary_errors",
  "primary_p99",
  "secondary_p99",
] as const;
export type Figure = (typeof FIGURES)[number];

function figure(expr: string, name: Figure): string {
  return `label_replace(${expr}, "figure", "${name}", "", "")`;
}

function requests(track: "primary" | "secondary", errorsOnly: boolean): string {
  const selector = `istio_requests_total{${trackSelector(track)}${errorsOnly ? ',response_code=~"5.*"' : ""}}`;
  return `sum(increase(${selector}[{{stepWindow}}]))`;
}

function p99(track: "primary" | "secondary"): string {
  const buckets = `istio_request_duration_milliseconds_bucket{${trackSelector(track)}}`;
  return `histogram_quantile(0.99, sum by (le) (rate(${buckets}[{{stepWindow}}])))`;
}

/**
 * One PromQL template that returns every figure of the comparison as its own series (label `figure`), so
 * that it runs as one query through any provider. A figure without data is simply absent.
 */
export const COMPARE_QUERY = [
  figure(requests("primary", false), "primary_total"),
  figure(requests("primary", true), "primary_errors"),
  figure(requests("secondary", false), "secondary_total"),
  figure(requests("secondary", true), "secondary_errors"),
  figure(p99("primary"), "primary_p99"),
  figure(p99("secondary"), "secondary_p99"),
].join(" or ");

/** The figures found in an outcome, by their `figure` label; NaN values (0/0) count as absent. */
export function readFigures(outcome: QueryOutcome): Partial<Record<Figure, number>> {
  if (outcome.kind !== "values" || outcome.labels === undefined) return {};
  const found: Partial<Record<Figure, number>> = {};
  outcome.labels.forEach((labels, i) => {
    const name = /figure="([a-z0-9_]+)"/.exec(labels)?.[1];
    const value = outcome.values[i];
    if (
      name !== undefined &&
      (FIGURES as readonly string[]).includes(name) &&
      value !== undefined &&
      !Number.isNaN(value)
    ) {
      found[name as Figure] = value;
    }
  });
  return found;
}

/** The pooled two-proportion z statistic of "b's ratio is higher than a's"; 0 when both ratios are 0 or 1. */
export function twoProportionZ(aEvents: number, aTotal: number, bEvents: number, bTotal: number): number {
  const pa = aEvents / aTotal;
  const pb = bEvents / bTotal;
  const pooled = (aEvents + bEvents) / (aTotal + bTotal);
  const se = Math.sqrt(pooled * (1 - pooled) * (1 / aTotal + 1 / bTotal));
  return se === 0 ? 0 : (pb - pa) / se;
}

const pct = (x: number): string => `${(Math.round(x * 10000) / 100).toString()} %`;
const num = (x: number): string => String(Math.round(x * 1000) / 1000);
const signed = (x: number): string => `${x > 0 ? "+" : ""}${num(x)}`;

/** The comparison's reasons: a rule broken (a failure), or no verdict (the analysis is inconclusive). */
export type ComparisonReason = "ok" | "TooFewSamples" | "ErrorRatioWorse" | "LatencyWorse" | "LatencyUnmeasured";

type Judged = Pick<MetricResult, "passed" | "message" | "value" | "sampleSize" | "figures"> & {
  reason: ComparisonReason;
};

/**
 * The errors' two tests in words, each with its verdict: "z 3.1 > 2.326 (significant) and +29 points > 1
 * (beyond the margin)". "but" joins them when only one finds the secondary worse, which then passes.
 */
function errorTests(z: number, points: number, marginPercent: number): { worse: boolean; text: string } {
  const significant = z > Z_CRITICAL;
  const beyond = points > marginPercent;
  const zText = significant
    ? `z ${num(z)} > ${Z_CRITICAL} (significant)`
    : `z ${num(z)} ≤ ${Z_CRITICAL} (not significant)`;
  const marginText = beyond
    ? `${signed(points)} points > ${marginPercent} (beyond the margin)`
    : `${signed(points)} points ≤ ${marginPercent} (within the margin)`;
  if (significant === beyond) return { worse: significant, text: `${zText} and ${marginText}` };
  // The test that finds it worse comes first; the one that lets it pass follows "but".
  return { worse: false, text: significant ? `${zText} but ${marginText}` : `${marginText} but ${zText}` };
}

/** A p99 that measures requests: above 0 (histogram_quantile gives NaN, read as absent, for none). */
function measured(p99: number | undefined): p99 is number {
  return p99 !== undefined && p99 > 0;
}

function ms(p99: number | undefined): string {
  return p99 === undefined ? "no latency histogram in the window" : `${num(p99)} ms`;
}

/**
 * The latency half of the comparison, judged whenever either track has a p99 in the window:
 * - both measured: the secondary's p99 over the primary's, at most `latencyRatioMax` (equal p99s, the
 *   `+Inf` bucket on both included, are a ratio of 1);
 * - the secondary's measured, the primary's not (no histogram, or 0 ms): against `latencyMaxMs` when set,
 *   else no verdict (`LatencyUnmeasured`): a secondary at 5 s must not pass for want of a baseline;
 * - the secondary's not measured: no verdict, whatever the primary's;
 * - neither track has a histogram: not compared (the app exports no latency; the errors decide).
 * A p99 of 0 ms is no measurement: Prometheus' histogram_quantile gives more than 0 for any request that
 * falls in a bucket with a positive bound, as all of Istio's are, and NaN for none.
 */
function judgeLatency(
  primary: number | undefined,
  secondary: number | undefined,
  settings: CompareSettings,
  shown: Record<string, number>,
): { reason: "ok" | "LatencyWorse" | "LatencyUnmeasured"; text: string } {
  if (primary === undefined && secondary === undefined) {
    return { reason: "ok", text: "p99 not compared: neither track has a latency histogram in the window" };
  }
  if (primary !== undefined) shown["primaryP99"] = primary;
  if (secondary !== undefined) shown["secondaryP99"] = secondary;
  if (!measured(secondary)) {
    const against = measured(primary) ? ` to compare with the primary's ${ms(primary)}` : ` (primary ${ms(primary)})`;
    return { reason: "LatencyUnmeasured", text: `the secondary has no p99 (${ms(secondary)})${against}` };
  }
  if (measured(primary)) {
    const ratio = secondary === primary ? 1 : secondary / primary;
    shown["p99Ratio"] = ratio;
    const text = `p99 ${num(secondary)} ms vs primary ${num(primary)} ms, ratio ${num(ratio)}`;
    return ratio <= settings.latencyRatioMax
      ? { reason: "ok", text: `${text} ≤ ${settings.latencyRatioMax}` }
      : { reason: "LatencyWorse", text: `${text} > ${settings.latencyRatioMax}` };
  }
  const alone = `p99 ${num(secondary)} ms, but the primary has no p99 to compare it with (${ms(primary)})`;
  const max = settings.latencyMaxMs;
  if (max === undefined) {
    return { reason: "LatencyUnmeasured", text: `${alone}, and no request-duration max to judge it alone` };
  }
  return secondary <= max
    ? { reason: "ok", text: `${alone}; ≤ ${num(max)} ms (request-duration max)` }
    : { reason: "LatencyWorse", text: `${alone}; > ${num(max)} ms (request-duration max)` };
}

/** The verdict of the comparison, as a metric result (name, query and window are added by the caller). */
export function judgeComparison(figures: Partial<Record<Figure, number>>, settings: CompareSettings): Judged {
  const n = { p: figures.primary_total ?? 0, s: figures.secondary_total ?? 0 };
  // No 5xx series means no errors, once there were requests.
  const e = { p: Math.min(figures.primary_errors ?? 0, n.p), s: Math.min(figures.secondary_errors ?? 0, n.s) };
  const shown: Record<string, number> = {
    primaryRequests: n.p,
    primaryErrors: e.p,
    secondaryRequests: n.s,
    secondaryErrors: e.s,
  };
  if (n.p < settings.minSamples || n.s < settings.minSamples) {
    return {
      passed: false,
      reason: "TooFewSamples",
      sampleSize: n.s,
      figures: shown,
      message: `too few requests to compare: secondary ${num(n.s)}, primary ${num(n.p)} (${settings.minSamples} needed on each)`,
    };
  }
  const ratio = { p: e.p / n.p, s: e.s / n.s };
  const z = twoProportionZ(e.p, n.p, e.s, n.s);
  Object.assign(shown, { primaryErrorRatio: ratio.p, secondaryErrorRatio: ratio.s, z });
  const tests = errorTests(z, (ratio.s - ratio.p) * 100, settings.errorMarginPercent);
  const errors = `errors ${num(e.s)}/${num(n.s)} (${pct(ratio.s)}) vs primary ${num(e.p)}/${num(n.p)} (${pct(ratio.p)}): ${tests.text}`;
  const base = { sampleSize: n.s, value: ratio.s * 100 };
  if (tests.worse) return { ...base, figures: shown, passed: false, reason: "ErrorRatioWorse", message: errors };
  // Adds the p99s it judged to `shown`.
  const latency = judgeLatency(figures.primary_p99, figures.secondary_p99, settings, shown);
  return {
    ...base,
    figures: shown,
    passed: latency.reason === "ok",
    reason: latency.reason,
    message: `${errors}; ${latency.text}`,
  };
}
