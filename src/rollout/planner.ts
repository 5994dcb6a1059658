import type { ResolvedSpec } from "../api/defaults.js";
import { withDefaults } from "../api/defaults.js";
import { InvalidSpecError } from "../api/errors.js";
import type { CanaryApp, CanaryState, MetricResult } from "../api/types.js";
import { ANNOTATIONS } from "../api/types.js";
import type { AnalysisCheck } from "../analysis/checks.js";
import { renderChecks, renderGateChecks } from "../analysis/checks.js";
import type { PlanContext } from "./context.js";
import { annotateCommand, consume, alreadyConsumed, createContext, emit, removeAnnotationCommand } from "./context.js";
import {
  handleAbort,
  handleInvalidRequests,
  handleImageChange,
  handlePause,
  handlePromote,
  handleRetry,
} from "./controls.js";
import { findFailedImage } from "../identity/failed-images.js";
import type { GateType } from "./test-facts.js";
import { isEnding, isTesting } from "./test-facts.js";
import { routeHandoverDue, secondaryHeld, secondaryServiceTrack, strandedPods } from "./decisions.js";
import { requeueAfterSeconds } from "./requeue.js";
import { secondaryReplicas } from "./replicas.js";
import { finishIfDrained, pinTemplates, recordRouted, startRollback, startTest, trackDigest } from "./lifecycle.js";
import { statusMessage } from "./message.js";
import { primaryRunning } from "./observation.js";
import { refusalOf, secondaryReadyNow, testFacts } from "./facts.js";
import { derivePhase } from "./phase.js";
import { advanceStage, promotionOverdue } from "./stages.js";
import { capacityMessage } from "./status-conditions.js";
import type { InvalidSpecPlan } from "./reported.js";
import { invalidSpecPlan, rejectedMessage } from "./reported.js";
import { announceRefusal, announceTemplateProblem } from "./refusal.js";
import { statusConditions } from "./status-conditions.js";
import { canonicalRevisions, revisionOf } from "../identity/revision.js";
import { describeShare, phaseRoute, secondaryWeight, splitWeights } from "./steps.js";
import {
  approveCommand,
  answerStrayApproval,
  batchCompleteNow,
  batchReplicasNow,
  batchWeight,
  batchesOf,
} from "./batch-release.js";
import { batchStatus } from "./batches.js";
import {
  deployedImage,
  primaryDeployedImage,
  primaryRecord,
  primaryTemplate,
  specIsPrimary,
  specRevisionRef,
  specTemplate,
  testedTemplate,
} from "./subject.js";
import type { Observation, Plan, PlanInput } from "./types.js";

/** The input of `analysisDue`: a plan's input before the checks have run. */
export type AnalysisDueInput = Omit<PlanInput, "observed"> & { observed: Omit<Observation, "analysis"> };

/** What a reconcile plans from: the app as cached, what its children show, and the time. */
export interface ReconcileInput {
  app: CanaryApp;
  observed: Omit<Observation, "analysis">;
  now: Date;
}

/**
 * A reconcile's plan, in one phase or two: the planner says itself whether it needs the analysis first.
 * - `invalid`: the spec cannot be acted on; record `plan.status` and touch no child.
 * - `ready`: the plan.
 * - `analysisDue`: run `checks` (already rendered for this app), then `complete` with one result a check,
 *   in order, gives the plan. The checks are a step's analysis, or the webhooks of a gate the test is at.
 */
export type Planning =
  | { kind: "invalid"; plan: InvalidSpecPlan }
  | { kind: "ready"; spec: ResolvedSpec; plan: Plan }
  | { kind: "analysisDue"; spec: ResolvedSpec; checks: AnalysisCheck[]; complete(results: MetricResult[]): Plan };

