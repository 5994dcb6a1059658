import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { CanaryAppStatus, CanaryStage } from "../api/types.js";
import {
  V1,
  V2,
  V3,
  afterPersist,
  condition,
  DRAIN_SECONDS,
  drainedPlan,
  deployment,
  iso,
  reasons,
  routed,
  runPlan,
  testing,
  type Scenario,
} from "./fixtures.test-helpers.js";

describe("spec.image changed mid-test", () => {
  const stages: { stage: CanaryStage; step: number; weight: number }[] = [
    { stage: "WaitingForSecondary", step: -1, weight: 0 },
    { stage: "Stepping", step: 2, weight: 30 },
    { stage: "AwaitingPromotion", step: 4, weight: 50 },
  ];
  for (const { stage, step, weight } of stages) {
    const s: Scenario = {
      image: V3,
      generation: 2,
      status: testing({ stage, step }),
      observed: { secondary: deployment(V2), routedWeights: routed(weight) },
      now: 40,
    };

    test(`during ${stage}: the test ends as Superseded, traffic first, no failure recorded`, () => {
      const p = runPlan(s);
      if (weight > 0) {
        assert.equal(p.status.canary?.stage, "RollingBack");
        assert.equal(p.status.canary?.image, V2);
        assert.equal(p.status.canary?.outcome?.result, "Superseded");
        assert.deepEqual(p.weights, { primary: 100, secondary: 0 });
        assert.deepEqual(p.secondary, { image: V2, replicas: 1 }, "the old image keeps serving until drained");
        assert.deepEqual(reasons(p), ["TestSuperseded"]);
      } else {
        assert.equal(p.status.canary?.image, V3, "no traffic was on it: the new test starts at once");
        assert.deepEqual(reasons(p), ["TestSuperseded", "TestStarted"]);
      }
      assert.equal(p.status.failedImages, undefined);
      assert.deepEqual(p.primary, { image: V1, replicas: 3 });
    });

    test(`during ${stage}: once the route shows the secondary drained, the new test reuses the secondary`, () => {
      const ending = runPlan(s);
      const { plan: p } = drainedPlan({
        ...afterPersist(s, ending),
        observed: { secondary: deployment(V2), routedWeights: routed(0) },
        now: weight > 0 ? 42 - DRAIN_SECONDS : 42,
      });
      assert.equal(p.status.canary?.image, V3);
      assert.equal(p.status.canary?.stage, "WaitingForSecondary");
      assert.equal(p.status.canary?.startedAt, weight > 0 ? iso(42) : iso(40));
      assert.deepEqual(p.secondary, { image: V3, replicas: 1 });
      assert.deepEqual(p.weights, { primary: 100, secondary: 0 });
      assert.equal(p.status.failedImages, undefined);
    });
  }

  test("back to the primary image: the test ends and the secondary goes once drained", () => {
    const s: Scenario = {
      image: V1,
      status: testing({ stage: "Stepping", step: 1 }),
      observed: { secondary: deployment(V2), routedWeights: routed(20) },
      now: 10,
    };
    const ending = runPlan(s);
    assert.equal(ending.status.canary?.stage, "RollingBack");
    assert.match(ending.status.message ?? "", /Ending the test/);
    const { plan: done } = drainedPlan({
      ...afterPersist(s, ending),
      observed: { secondary: deployment(V2), routedWeights: routed(0) },
    });
    assert.equal(done.status.canary, undefined);
    assert.equal(done.secondary, null);
    assert.equal(done.status.phase, "Healthy");
    assert.equal(done.status.failedImages, undefined);
    assert.deepEqual(
      [condition(done, "Progressing")?.status, condition(done, "Progressing")?.reason],
      ["False", "Superseded"],
    );
  });

  test("during Promoting: the tested image is promoted, never the new spec.image", () => {
    const p = runPlan({
      image: V3,
      status: testing({ stage: "Promoting", step: 4 }),
      observed: { primary: deployment(V1, false, 3), secondary: deployment(V2), routedWeights: routed(50) },
      now: 10,
    });
    assert.equal(p.status.canary?.stage, "Promoting");
    assert.deepEqual(p.primary, { image: V2, replicas: 3 });
  });
});

