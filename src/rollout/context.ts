import type { ResolvedSpec } from "../api/defaults.js";
import type { CanaryApp, CanaryAppStatus, CanaryState } from "../api/types.js";
import type { ReadonlyDeep } from "type-fest";
import { checkProblems } from "../analysis/checks.js";
import type { GateType } from "./test-facts.js";
import type { Requests } from "./requests.js";
import { readRequests } from "./requests.js";
import { timestamp } from "../time/timestamps.js";
import type { Observation, PlannedEvent, PlanInput } from "./types.js";

/** How the last test ended, when it ended in this plan: becomes the Progressing condition. */
export interface Ending {
  reason: string;
  message: string;
  image: string;
}

/**
 * The working state of one plan: the input, the status being built, and what the plan has decided so far.
 * Written only by the transitions, the functions that take a PlanContext (planner, controls, stages, lifecycle,
 * batch-release, refusal); everything that only reads it takes a PlanView, where a write does not compile
 * (ADR 0028).
 */
export interface PlanContext {
  readonly app: CanaryApp;
  readonly spec: ResolvedSpec;
  readonly observed: Observation;
  readonly now: Date;
  /** `now` as status stores it. */
  readonly at: string;
  /** The status as it was (never modified). */
  readonly previous: CanaryAppStatus;
  /** The next status, edited in place by the transitions (a deep copy: the input is never touched). */
  readonly status: CanaryAppStatus;
  readonly requests: Requests;
  /** Why the spec's analysis cannot run; empty when it can. */
  readonly problems: string[];
  readonly events: PlannedEvent[];
  readonly removeAnnotations: string[];
  ended: Ending | undefined;
  /** The current step's analysis is due and no result was given: the reconciler should run the checks. */
  analysisWanted: boolean;
  /** A gate is due and has not answered in this plan: the reconciler should call its webhooks. */
  gateWanted: GateType | undefined;
  /** The step waits for the next step's pods (capacityWait): how many are Available of how many, for what weight. */
  capacityWait: CapacityWait | undefined;
}

/** A step that waits for the secondary's pods before its analysis (spec.scaling: weighted). */
export interface CapacityWait {
  available: number;
  needed: number;
  weight: number;
}

/** A fresh context for one plan: the next status starts as a deep copy of the current one. */
export function createContext(input: PlanInput): PlanContext {
  const previous = input.app.status ?? {};
  return {
    app: input.app,
    spec: input.spec,
    observed: input.observed,
    now: input.now,
    at: timestamp(input.now),
    previous,
    status: structuredClone(previous),
    requests: readRequests(input.app.metadata.annotations, input.spec.image),
    problems: [...checkProblems(input.spec), ...refusalProblems(input.observed), ...templateProblems(input)],
    events: [],
    removeAnnotations: [],
    ended: undefined,
    analysisWanted: false,
    gateWanted: undefined,
    capacityWait: undefined,
  };
}

/**
 * The app's templates cannot be resolved and no test holds metrics recorded from them: nothing can be judged
 * as the spec asks. A running test judged by its recorded metrics goes on (ADR 0031).
 */
function templateProblems(input: PlanInput): string[] {
  const resolution = input.observed.analysisTemplates;
  if (resolution?.kind !== "problem") return [];
  return input.app.status?.canary?.analysisTemplates === undefined ? [resolution.message] : [];
}

function refusalProblems(observed: Observation): string[] {
  return observed.analysisRefused === undefined ? [] : [observed.analysisRefused.message];
}

/** Adds an event to the plan. Callers emit only on a transition, so that a replayed plan says nothing new. */
export function emit(ctx: PlanContext, type: PlannedEvent["type"], reason: string, message: string): void {
  ctx.events.push({ type, reason, message });
}

/** Marks a one-shot request annotation as handled, so the reconciler removes it. */
export function consume(ctx: PlanContext, annotation: string): void {
  if (!ctx.removeAnnotations.includes(annotation)) ctx.removeAnnotations.push(annotation);
}

/** Whether a request annotation was already handled in this plan. */
export function alreadyConsumed(ctx: PlanView, annotation: string): boolean {
  return ctx.removeAnnotations.includes(annotation);
}

function kubectlAnnotate(ctx: PlanView): string {
  const { name, namespace } = ctx.app.metadata;
  const ns = namespace !== undefined ? ` -n ${namespace}` : "";
  return `kubectl annotate canaryapp ${name ?? "NAME"}${ns}`;
}

/** The kubectl command that sets an annotation on this app. */
export function annotateCommand(ctx: PlanView, annotation: string, value: string): string {
  return `${kubectlAnnotate(ctx)} ${annotation}=${value} --overwrite`;
}

/** The kubectl command that removes an annotation from this app. */
export function removeAnnotationCommand(ctx: PlanView, annotation: string): string {
  return `${kubectlAnnotate(ctx)} ${annotation}-`;
}

/**
 * What the readers of a plan see (facts, subject, conditions): the context as it stands, read-only all the way
 * down. Only the transitions (stages, lifecycle, controls, batch-release, the planner) write a PlanContext.
 */
export type PlanView = Readonly<Omit<PlanContext, "status" | "events" | "removeAnnotations" | "problems">> & {
  readonly status: ReadonlyDeep<CanaryAppStatus>;
  readonly events: readonly PlannedEvent[];
  readonly removeAnnotations: readonly string[];
  readonly problems: readonly string[];
};

/** The running test as the readers of a plan see it. */
export type CanaryView = ReadonlyDeep<CanaryState>;
