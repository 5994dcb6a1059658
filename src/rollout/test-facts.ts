/**
 * What the decisions (decisions.ts) are asked over: one running test, the evidence its stage moves on, and the
 * plain readings of it the decisions share (the stage predicates, when a step's clock starts, what the route
 * carries).
 */
import type { CanaryStage, CanaryState, MetricResult, WebhookType } from "../api/types.js";
import type { Verdict } from "../analysis/verdicts.js";
import { jsonEqual } from "../api/json.js";
import { later } from "../time/timestamps.js";
import type { Weights } from "./types.js";

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
   * The route's implementation does not carry the route as written (not accepted by a parent, a backend not
   * resolved, not reported on yet): its reason and message (Observation.routeNotCarried). Absent: it does, or
   * the router's implementation reports nothing.
   */
  routeNotCarried?: string;
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

/** The stages in which the image is still under test: they can be paused, promoted early or superseded. */
export function isTesting(stage: CanaryStage): boolean {
  return stage === "WaitingForSecondary" || stage === "Stepping" || stage === "AwaitingPromotion";
}

/** The ending stages: traffic returns to the primary, then the secondary goes. */
export function isEnding(stage: CanaryStage): boolean {
  return stage === "Finalising" || stage === "RollingBack";
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
 * Is the route observed carrying the step's weight? Both halves must match the plan's split, and so must the
 * mirror and A/B phase's share and rules (absent on both when the step has none); a missing route carries
 * nothing.
 */
export function routeCarries(routed: Weights | null, planned: Weights): boolean {
  return (
    routed !== null &&
    routed.secondary === planned.secondary &&
    routed.primary === planned.primary &&
    routed.mirror === planned.mirror &&
    jsonEqual(routed.match ?? null, planned.match ?? null)
  );
}
