import type { CanaryState } from "../api/types.js";
import type { Verdict } from "./analysis.js";
import { describeResult, judgeAnalysis } from "./analysis.js";
import type { PlanContext } from "./context.js";
import { emit } from "./context.js";
import { enterFinalising, enterPromoting, finishIfDrained, startRollback } from "./lifecycle.js";
import { primaryRunning, secondaryReady } from "./observation.js";
import { stepWeight } from "./steps.js";
import { hasElapsed } from "./time.js";

/** The reason of the Progressing condition while a promotion's primary rollout is overdue. */
export const PROMOTION_OVERDUE = "ProgressDeadlineExceeded";

/** Moves a test on by at most one stage, as the observation allows. */
export function advanceStage(ctx: PlanContext, canary: CanaryState): void {
  switch (canary.stage) {
    case "WaitingForSecondary":
      return waitForSecondary(ctx, canary);
    case "Stepping":
    case "AwaitingPromotion":
      return step(ctx, canary);
    case "Promoting":
      return promote(ctx, canary);
    case "Finalising":
    case "RollingBack":
      return finishIfDrained(ctx, canary);
  }
}

function shiftedMessage(ctx: PlanContext, canary: CanaryState): string {
  const weight = stepWeight(ctx.spec.analysis.weights, canary.step);
  return `shifted ${weight}% of traffic to the secondary (image ${canary.image})`;
}

function waitForSecondary(ctx: PlanContext, canary: CanaryState): void {
  if (canary.pausedAt !== undefined) return;
  if (secondaryReady(ctx.observed, canary.image)) {
    // No traffic goes to an image whose analysis cannot run; InvalidSpec says why.
    if (ctx.problems.length > 0) return;
    canary.stage = "Stepping";
    canary.step = 0;
    canary.stepStartedAt = ctx.at;
    emit(ctx, "Normal", "StepAdvanced", shiftedMessage(ctx, canary));
    return;
  }
  const deadline = ctx.spec.analysis.progressDeadlineSeconds;
  if (hasElapsed(ctx.now, canary.stepStartedAt, deadline)) {
    startRollback(ctx, canary, {
      result: "Failed",
      reason: "ProgressDeadlineExceeded",
      message: `the secondary did not become available with ${canary.image} within ${deadline}s`,
    });
  }
}

/**
 * Stepping and AwaitingPromotion. The secondary takes traffic only while it is ready, so a change of its
 * readiness restarts the step: the analysis window must cover traffic at the step's weight, and the
 * deadline for a secondary that stays not ready counts from the moment it went. The previous planned
 * weight tells whether it was ready: in these stages it is above 0 exactly when it was.
 */
function step(ctx: PlanContext, canary: CanaryState): void {
  const ready = secondaryReady(ctx.observed, canary.image);
  const wasReady = (ctx.previous.weights?.secondary ?? 0) > 0;
  if (ready !== wasReady) {
    canary.stepStartedAt = ctx.at;
    if (ready) {
      emit(ctx, "Normal", "SecondaryReady", `the secondary is ready again; ${shiftedMessage(ctx, canary)}`);
    } else {
      const deadline = ctx.spec.analysis.progressDeadlineSeconds;
      emit(
        ctx,
        "Warning",
        "SecondaryNotReady",
        `the secondary (${canary.image}) is not ready: it gets no traffic, and the test rolls back unless it recovers within ${deadline}s`,
      );
    }
    return;
  }
  if (canary.pausedAt !== undefined) return;
  if (!ready) {
    const deadline = ctx.spec.analysis.progressDeadlineSeconds;
    if (hasElapsed(ctx.now, canary.stepStartedAt, deadline)) {
      startRollback(ctx, canary, {
        result: "Failed",
        reason: "SecondaryNotReady",
        message: `the secondary was not ready with ${canary.image} for ${deadline}s`,
      });
    }
    return;
  }
  if (canary.stage === "AwaitingPromotion") {
    // The manual gate was removed from the spec while the test waited at it.
    if (!ctx.spec.analysis.manualPromotion) promoteAfterLastStep(ctx, canary);
    return;
  }
  if (ctx.problems.length > 0) return; // the checks cannot be rendered; InvalidSpec says why
  if (!hasElapsed(ctx.now, canary.stepStartedAt, ctx.spec.analysis.intervalSeconds)) return;
  const results = ctx.observed.analysis;
  if (results === undefined) {
    ctx.analysisWanted = true;
    return;
  }
  const verdict = judgeAnalysis(results, ctx.spec.analysis.failWhenPrometheusFails);
  canary.lastAnalysis = { time: ctx.at, passed: verdict.kind === "passed", metrics: structuredClone(results) };
  // Whatever the verdict, the next analysis is one whole interval away.
  canary.stepStartedAt = ctx.at;
  applyVerdict(ctx, canary, verdict);
}

