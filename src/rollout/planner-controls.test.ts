import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { CanaryStage } from "../api/types.js";
import { ANNOTATIONS } from "../api/types.js";
import {
  V1,
  V2,
  V3,
  afterPersist,
  deployment,
  drainedPlan,
  failing,
  iso,
  reasons,
  routed,
  runPlan,
  scenarioInput,
  testing,
  type Scenario,
} from "./fixtures.test-helpers.js";
import { analysisDue } from "./planner.js";

const paused = { [ANNOTATIONS.paused]: "true" };

function at(stage: CanaryStage, step: number, extra: Partial<Scenario> = {}): Scenario {
  const weight = step < 0 ? 0 : ([10, 20, 30, 40, 50][step] ?? 0);
  return {
    image: V2,
    status: testing({ stage, step }),
    observed: { secondary: deployment(V2), routedWeights: routed(weight) },
    now: 40,
    ...extra,
  };
}

describe("pause and resume", () => {
  test("paused during a step: recorded, steps and analysis held, weights held", () => {
    const s = at("Stepping", 2, { annotations: paused });
    const p = runPlan(s);
    assert.equal(p.status.canary?.pausedAt, iso(40));
    assert.equal(p.status.canary?.step, 2);
    assert.deepEqual(p.weights, { primary: 70, secondary: 30 });
    assert.equal(p.status.phase, "Paused");
    assert.deepEqual(reasons(p), ["Paused"]);
    assert.equal(p.requeueAfterSeconds, undefined);
    assert.match(p.status.message ?? "", /canaryapp\.io\/paused-/);
    const { analysis: _a, ...observed } = scenarioInput(s).observed;
    assert.equal(analysisDue({ ...scenarioInput(s), observed }), false, "no analysis while paused");
  });

  test("still paused later: nothing happens, not even the progress deadline", () => {
    const s = at("Stepping", 2, { annotations: paused });
    const first = runPlan(s);
    const later = runPlan({
      ...afterPersist(s, first),
      observed: { secondary: deployment(V2, false), routedWeights: routed(30) },
      now: 5000,
    });
    assert.equal(later.status.canary?.stage, "Stepping");
    assert.equal(later.weights.secondary, 0, "safety still applies: no traffic to a secondary that is not ready");
  });

  test("paused while waiting for the secondary: the first step waits too", () => {
    const p = runPlan(at("WaitingForSecondary", -1, { annotations: paused }));
    assert.equal(p.status.canary?.stage, "WaitingForSecondary");
    assert.equal(p.weights.secondary, 0);
  });

  test("paused=false is not a pause", () => {
    const p = runPlan(at("Stepping", 2, { annotations: { [ANNOTATIONS.paused]: "false" } }));
    assert.equal(p.status.canary?.pausedAt, undefined);
  });

  test("annotation removed: resumed, and the step's interval goes on where it stopped", () => {
    const s = at("Stepping", 2, { now: 900 });
    s.status = testing({ stage: "Stepping", step: 2, stepBeganAt: iso(0), pausedAt: iso(10) });
    const p = runPlan(s);
    assert.equal(p.status.canary?.pausedAt, undefined);
    assert.equal(p.status.canary?.stepStartedAt, iso(890), "moved forward by the 890 s paused");
    assert.equal(p.status.canary?.stepRoutedAt, iso(890));
    assert.equal(p.status.canary?.stepBeganAt, iso(0), "the evidence window keeps the traffic of the pause");
    assert.deepEqual(reasons(p), ["Resumed"]);
    assert.equal(p.status.phase, "Progressing");
    assert.equal(p.requeueAfterSeconds, 20, "10 s of the 30 s interval ran before the pause");
  });
});

