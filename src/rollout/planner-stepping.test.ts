import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { MetricResult } from "../api/types.js";
import {
  V1,
  V2,
  afterPersist,
  condition,
  deployment,
  evidence,
  failing,
  iso,
  passing,
  queryFailed,
  reasons,
  routed,
  drainedPlan,
  runPlan,
  scenarioInput,
  testing,
  type Scenario,
} from "./fixtures.test-helpers.js";
import { analysisDue } from "./planner.js";

/**
 * A test of V2 at `step` (default weights 10..50, interval 30s), the secondary ready and carrying its weight.
 * `analysis` are the results of the spec's checks after the traffic check, which showed 100 requests.
 */
function stepping(step: number, extra: Partial<Scenario> = {}, analysis?: MetricResult[]): Scenario {
  const weight = [10, 20, 30, 40, 50][step] ?? 0;
  const results = analysis ? { analysis: [evidence(), ...analysis] } : {};
  return {
    image: V2,
    status: testing({ stage: "Stepping", step, stepStartedAt: iso(0) }),
    observed: { secondary: deployment(V2), routedWeights: routed(weight), ...results },
    now: 30,
    ...extra,
  };
}

function due(s: Scenario): boolean {
  const { analysis: _ignored, ...observed } = scenarioInput(s).observed;
  return analysisDue({ ...scenarioInput(s), observed });
}

describe("analysisDue", () => {
  const cases: { name: string; s: Scenario; due: boolean }[] = [
    { name: "one interval after the step began", s: stepping(1), due: true },
    { name: "long after the step began", s: stepping(1, { now: 500 }), due: true },
    { name: "before the interval", s: stepping(1, { now: 29 }), due: false },
    {
      name: "secondary not ready",
      s: stepping(1, { observed: { secondary: deployment(V2, false), routedWeights: routed(0) } }),
      due: false,
    },
    { name: "paused", s: stepping(1, { annotations: { "canaryapp.io/paused": "true" } }), due: false },
    { name: "no test", s: { image: V1, status: { primaryImage: V1 }, now: 30 }, due: false },
    {
      name: "waiting for the secondary",
      s: { ...stepping(0), status: testing({ stage: "WaitingForSecondary", step: -1 }) },
      due: false,
    },
    {
      name: "awaiting promotion",
      s: { ...stepping(4), status: testing({ stage: "AwaitingPromotion", step: 4 }) },
      due: false,
    },
    { name: "spec.image changed", s: stepping(1, { image: "example/app:v9" }), due: false },
    { name: "abort requested", s: stepping(1, { annotations: { "canaryapp.io/abort": "now" } }), due: false },
  ];
  for (const c of cases) test(c.name, () => assert.equal(due(c.s), c.due));

  test("a due analysis without results waits for them and asks to come back soon", () => {
    const s = stepping(1);
    const p = runPlan(s);
    assert.equal(p.status.canary?.step, 1);
    assert.equal(p.status.canary?.stepStartedAt, iso(0));
    assert.equal(p.requeueAfterSeconds, 1);
    assert.deepEqual(p.events, []);
  });
});

