/**
 * A batch release in the plan being built (ADR 0014): the arithmetic and decisions of batches.ts applied to
 * what the reconciler observed. The effects (the approval's record, its Events) live here; the questions
 * ("how many pods?", "when does a batch wait for a person?") are answered in batches.ts.
 */
import type { CanaryState } from "../api/types.js";
import { ANNOTATIONS } from "../api/types.js";
import type { CanaryView, PlanContext, PlanView } from "./context.js";
import { annotateCommand, consume, alreadyConsumed, emit } from "./context.js";
import { approvalDue } from "./decisions.js";
import { isTesting } from "./test-facts.js";
import { runsSubject } from "./facts.js";
import { revisionOf } from "../identity/revision.js";
import { batchReplicas } from "../api/batch-sizes.js";
import { batchComplete, batchPlanReplicas, pausesAfter, replicaShare } from "./batches.js";
import { showsRevision } from "./observation.js";
import { deployedImage, testedTemplate } from "./subject.js";

/** The batches of the spec, when it asks for a batch release. */
export function batchesOf(ctx: PlanView): { count: number; pause: "first" | "all" | "none" } | undefined {
  const strategy = ctx.spec.strategy;
  return strategy.type === "batches" ? { count: strategy.count, pause: strategy.pause } : undefined;
}

/** The secondary's pods available with the tested template, when it runs it and its status caught up. */
function secondaryAvailable(ctx: PlanView, canary: CanaryView): number | undefined {
  const secondary = ctx.observed.secondary;
  return secondary !== null && runsSubject(ctx, canary) ? secondary.currentAvailable : undefined;
}

/** The primary runs the tested image and template (the hand-over has begun on it). */
function primaryRunsTested(ctx: PlanView, canary: CanaryView): boolean {
  const primary = ctx.observed.primary;
  const image = deployedImage(canary.image, canary.digest);
  return (
    primary !== null &&
    primary.image === image &&
    showsRevision(primary, revisionOf(image, testedTemplate(ctx, canary)))
  );
}

/** What each Deployment runs now (batchPlanReplicas, over this plan's observation). */
export function batchReplicasNow(
  ctx: PlanView,
  canary: CanaryView,
  count: number,
): { primary: number; secondary: number } {
  const primary = ctx.observed.primary;
  const promoting = canary.stage === "Promoting";
  return batchPlanReplicas({
    total: ctx.spec.replicas,
    count,
    stage: canary.stage,
    step: canary.step,
    secondaryAvailable: secondaryAvailable(ctx, canary),
    primaryReplicas: primary?.replicas,
    secondaryReplicas: ctx.observed.secondary?.replicas,
    // The primary given the tested template starts from none of its pods available.
    primaryAvailable: promoting && !primaryRunsTested(ctx, canary) ? 0 : primary?.currentAvailable,
  });
}

/** The current batch is rolled out: only then is it timed and judged (batchComplete). */
export function batchCompleteNow(ctx: PlanView, canary: CanaryView, count: number): boolean {
  return batchComplete({
    total: ctx.spec.replicas,
    count,
    step: canary.step,
    secondaryAvailable: secondaryAvailable(ctx, canary),
    primaryReplicas: ctx.observed.primary?.replicas,
  });
}

/**
 * The secondary's weight in a batch release: its share of the ready pods while it is tested (and ready) or
 * taking over; nothing before its first batch is ready, nor once the test ends (traffic returns to the
 * primary at once, before the secondary's pods go).
 */
export function batchWeight(ctx: PlanContext, canary: CanaryState | undefined, ready: boolean): number {
  if (canary === undefined) return 0;
  const share = replicaShare(ctx.observed.secondary?.readyReplicas ?? 0, ctx.observed.primary?.readyReplicas ?? 0);
  switch (canary.stage) {
    case "Stepping":
      return ready && canary.trafficWithheld !== true ? share : 0;
    case "AwaitingPromotion":
      return ready ? share : 0;
    case "Promoting":
      return share;
    case "WaitingForSecondary":
    case "Finalising":
    case "RollingBack":
      return 0;
  }
}

