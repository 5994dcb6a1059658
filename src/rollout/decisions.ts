/**
 * The rollout's decisions, one function per question a user asks:
 *
 * - when does a step begin?        {@link stepDue}
 * - when does a step end?          {@link stepComplete} (its analysis is due), timed by {@link stepClockStart}
 * - when does it wait for pods?    {@link capacityWait} (the next step's, with `spec.scaling: weighted`)
 * - when does it promote?          {@link promotionDue} (and {@link promoteRefusal}: why a request is not followed)
 * - when does it wait for a person? {@link promotionGateReached}
 * - when does a webhook hold it?   {@link gateDue} (confirm-rollout, pre-rollout, confirm-promotion)
 * - when does it roll back?        {@link rollbackDue}, and {@link digestFailure} (the test no longer tests one build)
 * - when does an approved batch start the next? {@link approvalDue}
 * - where does the secondary's share go while the route is refused? {@link secondaryServiceTrack}
 * - when is the route handed over to another mesh? {@link routeHandoverDue}
 * - when is a StatefulSet's pod deleted? {@link strandedPods}
 *
 * Three questions of arithmetic rather than of the test's course have a file each beside this one:
 * - when does it look again?       requeue.ts, `requeueAfterSeconds`
 * - how many pods does the secondary run? replicas.ts, `secondaryReplicas` (and `replicasForWeight`)
 * - how does a pause count toward a deadline? It does not: paused-clocks.ts, `clockAfterPause`, over every
 *   clock (`resumedClocks`)
 *
 * Each is pure over {@link TestFacts} (test-facts.ts), a snapshot of one test taken where the planner asks
 * (facts.ts); the planner (stages.ts, controls.ts, lifecycle.ts) keeps only the effects: it moves the stage,
 * records, emits. The tables of cases for each question are in decisions.test.ts.
 */
import { ANNOTATIONS } from "../api/types.js";
import type { CanaryStage, Track } from "../api/types.js";
import type { Verdict } from "../analysis/verdicts.js";
import { describeResult } from "../analysis/verdicts.js";
import { secondsUntil } from "../time/timestamps.js";
import type { GateType, Progress, TestFacts, TestFailure } from "./test-facts.js";
import { isEnding, isTesting } from "./test-facts.js";
import type { SetPodsObservation, StrandedPodObservation, Weights } from "./types.js";

/** The gates met before the first step; confirm-promotion is met before promotion. */
function beforeFirstStep(gate: GateType): boolean {
  return gate === "confirm-rollout" || gate === "pre-rollout";
}

/**
 * When does a webhook hold the test? Which gate must answer (2xx) before the test may move on now:
 * - confirm-rollout: as soon as the test starts (not paused, the checks can run), before the secondary
 *   runs at all ({@link secondaryHeld}): no pod of the image under test starts before it answered 2xx.
 * - pre-rollout: once the secondary is ready, before the first step: no traffic reaches the secondary
 *   before it answered 2xx.
 * - confirm-promotion: when promotion would follow the last step's passed analysis (not with
 *   `manualPromotion`, where a person decides; nor for the promote annotation, which is that person).
 * A confirm gate that does not answer 2xx holds the test, and is asked again one interval later; a
 * pre-rollout that does not rolls the test back (rollbackDue).
 */
export function gateDue(f: TestFacts): GateType | undefined {
  const pending = f.pendingGates ?? [];
  const p = f.progress;
  if (p === undefined || f.paused || pending.length === 0) return undefined;
  if (f.stage === "WaitingForSecondary") {
    if (!f.specValid) return undefined;
    if (pending.includes("confirm-rollout")) return "confirm-rollout";
    return f.secondaryReady && pending.includes("pre-rollout") ? "pre-rollout" : undefined;
  }
  if (!pending.includes("confirm-promotion") || f.manualPromotion) return undefined;
  if (f.stage === "AwaitingPromotion") {
    return f.secondaryReady && !p.readinessChanged ? "confirm-promotion" : undefined;
  }
  return undefined;
}

