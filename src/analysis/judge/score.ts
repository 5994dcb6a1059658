/**
 * The score of one look across the judged metrics, and its verdict (Kayenta's canary score, with
 * Spinnaker's pass and marginal thresholds). Pure.
 *
 * - A metric is counted when it passed or failed; `nodata` with `mustHaveData` counts as a failure; `nodata`
 *   without it, and `toofew`, are left out.
 * - score = 100 × (weight of the counted metrics that passed) / (weight of all counted metrics).
 * - A critical metric that counts as a failure fails the look alone: score 0, `criticalFailed` names them.
 * - Nothing counted (no metric, or all left out, or all of weight 0): `inconclusive`, never a pass. A
 *   critical metric left out holds back a pass: a score that would pass is `inconclusive` instead.
 * - score ≥ pass: `pass`. score < marginal: `fail`. In between: `marginal`, the test goes on to its next
 *   step, except on the last look, which must reach `pass`: there it is `fail`.
 */

export type MetricOutcome = "pass" | "fail" | "nodata" | "toofew";
export type ScoreVerdict = "pass" | "marginal" | "fail" | "inconclusive";

export interface ScoredMetric {
  name: string;
  /** Its share of the score (MetricCheck.weight, default 1); finite, at least 0. */
  weight: number;
  critical: boolean;
  outcome: MetricOutcome;
  mustHaveData: boolean;
}

export interface Thresholds {
  /** Default 95. */
  pass?: number;
  /** Default 75. */
  marginal?: number;
}

export interface Score {
  /** 0 … 100; 0 when nothing counted or a critical metric failed. */
  score: number;
  verdict: ScoreVerdict;
  /** The critical metrics that failed, when any did. */
  criticalFailed?: string[];
  /** How many metrics counted. */
  counted: number;
}

export const SCORE_DEFAULTS = { pass: 95, marginal: 75 } as const;

function counts(metric: ScoredMetric): "pass" | "fail" | undefined {
  if (metric.outcome === "pass" || metric.outcome === "fail") return metric.outcome;
  if (metric.outcome === "nodata" && metric.mustHaveData) return "fail";
  return undefined;
}

/** Score a look's judged metrics; `lastLook` when it is the test's last step. See the module's comment. */
export function scoreMetrics(metrics: readonly ScoredMetric[], thresholds: Thresholds, lastLook: boolean): Score {
  const pass = thresholds.pass ?? SCORE_DEFAULTS.pass;
  const marginal = thresholds.marginal ?? SCORE_DEFAULTS.marginal;
  if (!(marginal >= 0 && marginal <= pass && pass <= 100)) {
    throw new RangeError(`scoreMetrics: thresholds marginal ${marginal}, pass ${pass} not 0 ≤ marginal ≤ pass ≤ 100`);
  }
  for (const metric of metrics) {
    if (!(Number.isFinite(metric.weight) && metric.weight >= 0)) {
      throw new RangeError(`scoreMetrics: metric ${metric.name} has weight ${metric.weight}`);
    }
  }
  const counted = metrics.filter((metric) => counts(metric) !== undefined);
  const criticalFailed = counted.filter((metric) => metric.critical && counts(metric) === "fail").map((m) => m.name);
  if (criticalFailed.length > 0) return { score: 0, verdict: "fail", criticalFailed, counted: counted.length };

  const total = counted.reduce((sum, metric) => sum + metric.weight, 0);
  if (total === 0) return { score: 0, verdict: "inconclusive", counted: counted.length };
  const passed = counted.filter((metric) => counts(metric) === "pass").reduce((sum, metric) => sum + metric.weight, 0);
  const score = Math.min(100, (100 * passed) / total);

  if (score < marginal) return { score, verdict: "fail", counted: counted.length };
  if (score >= pass) {
    const criticalLeftOut = metrics.some((metric) => metric.critical && counts(metric) === undefined);
    return { score, verdict: criticalLeftOut ? "inconclusive" : "pass", counted: counted.length };
  }
  return { score, verdict: lastLook ? "fail" : "marginal", counted: counted.length };
}