describe("a step is timed from the route, not from the decision", () => {
  // Step 2 (30 %) was decided at 30 and its status written; the controller died before the apply, so the
  // route still carries step 1's 20 %. Its successor comes `later` seconds afterwards.
  const decided = (later: number, routedWeight = 20, analysis?: MetricResult[]): Scenario =>
    stepping(2, {
      status: testing({
        stage: "Stepping",
        step: 2,
        stepStartedAt: iso(30),
        stepBeganAt: iso(30),
        stepRoutedAt: undefined,
      }),
      observed: {
        secondary: deployment(V2),
        routedWeights: routed(routedWeight),
        ...(analysis ? { analysis: [evidence(), ...analysis] } : {}),
      },
      now: 30 + later,
    });

  for (const later of [0, 29, 31, 300, 86_400]) {
    test(`the route still on the previous step ${later}s after the decision: not judged, the route applied again`, () => {
      const s = decided(later);
      assert.equal(due(s), false);
      const p = runPlan(s);
      assert.equal(p.status.canary?.step, 2);
      assert.equal(p.status.canary?.stepRoutedAt, undefined);
      assert.deepEqual(p.weights, { primary: 70, secondary: 30 });
      assert.deepEqual(p.events, []);
      assert.equal(p.requeueAfterSeconds, later < 30 ? 30 - later : 1);
    });
  }

  test("seen on the route at last: recorded once, and judged one whole interval after that", () => {
    const seen = decided(300, 30);
    assert.equal(due(seen), false, "seen now: the interval starts now");
    const p = runPlan(seen);
    assert.equal(p.status.canary?.stepRoutedAt, iso(330));
    assert.deepEqual(p.events, []);
    assert.equal(p.requeueAfterSeconds, 30);
    const replayed = runPlan(afterPersist({ ...seen, now: 340 }, p));
    assert.equal(replayed.status.canary?.stepRoutedAt, iso(330), "the first sighting stays");
    const before = { ...afterPersist(seen, p), now: 359 };
    assert.equal(due(before), false);
    const after = { ...afterPersist(seen, p), now: 360 };
    assert.equal(due(after), true);
    const judged = runPlan({ ...after, observed: { ...after.observed, analysis: [evidence(), passing()] } });
    assert.equal(judged.status.canary?.step, 3);
    assert.equal(judged.status.canary?.stepRoutedAt, undefined, "step 3 is not on the route yet");
  });

  test("a route that stops carrying the step's weight (a hand edit) times the step again once repaired", () => {
    const s = stepping(1, { status: testing({ stage: "Stepping", step: 1, stepStartedAt: iso(0) }), now: 20 });
    const edited = runPlan({ ...s, observed: { ...s.observed, routedWeights: routed(0) } });
    assert.equal(edited.status.canary?.stepRoutedAt, undefined);
    assert.deepEqual(edited.weights, { primary: 80, secondary: 20 });
    const repaired = runPlan({ ...afterPersist(s, edited), now: 25 });
    assert.equal(repaired.status.canary?.stepRoutedAt, iso(25));
    assert.equal(repaired.requeueAfterSeconds, 30);
  });
});