/**
 * Is the secondary held back? While the confirm-rollout webhooks have not answered 2xx, the test waits
 * before its secondary Deployment exists (as Flagger asks before the canary is scaled up): no pods, no
 * progress deadline, nothing to roll back.
 */
export function secondaryHeld(f: Pick<TestFacts, "stage" | "pendingGates">): boolean {
  return f.stage === "WaitingForSecondary" && (f.pendingGates ?? []).includes("confirm-rollout");
}

/** The gates before the first step have all answered 2xx. */
function firstStepGatesOpen(f: TestFacts): boolean {
  return !(f.pendingGates ?? []).some(beforeFirstStep);
}

/** The confirm-promotion gate has answered 2xx (or there is none). */
function promotionGateOpen(f: TestFacts): boolean {
  return !(f.pendingGates ?? []).includes("confirm-promotion");
}

/**
 * When does a step end? Once the route has been observed carrying the step's weight and has carried it
 * for one whole interval: the test is stepping, not paused, the spec's checks can run, and the secondary
 * is (still) ready. Its analysis is then due; the verdict decides what comes next (stepDue, promotionDue,
 * rollbackDue). A step decided but not yet seen on the route never ends, whatever the time.
 */
export function stepComplete(f: TestFacts): boolean {
  return (
    stepLasted(f) &&
    // Never a higher weight before the pods that take it are there (spec.scaling: weighted).
    (f.nextStepCapacity || f.step + 1 >= f.steps)
  );
}

/** The step has lasted its interval on the route, whatever the next step's capacity (see stepComplete). */
function stepLasted(f: TestFacts): boolean {
  const p = f.progress;
  return (
    p !== undefined &&
    f.stage === "Stepping" &&
    !f.paused &&
    f.specValid &&
    f.secondaryReady &&
    !p.readinessChanged &&
    p.routed &&
    p.intervalPassed
  );
}

/**
 * When does a step wait for capacity? With `spec.scaling: weighted`, when the step has lasted its interval
 * but the pods the next step's weight needs are not all Available yet: its analysis waits for them.
 */
export function capacityWait(f: TestFacts): boolean {
  return stepLasted(f) && !f.nextStepCapacity && f.step + 1 < f.steps;
}

/** How a step begins. */
export type StepStart =
  /** The secondary is ready: step 0 begins with the first weight. */
  | "SecondaryReady"
  /** The analysis of a step that is not the last passed: the next step begins. */
  | "AnalysisPassed"
  /** The secondary's readiness changed: the current step begins again (its weight follows readiness). */
  | "ReadinessChanged"
  /**
   * Prometheus answers again after traffic was withheld for want of an answer: the current step begins
   * again with its weight, and is judged one interval later on its own traffic.
   */
  | "PrometheusAnswered";

/** An analysis got an answer from Prometheus while the secondary's traffic was withheld for want of one. */
function analysisResumed(f: TestFacts): boolean {
  const v = f.progress?.verdict;
  return (
    f.trafficWithheld &&
    stepComplete(f) &&
    v !== undefined &&
    !(v.kind === "inconclusive" && v.cause === "PrometheusUnavailable")
  );
}

/**
 * When does a step begin? When the secondary becomes ready (the first step; never while paused, nor while
 * the checks cannot run: no traffic goes to an image that cannot be judged), when a step that is not the
 * last passed its analysis, and again whenever the secondary's readiness changes: the analysis window must
 * cover traffic at the step's weight, and the deadline for a secondary that stays not ready counts from
 * the moment it went. A readiness change counts even while paused.
 */
export function stepDue(f: TestFacts): StepStart | undefined {
  const p = f.progress;
  if (p === undefined) return undefined;
  switch (f.stage) {
    case "WaitingForSecondary":
      return !f.paused && f.secondaryReady && f.specValid && firstStepGatesOpen(f) ? "SecondaryReady" : undefined;
    case "Stepping":
    case "AwaitingPromotion":
      if (p.readinessChanged) return "ReadinessChanged";
      if (analysisResumed(f)) return "PrometheusAnswered";
      return stepComplete(f) && p.verdict?.kind === "passed" && f.step + 1 < f.steps ? "AnalysisPassed" : undefined;
    case "Promoting":
    case "Finalising":
    case "RollingBack":
      return undefined;
  }
}

