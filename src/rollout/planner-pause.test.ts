/**
 * Paused time stops every clock (ADR 0022): a test paused and resumed at each stage, asserting that no
 * deadline fires for the time spent paused, and that every deadline still fires for the time not paused.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { MetricResult } from "../api/types.js";
import { ANNOTATIONS } from "../api/types.js";
import {
  V1,
  V2,
  afterPersist,
  deployment,
  evidence,
  iso,
  passing,
  routed,
  runPlan,
  testing,
  type Scenario,
} from "./fixtures.test-helpers.js";
import { CHILDREN_APPLIED } from "./conditions.js";
import type { Plan } from "./types.js";

const paused = { [ANNOTATIONS.paused]: "true" };

/** The clocks start at 0; 400 s of the 600 s progress deadline run before the pause. */
const PAUSED_AT = 400;
/** An hour paused. */
const RESUMED_AT = PAUSED_AT + 3600;
const DEADLINE = 600;

/** Too few requests: an analysis without a verdict (NoEvidence), which never reaches a limit of 100. */
const noVerdict: MetricResult[] = [evidence(5), passing()];

const hook = (type: "confirm-rollout" | "confirm-promotion") => ({
  name: "approve",
  type,
  url: "http://hooks.svc/approve",
});

interface PauseCase {
  name: string;
  /** The test as it stands when the pause begins (the annotation is added by the timeline). */
  scenario: Omit<Scenario, "now" | "annotations">;
  /** The reason it rolls back once 600 s that were not paused have passed; undefined: no deadline runs there. */
  fires: string | undefined;
}

const notReadyBefore = { weights: { primary: 100, secondary: 0 } };

const cases: PauseCase[] = [
  {
    name: "WaitingForSecondary, the secondary not available: ProgressDeadlineExceeded",
    scenario: {
      status: testing({ stage: "WaitingForSecondary", step: -1, stepStartedAt: iso(0) }),
      observed: { secondary: deployment(V2, false) },
    },
    fires: "ProgressDeadlineExceeded",
  },
  {
    name: "Stepping, the secondary not ready: SecondaryNotReady",
    scenario: {
      status: testing({ stage: "Stepping", step: 1, stepStartedAt: iso(0) }, notReadyBefore),
      observed: { secondary: deployment(V2, false), routedWeights: routed(0) },
    },
    fires: "SecondaryNotReady",
  },
  {
    name: "Stepping, analyses without a verdict: NoEvidence (no verdict for the deadline)",
    scenario: {
      analysis: { inconclusiveLimit: 100 },
      status: testing({
        stage: "Stepping",
        step: 1,
        stepBeganAt: iso(0),
        stepStartedAt: iso(390),
        inconclusive: { count: 1, since: iso(0) },
      }),
      observed: { secondary: deployment(V2), routedWeights: routed(20), analysis: noVerdict },
    },
    fires: "NoEvidence",
  },
  {
    name: "AwaitingPromotion, the secondary not ready: SecondaryNotReady",
    scenario: {
      analysis: { manualPromotion: true },
      status: testing({ stage: "AwaitingPromotion", step: 4, stepStartedAt: iso(0) }, notReadyBefore),
      observed: { secondary: deployment(V2, false), routedWeights: routed(0) },
    },
    fires: "SecondaryNotReady",
  },
  {
    name: "Stepping, the step waiting for a route whose apply is refused: RouteRefused",
    scenario: {
      status: testing(
        { stage: "Stepping", step: 2, stepStartedAt: iso(0), stepBeganAt: iso(0), stepRoutedAt: undefined },
        {
          conditions: [
            {
              type: CHILDREN_APPLIED,
              status: "False",
              reason: "Rejected",
              message: "VirtualService shop/web: apply: denied (HTTP 400)",
              lastTransitionTime: iso(0),
            },
          ],
        },
      ),
      observed: { secondary: deployment(V2), routedWeights: routed(20) },
    },
    fires: "RouteRefused",
  },
  {
    name: "held by a confirm-rollout webhook: no deadline runs (no secondary yet)",
    scenario: {
      analysis: { webhooks: [hook("confirm-rollout")] },
      status: testing({
        stage: "WaitingForSecondary",
        step: -1,
        stepStartedAt: iso(0),
        gates: {
          waiting: { type: "confirm-rollout", name: "approve", message: "503", since: iso(0), checkedAt: iso(390) },
        },
      }),
      observed: { secondary: null },
    },
    fires: undefined,
  },
  {
    name: "held by a confirm-promotion webhook: no deadline runs while the secondary is ready",
    scenario: {
      analysis: { webhooks: [hook("confirm-promotion")] },
      status: testing({
        stage: "AwaitingPromotion",
        step: 4,
        stepStartedAt: iso(0),
        gates: {
          waiting: { type: "confirm-promotion", name: "approve", message: "503", since: iso(0), checkedAt: iso(390) },
        },
      }),
      observed: { secondary: deployment(V2), routedWeights: routed(50) },
    },
    fires: undefined,
  },
  {
    name: "a batch waiting for approval: no deadline runs (a person decides)",
    scenario: {
      image: V2,
      spec: { replicas: 4, strategy: { type: "batches", batches: { count: 2, pause: "first" } } },
      status: testing({ stage: "Stepping", step: 0, stepStartedAt: iso(0), approval: { batch: 1, since: iso(0) } }),
      observed: {
        primary: deployment(V1, true, 3),
        secondary: { ...deployment(V2, true, 1), currentAvailable: 1 },
        routedWeights: routed(25),
      },
    },
    fires: undefined,
  },
];