describe("promote now", () => {
  const promote = { [ANNOTATIONS.promote]: "now" };

  for (const [stage, step] of [
    ["Stepping", 1],
    ["AwaitingPromotion", 4],
    ["WaitingForSecondary", -1],
  ] as const) {
    test(`during ${stage} with the secondary ready: Promoting now, annotation removed`, () => {
      const p = runPlan(at(stage, step, { annotations: promote }));
      assert.equal(p.status.canary?.stage, "Promoting");
      assert.deepEqual(p.primary, { image: V2, replicas: 3 });
      assert.deepEqual(reasons(p), ["PromotedManually"]);
      assert.deepEqual(p.removeAnnotations, [ANNOTATIONS.promote]);
      assert.equal(p.status.canary?.outcome?.reason, "PromotedManually");
      const message = p.status.canary?.outcome?.message ?? "";
      assert.match(message, step < 0 ? / before the first step$/ : / at step \d of \d$/);
      assert.doesNotMatch(message, /at at|at before/);
    });
  }

  test("while paused it still promotes", () => {
    const s = at("Stepping", 1, { annotations: { ...promote, ...paused } });
    const p = runPlan(s);
    assert.equal(p.status.canary?.stage, "Promoting");
    assert.equal(p.status.canary?.pausedAt, undefined);
  });

  test("a secondary that is not ready is not promoted", () => {
    const p = runPlan(
      at("Stepping", 1, {
        annotations: promote,
        observed: { secondary: deployment(V2, false), routedWeights: routed(20) },
      }),
    );
    assert.equal(p.status.canary?.stage, "Stepping");
    assert.deepEqual(p.primary, { image: V1, replicas: 3 });
    assert.deepEqual(reasons(p), ["PromoteRejected", "SecondaryNotReady"]);
    assert.deepEqual(p.removeAnnotations, [ANNOTATIONS.promote]);
  });

  test("outside a test: removed with a warning", () => {
    const p = runPlan({ image: V1, status: { primaryImage: V1 }, annotations: promote });
    assert.deepEqual(p.removeAnnotations, [ANNOTATIONS.promote]);
    assert.deepEqual(
      p.events.map((e) => [e.type, e.reason]),
      [["Warning", "NothingToPromote"]],
    );
  });

  test("present as spec.image changes: answered first, and the test starts once the annotation is gone", () => {
    const s: Scenario = { image: V2, status: { primaryImage: V1 }, annotations: promote };
    const p = runPlan(s);
    assert.equal(p.status.canary, undefined, "a replay before the removal must not promote the new test");
    assert.deepEqual(reasons(p), ["NothingToPromote"]);
    const next = runPlan(afterPersist(s, p));
    assert.deepEqual(reasons(next), ["TestStarted"]);
    assert.equal(next.status.canary?.stage, "WaitingForSecondary");
  });

  test("during a rollback: removed with a warning", () => {
    const s = at("Stepping", 2, { annotations: { ...promote, [ANNOTATIONS.abort]: "now" } });
    const p = runPlan(s);
    assert.equal(p.status.canary?.stage, "RollingBack");
    assert.deepEqual(reasons(p), ["RollingBack", "NothingToPromote"]);
    assert.deepEqual(p.removeAnnotations, [ANNOTATIONS.abort, ANNOTATIONS.promote]);
  });

  test("while promoting already: removed quietly", () => {
    const p = runPlan(
      at("Promoting", 4, {
        annotations: promote,
        observed: { primary: deployment(V1, false, 3), secondary: deployment(V2), routedWeights: routed(50) },
      }),
    );
    assert.deepEqual(p.removeAnnotations, [ANNOTATIONS.promote]);
    assert.deepEqual(p.events, []);
  });
});