/** Why the tested image goes to the primary. */
export type PromotionReason = "AnalysisPassed" | "PromotedManually";

/**
 * When does it promote?
 * - On the promote annotation, while the image is under test (even paused, even before the first step),
 *   still named by spec.image, and the secondary is ready with it.
 * - When the last step passed its analysis and no manual gate is set, and the confirm-promotion
 *   webhooks (if any) answered 2xx (gateDue).
 * - When the manual gate is removed from the spec while the test waits at it (and the secondary is ready),
 *   or the confirm-promotion webhooks answer 2xx while it waits at them.
 */
export function promotionDue(f: TestFacts): PromotionReason | undefined {
  if (f.promoteRequested) {
    return isTesting(f.stage) && f.image === f.specImage && f.templateChanged !== true && f.secondaryReady
      ? "PromotedManually"
      : undefined;
  }
  const p = f.progress;
  if (p === undefined || f.manualPromotion) return undefined;
  if (!promotionGateOpen(f)) return undefined;
  if (f.stage === "AwaitingPromotion") {
    return !f.paused && f.secondaryReady && !p.readinessChanged ? "AnalysisPassed" : undefined;
  }
  if (analysisResumed(f)) return undefined;
  return stepComplete(f) && p.verdict?.kind === "passed" && f.step + 1 >= f.steps ? "AnalysisPassed" : undefined;
}

/** Why a promote request is not followed. */
export type PromoteRefusal =
  /** Warned: the test is being rolled back. */
  | "RollingBack"
  /** Quiet: promotion began already (or is over). */
  | "NotTesting"
  /** Warned: spec.image names another image now. */
  | "SpecImageChanged"
  /** Warned: the secondary has not proved ready with the image. */
  | "SecondaryNotReady";

/** Why a promote request present now is refused, or nothing when it is followed (see promotionDue). */
export function promoteRefusal(f: TestFacts): PromoteRefusal | undefined {
  if (!f.promoteRequested) return undefined;
  if (f.stage === "RollingBack") return "RollingBack";
  if (!isTesting(f.stage)) return "NotTesting";
  if (f.image !== f.specImage || f.templateChanged === true) return "SpecImageChanged";
  if (!f.secondaryReady) return "SecondaryNotReady";
  return undefined;
}

/**
 * When does it wait for a person (or a confirm-promotion webhook)? The last step passed and the spec asks
 * for manual promotion, or has confirm-promotion webhooks that have not answered 2xx yet.
 */
export function promotionGateReached(f: TestFacts): boolean {
  return (
    stepComplete(f) &&
    !analysisResumed(f) &&
    f.progress?.verdict?.kind === "passed" &&
    f.step + 1 >= f.steps &&
    (f.manualPromotion || !promotionGateOpen(f))
  );
}

/**
 * When does it roll back? In this order:
 * 1. Aborted: the abort annotation, while under test or promoting (promotion returns the primary).
 * 2. Superseded: spec.image no longer names the image under test (not a failure). A promote request
 *    still unanswered is answered first, so its author learns why it was refused.
 * Then, once the stage moves on (`progress`), never while paused:
 * 3. PreRolloutFailed: a pre-rollout webhook did not answer 2xx (before any traffic reached the secondary).
 * 4. ProgressDeadlineExceeded: the secondary did not become ready within the deadline.
 * 5. SecondaryNotReady: a stepping secondary stayed not ready for the whole deadline.
 * 6. RouteRefused: a step the route has not carried for the whole deadline (since the step, or its last
 *    analysis, began) while the API server refuses the apply that would route it, or the route's
 *    implementation does not carry it (a Gateway API route not accepted by a parent, a backend not resolved,
 *    no implementation reporting). A refused write does not go through by being retried, and a step never
 *    seen on the route is never judged: it would wait forever.
 * 7. AnalysisFailed: a step's analysis failed and the failures reach the threshold.
 * 8. NoEvidence: a step's analysis reached no verdict, and either `inconclusiveLimit` analyses in a row
 *    found no evidence of traffic, or no verdict was had for the whole progress deadline (Prometheus
 *    not answering, with `failWhenPrometheusFails: false`, ends here).
 * Every deadline counts only the time the test was not paused (clockAfterPause).
 * An analysis that gets an answer after traffic was withheld judges nothing: the step starts over.
 */