describe("promotion", () => {
  const promoting: Scenario = {
    image: V2,
    status: testing({ stage: "Promoting", step: 4, stepStartedAt: iso(0) }),
    observed: { primary: deployment(V2, false, 3), secondary: deployment(V2), routedWeights: routed(50) },
    now: 60,
  };

  test("while the primary rolls out, the last step's split holds", () => {
    const p = runPlan(promoting);
    assert.deepEqual(p.primary, { image: V2, replicas: 3 });
    assert.deepEqual(p.weights, { primary: 50, secondary: 50 });
    assert.equal(p.status.primaryImage, V1);
    assert.equal(p.requeueAfterSeconds, 540, "until the progress deadline");
    assert.deepEqual(p.events, []);
  });

  test("the split drops to 0 if the secondary stops being ready meanwhile", () => {
    const p = runPlan({ ...promoting, observed: { ...promoting.observed, secondary: deployment(V2, false) } });
    assert.equal(p.weights.secondary, 0);
  });

  test("the primary runs the tested image: Finalising, all traffic to it, primaryImage recorded", () => {
    const p = runPlan({ ...promoting, observed: { ...promoting.observed, primary: deployment(V2, true, 3) } });
    assert.equal(p.status.canary?.stage, "Finalising");
    assert.deepEqual(p.weights, { primary: 100, secondary: 0 });
    assert.equal(p.status.primaryImage, V2);
    assert.deepEqual(p.status.lastPromotion, { image: V2, time: iso(60) });
    assert.deepEqual(p.primary, { image: V2, replicas: 3 });
    assert.deepEqual(p.secondary, { image: V2, replicas: 1 });
    assert.deepEqual(reasons(p), ["PrimaryUpdated"]);
  });

  test("a primary that misses the deadline: keep going, warn once", () => {
    const late = { ...promoting, now: 600 };
    const first = runPlan(late);
    assert.equal(first.status.canary?.stage, "Promoting");
    assert.deepEqual(first.primary, { image: V2, replicas: 3 });
    assert.deepEqual(
      first.events.map((e) => [e.type, e.reason]),
      [["Warning", "PromotionSlow"]],
    );
    assert.equal(condition(first, "Progressing")?.reason, "ProgressDeadlineExceeded");
    assert.match(first.status.message ?? "", /canaryapp\.io\/abort=now/);
    assert.equal(first.requeueAfterSeconds, undefined, "the primary's rollout is watched, not polled");
    const later = runPlan({ ...afterPersist(late, first), now: 900 });
    assert.deepEqual(later.events, []);
  });
});

describe("finalising and rolling back wait for the route", () => {
  const finalising: CanaryAppStatus = {
    // The route has shown the secondary drained for the whole drain period (see "the drain" below).
    ...testing({ stage: "Finalising", step: 4, drainedAt: iso(-DRAIN_SECONDS) }),
    primaryImage: V2,
    weights: routed(0),
    lastPromotion: { image: V2, time: iso(0) },
  };

  test("finalising: the secondary stays while the route still sends it traffic", () => {
    const p = runPlan({
      image: V2,
      status: finalising,
      observed: { primary: deployment(V2, true, 3), secondary: deployment(V2), routedWeights: routed(50) },
    });
    assert.deepEqual(p.secondary, { image: V2, replicas: 1 });
    assert.deepEqual(p.weights, { primary: 100, secondary: 0 });
    assert.equal(p.status.canary?.stage, "Finalising");
    assert.equal(p.requeueAfterSeconds, 2);
  });

  test("finalising: a missing route proves nothing", () => {
    const p = runPlan({
      image: V2,
      status: finalising,
      observed: { primary: deployment(V2, true, 3), secondary: deployment(V2), routedWeights: null },
    });
    assert.equal(p.status.canary?.stage, "Finalising");
  });

  test("finalising: drained, the secondary goes and the app is Healthy", () => {
    const p = runPlan({
      image: V2,
      status: finalising,
      observed: { primary: deployment(V2, true, 3), secondary: deployment(V2), routedWeights: routed(0) },
    });
    assert.equal(p.secondary, null);
    assert.equal(p.status.canary, undefined);
    assert.equal(p.status.phase, "Healthy");
    assert.deepEqual(reasons(p), ["Promoted"]);
    assert.deepEqual([condition(p, "Progressing")?.status, condition(p, "Progressing")?.reason], ["False", "Promoted"]);
    assert.equal(p.requeueAfterSeconds, undefined);
  });

  test("finalising: spec.image changed during the promotion starts the next test once done", () => {
    const p = runPlan({
      image: V3,
      status: finalising,
      observed: { primary: deployment(V2, true, 3), secondary: deployment(V2), routedWeights: routed(0) },
    });
    assert.deepEqual(reasons(p), ["Promoted", "TestStarted"]);
    assert.equal(p.status.canary?.image, V3);
    assert.deepEqual(p.secondary, { image: V3, replicas: 1 });
    assert.deepEqual(p.primary, { image: V2, replicas: 3 });
  });

  const rollingBack: CanaryAppStatus = {
    ...testing({
      stage: "RollingBack",
      step: 2,
      failedChecks: 1,
      drainedAt: iso(-DRAIN_SECONDS),
      outcome: {
        result: "Failed",
        reason: "AnalysisFailed",
        message: "prometheusQuery returned 1 failing series (value 7)",
      },
    }),
    weights: routed(0),
    failedImages: [
      {
        image: V2,
        failedAt: iso(0),
        reason: "AnalysisFailed",
        message: "prometheusQuery returned 1 failing series (value 7)",
        metric: "prometheusQuery",
        value: 7,
      },
    ],
  };

  test("rolling back: the secondary stays while the route still sends it traffic", () => {
    const p = runPlan({
      image: V2,
      status: rollingBack,
      observed: { secondary: deployment(V2), routedWeights: routed(30) },
    });
    assert.equal(p.status.canary?.stage, "RollingBack");
    assert.deepEqual(p.secondary, { image: V2, replicas: 1 });
    assert.deepEqual(p.weights, { primary: 100, secondary: 0 });
    assert.equal(p.status.phase, "RollingBack");
    assert.deepEqual(p.events, []);
  });

  test("rolling back: drained, the secondary goes, the failure stays recorded", () => {
    const p = runPlan({
      image: V2,
      status: rollingBack,
      observed: { secondary: deployment(V2), routedWeights: routed(0) },
    });
    assert.equal(p.secondary, null);
    assert.equal(p.status.canary, undefined);
    assert.deepEqual(p.status.failedImages, rollingBack.failedImages);
    assert.equal(p.status.phase, "Failed");
    assert.deepEqual(
      p.events.map((e) => [e.type, e.reason]),
      [["Warning", "RolledBack"]],
    );
    assert.match(p.events[0]?.message ?? "", /AnalysisFailed.*value 7/);
    assert.deepEqual(
      [condition(p, "Progressing")?.status, condition(p, "Progressing")?.reason],
      ["False", "RolledBack"],
    );
    assert.ok(
      p.status.message?.startsWith(
        `Rolled back ${V2}: prometheusQuery returned 1 failing series (value 7); traffic is back on ${V1}.`,
      ),
      p.status.message,
    );
  });
});

