/**
 * The judged metrics of one analysis (ADR 0030): each is two checks, the primary's samples and the
 * secondary's over the step, judged together by the comparative judge (judge/), then scored together.
 * Pure.
 *
 * - One result a judged metric, where its secondary's check stands: the verdict (`ok`, `Increased`,
 *   `Decreased`, `NoData`, `TooFewSamples`), the medians of both tracks, and the figures the verdict stands on
 *   (samples, U, p, the look's α, the shift with its interval).
 * - One result for the score across them (`canary-score`): the weighted share of counted metrics that passed.
 *   It passes at or above `pass`; between `marginal` and `pass` the test goes on except at its last step;
 *   below `marginal`, or when a critical metric failed, it fails; with nothing counted it is no evidence.
 */
import type { MetricResult } from "../api/types.js";
import type { AnalysisCheck, JudgeSettings } from "./checks.js";
import { lookAlpha } from "./judge/looks.js";
import { judgeMetric, metricOutcome, type MetricJudgement, type MetricVerdict } from "./judge/metric.js";
import { scoreMetrics, type MetricOutcome, type Score } from "./judge/score.js";
import { formatNumber } from "./format.js";
import type { QueryOutcome } from "./outcome.js";

/** The name under which the score of the judged metrics appears in status and events. */
export const SCORE_CHECK_NAME = "canary-score";

/** A judged metric's two tracks, as they came back. */
export interface JudgedPair {
  primary: AnalysisCheck;
  secondary: AnalysisCheck;
  primaryOutcome: QueryOutcome;
  secondaryOutcome: QueryOutcome;
}

function samplesOf(outcome: QueryOutcome): number[] | string {
  switch (outcome.kind) {
    case "samples":
    case "values":
      return outcome.values.filter((v) => Number.isFinite(v));
    case "value":
      return Number.isFinite(outcome.value) ? [outcome.value] : [];
    case "empty":
      return [];
    case "error":
      return outcome.message;
  }
}

function ruleOf(settings: JudgeSettings): string {
  const direction = { increase: "no increase", decrease: "no decrease", either: "no shift either way" }[
    settings.direction
  ];
  return `${direction} beyond ${formatNumber(settings.effectTolerance * 100)} % of the primary's median, Mann-Whitney U at α corrected for step ${settings.look?.index ?? 1} of ${settings.look?.planned ?? 1} (confidence ${formatNumber(settings.confidence)}), ≥ ${settings.minSamples} samples a track`;
}

function base(
  pair: JudgedPair,
  settings: JudgeSettings,
): Pick<MetricResult, "name" | "kind" | "query" | "window" | "rule" | "template"> {
  return {
    name: pair.secondary.name,
    kind: "judge",
    ...(pair.secondary.template !== undefined ? { template: pair.secondary.template } : {}),
    query: pair.secondary.query,
    ...(pair.secondary.window !== undefined ? { window: pair.secondary.window } : {}),
    rule: ruleOf(settings),
  };
}

function figuresOf(j: MetricJudgement): Record<string, number> {
  const figures: Record<string, number> = {
    secondarySamples: j.n,
    primarySamples: j.m,
  };
  const optional: [string, number | undefined][] = [
    ["secondaryMedian", j.canaryMedian],
    ["primaryMedian", j.baselineMedian],
    ["u", j.u],
    ["p", j.p],
    ["alpha", j.alpha],
    ["shift", j.shift],
    ["shiftLow", j.ciLow],
    ["shiftHigh", j.ciHigh],
    ["relativeShift", j.relativeShift],
  ];
  for (const [name, value] of optional) if (value !== undefined && Number.isFinite(value)) figures[name] = value;
  return figures;
}