export function rollbackDue(f: TestFacts): TestFailure | undefined {
  if (f.abortRequested && (isTesting(f.stage) || f.stage === "Promoting")) {
    const primary = f.primaryImage ?? "the previous image";
    const message =
      f.stage === "Promoting"
        ? `aborted with the ${ANNOTATIONS.abort} annotation during promotion; the primary returns to ${primary}`
        : `aborted with the ${ANNOTATIONS.abort} annotation`;
    return { result: "Aborted", reason: "Aborted", message };
  }
  if (isTesting(f.stage) && f.image !== f.specImage && !f.promoteRequested) {
    const message =
      f.specImage === f.primaryImage
        ? `spec.image is back to ${f.specImage}, the primary's image; ending the test of ${f.image}`
        : `spec.image changed to ${f.specImage}; ending the test of ${f.image} first`;
    return { result: "Superseded", reason: "Superseded", message };
  }
  // Every change to the pod template is a new revision: the one under test is no longer what spec asks for.
  if (isTesting(f.stage) && f.templateChanged === true && !f.promoteRequested) {
    const message = `the pod template changed (${f.templateChanges ?? "a new revision"}); ending the test of ${f.image} first`;
    return { result: "Superseded", reason: "Superseded", message };
  }
  const p = f.progress;
  if (p === undefined || f.paused) return undefined;
  const deadline = f.progressDeadlineSeconds;
  const gate = p.gate;
  if (gate?.type === "pre-rollout" && !gate.passed) {
    const d = gate.decisive;
    return {
      result: "Failed",
      reason: "PreRolloutFailed",
      message: `pre-rollout webhook ${d !== undefined ? describeResult(d) : "did not answer 2xx"}`,
      ...(d !== undefined ? { metric: d.name } : {}),
      ...(d?.value !== undefined ? { value: d.value } : {}),
      ...(d?.query !== undefined ? { query: d.query } : {}),
    };
  }
  if (f.stage === "WaitingForSecondary") {
    if (secondaryHeld(f) || f.secondaryReady || !p.deadlinePassed) return undefined;
    const refused = f.applyRefused !== undefined ? `; a child could not be applied: ${f.applyRefused}` : "";
    return {
      result: "Failed",
      reason: "ProgressDeadlineExceeded",
      message: `the secondary did not become available with ${f.image} within ${deadline}s${refused}`,
    };
  }
  if ((f.stage !== "Stepping" && f.stage !== "AwaitingPromotion") || p.readinessChanged) return undefined;
  if (!f.secondaryReady) {
    if (!p.deadlinePassed) return undefined;
    return {
      result: "Failed",
      reason: "SecondaryNotReady",
      message: `the secondary was not ready with ${f.image} for ${deadline}s`,
    };
  }
  if (f.stage === "Stepping" && !p.routed && (f.applyRefused ?? f.routeNotCarried) !== undefined) {
    if (!p.deadlinePassed) return undefined;
    const why =
      f.applyRefused !== undefined
        ? `the apply is refused: ${f.applyRefused}`
        : `its implementation does not carry it: ${f.routeNotCarried ?? ""}`;
    return {
      result: "Failed",
      reason: "RouteRefused",
      message: `the route has not carried the weight of step ${f.step + 1} of ${f.steps} for ${deadline}s; ${why}`,
    };
  }
  const verdict = p.verdict;
  if (!stepComplete(f) || verdict === undefined || analysisResumed(f)) return undefined;
  if (verdict.kind === "inconclusive") return noEvidence(f, p, verdict);
  if (verdict.kind !== "failed" || f.failedChecks + 1 < f.threshold) return undefined;
  return {
    result: "Failed",
    reason: "AnalysisFailed",
    message: describeResult(verdict.decisive),
    metric: verdict.decisive.name,
    ...(verdict.decisive.value !== undefined ? { value: verdict.decisive.value } : {}),
    ...(verdict.decisive.query !== undefined ? { query: verdict.decisive.query } : {}),
  };
}

