import type { CanaryState } from "../api/types.js";
import type { CanaryView, PlanContext, PlanView } from "./context.js";
import { emit } from "./context.js";
import type { TestFailure } from "./test-facts.js";
import { isEnding, routeCarries } from "./test-facts.js";
import { digestFailure, secondaryRemovable } from "./decisions.js";
import { recordFailedImage } from "../identity/failed-images.js";
import { trafficDrained } from "./observation.js";
import type { Weights } from "./types.js";
import { revisionOf, settingsRevisionOf } from "../identity/revision.js";
import { primaryRestored } from "./batch-release.js";
import { observedDigest, primaryRecord, testTemplateFields, testedTemplate } from "./subject.js";

/** "at step 3 of 5" (steps count from 1 for people), or "before the first step". */
export function stepLabel(ctx: PlanView, canary: CanaryView): string {
  const total = ctx.spec.analysis.weights.length;
  return canary.step < 0 ? "before the first step" : `at step ${Math.min(canary.step, total - 1) + 1} of ${total}`;
}

/** Starts a test of spec.image: the secondary is requested, no traffic goes to it until it is ready. */
export function startTest(ctx: PlanContext): CanaryState {
  const canary: CanaryState = {
    image: ctx.spec.image,
    stage: "WaitingForSecondary",
    step: -1,
    startedAt: ctx.at,
    stepStartedAt: ctx.at,
    failedChecks: 0,
    ...testTemplateFields(ctx),
  };
  ctx.status.canary = canary;
  pinTemplates(ctx, canary);
  const changes = canary.changes !== undefined && canary.changes !== "" ? ` (${canary.changes})` : "";
  emit(
    ctx,
    "Normal",
    "TestStarted",
    `testing ${canary.image}${changes} on the secondary; ${ctx.status.primaryImage ?? "the primary"} keeps all traffic until it is ready`,
  );
  return canary;
}

/**
 * Records the metrics of the app's analysis templates in the test, once, as they resolve now: the test is
 * judged by them to its end, whatever happens to the templates meanwhile (ADR 0031). A test that began before
 * its templates resolved (or before the app named any) records them at its first plan that resolves them.
 */
export function pinTemplates(ctx: PlanContext, canary: CanaryState): void {
  if (canary.analysisTemplates !== undefined) return;
  const resolution = ctx.observed.analysisTemplates;
  if (resolution?.kind !== "resolved") return;
  canary.analysisTemplates = structuredClone(resolution.templates);
}

/**
 * Ends a test without promoting it (rollbackDue says when): all traffic to the primary, the secondary removed once the route shows
 * it carries nothing. A failure is written to failedImages now, at the decision, not when the rollback
 * completes: the reconciler persists this status before acting, so a controller killed mid-rollback
 * cannot lose it. A superseded image did not fail and is not recorded.
 */
export function startRollback(ctx: PlanContext, canary: CanaryState, failure: TestFailure): void {
  canary.stage = "RollingBack";
  canary.stepStartedAt = ctx.at;
  delete canary.pausedAt;
  // A batch waiting for approval waits no more: the release ends.
  delete canary.approval;
  canary.outcome = { result: failure.result, reason: failure.reason, message: failure.message };
  if (failure.result === "Superseded") {
    emit(ctx, "Normal", "TestSuperseded", failure.message);
    return;
  }
  ctx.status.failedImages = recordFailedImage(ctx.status.failedImages, {
    image: canary.image,
    failedAt: ctx.at,
    reason: failure.reason,
    message: failure.message,
    ...(failure.metric !== undefined ? { metric: failure.metric } : {}),
    ...(failure.value !== undefined ? { value: failure.value } : {}),
    ...(failure.query !== undefined ? { query: failure.query } : {}),
    ...(canary.digest !== undefined ? { digest: canary.digest } : {}),
    ...(canary.template !== undefined
      ? {
          revision: canary.revision ?? revisionOf(canary.image, canary.template),
          settingsRevision: settingsRevisionOf(canary.template),
          changes: canary.changes ?? "",
        }
      : {}),
  });
  emit(ctx, "Warning", "RollingBack", `rolling back ${canary.image} (${failure.reason}): ${failure.message}`);
}