/** One judged metric's result. `outcome` is what the score counts it as. */
export function judgePair(pair: JudgedPair): { result: MetricResult; outcome: MetricOutcome | "error" } {
  const settings = pair.secondary.judge;
  if (settings === undefined) throw new Error(`judged metric ${pair.secondary.name} has no settings`);
  const head = base(pair, settings);
  const canary = samplesOf(pair.secondaryOutcome);
  const baseline = samplesOf(pair.primaryOutcome);
  const failedQuery = typeof canary === "string" ? canary : typeof baseline === "string" ? baseline : undefined;
  if (failedQuery !== undefined || typeof canary === "string" || typeof baseline === "string") {
    const track = typeof canary === "string" ? "secondary" : "primary";
    return {
      result: { ...head, passed: false, reason: "QueryFailed", message: `the ${track}'s query failed: ${failedQuery}` },
      outcome: "error",
    };
  }
  const look = settings.look ?? { index: 1, planned: 1 };
  let judgement: MetricJudgement;
  try {
    judgement = judgeMetric({
      canary,
      baseline,
      direction: settings.direction,
      effectTolerance: settings.effectTolerance,
      minSamples: settings.minSamples,
      alpha: lookAlpha(settings.confidence, look.planned, look.index),
      mustHaveData: settings.mustHaveData,
    });
  } catch (error) {
    // Settings the spec's validation should have refused (checkProblems): an unanswered metric, never a crash.
    const message = error instanceof Error ? error.message : String(error);
    return { result: { ...head, passed: false, reason: "QueryFailed", message }, outcome: "error" };
  }
  const figures = figuresOf(judgement);
  const medians =
    judgement.canaryMedian !== undefined && judgement.baselineMedian !== undefined
      ? `secondary median ${formatNumber(judgement.canaryMedian)} vs primary ${formatNumber(judgement.baselineMedian)}`
      : "";
  const test =
    judgement.p !== undefined && judgement.alpha !== undefined
      ? `shift ${formatNumber(judgement.shift ?? NaN)} [${formatNumber(judgement.ciLow ?? NaN)}, ${formatNumber(judgement.ciHigh ?? NaN)}] (${signed(judgement.relativeShift)} of the primary's median), U ${formatNumber(judgement.u ?? NaN)}, p ${probability(judgement.p)} ${judgement.p < judgement.alpha ? "<" : "≥"} α ${probability(judgement.alpha)}`
      : "";
  const samples = `${judgement.n}/${judgement.m} samples`;
  const verdict = judgement.verdict;
  const message =
    verdict === "nodata"
      ? `no samples on the ${judgement.n === 0 ? "secondary" : "primary"} (${samples})`
      : verdict === "toofew"
        ? `${samples} < ${settings.minSamples} needed on each track`
        : join(medians, test, samples);
  return {
    result: {
      ...head,
      // The secondary's median, once both tracks have a sample (never with no data).
      ...(judgement.canaryMedian !== undefined ? { value: judgement.canaryMedian } : {}),
      figures,
      passed: verdict === "pass",
      reason: REASONS[verdict],
      message,
    },
    outcome: metricOutcome(verdict),
  };
}

/** The reason a judged metric's result carries, by the judge's verdict. */
const REASONS: Record<MetricVerdict, string> = {
  pass: "ok",
  high: "Increased",
  low: "Decreased",
  nodata: "NoData",
  toofew: "TooFewSamples",
};

/** A probability as people read it: three decimals, or two significant digits below 0.001 (`4.1e-5`). */
function probability(p: number): string {
  return p > 0 && p < 0.001 ? p.toExponential(1) : formatNumber(p);
}

function signed(fraction: number | undefined): string {
  if (fraction === undefined || !Number.isFinite(fraction)) return "n/a";
  const percent = Math.round(fraction * 1000) / 10;
  return `${percent >= 0 ? "+" : ""}${percent} %`;
}

function join(...parts: string[]): string {
  return parts.filter((p) => p !== "").join("; ");
}

/**
 * The score across the judged metrics, as a result: `ScorePassed`, `ScoreMarginal` (passes, but not at the last
 * step), `ScoreFailed`, `CriticalMetricFailed`, or `ScoreUnjudged` (nothing counted: no evidence).
 */
