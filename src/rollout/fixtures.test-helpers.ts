import assert from "node:assert/strict";
import { withDefaults } from "../api/defaults.js";
import type {
  AnalysisSpec,
  CanaryApp,
  CanaryAppSpec,
  CanaryAppStatus,
  CanaryState,
  Condition,
  MetricResult,
} from "../api/types.js";
import { plan } from "./planner.js";
import type { WorkloadObservation, Observation, Plan, PlanInput } from "./types.js";

export const V1 = "example/app:v1";
export const V2 = "example/app:v2";
export const V3 = "example/app:v3";

/** The test clock's origin; `at(s)` is s seconds later. */
export const T0 = new Date("2026-03-01T12:00:00.000Z");
export const at = (seconds: number): Date => new Date(T0.getTime() + seconds * 1000);
export const iso = (seconds: number): string => at(seconds).toISOString();

export interface AppOptions {
  image?: string;
  analysis?: AnalysisSpec;
  spec?: Partial<CanaryAppSpec>;
  status?: CanaryAppStatus;
  annotations?: Record<string, string>;
  generation?: number;
}

export function makeApp(options: AppOptions = {}): CanaryApp {
  return {
    apiVersion: "canaryapp.io/v1alpha1",
    kind: "CanaryApp",
    metadata: {
      name: "web",
      namespace: "shop",
      uid: "uid-1",
      generation: options.generation ?? 1,
      ...(options.annotations ? { annotations: options.annotations } : {}),
    },
    spec: {
      image: options.image ?? V2,
      imageListenPort: 8080,
      replicas: 3,
      testReplicas: 1,
      ...(options.analysis ? { analysis: options.analysis } : {}),
      ...options.spec,
    },
    ...(options.status ? { status: options.status } : {}),
  };
}

export function deployment(image: string, available = true, replicas = 1): WorkloadObservation {
  return { image, replicas, available, readyReplicas: available ? replicas : 0 };
}

export function routed(secondary: number): { primary: number; secondary: number } {
  return { primary: 100 - secondary, secondary };
}

export function observation(partial: Partial<Observation> = {}): Observation {
  return { primary: deployment(V1, true, 3), secondary: null, routedWeights: routed(0), ...partial };
}

export function planInput(app: CanaryApp, observed: Observation, now: Date): PlanInput {
  return { app, spec: withDefaults(app.spec), observed, now };
}

/**
 * A status with a test of V2 in progress (primary V1), as the planner itself would have written it. A
 * stepping test's route was observed carrying its step's weight as the step began (`stepRoutedAt`),
 * unless `canary` says otherwise (`stepRoutedAt: undefined` for a step not yet seen on the route).
 */
export function testing(canary: Partial<CanaryState>, extra: Partial<CanaryAppStatus> = {}): CanaryAppStatus {
  const stage = canary.stage ?? "Stepping";
  const began = canary.stepBeganAt ?? canary.stepStartedAt ?? iso(0);
  const routedSince = stage === "Stepping" || stage === "AwaitingPromotion" ? { stepRoutedAt: began } : {};
  const state: CanaryState = {
    image: V2,
    stage: "Stepping",
    step: 0,
    startedAt: iso(0),
    stepStartedAt: iso(0),
    failedChecks: 0,
    ...routedSince,
    ...canary,
  };
  if (state.stepRoutedAt === undefined) delete state.stepRoutedAt;
  const secondary =
    state.stage === "Stepping" || state.stage === "AwaitingPromotion" || state.stage === "Promoting"
      ? [10, 20, 30, 40, 50][Math.max(0, Math.min(state.step, 4))]!
      : 0;
  return {
    primaryImage: V1,
    weights: { primary: 100 - secondary, secondary: state.step < 0 ? 0 : secondary },
    canary: state,
    ...extra,
  };
}

/** The traffic check's result: the secondary served `requests` requests in the step (20 needed). */
export const evidence = (requests = 100): MetricResult => ({
  name: "secondary-traffic",
  kind: "traffic",
  value: requests,
  min: 20,
  sampleSize: requests,
  passed: requests >= 20,
  reason: requests >= 20 ? "TrafficShown" : "TooFewRequests",
  message: `${requests} requests to the secondary ${requests >= 20 ? "≥" : "<"} 20`,
});

export const passing = (name = "request-success-rate", value = 99.9): MetricResult => ({
  name,
  value,
  min: 99,
  passed: true,
  reason: "ok",
  message: `${value} ≥ 99`,
});

export const failing = (name = "request-success-rate", value = 90): MetricResult => ({
  name,
  value,
  min: 99,
  passed: false,
  reason: "BelowMin",
  message: `${value} < 99`,
});

export const queryFailed = (name = "request-success-rate"): MetricResult => ({
  name,
  min: 99,
  passed: false,
  reason: "QueryFailed",
  message: "query failed: connection refused",
});

/** One planner call described by its parts. */
export interface Scenario extends AppOptions {
  observed?: Partial<Observation>;
  /** Seconds after T0. */
  now?: number;
}

export function scenarioInput(s: Scenario): PlanInput {
  return planInput(makeApp(s), observation(s.observed), at(s.now ?? 0));
}

/** Plans a scenario, checking on the way that the input is left untouched. */
export function runPlan(s: Scenario): Plan {
  const input = scenarioInput(s);
  const before = structuredClone(input);
  const result = plan(input);
  assert.deepEqual(input, before, "plan must not modify its input");
  return result;
}

/**
 * The same scenario once the reconciler has persisted the plan's status and removed the annotations it
 * consumed (the world itself is observed as before).
 */
export function afterPersist(s: Scenario, p: Plan): Scenario {
  const annotations = Object.fromEntries(
    Object.entries(s.annotations ?? {}).filter(([key]) => !p.removeAnnotations.includes(key)),
  );
  return { ...s, status: p.status, annotations };
}

export const reasons = (p: Plan): string[] => p.events.map((e) => e.reason);

export function condition(p: Plan, type: string): Condition | undefined {
  return p.status.conditions?.find((c) => c.type === type);
}

/** The default drain period (spec.drainSeconds). */
export const DRAIN_SECONDS = 5;

/**
 * A scenario whose route already shows the secondary drained, planned once (the drain begins: drainedAt is
 * recorded) and again once the drain period has passed; returns the later scenario and its plan.
 */
export function drainedPlan(s: Scenario): { scenario: Scenario; plan: Plan } {
  const first = runPlan(s);
  if (first.status.canary?.drainedAt === undefined) return { scenario: s, plan: first };
  const later: Scenario = { ...afterPersist(s, first), now: (s.now ?? 0) + DRAIN_SECONDS };
  return { scenario: later, plan: runPlan(later) };
}