describe("stepping", () => {
  const advances = [
    { from: 0, to: 1, weight: 20 },
    { from: 1, to: 2, weight: 30 },
    { from: 2, to: 3, weight: 40 },
    { from: 3, to: 4, weight: 50 },
  ];
  for (const a of advances) {
    test(`a passed analysis at step ${a.from} advances to ${a.to} (${a.weight}%)`, () => {
      const p = runPlan(stepping(a.from, {}, [passing()]));
      assert.equal(p.status.canary?.step, a.to);
      assert.equal(p.status.canary?.stage, "Stepping");
      assert.equal(p.status.canary?.stepStartedAt, iso(30));
      assert.deepEqual(p.weights, { primary: 100 - a.weight, secondary: a.weight });
      assert.deepEqual(p.primary, { image: V1, replicas: 3 });
      assert.deepEqual(p.events.slice(1), [
        {
          type: "Normal",
          reason: "StepAdvanced",
          message: `shifted ${a.weight}% of traffic to the secondary (image ${V2})`,
        },
      ]);
      assert.equal(p.events[0]?.reason, "AnalysisPassed");
      assert.match(
        p.events[0]?.message ?? "",
        /passed: secondary-traffic 100 requests .* \| request-success-rate 99\.9 ≥ 99$/,
      );
      assert.deepEqual(p.status.canary?.lastAnalysis, {
        time: iso(30),
        passed: true,
        verdict: "Passed",
        metrics: [evidence(), passing()],
      });
      assert.equal(p.requeueAfterSeconds, 30);
    });
  }

  test("explicit stepWeights are followed", () => {
    const s = stepping(0, { analysis: { stepWeights: [5, 25, 60] } }, [passing()]);
    s.observed = { ...s.observed, routedWeights: routed(5) };
    const p = runPlan(s);
    assert.deepEqual(p.weights, { primary: 75, secondary: 25 });
  });

  test("the last step passed: Promoting, the primary gets the tested image, weights hold", () => {
    const p = runPlan(stepping(4, {}, [passing()]));
    assert.equal(p.status.canary?.stage, "Promoting");
    assert.deepEqual(p.primary, { image: V2, replicas: 3 });
    assert.deepEqual(p.weights, { primary: 50, secondary: 50 });
    assert.deepEqual(reasons(p), ["AnalysisPassed", "Promoting"]);
    assert.equal(p.status.phase, "Promoting");
    assert.equal(p.status.primaryImage, V1, "the primary image changes only once the primary runs it");
  });

  test("the last step passed with manualPromotion: AwaitingPromotion, the primary is untouched", () => {
    const p = runPlan(stepping(4, { analysis: { manualPromotion: true } }, [passing()]));
    assert.equal(p.status.canary?.stage, "AwaitingPromotion");
    assert.deepEqual(p.primary, { image: V1, replicas: 3 });
    assert.deepEqual(p.weights, { primary: 50, secondary: 50 });
    assert.deepEqual(reasons(p), ["AnalysisPassed", "AwaitingPromotion"]);
    assert.match(p.status.message ?? "", /canaryapp\.io\/promote=now/);
    assert.equal(p.requeueAfterSeconds, undefined, "waits for a person, not the clock");
  });

  test("AwaitingPromotion continues when the manual gate is removed from the spec", () => {
    const p = runPlan({ ...stepping(4), status: testing({ stage: "AwaitingPromotion", step: 4 }) });
    assert.equal(p.status.canary?.stage, "Promoting");
  });

  test("a failed analysis below the threshold counts, holds the step and waits another interval", () => {
    const p = runPlan(stepping(2, { analysis: { threshold: 2 } }, [failing("request-success-rate", 95)]));
    const canary = p.status.canary;
    assert.equal(canary?.stage, "Stepping");
    assert.equal(canary?.step, 2);
    assert.equal(canary?.failedChecks, 1);
    assert.equal(canary?.stepStartedAt, iso(30));
    assert.equal(canary?.lastAnalysis?.passed, false);
    assert.deepEqual(p.weights, { primary: 70, secondary: 30 });
    assert.deepEqual(reasons(p), ["AnalysisFailed"]);
    assert.equal(p.events[0]?.type, "Warning");
    assert.match(p.events[0]?.message ?? "", /request-success-rate 95 < 99/);
    assert.match(p.status.message ?? "", /last analysis failed .*1 of 2 failed checks/);
  });

  test("a failed analysis at the threshold rolls back, recording the metric and value at once", () => {
    const base = stepping(2, { analysis: { threshold: 2 } }, [
      passing("request-duration", 120),
      failing("request-success-rate", 95),
    ]);
    base.status = testing({ stage: "Stepping", step: 2, failedChecks: 1 });
    const p = runPlan(base);
    assert.equal(p.status.canary?.stage, "RollingBack");
    assert.equal(p.status.canary?.failedChecks, 2);
    assert.deepEqual(p.status.failedImages?.[0], {
      image: V2,
      failedAt: iso(30),
      reason: "AnalysisFailed",
      message: "request-success-rate 95 < 99",
      metric: "request-success-rate",
      value: 95,
    });
    assert.deepEqual(p.weights, { primary: 100, secondary: 0 });
    assert.deepEqual(p.secondary, { image: V2, replicas: 1 }, "the secondary stays until traffic left it");
    assert.deepEqual(p.primary, { image: V1, replicas: 3 });
    assert.deepEqual(reasons(p), ["AnalysisFailed", "RollingBack"]);
    assert.equal(p.status.phase, "RollingBack");
  });

  test("the default threshold of 1 rolls back on the first failure", () => {
    const p = runPlan(stepping(0, {}, [failing()]));
    assert.equal(p.status.canary?.stage, "RollingBack");
  });

  test("only failed queries and failWhenPrometheusFails false: inconclusive, nothing counted", () => {
    const p = runPlan(stepping(1, { analysis: { failWhenPrometheusFails: false } }, [queryFailed(), passing("x")]));
    const canary = p.status.canary;
    assert.equal(canary?.step, 1);
    assert.equal(canary?.failedChecks, 0);
    assert.equal(canary?.stepStartedAt, iso(30));
    assert.equal(canary?.lastAnalysis?.passed, false);
    assert.deepEqual(reasons(p), ["AnalysisInconclusive"]);
    assert.equal(p.events[0]?.type, "Warning");
    assert.match(p.status.message ?? "", /inconclusive/);
  });

  test("failed queries count as failures by default", () => {
    const p = runPlan(stepping(1, {}, [queryFailed()]));
    assert.equal(p.status.canary?.stage, "RollingBack");
  });

  test("a real failure beside a failed query is a failure even when Prometheus failures do not count", () => {
    const p = runPlan(
      stepping(1, { analysis: { failWhenPrometheusFails: false } }, [queryFailed("a"), failing("b", 3)]),
    );
    assert.equal(p.status.canary?.stage, "RollingBack");
    assert.equal(p.status.failedImages?.[0]?.metric, "b");
  });

  test("results given when no analysis is due are ignored", () => {
    const p = runPlan(stepping(1, { now: 10 }, [failing()]));
    assert.equal(p.status.canary?.failedChecks, 0);
    assert.equal(p.status.canary?.lastAnalysis, undefined);
    assert.deepEqual(p.events, []);
  });

  test("status message while stepping", () => {
    const p = runPlan(stepping(1, {}, [passing("request-success-rate", 99.7)]));
    assert.equal(
      p.status.message,
      `Testing ${V2}: step 3 of 5, 30% of traffic on the secondary; last analysis passed (secondary-traffic 100 requests to the secondary ≥ 20, request-success-rate 99.7 ≥ 99).`,
    );
    assert.deepEqual([condition(p, "Progressing")?.status, condition(p, "Progressing")?.reason], ["True", "Stepping"]);
  });
});