describe("the drain: the secondary is kept while proxies take the new route", () => {
  const ending: Scenario = {
    image: V2,
    status: {
      ...testing({ stage: "Finalising", step: 4 }),
      primaryImage: V2,
      weights: routed(0),
    },
    observed: { primary: deployment(V2, true, 3), secondary: deployment(V2), routedWeights: routed(0) },
    now: 100,
  };

  test("the first observation of the drained route starts the drain: recorded, secondary kept, no event", () => {
    const p = runPlan(ending);
    assert.equal(p.status.canary?.drainedAt, iso(100));
    assert.deepEqual(p.secondary, { image: V2, replicas: 1 });
    assert.deepEqual(p.events, []);
    assert.equal(p.requeueAfterSeconds, DRAIN_SECONDS);
  });

  test("a replay during the drain (a restart) neither shortens nor restarts it", () => {
    const first = runPlan(ending);
    const replay = runPlan({ ...afterPersist(ending, first), now: 103 });
    assert.equal(replay.status.canary?.drainedAt, iso(100));
    assert.deepEqual(replay.secondary, { image: V2, replicas: 1 });
    assert.equal(replay.requeueAfterSeconds, 2);
    const done = runPlan({ ...afterPersist(ending, first), now: 105 });
    assert.equal(done.secondary, null);
    assert.deepEqual(reasons(done), ["Promoted"]);
  });

  test("a route that carries secondary traffic again (a hand edit) starts the drain over", () => {
    const first = runPlan(ending);
    const edited = runPlan({
      ...afterPersist(ending, first),
      observed: { ...ending.observed, routedWeights: routed(10) },
      now: 104,
    });
    assert.equal(edited.status.canary?.drainedAt, undefined);
    assert.deepEqual(edited.weights, { primary: 100, secondary: 0 }, "the edit is repaired");
    const again = runPlan({ ...afterPersist(ending, edited), now: 106 });
    assert.equal(again.status.canary?.drainedAt, iso(106));
    assert.deepEqual(again.secondary, { image: V2, replicas: 1 });
  });

  test("spec.drainSeconds sets the period; 0 removes the secondary at the first drained observation", () => {
    const p = runPlan({ ...ending, spec: { drainSeconds: 0 } });
    assert.equal(p.secondary, null);
    const long = runPlan({ ...ending, spec: { drainSeconds: 30 } });
    assert.equal(long.requeueAfterSeconds, 30);
  });
});

describe("conditions", () => {
  test("lastTransitionTime stays while a condition's status does not change", () => {
    const s: Scenario = {
      image: V2,
      status: testing({ stage: "Stepping", step: 1 }),
      observed: { secondary: deployment(V2), routedWeights: routed(20) },
      now: 5,
    };
    const first = runPlan(s);
    const later = runPlan({ ...afterPersist(s, first), now: 10 });
    assert.equal(condition(later, "Progressing")?.lastTransitionTime, iso(5));
    assert.equal(condition(later, "Ready")?.lastTransitionTime, iso(5));
  });
});