/** The NoEvidence failure, when an inconclusive analysis reaches a bound (see rollbackDue). */
function noEvidence(
  f: TestFacts,
  p: Progress,
  verdict: Extract<Verdict, { kind: "inconclusive" }>,
): TestFailure | undefined {
  const count = p.inconclusiveAnalyses + (verdict.cause === "NoEvidence" ? 1 : 0);
  const limitReached = verdict.cause === "NoEvidence" && count >= f.inconclusiveLimit;
  if (!limitReached && !p.noVerdictDeadlinePassed) return undefined;
  const why = limitReached
    ? `no evidence that the secondary served traffic in ${count} analyses in a row`
    : `no verdict for ${f.progressDeadlineSeconds}s`;
  const d = verdict.decisive;
  return {
    result: "Failed",
    reason: "NoEvidence",
    message: `${why}: ${verdict.message}`,
    ...(d !== undefined ? { metric: d.name } : {}),
    ...(d?.value !== undefined ? { value: d.value } : {}),
    ...(d?.query !== undefined ? { query: d.query } : {}),
  };
}

/**
 * Which pods does the secondary's Service select? `<name>-secondary` is the route's destination for the
 * secondary's share (ADR 0010). It selects the secondary's pods, except while a test is rolled back and
 * the route still sends the secondary a share because the API server refuses the route's write: the
 * rollback's first move, the route's 100/0, is then the very write that is refused. The Service then
 * selects the primary's pods, so that the share the route still gives the secondary lands on the primary.
 * The per-track Services are applied before the route, so their write can go through where the route's
 * does not. Once the route is written and shows the secondary drained, the Service selects its own track again
 * (nothing routes to it by then), before the secondary's pods go.
 */
export function secondaryServiceTrack(f: {
  stage: CanaryStage;
  /** The last apply of the children was refused (applyRefusal). */
  applyRefused: boolean;
  routedWeights: Weights | null;
}): Track {
  const stillRouted = f.routedWeights !== null && f.routedWeights.secondary > 0;
  return f.stage === "RollingBack" && f.applyRefused && stillRouted ? "primary" : "secondary";
}

/**
 * When may the secondary go? Once the route has been observed carrying nothing to it for `drainSeconds`:
 * Envoy proxies pick a route change up a moment after the API server has it, so deleting the pods the
 * moment the VirtualService reads 100/0 would reset requests still in flight to them. The time counts from
 * the first observation (recorded in status as `drainedAt`), so a restart neither shortens nor repeats it.
 */
export function secondaryRemovable(facts: {
  stage: CanaryStage;
  drained: boolean;
  /** The test never took its first step: the route never sent the secondary anything, so nothing drains. */
  neverRouted: boolean;
  drainedAt: string | undefined;
  drainSeconds: number;
  now: Date;
}): boolean {
  if (!isEnding(facts.stage) || !facts.drained) return false;
  if (facts.neverRouted) return true;
  if (facts.drainedAt === undefined) return false;
  return secondsUntil(facts.now, facts.drainedAt, facts.drainSeconds) <= 0;
}

/**
 * What to do with a route object another router left once the app's `spec.mesh` changed (a VirtualService
 * after `istio`, an HTTPRoute after `gateway-api`): first route everything to the app's Service (`handOver`),
 * which then selects both tracks' ready pods without a mesh, the primary's with one, so a proxy still holding
 * the old split never sends to a track that is scaled away; once that route has stood `drainSeconds` (proxies
 * have it), remove it (`remove`). In between, wait.
 */