describe("a secondary that stops being ready", () => {
  test("its traffic goes to 0 at once and the step restarts", () => {
    const p = runPlan(
      stepping(2, { observed: { secondary: deployment(V2, false), routedWeights: routed(30) }, now: 20 }),
    );
    assert.deepEqual(p.weights, { primary: 100, secondary: 0 });
    assert.equal(p.status.canary?.step, 2);
    assert.equal(p.status.canary?.stepStartedAt, iso(20));
    assert.deepEqual(reasons(p), ["SecondaryNotReady"]);
    assert.equal(p.requeueAfterSeconds, 600);
  });

  test("a secondary that rolled to another image is not ready", () => {
    const p = runPlan(stepping(2, { observed: { secondary: deployment(V1), routedWeights: routed(30) } }));
    assert.equal(p.weights.secondary, 0);
  });

  const notReadyFor = (seconds: number): Scenario => ({
    image: V2,
    status: { ...testing({ stage: "Stepping", step: 2, stepStartedAt: iso(100) }), weights: routed(0) },
    observed: { secondary: deployment(V2, false), routedWeights: routed(0) },
    now: 100 + seconds,
  });

  test("still not ready within the deadline: wait, no events", () => {
    const p = runPlan(notReadyFor(599));
    assert.equal(p.status.canary?.stage, "Stepping");
    assert.deepEqual(p.events, []);
    assert.equal(p.requeueAfterSeconds, 1);
  });

  test("not ready for the whole deadline: rolled back with SecondaryNotReady", () => {
    const p = runPlan(notReadyFor(600));
    assert.equal(p.status.failedImages?.[0]?.reason, "SecondaryNotReady");
    assert.deepEqual(reasons(p), ["RollingBack"]);
    // It had traffic at step 2 before it stopped being ready: the drain period applies before it goes.
    const { plan: done } = drainedPlan(notReadyFor(600));
    assert.equal(done.status.canary, undefined);
    assert.equal(done.status.failedImages?.[0]?.reason, "SecondaryNotReady");
    assert.deepEqual(reasons(done), ["RolledBack"]);
  });

  test("ready again: weight restored and a whole interval before the next analysis", () => {
    const s = { ...notReadyFor(50), observed: { secondary: deployment(V2), routedWeights: routed(0) } };
    const p = runPlan(s);
    assert.deepEqual(p.weights, { primary: 70, secondary: 30 });
    assert.equal(p.status.canary?.stepStartedAt, iso(150));
    assert.deepEqual(reasons(p), ["SecondaryReady"]);
    assert.equal(due(s), false);
  });

  test("each of these transitions happens once", () => {
    const s = stepping(2, { observed: { secondary: deployment(V2, false), routedWeights: routed(30) }, now: 20 });
    const first = runPlan(s);
    const again = runPlan(afterPersist(s, first));
    assert.deepEqual(again.events, []);
    assert.deepEqual(again.status, first.status);
  });
});

