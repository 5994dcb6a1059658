import type { CanaryState } from "../api/types.js";
import { ANNOTATIONS } from "../api/types.js";
import type { PlanContext } from "./context.js";
import { consumed } from "./context.js";
import type { Progress, TestFacts } from "./decisions.js";
import { GATE_TYPES, stepClockStart } from "./decisions.js";
import { secondaryReady } from "./observation.js";
import { describeChanges } from "./revision.js";
import { secondaryRevision, specTemplate, templateChanged, testedTemplate } from "./subject.js";
import { hasElapsed } from "./time.js";

/**
 * The facts the decisions (decisions.ts) look at, as they stand now in the plan being built: requests
 * already answered in this plan no longer count, and stage changes made so far are seen.
 */
export function testFacts(ctx: PlanContext, canary: CanaryState, progress?: Progress): TestFacts {
  const { analysis } = ctx.spec;
  return {
    stage: canary.stage,
    image: canary.image,
    specImage: ctx.spec.image,
    templateChanged: templateChanged(ctx, canary),
    templateChanges: describeSpecChanges(ctx, canary),
    primaryImage: ctx.status.primaryImage,
    step: canary.step,
    steps: analysis.weights.length,
    paused: canary.pausedAt !== undefined,
    secondaryReady: secondaryReady(ctx.observed, canary.image, secondaryRevision(ctx, canary)),
    specValid: ctx.problems.length === 0,
    manualPromotion: analysis.manualPromotion,
    abortRequested: ctx.requests.abort && !consumed(ctx, ANNOTATIONS.abort),
    promoteRequested: ctx.requests.promote && !consumed(ctx, ANNOTATIONS.promote),
    failedChecks: canary.failedChecks,
    threshold: analysis.threshold,
    progressDeadlineSeconds: analysis.progressDeadlineSeconds,
    inconclusiveLimit: analysis.inconclusiveLimit,
    trafficWithheld: canary.trafficWithheld === true,
    pendingGates: GATE_TYPES.filter(
      (type) => analysis.webhooks.some((w) => w.type === type) && !(canary.gates?.passed ?? []).includes(type),
    ),
    ...(progress !== undefined ? { progress } : {}),
  };
}

function describeSpecChanges(ctx: PlanContext, canary: CanaryState): string {
  return templateChanged(ctx, canary) ? describeChanges(testedTemplate(ctx, canary), specTemplate(ctx)) : "";
}

/** The time and readiness evidence for moving the stage on (the verdict is added once the analysis ran). */
export function progressOf(ctx: PlanContext, canary: CanaryState): Progress {
  const ready = secondaryReady(ctx.observed, canary.image, secondaryRevision(ctx, canary));
  // Traffic withheld while Prometheus does not answer was withheld from a ready secondary.
  const wasReady = (ctx.previous.weights?.secondary ?? 0) > 0 || ctx.previous.canary?.trafficWithheld === true;
  const deadline = ctx.spec.analysis.progressDeadlineSeconds;
  const inconclusive = canary.inconclusive;
  const clock = stepClockStart(canary);
  return {
    readinessChanged: ready !== wasReady,
    deadlinePassed: hasElapsed(ctx.now, canary.stepStartedAt, deadline),
    routed: clock !== undefined,
    intervalPassed: clock !== undefined && hasElapsed(ctx.now, clock, ctx.spec.analysis.intervalSeconds),
    inconclusiveAnalyses: inconclusive?.count ?? 0,
    noVerdictDeadlinePassed: inconclusive !== undefined && hasElapsed(ctx.now, inconclusive.since, deadline),
  };
}
