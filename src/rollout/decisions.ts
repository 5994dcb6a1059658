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
 * - when does it look again?       {@link requeueAfterSeconds}
 * - how many pods does the secondary run? {@link secondaryReplicas} (and {@link replicasForWeight})
 * - how does a pause count toward a deadline? It does not: {@link clockAfterPause}, over every clock
 *   ({@link resumedClocks})
 *
 * Each is pure over {@link TestFacts}, a snapshot of one test taken where the planner asks; the planner
 * (stages.ts, controls.ts, lifecycle.ts) keeps only the effects: it moves the stage, records, emits. The
 * tables of cases for each question are in decisions.test.ts.
 */
import type { ResolvedAnalysis } from "../api/defaults.js";
import { ANNOTATIONS } from "../api/types.js";
import type { CanaryStage, CanaryState, MetricResult, Scaling, Track, WebhookType } from "../api/types.js";
import type { Verdict } from "./analysis.js";
import { describeResult } from "./analysis.js";
import { later, movedPast, secondsUntil } from "./time.js";
import type { Weights } from "./types.js";

/**
 * How does a pause count toward a deadline? It does not: every clock a test keeps counts only the time the
 * test was not paused (ADR 0022). The status keeps no record of past pauses, only the current one
 * (`pausedAt`), so the rule is applied when a pause ends: a clock's start moves forward by the part of the
 * pause that came after it. A clock started before the pause moves by the whole pause; one started during
 * it (the secondary's readiness changed while paused) moves to the moment of the resume.
 */
export function clockAfterPause(since: string, pausedAt: string, resumedAt: string): string {
  return movedPast(since, pausedAt, resumedAt);
}

/**
 * The clocks of a paused test once it resumes at `resumedAt`, each moved by {@link clockAfterPause}:
 * - `stepStartedAt`: the progress deadline (for a secondary not available, or not ready, and for a step
 *   that waits for a route the API server refuses) and, with `stepRoutedAt`, the step's analysis interval,
 *   which goes on where it stopped;
 * - `inconclusive.since`: the deadline for a verdict;
 * - `gates.waiting.checkedAt`: when a held gate is asked again.
 * What only says when something began (`startedAt`, `stepBeganAt`, the waits' `since`) is no clock and
 * keeps its time: `stepBeganAt` starts the step's evidence window, and the step's weight carried traffic
 * while paused. The test is otherwise unchanged; `pausedAt` is gone.
 */
export function resumedClocks(canary: Readonly<CanaryState>, resumedAt: string): CanaryState {
  const { pausedAt, ...state } = canary;
  if (pausedAt === undefined) return { ...state };
  const move = (since: string): string => clockAfterPause(since, pausedAt, resumedAt);
  const { stepRoutedAt, inconclusive, gates } = canary;
  const waiting = gates?.waiting;
  return {
    ...state,
    stepStartedAt: move(canary.stepStartedAt),
    ...(stepRoutedAt !== undefined ? { stepRoutedAt: move(stepRoutedAt) } : {}),
    ...(inconclusive !== undefined ? { inconclusive: { ...inconclusive, since: move(inconclusive.since) } } : {}),
    ...(waiting !== undefined
      ? { gates: { ...gates, waiting: { ...waiting, checkedAt: move(waiting.checkedAt) } } }
      : {}),
  };
}

/** The stages in which the image is still under test: they can be paused, promoted early or superseded. */
export function isTesting(stage: CanaryStage): boolean {
  return stage === "WaitingForSecondary" || stage === "Stepping" || stage === "AwaitingPromotion";
}

/** The ending stages: traffic returns to the primary, then the secondary goes. */
export function isEnding(stage: CanaryStage): boolean {
  return stage === "Finalising" || stage === "RollingBack";
}