export type RouteHandover = { kind: "handOver" } | { kind: "wait"; seconds: number } | { kind: "remove" };

export function routeHandoverDue(
  staleRoute: { handedOverAt?: string },
  now: Date,
  drainSeconds: number,
): RouteHandover {
  if (staleRoute.handedOverAt === undefined) return { kind: "handOver" };
  const left = secondsUntil(now, staleRoute.handedOverAt, drainSeconds);
  return left > 0 ? { kind: "wait", seconds: Math.ceil(left * 1000) / 1000 } : { kind: "remove" };
}

/** What the secondary's ready pods running the image under test report as its digest (subject.observedDigest). */
export type ObservedDigest =
  { kind: "unknown" } | { kind: "one"; digest: string } | { kind: "mixed"; digests: string[] };

/**
 * When does a test stop testing one build? When the secondary's ready pods disagree on the digest, or report one
 * other than the digest recorded for the test (the tag was pushed again and a pod pulled it): the analysis then
 * covered code that may not be what would be promoted, and the test fails. Asked while the image is under test;
 * no digest reported yet, or the first one (which the planner records), is no failure.
 */
export function digestFailure(
  image: string,
  seen: ObservedDigest,
  recorded: string | undefined,
): TestFailure | undefined {
  if (seen.kind === "unknown") return undefined;
  if (seen.kind === "mixed") {
    return {
      result: "Failed",
      reason: "DigestsDiffer",
      message: `the secondary's pods run different builds of ${image} (${seen.digests.join(", ")}): the test cannot say which one it judged`,
    };
  }
  if (recorded === undefined || recorded === seen.digest) return undefined;
  return {
    result: "Failed",
    reason: "DigestChanged",
    message: `the secondary's pods now run ${seen.digest} of ${image}, not ${recorded} that was under test (the tag was pushed again)`,
  };
}

/** What an approval does to a batch that waits for one. */
export type ApprovalAnswer = "held" | "approved";

/**
 * When does an approved batch start the next one? A batch that waits for a person (batches.ts, pausesAfter)
 * moves on when the approve annotation is on the app, not yet answered in this plan, and the release is not
 * paused: a paused release holds even an approval, which is acted on once it is resumed. Until then the test is
 * held ("held"): nothing moves and no analysis runs. Undefined: no batch waits.
 */
export function approvalDue(f: {
  waitingForApproval: boolean;
  paused: boolean;
  approveRequested: boolean;
}): ApprovalAnswer | undefined {
  if (!f.waitingForApproval) return undefined;
  return f.paused || !f.approveRequested ? "held" : "approved";
}

/**
 * When is a StatefulSet's pod deleted? Kubernetes' "forced rollback" case: with the default OrderedReady
 * policy, a pod of a revision that never becomes Ready holds the StatefulSet controller, which waits for it
 * before replacing anything, even after the template is reverted; the documented repair is to delete it. These
 * are the app's pods that run a revision the StatefulSet's template no longer has, on an ordinal at or above the
 * partition (where the template applies), not Ready and not terminating — once the StatefulSet controller has
 * seen the template, so that the pod it makes again is of the template's revision. Their claims stay (ordinals
 * keep their claims; the retention policy never deletes one). In name order.
 */
export function strandedPods(set: SetPodsObservation | undefined): StrandedPodObservation[] {
  if (set === undefined || set.revision === undefined || !set.caughtUp) return [];
  return set.pods
    .filter(
      (pod) =>
        pod.revision !== undefined &&
        pod.revision !== set.revision &&
        pod.ordinal !== undefined &&
        pod.ordinal >= set.partition &&
        !pod.terminating &&
        !pod.ready,
    )
    .map((pod) => ({ name: pod.name, resourceVersion: pod.resourceVersion, revision: pod.revision ?? "" }))
    .sort((a, b) => a.name.localeCompare(b.name));
}
