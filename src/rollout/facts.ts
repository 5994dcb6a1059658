import { ANNOTATIONS } from "../api/types.js";
import type { CanaryView, PlanView } from "./context.js";
import { alreadyConsumed } from "./context.js";
import type { Progress, TestFacts } from "./test-facts.js";
import { GATE_TYPES } from "./test-facts.js";
import { replicasForWeight } from "./replicas.js";
import { stepClockStart } from "./test-facts.js";
import { secondaryReady, showsRevision } from "./observation.js";
import { describeChanges } from "../identity/revision.js";
import { stepWeight } from "./steps.js";
import { secondaryRevision, specTemplate, templateChanged, testedTemplate } from "./subject.js";
import { hasElapsed } from "../time/timestamps.js";
import { applyRefusal } from "./reported.js";
import { batchReplicas } from "../api/batch-sizes.js";

/**
 * The facts the decisions (decisions.ts) look at, as they stand now in the plan being built: requests
 * already answered in this plan no longer count, and stage changes made so far are seen.
 */
export function testFacts(ctx: PlanView, canary: CanaryView, progress?: Progress): TestFacts {
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
    secondaryReady: secondaryReadyNow(ctx, canary),
    specValid: ctx.problems.length === 0,
    manualPromotion: analysis.manualPromotion,
    abortRequested: ctx.requests.abort && !alreadyConsumed(ctx, ANNOTATIONS.abort),
    promoteRequested: ctx.requests.promote && !alreadyConsumed(ctx, ANNOTATIONS.promote),
    failedChecks: canary.failedChecks,
    threshold: analysis.threshold,
    progressDeadlineSeconds: analysis.progressDeadlineSeconds,
    inconclusiveLimit: analysis.inconclusiveLimit,
    trafficWithheld: canary.trafficWithheld === true,
    ...refusalOf(ctx),
    pendingGates: GATE_TYPES.filter(
      (type) => analysis.webhooks.some((w) => w.type === type) && !(canary.gates?.passed ?? []).includes(type),
    ),
    nextStepCapacity: capacityFor(ctx, canary, canary.step + 1),
    ...(progress !== undefined ? { progress } : {}),
  };
}

/**
 * The refusal of the last apply of the children, as the reconciler recorded it (applyRefusal), and why the
 * route's implementation does not carry the route, as observed.
 */
export function refusalOf(ctx: PlanView): { applyRefused?: string; routeNotCarried?: string } {
  const refused = applyRefusal(ctx.previous.conditions);
  const notCarried = ctx.observed.routeNotCarried;
  return {
    ...(refused !== undefined ? { applyRefused: refused } : {}),
    ...(notCarried !== undefined ? { routeNotCarried: `${notCarried.reason}: ${notCarried.message}` } : {}),
  };
}

function describeSpecChanges(ctx: PlanView, canary: CanaryView): string {
  return templateChanged(ctx, canary) ? describeChanges(testedTemplate(ctx, canary), specTemplate(ctx)) : "";
}

/** The time and readiness evidence for moving the stage on (the verdict is added once the analysis ran). */
export function progressOf(ctx: PlanView, canary: CanaryView): Progress {
  const ready = secondaryReadyNow(ctx, canary);
  // Traffic withheld while Prometheus does not answer was withheld from a ready secondary.
  const wasReady = wasSecondaryReady(ctx);
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

/** The last plan took the secondary as ready: while stepping its weight is above 0 exactly when it was. */
export function wasSecondaryReady(ctx: PlanView): boolean {
  // Traffic withheld while Prometheus does not answer was withheld from a ready secondary; a secondary that got
  // mirrored or matching requests (the mirror and A/B phases, at weight 0) was ready too.
  const previous = ctx.previous.weights;
  return (
    (previous?.secondary ?? 0) > 0 ||
    previous?.mirror !== undefined ||
    previous?.match === true ||
    ctx.previous.canary?.trafficWithheld === true
  );
}

/**
 * The secondary has, Available with the image under test, the pods that the weight of `step` needs
 * (`spec.scaling: weighted`); false while its status has not caught up with a scale. Always true with
 * `fixed`, where readiness alone decides.
 */
function capacityFor(ctx: PlanView, canary: CanaryView, step: number): boolean {
  const { spec } = ctx;
  if (spec.scaling === "fixed") return true;
  const observed = ctx.observed.secondary;
  if (!runsSubject(ctx, canary) || observed?.currentAvailable === undefined) return false;
  const weight = stepWeight(spec.analysis.weights, Math.max(0, step));
  return observed.currentAvailable >= replicasForWeight(spec.replicas, spec.testReplicas, weight);
}

/**
 * May the secondary take traffic now? With `spec.scaling: fixed`, when its Deployment is rolled out and
 * Available with the image under test (observation.ts). With `weighted`, when the pods of the current
 * step's weight are Available with that image, whatever a scale-up for the next step is doing; while the
 * Deployment's status has not caught up with such a scale, as it was.
 */
export function secondaryReadyNow(ctx: PlanView, canary: CanaryView): boolean {
  const strategy = ctx.spec.strategy;
  if (strategy.type === "batches") return batchReadyNow(ctx, canary, strategy.count);
  if (ctx.spec.scaling === "fixed") return secondaryReady(ctx.observed, canary.image, secondaryRevision(ctx, canary));
  const observed = ctx.observed.secondary;
  if (observed === null || !runsSubject(ctx, canary)) return false;
  if (observed.currentAvailable === undefined) return wasSecondaryReady(ctx);
  return capacityFor(ctx, canary, canary.step);
}

/** The secondary Deployment carries the image and pod-template revision under test. */
export function runsSubject(ctx: PlanView, canary: CanaryView): boolean {
  const observed = ctx.observed.secondary;
  return (
    observed !== null && observed.image === canary.image && showsRevision(observed, secondaryRevision(ctx, canary))
  );
}

/**
 * May the secondary take traffic? It runs the tested template and still has the pods of the last batch
 * that was rolled out available (batch 1 before it is): growing into the next batch does not make it
 * "not ready", losing pods it had does.
 */
export function batchReadyNow(ctx: PlanView, canary: CanaryView, count: number): boolean {
  if (ctx.observed.secondary === null || !runsSubject(ctx, canary)) return false;
  const available = ctx.observed.secondary.currentAvailable;
  if (available === undefined) return wasSecondaryReady(ctx);
  return available >= batchReplicas(ctx.spec.replicas, count, Math.max(1, canary.step));
}