/** One running test as the planner sees it at the moment it asks a question. */
export interface TestFacts {
  stage: CanaryStage;
  /** The image under test. */
  image: string;
  specImage: string;
  /** spec's pod template, besides the image, is no longer the one under test (a new revision). */
  templateChanged?: boolean;
  /** What changed in it, e.g. "env FOO changed" (empty when nothing did). */
  templateChanges?: string;
  /** The image the primary runs, when known (the way back of an abort during promotion). */
  primaryImage: string | undefined;
  /** The current step (-1 before the first). */
  step: number;
  /** How many steps the spec has. */
  steps: number;
  paused: boolean;
  secondaryReady: boolean;
  /** The spec's analysis can run (no InvalidSpec problem). */
  specValid: boolean;
  manualPromotion: boolean;
  /** An abort annotation not yet answered in this plan. */
  abortRequested: boolean;
  /** A promote annotation not yet answered in this plan. */
  promoteRequested: boolean;
  /** Failed analyses counted so far, not counting `progress.verdict`. */
  failedChecks: number;
  threshold: number;
  progressDeadlineSeconds: number;
  /** Analyses in a row without evidence of traffic that end the test (`NoEvidence`). */
  inconclusiveLimit: number;
  /** Prometheus gave no answer at the last analysis: the secondary gets no traffic until it does. */
  trafficWithheld: boolean;
  /**
   * The API server refused the last apply of the children: its message (reported.ts, applyRefusal).
   * Absent while every child applies.
   */
  applyRefused?: string;
  /**
   * The gates the spec names that have not answered 2xx in this test, in the order they are asked
   * (confirm-rollout, pre-rollout, confirm-promotion). Absent: none.
   */
  pendingGates?: readonly GateType[];
  /**
   * The secondary has the pods the next step's weight needs, Available (always true with `spec.scaling:
   * fixed`, and on the last step, after which no weight is added).
   */
  nextStepCapacity: boolean;
  /**
   * What moving the stage on looks at. Absent while the plan is still answering requests (abort, promote,
   * a changed spec.image): those are answered first, before pause and resume, and without evidence.
   */
  progress?: Progress;
}

/** The evidence a test's stage moves on: time, readiness and the analysis. */
export interface Progress {
  /**
   * The secondary's readiness differs from the last plan's. The previous planned weight tells whether it
   * was ready: while stepping it is above 0 exactly when it was.
   */
  readinessChanged: boolean;
  /** The progress deadline has passed since the current step (or wait) began. */
  deadlinePassed: boolean;
  /** The route has been observed carrying the current step's weight (`stepRoutedAt` is recorded). */
  routed: boolean;
  /** One analysis interval has passed since the step's clock started ({@link stepClockStart}). */
  intervalPassed: boolean;
  /** The judged analysis of this step, when the step is complete and its analysis ran. */
  verdict?: Verdict;
  /** Analyses in a row before this one that found no evidence of traffic. */
  inconclusiveAnalyses: number;
  /** The progress deadline has passed since the first analysis in a row that reached no verdict. */
  noVerdictDeadlinePassed: boolean;
  /** What the gate asked in this plan answered (see gateDue). */
  gate?: GateAnswer;
}

/** The webhook types that hold a test until they answer 2xx (pre-rollout rolls it back instead). */
export type GateType = Extract<WebhookType, "confirm-rollout" | "pre-rollout" | "confirm-promotion">;

/** The order in which the gates are met. */
export const GATE_TYPES: readonly GateType[] = ["confirm-rollout", "pre-rollout", "confirm-promotion"];

/** What a gate's webhooks answered: passed when every one answered 2xx; else the first that did not. */
export interface GateAnswer {
  type: GateType;
  passed: boolean;
  decisive?: MetricResult;
}

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

/** Why a test ends without promotion. */
export interface TestFailure {
  result: "Failed" | "Aborted" | "Superseded";
  reason: string;
  message: string;
  metric?: string;
  value?: number;
  /** The query (as run) that gave `value`. */
  query?: string;
}