describe("abort", () => {
  const abort = { [ANNOTATIONS.abort]: "now" };

  test("during a test: rolled back, and the image is recorded as Aborted", () => {
    const p = runPlan(at("Stepping", 2, { annotations: abort }));
    assert.equal(p.status.canary?.stage, "RollingBack");
    assert.equal(p.status.canary?.outcome?.result, "Aborted");
    assert.equal(p.status.failedImages?.[0]?.image, V2);
    assert.equal(p.status.failedImages?.[0]?.reason, "Aborted");
    assert.deepEqual(p.weights, { primary: 100, secondary: 0 });
    assert.deepEqual(p.removeAnnotations, [ANNOTATIONS.abort]);
    assert.deepEqual(reasons(p), ["RollingBack"]);
  });

  test("during promotion: the primary returns to the last promoted image", () => {
    const p = runPlan(
      at("Promoting", 4, {
        annotations: abort,
        observed: { primary: deployment(V2, false, 3), secondary: deployment(V2), routedWeights: routed(50) },
      }),
    );
    assert.equal(p.status.canary?.stage, "RollingBack");
    assert.deepEqual(p.primary, { image: V1, replicas: 3 });
    assert.equal(p.status.failedImages?.[0]?.reason, "Aborted");
  });

  test("outside a test: just removed", () => {
    const p = runPlan({ image: V1, status: { primaryImage: V1 }, annotations: abort });
    assert.deepEqual(p.removeAnnotations, [ANNOTATIONS.abort]);
    assert.deepEqual(p.events, []);
  });

  test("while finalising a promotion: too late, just removed", () => {
    const s = at("Finalising", 4, {
      annotations: abort,
      observed: { primary: deployment(V2, true, 3), secondary: deployment(V2), routedWeights: routed(50) },
    });
    s.status = { ...testing({ stage: "Finalising", step: 4 }), primaryImage: V2 };
    const p = runPlan(s);
    assert.equal(p.status.canary?.stage, "Finalising");
    assert.equal(p.status.failedImages, undefined);
    assert.deepEqual(p.removeAnnotations, [ANNOTATIONS.abort]);
  });

  test("abort with a new spec.image: the running test is aborted, the new one waits for the annotation's removal", () => {
    const s = at("Stepping", 2, {
      image: V3,
      annotations: abort,
      observed: { secondary: deployment(V2), routedWeights: routed(0) },
    });
    const p = runPlan(s);
    assert.equal(p.status.canary?.image, V2, "while the annotation is there, no new test starts");
    assert.equal(p.status.canary?.stage, "RollingBack");
    assert.equal(p.status.failedImages?.[0]?.image, V2);
    // Once drained and with the annotation gone, the rollback ends and the new image's test starts.
    const { plan: next } = drainedPlan(s);
    assert.equal(next.status.canary?.image, V3);
    assert.equal(next.status.failedImages?.[0]?.image, V2);
  });

  test("the aborted image is not tested again after the rollback", () => {
    const s = at("Stepping", 2, { annotations: abort });
    const first = runPlan(s);
    const { plan: done } = drainedPlan({
      ...afterPersist(s, first),
      observed: { secondary: deployment(V2), routedWeights: routed(0) },
    });
    assert.equal(done.status.canary, undefined);
    assert.equal(done.status.phase, "Failed");
    assert.deepEqual(reasons(done), ["RolledBack"]);
  });
});