/** What a plan rolled back for, if it did (the failure is recorded at the decision; the test may be gone). */
function rolledBack(p: Plan): string | undefined {
  return p.status.failedImages?.[0]?.reason;
}

/** Plans `s` from the pause on: still paused an hour later, resumed, then 500 and 600 s not paused. */
function timeline(s: PauseCase["scenario"]): Record<"pause" | "held" | "resumed" | "before" | "due", Plan> {
  let scenario: Scenario = { image: V2, ...s, annotations: paused, now: PAUSED_AT };
  let previous = runPlan(scenario);
  const plans: Plan[] = [previous];
  const steps: Partial<Scenario>[] = [
    { now: RESUMED_AT - 1 },
    { annotations: {}, now: RESUMED_AT },
    { now: RESUMED_AT + DEADLINE - PAUSED_AT - 100 },
    { now: RESUMED_AT + DEADLINE - PAUSED_AT },
  ];
  for (const step of steps) {
    scenario = { ...afterPersist(scenario, previous), ...step };
    previous = runPlan(scenario);
    plans.push(previous);
  }
  const [pause, held, resumed, before, due] = plans as [Plan, Plan, Plan, Plan, Plan];
  return { pause, held, resumed, before, due };
}

describe("paused time stops every clock: pause and resume at each stage", () => {
  for (const c of cases) {
    test(c.name, () => {
      const { pause, held, resumed, before, due } = timeline(c.scenario);
      assert.equal(pause.status.canary?.pausedAt, iso(PAUSED_AT), "the pause is recorded");
      assert.equal(rolledBack(pause), undefined);
      assert.equal(rolledBack(held), undefined, "nothing fires while paused");
      assert.equal(held.status.canary?.pausedAt, iso(PAUSED_AT));
      assert.equal(resumed.status.canary?.pausedAt, undefined, "resumed");
      assert.equal(rolledBack(resumed), undefined, "400 s not paused: no deadline yet");
      assert.equal(rolledBack(before), undefined, "500 s not paused: no deadline yet");
      assert.equal(rolledBack(due), c.fires, "600 s not paused: the deadline fires (or none runs here)");
      if (c.fires !== undefined) assert.match(due.status.failedImages?.[0]?.message ?? "", /600s/);
    });
  }
});

describe("the stages that no longer test the image are not paused", () => {
  test("RollingBack: the annotation is not acted on, and the drain counts on", () => {
    const outcome = { result: "Superseded" as const, reason: "Superseded", message: "spec.image is back to v1" };
    const s: Scenario = {
      image: V1,
      status: testing({ stage: "RollingBack", step: 1, stepStartedAt: iso(0), drainedAt: iso(0), outcome }),
      observed: { secondary: deployment(V2), routedWeights: routed(0) },
      annotations: paused,
      now: 10,
    };
    const p = runPlan(s);
    assert.equal(p.status.canary, undefined, "drained for 10 s: the test ended");
    assert.equal(p.secondary, null);
  });

  test("Promoting: the annotation is not acted on, and the promotion's deadline counts on", () => {
    const p = runPlan({
      image: V2,
      status: testing({ stage: "Promoting", step: 4, stepStartedAt: iso(0) }),
      observed: { primary: deployment(V1, false, 3), secondary: deployment(V2), routedWeights: routed(50) },
      annotations: paused,
      now: DEADLINE,
    });
    assert.equal(p.status.canary?.pausedAt, undefined);
    assert.ok(p.events.some((e) => e.reason === "PromotionSlow"));
  });
});

describe("the clocks that are no deadline stop too", () => {
  test("a held gate is asked again one interval of unpaused time after it last was", () => {
    const [gate] = cases.filter((c) => c.name.startsWith("held by a confirm-promotion webhook"));
    assert.ok(gate !== undefined);
    const { resumed } = timeline(gate.scenario);
    assert.equal(resumed.status.canary?.gates?.waiting?.checkedAt, iso(390 + 3600));
    assert.equal(resumed.requeueAfterSeconds, 20, "asked 10 s before the pause: 20 s of the 30 s interval left");
  });
});

describe("one analysis without a verdict, a 30-minute pause, then the first analysis after resuming", () => {
  test("is the second without a verdict, not a NoEvidence rollback for 600 s it was never running", () => {
    const start: Scenario = {
      image: V2,
      status: testing({
        stage: "Stepping",
        step: 1,
        stepBeganAt: iso(0),
        stepStartedAt: iso(30),
        inconclusive: { count: 1, since: iso(30) },
      }),
      observed: { secondary: deployment(V2), routedWeights: routed(20), analysis: noVerdict },
      annotations: paused,
      now: 40,
    };
    const pause = runPlan(start);
    const resumedAt: Scenario = { ...afterPersist(start, pause), annotations: {}, now: 40 + 1800 };
    const resumed = runPlan(resumedAt);
    assert.equal(resumed.status.canary?.stage, "Stepping");
    const judged = runPlan({ ...afterPersist(resumedAt, resumed), now: 40 + 1800 + 30 });
    assert.equal(judged.status.canary?.lastAnalysis?.time, iso(1870), "the first analysis after resuming ran");
    assert.equal(judged.status.canary?.stage, "Stepping", judged.status.canary?.outcome?.message);
    assert.equal(judged.status.canary?.inconclusive?.count, 2, "2 of 5 analyses without evidence");
  });
});