/** Plans a reconcile (see `Planning`). Pure, as `plan`. */
export function startPlan({ app, observed, now }: ReconcileInput): Planning {
  const refused = observed.specRefused;
  if (refused !== undefined) {
    return { kind: "invalid", plan: invalidSpecPlan(app, refused.message, now, refused.reason) };
  }
  try {
    const spec = withTemplateMetrics(withDefaults(app.spec), app, observed);
    const first = evaluate({ app, spec, observed, now });
    const gate = first.gateWanted;
    if (gate !== undefined) {
      return {
        kind: "analysisDue",
        spec,
        checks: renderGateChecks(app, spec, gate, now, planRevisions(spec, first.plan)),
        complete: (results) => plan({ app, spec, observed: { ...observed, gate: { type: gate, results } }, now }),
      };
    }
    if (!first.analysisWanted) return { kind: "ready", spec, plan: first.plan };
    const checks = renderChecks(app, spec, now, planRevisions(spec, first.plan));
    return {
      kind: "analysisDue",
      spec,
      checks,
      complete: (analysis) => plan({ app, spec, observed: { ...observed, analysis }, now }),
    };
  } catch (error) {
    if (error instanceof InvalidSpecError) return { kind: "invalid", plan: invalidSpecPlan(app, error.message, now) };
    throw error;
  }
}

/**
 * The spec with the metrics of its analysis templates joined to its own (ADR 0031): a running test's, as they
 * were recorded when it started; otherwise those the templates resolve to now (the test a plan starts records
 * them). A test that recorded none (it began before the app named a template) takes them when they resolve.
 */
export function withTemplateMetrics(
  spec: ResolvedSpec,
  app: CanaryApp,
  observed: Pick<Observation, "analysisTemplates">,
): ResolvedSpec {
  const resolution = observed.analysisTemplates;
  const templates =
    app.status?.canary?.analysisTemplates ?? (resolution?.kind === "resolved" ? resolution.templates : []);
  if (templates.length === 0) return spec;
  return {
    ...spec,
    analysis: { ...spec.analysis, metrics: [...spec.analysis.metrics, ...templates.flatMap((t) => t.metrics)] },
  };
}

/** The canonical revisions the plan's pods carry: what the checks select each track's requests by. */
function planRevisions(spec: ResolvedSpec, plan: Plan): Record<"primary" | "secondary", string> {
  const templates = plan.templates;
  return canonicalRevisions(spec, {
    primary: { ...plan.primary, ...(templates ? { template: templates.primary } : {}) },
    secondary:
      plan.secondary === null ? null : { ...plan.secondary, ...(templates ? { template: templates.secondary } : {}) },
  });
}

/**
 * Everything a reconcile should make true, from the CanaryApp (its status is the whole rollout state), the
 * observed children and the time. Pure: no I/O, no clock, no randomness; `input.app` is never modified.
 *
 * The reconciler persists `plan.status` before it acts, so the status is the record of what should be:
 * a plan run again on its own status and the same observation gives the same plan and no new events.
 */
export function plan(input: PlanInput): Plan {
  return evaluate(input).plan;
}

/**
 * Whether the reconciler should run the checks before calling `plan`: the test is stepping, not paused,
 * the secondary is ready and the current step has lasted one interval. It runs the same decisions as
 * `plan`, so the two never disagree.
 */
export function analysisDue(input: AnalysisDueInput): boolean {
  const { secondary, primary, routedWeights, analysisRefused, analysisTemplates } = input.observed;
  const observed = {
    primary,
    secondary,
    routedWeights,
    ...(analysisRefused ? { analysisRefused } : {}),
    ...(analysisTemplates ? { analysisTemplates } : {}),
  };
  return evaluate({ ...input, observed }).analysisWanted;
}

function evaluate(input: PlanInput): { plan: Plan; analysisWanted: boolean; gateWanted: GateType | undefined } {
  const ctx = createContext(input);
  announceRefusal(ctx);
  announceTemplateProblem(ctx);
  settlePrimaryImage(ctx);
  handleInvalidRequests(ctx);
  const running = ctx.status.canary;
  if (running !== undefined) runTest(ctx, running);
  // After the running test, which may record a failure, so that a replay of this plan (its annotation
  // not yet removed) finds nothing left to forget; before a new test, so that it may be the retried one.
  handleRetry(ctx);
  if (ctx.status.canary === undefined) noTestRunning(ctx);
  answerStrayApproval(ctx);
  return { plan: assemble(ctx), analysisWanted: ctx.analysisWanted, gateWanted: ctx.gateWanted };
}