/**
 * When does a step's clock start? When the route was first observed carrying the step's weight
 * (`stepRoutedAt`), not when the step was decided: the status is written before the route (ADR 0001), so
 * a controller that dies in between leaves a step that is decided but carries no traffic, however long its
 * successor takes to come. After an analysis that keeps the step (or a resume from pause) the clock starts
 * again at that moment (`stepStartedAt`), whichever is later. Undefined while the route has not been
 * observed with the weight: the step is then not timed at all, and the plan applies the route again.
 */
export function stepClockStart(canary: Pick<CanaryState, "stepStartedAt" | "stepRoutedAt">): string | undefined {
  const routed = canary.stepRoutedAt;
  return routed === undefined ? undefined : later(canary.stepStartedAt, routed);
}

/**
 * Is the route observed carrying the step's weight? Both halves must match the plan's split; a missing
 * route carries nothing.
 */
export function routeCarries(routed: Weights | null, planned: Weights): boolean {
  return routed !== null && routed.secondary === planned.secondary && routed.primary === planned.primary;
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
 *    analysis, began) while the API server refuses the apply that would route it. A refused write does not
 *    go through by being retried, and a step never seen on the route is never judged: it would wait forever.
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
  if (f.stage === "Stepping" && !p.routed && f.applyRefused !== undefined) {
    if (!p.deadlinePassed) return undefined;
    return {
      result: "Failed",
      reason: "RouteRefused",
      message: `the route has not carried the weight of step ${f.step + 1} of ${f.steps} for ${deadline}s; the apply is refused: ${f.applyRefused}`,
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
 * How long to wait for the route to show the secondary drained before looking again. The reconciler has
 * just applied the weights, so the next observation should show them; this bounds the wait should the
 * route's update not trigger a reconcile by itself.
 */
export const DRAIN_POLL_SECONDS = 2;

/** What the requeue is computed from. */
export interface RequeueFacts {
  canary: CanaryState | undefined;
  analysis: ResolvedAnalysis;
  /** How long the secondary is kept after the route shows it drained. */
  drainSeconds: number;
  secondaryReady: boolean;
  /** The analysis cannot run (invalid spec), so no analysis is due. */
  invalid: boolean;
  /** The last apply of the children was refused (applyRefusal). */
  applyRefused?: boolean;
  now: Date;
}

/** The wait when something is already due but was not acted on in this plan. */
const OVERDUE_SECONDS = 1;

/**
 * When does it look again? Seconds (to the millisecond, rounded up) until the next thing that time alone
 * makes due (the next analysis, a progress deadline); 1 when it is already due; undefined when nothing is:
 * at rest, and while waiting on a person or on a watched object (a Deployment's rollout, an annotation),
 * the controller is event-driven and does not poll. Not whole seconds: a reconcile that comes 0.2 s before
 * a step is due (another requeue, an event) must not put the step off by a whole second.
 */
export function requeueAfterSeconds(facts: RequeueFacts): number | undefined {
  const stage = requeueForStage(facts);
  const gate = gateRecheckSeconds(facts);
  if (gate === undefined) return stage;
  return stage === undefined ? gate : Math.min(stage, gate);
}

/** A test held at a gate asks it again one interval after it last did (never while paused). */
function gateRecheckSeconds({ canary, analysis, now }: RequeueFacts): number | undefined {
  const waiting = canary?.gates?.waiting;
  if (waiting === undefined || canary?.pausedAt !== undefined) return undefined;
  const left = secondsUntil(now, waiting.checkedAt, analysis.intervalSeconds);
  return left > 0 ? Math.ceil(left * 1000) / 1000 : OVERDUE_SECONDS;
}

function requeueForStage(facts: RequeueFacts): number | undefined {
  const { canary, analysis } = facts;
  if (canary === undefined) return undefined;
  const until = (seconds: number, since = canary.stepStartedAt): number => {
    const left = secondsUntil(facts.now, since, seconds);
    return left > 0 ? Math.ceil(left * 1000) / 1000 : OVERDUE_SECONDS;
  };
  const paused = canary.pausedAt !== undefined;
  switch (canary.stage) {
    case "WaitingForSecondary":
      // Held at confirm-rollout, no deadline runs: the gate's own recheck is the only thing due.
      return paused || canary.gates?.waiting !== undefined ? undefined : until(analysis.progressDeadlineSeconds);
    case "Stepping":
      // A batch waiting for approval waits for a person (an annotation, which triggers a reconcile).
      if (paused || canary.approval !== undefined) return undefined;
      if (!facts.secondaryReady) return until(analysis.progressDeadlineSeconds);
      if (facts.invalid) return undefined;
      // A step held by a refused route: what time makes due is its deadline (RouteRefused), not the re-apply.
      if (canary.stepRoutedAt === undefined && facts.applyRefused === true) {
        return until(analysis.progressDeadlineSeconds);
      }
      // A step not yet seen on the route is due one interval after it is, so never before one interval
      // after its decision; the route's update itself triggers the reconcile that records it, and a route
      // still not right by then is looked at again soon (OVERDUE_SECONDS) while the plan re-applies it.
      return until(analysis.intervalSeconds, stepClockStart(canary) ?? canary.stepStartedAt);
    case "AwaitingPromotion":
      return paused || facts.secondaryReady ? undefined : until(analysis.progressDeadlineSeconds);
    case "Promoting": {
      const left = secondsUntil(facts.now, canary.stepStartedAt, analysis.progressDeadlineSeconds);
      return left > 0 ? until(analysis.progressDeadlineSeconds) : undefined;
    }
    case "Finalising":
    case "RollingBack": {
      // The poll waits for the route's update, which cannot come while its apply is refused: each poll
      // would be one more refused write, so it looks again once an interval instead.
      if (canary.drainedAt === undefined && canary.step >= 0 && facts.applyRefused === true) {
        return analysis.intervalSeconds;
      }
      if (canary.drainedAt === undefined || canary.step < 0) return DRAIN_POLL_SECONDS;
      const left = secondsUntil(facts.now, canary.drainedAt, facts.drainSeconds);
      return left > 0 ? Math.ceil(left * 1000) / 1000 : OVERDUE_SECONDS;
    }
  }
}

/**
 * The pods a secondary needs to take `weight` percent of an app of `replicas` pods, as the primary would
 * serve it: `ceil(replicas × weight / 100)`, never fewer than `testReplicas`.
 */
export function replicasForWeight(replicas: number, testReplicas: number, weight: number): number {
  return Math.max(testReplicas, Math.ceil((replicas * Math.max(0, weight)) / 100));
}

/** What the secondary's size is decided from. */
export interface ScalingFacts {
  scaling: Scaling;
  replicas: number;
  testReplicas: number;
  stage: CanaryStage;
  /** The current step (-1 before the first). */
  step: number;
  weights: readonly number[];
}

/**
 * How many pods does the secondary run? With `fixed`, `testReplicas`. With `weighted`, the pods for the
 * weight it is to take next, so that they are Available before the weight moves: the first step's while it
 * starts, the next step's while a step runs (the last step's on the last step and after it). A test that
 * ends keeps its size until the secondary goes: its pods serve until the route has left them.
 */
export function secondaryReplicas(f: ScalingFacts): number {
  if (f.scaling === "fixed") return f.testReplicas;
  const last = f.weights.length - 1;
  const ahead = f.stage === "WaitingForSecondary" ? 0 : f.stage === "Stepping" ? f.step + 1 : f.step;
  const weight = f.weights[Math.max(0, Math.min(ahead, last))] ?? 0;
  return replicasForWeight(f.replicas, f.testReplicas, weight);
}

/**
 * What to do with a VirtualService left from `spec.mesh: istio` once the app has no mesh (`mesh: none`):
 * first route everything to the app's Service, which then selects both tracks' ready pods (`handOver`), so
 * a proxy still holding the old split never sends to a track that is scaled away; once that route has
 * stood `drainSeconds` (proxies have it), remove it and the DestinationRule (`remove`). In between, wait.
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