/** The route's split as the pods make it when no mesh splits traffic (`mesh: none`): the ready pods' share. */
export function podShare(ctx: PlanView): number {
  return replicaShare(ctx.observed.secondary?.readyReplicas ?? 0, ctx.observed.primary?.readyReplicas ?? 0);
}

/** The primary is back to all its replicas, available: a batch rollback may let the secondary go. */
export function primaryRestored(ctx: PlanView): boolean {
  const primary = ctx.observed.primary;
  return primary !== null && primary.available && primary.replicas === ctx.spec.replicas;
}

/** The command a person runs to approve the next batch. */
export function approveCommand(ctx: PlanView): string {
  const { name, namespace } = ctx.app.metadata;
  return `kubectl canaryapp approve ${name ?? "NAME"}${namespace !== undefined ? ` -n ${namespace}` : ""}`;
}

/**
 * A batch that passed its analysis, and whose pause type says so, waits for approval before the next batch
 * starts (pausesAfter). Returns true when it waits.
 */
export function waitForApproval(ctx: PlanContext, canary: CanaryState): boolean {
  const batches = batchesOf(ctx);
  const batch = canary.step + 1;
  if (batches === undefined || !pausesAfter(batches.pause, batch, batches.count)) return false;
  canary.approval = { batch, since: ctx.at };
  emit(
    ctx,
    "Normal",
    "WaitingForApproval",
    `batch ${batch} of ${batches.count} of ${canary.image} passed its analysis; waiting for approval: ${approveCommand(ctx)} (or ${annotateCommand(ctx, ANNOTATIONS.approve, "now")})`,
  );
  return true;
}

/**
 * A batch waiting for approval: the approve annotation starts the next batch (and is removed), unless the
 * release is paused; until then nothing moves, and no analysis runs. Returns true while the test is held here (so the stage does not move
 * on in this plan).
 */
export function holdForApproval(ctx: PlanContext, canary: CanaryState): boolean {
  const waiting = canary.approval;
  const answer = approvalDue({
    waitingForApproval: waiting !== undefined,
    paused: canary.pausedAt !== undefined,
    approveRequested: ctx.requests.approve && !alreadyConsumed(ctx, ANNOTATIONS.approve),
  });
  if (answer === undefined || waiting === undefined) return false;
  if (answer === "held") return true;
  consume(ctx, ANNOTATIONS.approve);
  delete canary.approval;
  canary.approved = waiting.batch;
  canary.step += 1;
  canary.stepStartedAt = ctx.at;
  canary.stepBeganAt = ctx.at;
  delete canary.stepRoutedAt;
  const count = batchesOf(ctx)?.count ?? 0;
  const replicas = batchReplicas(ctx.spec.replicas, count, canary.step + 1);
  emit(
    ctx,
    "Normal",
    "BatchApproved",
    `batch ${waiting.batch} of ${count} approved; batch ${canary.step + 1} runs ${replicas} of ${ctx.spec.replicas} replicas of ${canary.image}`,
  );
  return true;
}

/**
 * An approve annotation that finds no batch waiting is removed: quietly when the batch it was meant for was
 * just approved (a plan replayed before the annotation's removal), with a Warning otherwise.
 */
export function answerStrayApproval(ctx: PlanContext): void {
  if (!ctx.requests.approve || alreadyConsumed(ctx, ANNOTATIONS.approve)) return;
  const canary = ctx.status.canary;
  // Held for a paused release that waits for it (holdForApproval).
  if (canary?.approval !== undefined && canary.pausedAt !== undefined) return;
  consume(ctx, ANNOTATIONS.approve);
  if (canary !== undefined && canary.approved !== undefined && canary.approved === canary.step) return;
  const why =
    batchesOf(ctx) === undefined
      ? "the app is not released in batches (spec.strategy.type: batches)"
      : canary === undefined || !isTesting(canary.stage)
        ? "no batch release is running"
        : "no batch waits for approval (a batch waits once it passed its analysis)";
  emit(ctx, "Warning", "NothingToApprove", `${ANNOTATIONS.approve} ignored: ${why}`);
}