/**
 * The primary image is the source of truth for what the primary runs. Without one, a running primary is
 * adopted as it is; on a first deploy spec.image goes straight to the primary (there is nothing to test
 * it against).
 */
function settlePrimaryImage(ctx: PlanContext): void {
  adoptPrimaryImage(ctx);
  // A status from before the primary's template was recorded: the primary runs spec's (it always did).
  // And while the first deploy has no primary Deployment yet (a template the API server rejected, say),
  // there is nothing to test against: spec's template goes to the primary, as the first image does.
  const firstDeploy =
    ctx.status.canary === undefined &&
    ctx.status.lastPromotion === undefined &&
    (ctx.previous.phase === undefined || ctx.previous.phase === "Initializing") &&
    ctx.observed.primary === null;
  if (ctx.status.primary === undefined || (firstDeploy && ctx.status.primary.image === ctx.status.primaryImage)) {
    ctx.status.primary = primaryRecord(ctx.status.primaryImage ?? ctx.spec.image, specTemplate(ctx));
  }
}

function adoptPrimaryImage(ctx: PlanContext): void {
  if (ctx.status.primaryImage !== undefined) return;
  const running = ctx.observed.primary?.image;
  if (running !== undefined && running !== "") {
    ctx.status.primaryImage = running;
    emit(ctx, "Normal", "Adopted", `adopted ${running}, which the primary Deployment runs`);
  } else {
    ctx.status.primaryImage = ctx.spec.image;
    emit(ctx, "Normal", "Initializing", `deploying ${ctx.spec.image} on the primary (the first image is not tested)`);
  }
}

function runTest(ctx: PlanContext, canary: CanaryState): void {
  handleAbort(ctx, canary);
  handlePromote(ctx, canary);
  handleImageChange(ctx, canary);
  // Before the stage moves on: a resume moves the clocks its deadlines are read from (resumedClocks).
  handlePause(ctx, canary);
  if (isTesting(canary.stage)) {
    const failure = trackDigest(ctx, canary);
    if (failure !== undefined) startRollback(ctx, canary, failure);
  }
  if (!isEnding(canary.stage)) pinTemplates(ctx, canary);
  const stage = canary.stage;
  advanceStage(ctx, canary);
  // A test that reached its end stage in this plan may already be drained (e.g. no traffic was on it).
  if (ctx.status.canary !== undefined && !isEnding(stage)) finishIfDrained(ctx, canary);
}

/** No test runs: consume stray requests, and start a test when spec.image asks for one. */
function noTestRunning(ctx: PlanContext): void {
  if (ctx.requests.promote && !alreadyConsumed(ctx, ANNOTATIONS.promote)) {
    consume(ctx, ANNOTATIONS.promote);
    emit(ctx, "Warning", "NothingToPromote", "no test is running; nothing to promote");
  }
  if (ctx.requests.abort) consume(ctx, ANNOTATIONS.abort);
  const image = ctx.spec.image;
  if (specIsPrimary(ctx)) return;
  const failed = findFailedImage(ctx.status.failedImages, specRevisionRef(ctx));
  if (failed !== undefined) {
    // Said once per spec generation; a rollback that just recorded it has said it already.
    const alreadySaid =
      (ctx.previous.phase === "Failed" && ctx.previous.observedGeneration === ctx.app.metadata.generation) ||
      ctx.ended?.image === image;
    if (!alreadySaid) {
      emit(
        ctx,
        "Warning",
        "FailedImage",
        `not testing ${image}: it failed at ${failed.failedAt} (${failed.reason}: ${failed.message}); to test it again: ${annotateCommand(ctx, ANNOTATIONS.retry, image)}`,
      );
    }
    return;
  }
  if (ctx.problems.length > 0) return;
  // Never a test without its templates' metrics: one judged without them could pass what they would fail.
  if (ctx.observed.analysisTemplates?.kind === "problem") return;
  // A promote or abort request still on the app was meant for no test, or for one that just ended. The new
  // test waits for the annotation's removal (which triggers the next reconcile): started now, a replay of
  // this plan before the removal would apply the old request to it.
  if (ctx.requests.promote || ctx.requests.abort) return;
  const canary = startTest(ctx);
  handlePause(ctx, canary);
  // The secondary may already run this image (a Deployment reused or left over): no need to wait for an event.
  advanceStage(ctx, canary);
}

