/**
 * The comparative judgement (`analysis.compare`): the secondary against the primary over the same window
 * (the current step), on counts. Pure. The assumptions are in docs/adr/0006-evidence-and-comparative-analysis.md.
 *
 * - Errors: a one-sided two-proportion z-test (pooled) of "the secondary's 5xx ratio is higher than the
 *   primary's". The step fails only when the difference is both significant (z above 2.326, i.e. 99 %
 *   one-sided) and larger than `errorMarginPercent` points: a primary with errors at rest is the baseline,
 *   not a failure, and a tiny but significant difference on a huge sample does not roll back.
 * - Latency: the secondary's p99 over the primary's, bounded by `latencyRatioMax`, judged only when both
 *   tracks have a histogram in the window.
 * - Fewer than `minSamples` requests on either track: inconclusive, never a pass.
 */
import type { MetricResult } from "../api/types.js";
import type { QueryOutcome } from "./types.js";

/** The settings of the comparison, defaults filled. */
export interface CompareSettings {
  minSamples: number;
  errorMarginPercent: number;
  latencyRatioMax: number;
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

const REQUESTS =
  'istio_requests_total{reporter="destination",destination_workload_namespace="{{namespace}}",destination_workload="{{TRACK}}"SELECT}';
const BUCKETS =
  'istio_request_duration_milliseconds_bucket{reporter="destination",destination_workload_namespace="{{namespace}}",destination_workload="{{TRACK}}"}';

function figure(expr: string, name: Figure): string {
  return `label_replace(${expr}, "figure", "${name}", "", "")`;
}

function requests(track: "primary" | "secondary", errorsOnly: boolean): string {
  const selector = REQUESTS.replace("TRACK", track).replace("SELECT", errorsOnly ? ',response_code=~"5.*"' : "");
  return `sum(increase(${selector}[{{stepWindow}}]))`;
}

function p99(track: "primary" | "secondary"): string {
  return `histogram_quantile(0.99, sum by (le) (rate(${BUCKETS.replace("TRACK", track)}[{{stepWindow}}])))`;
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

/** The verdict of the comparison, as a metric result (name, query and window are added by the caller). */
export function judgeComparison(
  figures: Partial<Record<Figure, number>>,
  settings: CompareSettings,
): Pick<MetricResult, "passed" | "reason" | "message" | "value" | "sampleSize" | "figures"> {
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
  const difference = ratio.s - ratio.p;
  Object.assign(shown, { primaryErrorRatio: ratio.p, secondaryErrorRatio: ratio.s, z });
  const errors =
    `errors ${num(e.s)}/${num(n.s)} (${pct(ratio.s)}) vs primary ${num(e.p)}/${num(n.p)} (${pct(ratio.p)}), ` +
    `z ${num(z)}`;
  const worse = z > Z_CRITICAL && difference * 100 > settings.errorMarginPercent;
  const base = { sampleSize: n.s, value: ratio.s * 100 };
  if (worse) {
    return {
      ...base,
      passed: false,
      reason: "ErrorRatioWorse",
      figures: shown,
      message: `${errors} > ${Z_CRITICAL} and ${num(difference * 100)} points > ${settings.errorMarginPercent}`,
    };
  }
  let latency = "p99 not compared (no latency histogram on both tracks)";
  const [lp, ls] = [figures.primary_p99, figures.secondary_p99];
  if (lp !== undefined && ls !== undefined && Number.isFinite(lp) && lp > 0) {
    const bound = ls / lp;
    Object.assign(shown, { primaryP99: lp, secondaryP99: ls, p99Ratio: bound });
    latency = `p99 ${num(ls)} ms vs primary ${num(lp)} ms, ratio ${num(bound)}`;
    if (!(bound <= settings.latencyRatioMax)) {
      return {
        ...base,
        passed: false,
        reason: "LatencyWorse",
        figures: shown,
        message: `${errors}; ${latency} > ${settings.latencyRatioMax}`,
      };
    }
    latency += ` ≤ ${settings.latencyRatioMax}`;
  }
  return { ...base, passed: true, reason: "ok", figures: shown, message: `${errors} ≤ ${Z_CRITICAL}; ${latency}` };
}