/** Hands the tested image to the primary. The weights hold while the primary rolls out. */
export function enterPromoting(
  ctx: PlanContext,
  canary: CanaryState,
  reason: "AnalysisPassed" | "PromotedManually",
  message: string,
): void {
  canary.stage = "Promoting";
  delete canary.approval;
  canary.stepStartedAt = ctx.at;
  delete canary.pausedAt;
  canary.outcome = { result: "Promoted", reason, message };
  const pods = ctx.observed.secondaryPods ?? [];
  if (canary.digest === undefined && pods.some((pod) => pod.ready && pod.image === canary.image)) {
    // ADR 0011: the reference is promoted as it is, as before digests were read; said, so that it is known.
    const seen = observedDigest(ctx.observed, canary.image);
    if (seen.kind === "unknown") {
      emit(
        ctx,
        "Warning",
        "DigestUnknown",
        `the secondary's pods report no image digest for ${canary.image}: the primary gets the reference as it is, and pulls it again`,
      );
    }
  }
}

/** The primary runs the tested image: it becomes the primary image, and traffic goes back to the primary. */
export function enterFinalising(ctx: PlanContext, canary: CanaryState): void {
  canary.stage = "Finalising";
  canary.stepStartedAt = ctx.at;
  ctx.status.primary = primaryRecord(canary.image, testedTemplate(ctx, canary), canary.digest);
  ctx.status.primaryImage = canary.image;
  ctx.status.lastPromotion = {
    image: canary.image,
    time: ctx.at,
    ...(canary.digest !== undefined ? { digest: canary.digest } : {}),
  };
  emit(ctx, "Normal", "PrimaryUpdated", `the primary runs ${canary.image}; moving all traffic to it`);
}

/**
 * Completes an ending test once the route has carried nothing to the secondary for the drain period
 * (secondaryRemovable says when): only then may the secondary go (plan.secondary null), so that no request
 * is sent to pods being deleted. The first observation of the drained route is recorded in status.
 */
export function finishIfDrained(ctx: PlanContext, canary: CanaryState): void {
  if (!isEnding(canary.stage)) return;
  const drained = trafficDrained(ctx.observed);
  if (!drained) {
    // The route carries traffic to the secondary again (a hand edit being repaired): the drain starts over.
    delete canary.drainedAt;
    return;
  }
  canary.drainedAt ??= ctx.at;
  // A batch rollback lets the new version go only once the old one runs all its replicas again.
  if (ctx.spec.strategy.type === "batches" && canary.stage === "RollingBack" && !primaryRestored(ctx)) return;
  const removable = secondaryRemovable({
    stage: canary.stage,
    drained,
    neverRouted: canary.step < 0,
    drainedAt: canary.drainedAt,
    drainSeconds: ctx.spec.drainSeconds,
    now: ctx.now,
  });
  if (!removable) return;
  delete ctx.status.canary;
  const primary = ctx.status.primaryImage ?? canary.image;
  if (canary.stage === "Finalising") {
    const message = `promoted ${canary.image}: the primary runs it and takes all traffic`;
    emit(ctx, "Normal", "Promoted", message);
    ctx.ended = { reason: "Promoted", message, image: canary.image };
    return;
  }
  const outcome = canary.outcome ?? { result: "Failed", reason: "RolledBack", message: "the test ended" };
  if (outcome.result === "Superseded") {
    ctx.ended = { reason: "Superseded", message: outcome.message, image: canary.image };
    return;
  }
  const message = `rolled back ${canary.image} (${outcome.reason}): ${outcome.message}; traffic is back on ${primary}`;
  emit(ctx, "Warning", "RolledBack", message);
  ctx.ended = { reason: outcome.result === "Aborted" ? "Aborted" : "RolledBack", message, image: canary.image };
}

/**
 * Records when the route was first observed carrying the weights this plan routes by for the current step
 * (`stepRoutedAt`, which starts the step's clock: stepClockStart). A plan that moves the weight observes
 * the route as it was, so the record goes until a later observation shows the new weight; a route seen
 * carrying something else (an apply that never happened, a hand edit being repaired) clears it too, and
 * the step is timed again from when the route is right. Only the stepping stages time steps by the route.
 */
export function recordRouted(ctx: PlanContext, canary: CanaryState, planned: Weights, complete = true): void {
  const timed = complete && (canary.stage === "Stepping" || canary.stage === "AwaitingPromotion");
  if (timed && routeCarries(ctx.observed.routedWeights, planned)) canary.stepRoutedAt ??= ctx.at;
  else delete canary.stepRoutedAt;
}

/**
 * Records the digest the secondary runs, once its pods report one, and says when the test no longer tests
 * one build (decisions.ts, digestFailure).
 */
export function trackDigest(ctx: PlanContext, canary: CanaryState): TestFailure | undefined {
  const seen = observedDigest(ctx.observed, canary.image);
  const failure = digestFailure(canary.image, seen, canary.digest);
  if (failure === undefined && seen.kind === "one") canary.digest ??= seen.digest;
  return failure;
}