function assemble(ctx: PlanContext): Plan {
  const { status, spec, observed } = ctx;
  const canary = status.canary;
  const ready = canary !== undefined && secondaryReadyNow(ctx, canary);
  const batches = batchesOf(ctx);
  const weights = {
    ...splitWeights(
      batches !== undefined ? batchWeight(ctx, canary, ready) : secondaryWeight(canary, spec.analysis.weights, ready),
    ),
    ...phaseRoute(canary, spec.analysis.phases, ready),
  };
  // A batch is timed only once it is rolled out (its pods available, the old ones scaled down).
  if (canary !== undefined) {
    recordRouted(ctx, canary, weights, batches === undefined || batchCompleteNow(ctx, canary, batches.count));
  }
  const replicas =
    canary !== undefined && batches !== undefined ? batchReplicasNow(ctx, canary, batches.count) : undefined;
  if (batches !== undefined) {
    const batch = batchStatus(spec.replicas, batches.count, canary, ctx.previous.batch, ctx.ended);
    if (batch !== undefined) status.batch = batch;
  }
  const overdue = canary !== undefined && promotionOverdue(ctx, canary);
  const invalid = ctx.problems.length > 0;
  const specFailure = specIsPrimary(ctx) ? undefined : findFailedImage(status.failedImages, specRevisionRef(ctx));
  const specImageFailed = specFailure !== undefined;
  const primaryDeployed = primaryDeployedImage(ctx);
  const { applyRefused: refused, routeNotCarried: notCarried } = refusalOf(ctx);
  const secondaryService =
    canary !== undefined
      ? secondaryServiceTrack({
          stage: canary.stage,
          applyRefused: refused !== undefined,
          routedWeights: observed.routedWeights,
        })
      : "secondary";

  status.weights = {
    primary: weights.primary,
    secondary: weights.secondary,
    ...(weights.mirror !== undefined ? { mirror: weights.mirror } : {}),
    ...(weights.match !== undefined ? { match: true } : {}),
  };
  // What a StatefulSet shows of its two revisions, as observed (ADR 0015).
  if (observed.workload !== undefined) status.workload = structuredClone(observed.workload);
  else delete status.workload;
  const generation = ctx.app.metadata.generation;
  if (generation !== undefined) status.observedGeneration = generation;
  status.phase = derivePhase({
    canary,
    specImageFailed,
    primaryRunning: primaryRunning(observed, primaryDeployed, revisionOf(primaryDeployed, primaryTemplate(ctx))),
    invalid,
  });
  status.conditions = statusConditions(ctx, overdue);
  status.message = statusMessage({
    phase: status.phase,
    status,
    weights: spec.analysis.weights,
    threshold: spec.analysis.threshold,
    failWhenPrometheusFails: spec.analysis.failWhenPrometheusFails,
    requireTraffic: spec.analysis.requireTraffic,
    secondaryWeight: weights.secondary,
    secondaryShare: describeShare(weights),
    secondaryReady: ready,
    failed: specFailure,
    problems: ctx.problems,
    promotionOverdue: overdue,
    progressDeadlineSeconds: spec.analysis.progressDeadlineSeconds,
    ...(refused !== undefined ? { applyRefused: refused } : {}),
    ...(notCarried !== undefined ? { routeNotCarried: notCarried } : {}),
    secondaryServiceTrack: secondaryService,
    commands: {
      retry: annotateCommand(ctx, ANNOTATIONS.retry, spec.image),
      promote: annotateCommand(ctx, ANNOTATIONS.promote, "now"),
      abort: annotateCommand(ctx, ANNOTATIONS.abort, "now"),
      resume: removeAnnotationCommand(ctx, ANNOTATIONS.paused),
    },
  });
  const waiting = canary?.gates?.waiting;
  if (waiting !== undefined && (canary?.stage === "WaitingForSecondary" || canary?.stage === "AwaitingPromotion")) {
    status.message = `Waiting for the ${waiting.type} webhook ${waiting.name} (${waiting.message}); asked again every ${spec.analysis.intervalSeconds}s`;
  }
  if (ctx.capacityWait !== undefined && canary?.stage === "Stepping") {
    status.message = `Testing ${canary.image} at ${weights.secondary}%: ${capacityMessage(ctx.capacityWait)}`;
  }
  if (canary?.approval !== undefined && batches !== undefined) {
    const { batch } = canary.approval;
    status.message = `Batch ${batch} of ${batches.count} of ${canary.image} passed its analysis; waiting for approval: ${approveCommand(ctx)} (or ${annotateCommand(ctx, ANNOTATIONS.approve, "now")})`;
  }
  status.message = rejectedMessage(status.conditions) ?? status.message;
  const stranded = invalid ? [] : strandedPods(observed.setPods);
  if (stranded.length > 0) {
    const pods = stranded.map((pod) => `${pod.name} (revision ${pod.revision})`).join(", ");
    emit(
      ctx,
      "Warning",
      "StrandedPodsDeleted",
      `deleting ${pods}: not Ready, of a revision the StatefulSet no longer runs, which its controller would wait for forever; it makes them again at its template's revision, on the same claims`,
    );
  }

  const handover =
    observed.staleRoute === undefined ? undefined : routeHandoverDue(observed.staleRoute, ctx.now, spec.drainSeconds);
  const requeueForStage = requeueAfterSeconds({
    canary,
    analysis: spec.analysis,
    drainSeconds: spec.drainSeconds,
    secondaryReady: ready,
    invalid,
    applyRefused: refused !== undefined,
    routeNotCarried: notCarried !== undefined,
    now: ctx.now,
  });
  const requeue =
    handover?.kind === "wait"
      ? Math.min(handover.seconds, requeueForStage ?? Number.POSITIVE_INFINITY)
      : requeueForStage;
  return {
    // Only the image this test proved may reach the primary, and only once promotion began.
    // Pinned to the digest its pods ran, when they reported one: a tag pushed again cannot reach the primary.
    primary: {
      image: canary?.stage === "Promoting" ? deployedImage(canary.image, canary.digest) : primaryDeployed,
      replicas: replicas?.primary ?? spec.replicas,
    },
    // Not before confirm-rollout answered 2xx: the test then waits without the secondary's pods.
    secondary:
      canary !== undefined && !secondaryHeld(testFacts(ctx, canary))
        ? {
            image: canary.image,
            replicas:
              replicas?.secondary ??
              secondaryReplicas({
                scaling: spec.scaling,
                replicas: spec.replicas,
                testReplicas: spec.testReplicas,
                stage: canary.stage,
                step: canary.step,
                weights: spec.analysis.weights,
              }),
          }
        : null,
    templates: {
      primary: canary?.stage === "Promoting" ? testedTemplate(ctx, canary) : primaryTemplate(ctx),
      secondary: canary !== undefined ? testedTemplate(ctx, canary) : primaryTemplate(ctx),
    },
    weights,
    ...(secondaryService === "primary" ? { secondaryServiceSelects: "primary" as const } : {}),
    status,
    events: ctx.events,
    tellChildUpdates: ctx.events.length === 0,
    removeAnnotations: [...ctx.removeAnnotations].sort(),
    ...(stranded.length > 0 ? { deletePods: stranded } : {}),
    ...(handover?.kind === "handOver" && !invalid && observed.staleRoute !== undefined
      ? { routeHandover: { kind: "handOver" as const, of: observed.staleRoute.kind, at: ctx.at } }
      : {}),
    ...(handover?.kind === "remove" && !invalid && observed.staleRoute !== undefined
      ? { routeHandover: { kind: "remove" as const, of: observed.staleRoute.kind } }
      : {}),
    ...(requeue !== undefined ? { requeueAfterSeconds: requeue } : {}),
  };
}
