/**
 * The verdict on one judged metric: the canary's samples against the baseline's over one step. Pure.
 *
 * Samples that are not finite numbers are dropped. An empty track is `nodata`; fewer than `minSamples` on
 * either track is `toofew`. Otherwise the metric fails `high` when its direction allows an increase and all of
 * these hold (and `low` the same way, mirrored):
 * - the Mann-Whitney test of "canary greater" (mann-whitney.ts, SciPy's `auto` method, continuity corrected)
 *   has p < alpha; for `either`, the two-sided test. Above EXACT_P_LIMIT pairs it is asymptotic even where
 *   `auto` would take the exact distribution (a sample of 8 or fewer against a long one): the exact one costs
 *   about (n·m)²/4 additions;
 * - the Hodges-Lehmann interval of the shift (shift.ts) lies entirely above 0. For one direction it is the
 *   two-sided 1 − 2·alpha interval, whose lower end is the one-sided 1 − alpha bound; for `either` the
 *   1 − alpha interval;
 * - the shift is more than `effectTolerance` of the baseline's median: relativeShift = shift / |median|
 *   (with a baseline median of 0, any non-zero shift is infinitely large).
 * A significant shift within the tolerance passes: on many samples a tiny, harmless difference is
 * significant, and samples of a time series overstate their significance (ADR 0030).
 */
import { mannWhitneyU, type Alternative } from "./mann-whitney.js";
import { hodgesLehmann, median } from "./shift.js";

export type Direction = "increase" | "decrease" | "either";
export type MetricVerdict = "pass" | "high" | "low" | "nodata" | "toofew";

/** The defaults of JudgeSpec (src/api/types.ts). */
export const JUDGE_DEFAULTS = {
  direction: "increase",
  effectTolerance: 0.1,
  minSamples: 10,
  confidence: 0.95,
} as const;

/** Above this many pairs n·m, the test is asymptotic whatever the sizes (see the module's comment). */
export const EXACT_P_LIMIT = 2500;

export interface MetricInput {
  canary: readonly number[];
  baseline: readonly number[];
  /** The change that fails the metric (default `increase`). */
  direction?: Direction;
  /** The smallest relative shift that counts (default 0.1). */
  effectTolerance?: number;
  /** The fewest samples on each track for a verdict (default 10). */
  minSamples?: number;
  /** This look's alpha (looks.ts). */
  alpha: number;
  /** Carried into the record for the score: nodata fails the metric when true (default true). */
  mustHaveData?: boolean;
}

export interface MetricJudgement {
  verdict: MetricVerdict;
  mustHaveData: boolean;
  alpha: number;
  /** Finite samples kept: n on the canary, m on the baseline. */
  n: number;
  m: number;
  /** The figures below are present once both tracks have a sample. */
  canaryMedian?: number;
  baselineMedian?: number;
  /** The rest once both tracks have `minSamples`. */
  u?: number;
  p?: number;
  method?: "exact" | "asymptotic";
  /** Hodges-Lehmann shift of canary − baseline and its interval. */
  shift?: number;
  ciLow?: number;
  ciHigh?: number;
  relativeShift?: number;
}

const finite = (values: readonly number[]): number[] => values.filter(Number.isFinite);
const sortedMedian = (values: readonly number[]): number => median([...values].sort((a, b) => a - b));

/** shift / |baseline median|; a zero median makes any non-zero shift infinite, and no shift 0. */
export function relativeShift(shift: number, baselineMedian: number): number {
  if (baselineMedian !== 0) return shift / Math.abs(baselineMedian);
  return shift === 0 ? 0 : shift > 0 ? Infinity : -Infinity;
}

/** Judge one metric's canary samples against its baseline samples; see the module's comment. */
export function judgeMetric(input: MetricInput): MetricJudgement {
  const direction = input.direction ?? JUDGE_DEFAULTS.direction;
  const tolerance = input.effectTolerance ?? JUDGE_DEFAULTS.effectTolerance;
  const minSamples = input.minSamples ?? JUDGE_DEFAULTS.minSamples;
  const { alpha } = input;
  if (!(alpha > 0 && alpha < 0.5)) throw new RangeError(`judgeMetric: alpha=${alpha} is not in (0, 0.5)`);
  const canary = finite(input.canary);
  const baseline = finite(input.baseline);
  const base = { mustHaveData: input.mustHaveData ?? true, alpha, n: canary.length, m: baseline.length };
  if (canary.length === 0 || baseline.length === 0) return { verdict: "nodata", ...base };
  const medians = { canaryMedian: sortedMedian(canary), baselineMedian: sortedMedian(baseline) };
  if (canary.length < minSamples || baseline.length < minSamples) return { verdict: "toofew", ...base, ...medians };

  const alternative: Alternative =
    direction === "increase" ? "greater" : direction === "decrease" ? "less" : "two-sided";
  const method = canary.length * baseline.length > EXACT_P_LIMIT ? "asymptotic" : "auto";
  const test = mannWhitneyU(canary, baseline, alternative, { method });
  const shift = hodgesLehmann(canary, baseline, direction === "either" ? alpha : 2 * alpha);
  const rel = relativeShift(shift.estimate, medians.baselineMedian);
  const significant = test.p < alpha;
  const high = direction !== "decrease" && significant && shift.ciLow > 0 && rel > tolerance;
  const low = direction !== "increase" && significant && shift.ciHigh < 0 && rel < -tolerance;
  return {
    verdict: high ? "high" : low ? "low" : "pass",
    ...base,
    ...medians,
    u: test.u,
    p: test.p,
    method: test.method,
    shift: shift.estimate,
    ciLow: shift.ciLow,
    ciHigh: shift.ciHigh,
    relativeShift: rel,
  };
}

/** What a metric's verdict counts as in the score (score.ts). */
export function metricOutcome(verdict: MetricVerdict): "pass" | "fail" | "nodata" | "toofew" {
  switch (verdict) {
    case "pass":
      return "pass";
    case "high":
    case "low":
      return "fail";
    case "nodata":
      return "nodata";
    case "toofew":
      return "toofew";
  }
}