describe("retry", () => {
  const failedV2 = {
    primaryImage: V1,
    failedImages: [
      { image: V2, failedAt: iso(-50), reason: "Aborted", message: "aborted" },
      { image: V3, failedAt: iso(-90), reason: "AnalysisFailed", message: "x" },
    ],
  };

  test("retry=IMAGE forgets the failure and the test starts in the same plan", () => {
    const p = runPlan({ image: V2, status: failedV2, annotations: { [ANNOTATIONS.retry]: V2 } });
    assert.deepEqual(
      p.status.failedImages?.map((f) => f.image),
      [V3],
    );
    assert.equal(p.status.canary?.image, V2);
    assert.deepEqual(reasons(p), ["RetryRequested", "TestStarted"]);
    assert.deepEqual(p.removeAnnotations, [ANNOTATIONS.retry]);
  });

  test("retry of another image only forgets that one", () => {
    const p = runPlan({ image: V2, status: failedV2, annotations: { [ANNOTATIONS.retry]: V3 } });
    assert.deepEqual(
      p.status.failedImages?.map((f) => f.image),
      [V2],
    );
    assert.equal(p.status.canary, undefined);
    assert.equal(p.status.phase, "Failed");
  });

  test("retry of an image that never failed: removed, nothing said", () => {
    const p = runPlan({ image: V1, status: { primaryImage: V1 }, annotations: { [ANNOTATIONS.retry]: V2 } });
    assert.deepEqual(p.removeAnnotations, [ANNOTATIONS.retry]);
    assert.deepEqual(p.events, []);
  });

  test("an empty retry value means spec.image", () => {
    const p = runPlan({ image: V2, status: failedV2, annotations: { [ANNOTATIONS.retry]: "" } });
    assert.equal(p.status.canary?.image, V2);
  });

  test("a retried image that fails again is recorded again", () => {
    const s: Scenario = { image: V2, status: failedV2, annotations: { [ANNOTATIONS.retry]: V2 } };
    const started = runPlan(s);
    const s2: Scenario = {
      ...afterPersist(s, started),
      observed: { secondary: deployment(V2), routedWeights: routed(0) },
      now: 5,
    };
    const stepping = runPlan(s2);
    // The route's update brings the reconcile that sees the step on it.
    const s3: Scenario = { ...afterPersist(s2, stepping), observed: { ...s2.observed, routedWeights: routed(10) } };
    const routedPlan = runPlan(s3);
    const failed = runPlan({
      ...afterPersist(s3, routedPlan),
      observed: { secondary: deployment(V2), routedWeights: routed(10), analysis: [failing()] },
      now: 35,
    });
    assert.deepEqual(
      failed.status.failedImages?.map((f) => [f.image, f.reason]),
      [
        [V2, "AnalysisFailed"],
        [V3, "AnalysisFailed"],
      ],
    );
  });

  test("a retry seen as the image fails forgets that failure too: the request is to test it again", () => {
    const p = runPlan({
      image: V2,
      status: testing({ stage: "Stepping", step: 0 }),
      annotations: { [ANNOTATIONS.retry]: V2 },
      observed: { secondary: deployment(V2), routedWeights: routed(10), analysis: [failing()] },
      now: 30,
    });
    assert.equal(p.status.canary?.stage, "RollingBack");
    assert.deepEqual(p.status.failedImages, []);
    assert.deepEqual(reasons(p), ["AnalysisFailed", "RollingBack", "RetryRequested"]);
  });
});

describe("annotations mean what they say", () => {
  test("abort=false does not abort: a Warning names what abort accepts, and the annotation goes", () => {
    const p = runPlan(at("Stepping", 2, { annotations: { [ANNOTATIONS.abort]: "false" } }));
    assert.equal(p.status.canary?.stage, "Stepping");
    assert.equal(p.status.failedImages, undefined);
    assert.deepEqual(p.removeAnnotations, [ANNOTATIONS.abort]);
    assert.deepEqual(
      p.events.map((e) => [e.type, e.reason]),
      [["Warning", "InvalidAnnotation"]],
    );
    assert.match(
      p.events[0]?.message ?? "",
      /canaryapp\.io\/abort=false is not understood: use canaryapp\.io\/abort=now/,
    );
  });

  test("promote=yes does not promote", () => {
    const p = runPlan(at("Stepping", 2, { annotations: { [ANNOTATIONS.promote]: "yes" } }));
    assert.equal(p.status.canary?.stage, "Stepping");
    assert.deepEqual(reasons(p), ["InvalidAnnotation"]);
  });

  test("paused=maybe neither pauses a running test nor resumes a paused one", () => {
    const maybe = { [ANNOTATIONS.paused]: "maybe" };
    const running = runPlan(at("Stepping", 2, { annotations: maybe }));
    assert.equal(running.status.canary?.pausedAt, undefined);
    assert.deepEqual(running.removeAnnotations, [], "a level is left for the user to fix");
    assert.deepEqual(reasons(running), ["InvalidAnnotation"]);
    assert.match(running.events[0]?.message ?? "", /use canaryapp\.io\/paused=true to pause, or remove it to resume/);
    const held = at("Stepping", 2, { annotations: maybe });
    const heldStatus = { ...held.status, canary: { ...held.status?.canary, pausedAt: iso(-5) } } as typeof held.status;
    const p = runPlan({ ...held, status: heldStatus });
    assert.equal(p.status.canary?.pausedAt, iso(-5), "still paused");
  });

  test("paused=false lets the test run", () => {
    const p = runPlan(at("Stepping", 2, { annotations: { [ANNOTATIONS.paused]: "false" } }));
    assert.equal(p.status.canary?.pausedAt, undefined);
    assert.deepEqual(p.events, []);
  });
});