describe("capacity follows weight (spec.scaling: weighted)", () => {
  const weighted = { replicas: 10, scaling: "weighted" as const };
  const analysis = { stepWeights: [10, 30, 50] };
  /** The secondary with `available` pods of its current template Available. */
  const secondary = (available: number | undefined, replicas: number) => ({
    image: V2,
    replicas,
    available: available !== undefined && available >= replicas,
    readyReplicas: available ?? 0,
    ...(available !== undefined ? { currentAvailable: available } : {}),
  });

  test("starting: the secondary gets the first step's pods, and no weight until they are Available", () => {
    const waiting: Scenario = {
      image: V2,
      spec: weighted,
      analysis,
      status: testing({ stage: "WaitingForSecondary", step: -1 }),
      observed: { secondary: secondary(0, 1), routedWeights: routed(0) },
      now: 1,
    };
    const p = runPlan(waiting);
    assert.deepEqual(p.secondary, { image: V2, replicas: 1 });
    assert.equal(p.weights.secondary, 0);
    const ready = runPlan({ ...waiting, observed: { secondary: secondary(1, 1), routedWeights: routed(0) } });
    assert.equal(ready.status.canary?.stage, "Stepping");
    assert.equal(ready.weights.secondary, 10);
    // At once sized for the next step's 30 % of 10 pods.
    assert.deepEqual(ready.secondary, { image: V2, replicas: 3 });
  });

  test("a passed step moves the weight only once the next step's pods are Available", () => {
    const s: Scenario = {
      image: V2,
      spec: weighted,
      analysis,
      status: testing({ stage: "Stepping", step: 0, stepStartedAt: iso(0) }),
      observed: { secondary: secondary(1, 3), routedWeights: routed(10), analysis: [evidence(), passing()] },
      now: 30,
    };
    // Scaling up: 1 of 3 Available. The step's own weight holds (1 pod is enough for 10 %), the next waits.
    const scaling = runPlan(s);
    assert.equal(scaling.status.canary?.step, 0);
    assert.equal(scaling.weights.secondary, 10);
    assert.deepEqual(scaling.secondary, { image: V2, replicas: 3 });
    assert.equal(due(s), false);
    // The Deployment's status not yet caught up with the scale: as before, no step, no loss of readiness.
    const unknown = runPlan({ ...s, observed: { ...s.observed, secondary: secondary(undefined, 3) } });
    assert.equal(unknown.weights.secondary, 10);
    assert.equal(unknown.status.canary?.step, 0);
    // 3 Available: the step's analysis is due, and once passed the weight moves to 30 %, sized for 50 %.
    const scaled = { ...s, observed: { ...s.observed, secondary: secondary(3, 3) } };
    assert.equal(due(scaled), true);
    const moved = runPlan(scaled);
    assert.equal(moved.status.canary?.step, 1);
    assert.equal(moved.weights.secondary, 30);
    assert.deepEqual(moved.secondary, { image: V2, replicas: 5 });
    // The primary keeps its replicas until promotion.
    assert.equal(moved.primary.replicas, 10);
  });

  test("a step waiting for the next step's pods says so: the condition, the message, one Event", () => {
    const s: Scenario = {
      image: V2,
      spec: weighted,
      analysis,
      status: testing({ stage: "Stepping", step: 0, stepStartedAt: iso(0) }),
      observed: { secondary: secondary(1, 3), routedWeights: routed(10) },
      now: 30,
    };
    const first = runPlan(s);
    const progressing = condition(first, "Progressing");
    assert.equal(progressing?.reason, "WaitingForCapacity");
    assert.match(progressing?.message ?? "", /waiting for 3 secondary pods Available before 30% \(1 of 3 so far\)/);
    assert.match(first.status.message ?? "", /at 10%: waiting for 3 secondary pods Available before 30%/);
    assert.deepEqual(reasons(first), ["WaitingForCapacity"]);
    // Said once: the next reconcile, one more pod up, keeps waiting quietly.
    const later = { ...afterPersist(s, first), observed: { secondary: secondary(2, 3), routedWeights: routed(10) } };
    const again = runPlan({ ...later, now: 31 });
    assert.deepEqual(reasons(again), []);
    assert.match(condition(again, "Progressing")?.message ?? "", /\(2 of 3 so far\)/);
    // Before the interval has passed the step is not waiting for anything yet.
    assert.equal(condition(runPlan({ ...s, now: 10 }), "Progressing")?.reason, "Stepping");
    // The pods are there: the reason goes back to the stage.
    const scaled = runPlan({
      ...later,
      observed: { secondary: secondary(3, 3), routedWeights: routed(10), analysis: [evidence(), passing()] },
      now: 32,
    });
    assert.equal(condition(scaled, "Progressing")?.reason, "Stepping");
    assert.deepEqual(reasons(scaled), ["AnalysisPassed", "StepAdvanced"]);
  });

  test("fixed (the default) keeps testReplicas at every step", () => {
    const p = runPlan({
      image: V2,
      spec: { replicas: 10 },
      analysis,
      status: testing({ stage: "Stepping", step: 0, stepStartedAt: iso(0) }),
      observed: { secondary: deployment(V2), routedWeights: routed(10), analysis: [evidence(), passing()] },
      now: 30,
    });
    assert.equal(p.status.canary?.step, 1);
    assert.deepEqual(p.secondary, { image: V2, replicas: 1 });
  });
});
