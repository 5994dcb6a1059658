import type { CanaryState } from "../api/types.js";
import { ANNOTATIONS, CONDITION } from "../api/types.js";
import { findCondition, setCondition } from "./conditions.js";
import type { PlanContext } from "./context.js";
import { annotateCommand, consume, emit } from "./context.js";
import { isTesting } from "./test-facts.js";
import { promoteRefusal, promotionDue, rollbackDue } from "./decisions.js";
import { resumedClocks } from "./paused-clocks.js";
import { testFacts } from "./facts.js";
import { forgetFailedImage, retryMatches } from "../identity/failed-images.js";
import { enterPromoting, startRollback, stepLabel } from "./lifecycle.js";

/*
 * The manual controls (annotations) and spec.image changes, applied to a running test before its stage
 * moves on. Each acts once: its effect is recorded in status, so a replay of the same plan finds nothing
 * left to do. Promote and abort are removed once handled.
 */

/**
 * A control with a value it does not accept (`abort=false`, `promote=yes`, `paused=maybe`) is answered
 * with a Warning that names what it accepts, and never acted on. A one-shot request is removed with it;
 * `paused` is a level and stays until fixed, the test neither held nor released by it.
 */
export function handleInvalidRequests(ctx: PlanContext): void {
  let levelMessage: string | undefined;
  for (const request of ctx.requests.invalid) {
    const level = request.annotation === ANNOTATIONS.paused;
    const use = level
      ? `use ${ANNOTATIONS.paused}=true to pause, or remove it to resume`
      : `use ${request.annotation}=${request.accepted}; the annotation was removed`;
    const message = `${request.annotation}=${request.value} is not understood: ${use}`;
    if (level) {
      levelMessage = message;
      continue;
    }
    consume(ctx, request.annotation);
    emit(ctx, "Warning", "InvalidAnnotation", message);
  }
  // The level stays until fixed: the InvalidAnnotation condition holds it, and the Warning is said once.
  const previous = findCondition(ctx.previous.conditions, CONDITION.InvalidAnnotation);
  if (levelMessage !== undefined) {
    if (previous?.status !== "True" || previous.message !== levelMessage) {
      emit(ctx, "Warning", "InvalidAnnotation", levelMessage);
    }
    ctx.status.conditions = setCondition(
      ctx.status.conditions,
      { type: CONDITION.InvalidAnnotation, status: "True", reason: "NotUnderstood", message: levelMessage },
      ctx.at,
    );
  } else if (previous !== undefined) {
    ctx.status.conditions = setCondition(
      ctx.status.conditions,
      {
        type: CONDITION.InvalidAnnotation,
        status: "False",
        reason: "Understood",
        message: "every control is understood",
      },
      ctx.at,
    );
  }
}

/**
 * `retry=IMAGE`: forget that IMAGE failed (every failed revision of it, by any name of the same build), so
 * that a spec naming it is tested again; `retry=REVISION` forgets that one failed revision.
 */
export function handleRetry(ctx: PlanContext): void {
  const image = ctx.requests.retry;
  if (image === undefined) return;
  consume(ctx, ANNOTATIONS.retry);
  if (!retryMatches(ctx.status.failedImages, image)) return;
  ctx.status.failedImages = forgetFailedImage(ctx.status.failedImages, image);
  emit(
    ctx,
    "Normal",
    "RetryRequested",
    `${image} is no longer recorded as failed; it is tested when spec.image names it`,
  );
}

/**
 * `abort`: roll back now and record the image as failed (reason Aborted), so it is not tested again
 * until retried. During Promoting this also returns the primary to the last promoted image: a rollout of
 * the image it ran before, as the way out of a promotion that cannot finish.
 */
export function handleAbort(ctx: PlanContext, canary: CanaryState): void {
  if (!ctx.requests.abort) return;
  const rollback = rollbackDue(testFacts(ctx, canary));
  consume(ctx, ANNOTATIONS.abort);
  if (rollback !== undefined) startRollback(ctx, canary, rollback);
}

/** `promote`: skip the remaining steps and hand the image to the primary, if the secondary proved ready. */
export function handlePromote(ctx: PlanContext, canary: CanaryState): void {
  if (!ctx.requests.promote) return;
  const facts = testFacts(ctx, canary);
  consume(ctx, ANNOTATIONS.promote);
  if (promotionDue(facts) === "PromotedManually") {
    const message = `promoted on request (${ANNOTATIONS.promote}) ${stepLabel(ctx, canary)}`;
    enterPromoting(ctx, canary, "PromotedManually", message);
    emit(ctx, "Normal", "PromotedManually", `promoting ${canary.image} to the primary: ${message}`);
    return;
  }
  switch (promoteRefusal(facts)) {
    case "RollingBack":
      emit(ctx, "Warning", "NothingToPromote", `${canary.image} is being rolled back; nothing to promote`);
      return;
    case "SpecImageChanged":
      emit(
        ctx,
        "Warning",
        "PromoteRejected",
        facts.image === ctx.spec.image
          ? `not promoting ${canary.image}: the pod template changed (${facts.templateChanges ?? ""})`
          : `not promoting ${canary.image}: spec.image changed to ${ctx.spec.image}`,
      );
      return;
    case "SecondaryNotReady": {
      const again = annotateCommand(ctx, ANNOTATIONS.promote, "now");
      emit(
        ctx,
        "Warning",
        "PromoteRejected",
        `not promoting ${canary.image}: the secondary is not ready with it; once it is: ${again}`,
      );
      return;
    }
    case "NotTesting": // already promoting or promoted
    case undefined:
      return;
  }
}

/**
 * spec.image no longer names the image under test: end this test cleanly (traffic back to the primary,
 * no failure recorded). A new test of spec.image starts once the route shows the secondary drained.
 */
export function handleImageChange(ctx: PlanContext, canary: CanaryState): void {
  const rollback = rollbackDue(testFacts(ctx, canary));
  if (rollback !== undefined) startRollback(ctx, canary, rollback);
}

/**
 * `paused` holds a test where it is: no step, no analysis, no deadline. On resume every clock moves forward
 * by the time paused (resumedClocks): no deadline counts it, and the step's interval goes on where it stopped.
 * Called before the stage moves on (advanceStage), which must see the clocks moved.
 */
export function handlePause(ctx: PlanContext, canary: CanaryState): void {
  if (!isTesting(canary.stage)) {
    delete canary.pausedAt;
    return;
  }
  // A paused value that is not understood changes nothing (handleInvalidRequests says so).
  if (ctx.requests.paused === undefined) return;
  if (ctx.requests.paused && canary.pausedAt === undefined) {
    canary.pausedAt = ctx.at;
    emit(
      ctx,
      "Normal",
      "Paused",
      `paused the test of ${canary.image} ${stepLabel(ctx, canary)}; remove the ${ANNOTATIONS.paused} annotation to resume`,
    );
  } else if (!ctx.requests.paused && canary.pausedAt !== undefined) {
    const resumed = resumedClocks(canary, ctx.at);
    delete canary.pausedAt;
    Object.assign(canary, resumed);
    emit(ctx, "Normal", "Resumed", `resumed the test of ${canary.image} ${stepLabel(ctx, canary)}`);
  }
}