export function scoreResult(all: readonly { check: AnalysisCheck; outcome: MetricOutcome | "error" }[]): MetricResult {
  // A metric whose query failed is not scored: its failure is judged as every failed query is (verdicts.ts).
  const judged = all.filter((j): j is { check: AnalysisCheck; outcome: MetricOutcome } => j.outcome !== "error");
  const first = judged[0]?.check.judge;
  const thresholds = first?.score ?? { pass: 95, marginal: 75 };
  const look = first?.look ?? { index: 1, planned: 1 };
  const last = look.index >= look.planned;
  const rule = `≥ ${formatNumber(thresholds.pass)} passes; ≥ ${formatNumber(thresholds.marginal)} goes on before the last step; a critical metric's failure fails`;
  const head = { name: SCORE_CHECK_NAME, kind: "score" as const, rule, min: thresholds.pass };
  let score: Score;
  try {
    score = scoreMetrics(
      judged.map(({ check, outcome }) => ({
        name: check.name,
        weight: check.judge?.weight ?? 1,
        critical: check.judge?.critical ?? false,
        mustHaveData: check.judge?.mustHaveData ?? true,
        outcome,
      })),
      thresholds,
      last,
    );
  } catch (error) {
    // Thresholds or weights the spec's validation should have refused (checkProblems): no score, never a crash.
    const message = error instanceof Error ? error.message : String(error);
    return { ...head, passed: false, reason: "ScoreUnjudged", message };
  }
  const counted = `${score.counted} of ${all.length} metrics counted`;
  if (score.criticalFailed !== undefined && score.criticalFailed.length > 0) {
    return {
      ...head,
      value: 0,
      passed: false,
      reason: "CriticalMetricFailed",
      message: `critical metric ${score.criticalFailed.join(", ")} failed`,
    };
  }
  switch (score.verdict) {
    case "pass":
      return {
        ...head,
        value: score.score,
        passed: true,
        reason: "ScorePassed",
        message: `${formatNumber(score.score)} ≥ ${formatNumber(thresholds.pass)} (${counted})`,
      };
    case "marginal":
      return {
        ...head,
        value: score.score,
        passed: true,
        reason: "ScoreMarginal",
        message: `${formatNumber(score.score)} is marginal (≥ ${formatNumber(thresholds.marginal)}, < ${formatNumber(thresholds.pass)}): goes on, the last step must reach ${formatNumber(thresholds.pass)} (${counted})`,
      };
    case "fail":
      return {
        ...head,
        value: score.score,
        passed: false,
        reason: "ScoreFailed",
        message: last
          ? `${formatNumber(score.score)} < ${formatNumber(thresholds.pass)} at the last step (${counted})`
          : `${formatNumber(score.score)} < ${formatNumber(thresholds.marginal)} (${counted})`,
      };
    case "inconclusive":
      return {
        ...head,
        passed: false,
        reason: "ScoreUnjudged",
        message: `no judged metric could be counted (${counted})`,
      };
  }
}

/** Reasons of a judged metric whose verdict is the score's, not its own. */
const SCORED: ReadonlySet<string> = new Set(["ok", "Increased", "Decreased", "NoData", "TooFewSamples"]);

/** Whether a result is a judged metric that the score speaks for (a failed query speaks for itself). */
export function scoredByTheScore(result: MetricResult): boolean {
  return result.kind === "judge" && SCORED.has(result.reason);
}

/**
 * The result to report for a failed score: the critical metric that failed, else the first judged metric that
 * failed, with the score in its message (what the failed image records); the score itself when none did.
 */
export function decisiveForScore(score: MetricResult, results: readonly MetricResult[]): MetricResult {
  const failed = results.filter((r) => r.kind === "judge" && !r.passed && SCORED.has(r.reason));
  const critical = score.reason === "CriticalMetricFailed" ? (score.message ?? "") : "";
  const metric = failed.find((r) => critical.includes(r.name)) ?? failed[0];
  if (metric === undefined) return score;
  return { ...metric, message: `${metric.message ?? metric.reason}; ${score.name} ${score.message ?? score.reason}` };
}