function applyVerdict(ctx: PlanContext, canary: CanaryState, verdict: Verdict): void {
  switch (verdict.kind) {
    case "passed": {
      if (canary.step + 1 < ctx.spec.analysis.weights.length) {
        canary.step += 1;
        emit(ctx, "Normal", "StepAdvanced", shiftedMessage(ctx, canary));
      } else if (ctx.spec.analysis.manualPromotion) {
        canary.stage = "AwaitingPromotion";
        emit(
          ctx,
          "Normal",
          "AwaitingPromotion",
          `${canary.image} passed all ${ctx.spec.analysis.weights.length} steps; waiting for the promote annotation`,
        );
      } else {
        promoteAfterLastStep(ctx, canary);
      }
      return;
    }
    case "failed": {
      const threshold = ctx.spec.analysis.threshold;
      canary.failedChecks += 1;
      const what = describeResult(verdict.decisive);
      emit(
        ctx,
        "Warning",
        "AnalysisFailed",
        `analysis of ${canary.image} failed (${canary.failedChecks} of ${threshold} failed checks): ${what}`,
      );
      if (canary.failedChecks >= threshold) {
        startRollback(ctx, canary, {
          result: "Failed",
          reason: "AnalysisFailed",
          message: what,
          metric: verdict.decisive.name,
          ...(verdict.decisive.value !== undefined ? { value: verdict.decisive.value } : {}),
        });
      }
      return;
    }
    case "inconclusive":
      emit(
        ctx,
        "Warning",
        "AnalysisInconclusive",
        `analysis of ${canary.image} was inconclusive (${verdict.message}); trying again in one interval`,
      );
      return;
  }
}

function promoteAfterLastStep(ctx: PlanContext, canary: CanaryState): void {
  const steps = ctx.spec.analysis.weights.length;
  enterPromoting(ctx, canary, "AnalysisPassed", `passed all ${steps} steps`);
  emit(ctx, "Normal", "Promoting", `${canary.image} passed all ${steps} steps; rolling it out on the primary`);
}

/** True when the primary has had the whole progress deadline to roll out the promoted image. */
export function promotionOverdue(ctx: PlanContext, canary: CanaryState): boolean {
  return (
    canary.stage === "Promoting" && hasElapsed(ctx.now, canary.stepStartedAt, ctx.spec.analysis.progressDeadlineSeconds)
  );
}

/**
 * Promoting waits for the primary to run the tested image. A primary that misses the deadline is not
 * rolled back automatically: it already holds the new template, its old pods keep serving while the
 * Deployment controller waits (maxUnavailable), and the image passed its analysis, so a slow rollout is
 * most likely capacity (unschedulable pods, quota, pulls), which reverting would hit just as hard.
 * The test keeps going and warns once (the Progressing reason records that the warning was given);
 * the abort annotation returns the primary to the last promoted image if a person decides so.
 */
function promote(ctx: PlanContext, canary: CanaryState): void {
  if (primaryRunning(ctx.observed, canary.image)) {
    enterFinalising(ctx, canary);
    return;
  }
  const previousReason = ctx.previous.conditions?.find((c) => c.type === "Progressing")?.reason;
  if (promotionOverdue(ctx, canary) && previousReason !== PROMOTION_OVERDUE) {
    emit(
      ctx,
      "Warning",
      "PromotionSlow",
      `the primary has not finished rolling out ${canary.image} within ${ctx.spec.analysis.progressDeadlineSeconds}s; still waiting (the abort annotation returns it to ${ctx.status.primaryImage ?? "the previous image"})`,
    );
  }
}
