import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ANNOTATIONS } from "../api/types.js";
import {
  V1,
  V2,
  V3,
  afterPersist,
  condition,
  deployment,
  iso,
  reasons,
  routed,
  runPlan,
  testing,
  type Scenario,
} from "./fixtures.test-helpers.js";
import { seedApp } from "../resources/fixtures.test-helpers.js";
import { startPlan } from "./planner.js";

const healthy = { primaryImage: V1, weights: routed(0) };

describe("first deploy and adoption", () => {
  test("no status and no primary: spec.image goes straight to the primary, untested", () => {
    const p = runPlan({ image: V1, observed: { primary: null, routedWeights: null } });
    assert.deepEqual(p.primary, { image: V1, replicas: 3 });
    assert.equal(p.secondary, null);
    assert.deepEqual(p.weights, { primary: 100, secondary: 0 });
    assert.equal(p.status.primaryImage, V1);
    assert.equal(p.status.canary, undefined);
    assert.equal(p.status.phase, "Initializing");
    assert.deepEqual(reasons(p), ["Initializing"]);
    assert.equal(condition(p, "Ready")?.status, "False");
    assert.equal(p.requeueAfterSeconds, undefined);
  });

  test("Initializing until the primary is observed available, then Healthy", () => {
    const rolling = runPlan({ image: V1, status: healthy, observed: { primary: deployment(V1, false, 3) } });
    assert.equal(rolling.status.phase, "Initializing");
    const ready = runPlan({ image: V1, status: healthy, observed: { primary: deployment(V1, true, 3) } });
    assert.equal(ready.status.phase, "Healthy");
    assert.equal(condition(ready, "Ready")?.status, "True");
    assert.deepEqual(ready.events, []);
  });

  test("a running primary without status is adopted, and a different spec.image is tested", () => {
    const p = runPlan({ image: V2, observed: { primary: deployment(V1, true, 3) } });
    assert.equal(p.status.primaryImage, V1);
    assert.deepEqual(p.primary, { image: V1, replicas: 3 });
    assert.deepEqual(p.secondary, { image: V2, replicas: 1 });
    assert.equal(p.status.canary?.image, V2);
    assert.deepEqual(reasons(p), ["Adopted", "TestStarted"]);
  });

  test("a running primary with spec.image is adopted and Healthy", () => {
    const p = runPlan({ image: V1, observed: { primary: deployment(V1, true, 3) } });
    assert.equal(p.status.primaryImage, V1);
    assert.equal(p.status.phase, "Healthy");
    assert.equal(p.secondary, null);
  });

  test("observedGeneration follows metadata.generation", () => {
    const p = runPlan({ image: V1, generation: 7, status: healthy });
    assert.equal(p.status.observedGeneration, 7);
  });
});

describe("starting a test", () => {
  test("a new spec.image starts a test on the secondary with no traffic", () => {
    const p = runPlan({ image: V2, status: healthy, now: 5 });
    assert.deepEqual(p.status.canary, {
      image: V2,
      stage: "WaitingForSecondary",
      step: -1,
      startedAt: iso(5),
      stepStartedAt: iso(5),
      failedChecks: 0,
    });
    assert.deepEqual(p.primary, { image: V1, replicas: 3 });
    assert.deepEqual(p.secondary, { image: V2, replicas: 1 });
    assert.deepEqual(p.weights, { primary: 100, secondary: 0 });
    assert.deepEqual(reasons(p), ["TestStarted"]);
    assert.equal(p.status.phase, "Progressing");
    assert.deepEqual(
      [condition(p, "Progressing")?.status, condition(p, "Progressing")?.reason],
      ["True", "WaitingForSecondary"],
    );
    assert.equal(p.requeueAfterSeconds, 600, "the progress deadline");
  });

  test("a secondary already running the image goes straight to the first step", () => {
    const p = runPlan({ image: V2, status: healthy, observed: { secondary: deployment(V2) } });
    assert.equal(p.status.canary?.stage, "Stepping");
    assert.equal(p.status.canary?.step, 0);
    assert.deepEqual(p.weights, { primary: 90, secondary: 10 });
    assert.deepEqual(reasons(p), ["TestStarted", "StepAdvanced"]);
    assert.equal(p.tellChildUpdates, false, "StepAdvanced tells what the route's update does");
  });

  test("the paused annotation holds a test from its start", () => {
    const p = runPlan({ image: V2, status: healthy, annotations: { [ANNOTATIONS.paused]: "true" }, now: 3 });
    assert.equal(p.status.canary?.pausedAt, iso(3));
    assert.equal(p.status.phase, "Paused");
    assert.deepEqual(reasons(p), ["TestStarted", "Paused"]);
  });

  test("spec.image equal to the primary image starts nothing", () => {
    const p = runPlan({ image: V1, status: healthy });
    assert.equal(p.status.canary, undefined);
    assert.deepEqual(p.events, []);
    assert.equal(p.tellChildUpdates, true, "a child put back is news no transition tells");
  });
});

describe("a failed image blocks a test", () => {
  const failedV2 = {
    ...healthy,
    failedImages: [
      { image: V2, failedAt: iso(-100), reason: "AnalysisFailed", message: "request-success-rate 90 < 99" },
    ],
  };
  const s: Scenario = { image: V2, status: failedV2, generation: 4 };

  test("phase Failed, no secondary, and a message that says when, why and how to retry", () => {
    const p = runPlan(s);
    assert.equal(p.status.canary, undefined);
    assert.equal(p.secondary, null);
    assert.deepEqual(p.weights, { primary: 100, secondary: 0 });
    assert.equal(p.status.phase, "Failed");
    const message = p.status.message ?? "";
    assert.match(message, new RegExp(iso(-100)));
    assert.match(message, /AnalysisFailed/);
    assert.match(message, /request-success-rate 90 < 99/);
    assert.ok(message.includes(`kubectl annotate canaryapp web -n shop canaryapp.io/retry=${V2} --overwrite`), message);
    assert.deepEqual(reasons(p), ["FailedImage"]);
    assert.equal(p.events[0]?.type, "Warning");
  });

  test("the warning is given once, on the transition into Failed", () => {
    const first = runPlan(s);
    const again = runPlan(afterPersist(s, first));
    assert.deepEqual(again.events, []);
    assert.deepEqual(again.status, first.status);
  });

  test("a spec change to the failed image is told again", () => {
    const first = runPlan(s);
    const edited = runPlan({ ...afterPersist(s, first), generation: 5 });
    assert.deepEqual(reasons(edited), ["FailedImage"]);
  });
});

describe("waiting for the secondary", () => {
  const waiting = testing({ stage: "WaitingForSecondary", step: -1 });

  const cases: { name: string; secondary: Scenario["observed"]; now: number; stage: string; weight: number }[] = [
    { name: "secondary absent", secondary: { secondary: null }, now: 10, stage: "WaitingForSecondary", weight: 0 },
    {
      name: "secondary still rolling out",
      secondary: { secondary: deployment(V2, false) },
      now: 10,
      stage: "WaitingForSecondary",
      weight: 0,
    },
    {
      name: "secondary available with another test's image",
      secondary: { secondary: deployment(V3, true) },
      now: 10,
      stage: "WaitingForSecondary",
      weight: 0,
    },
    { name: "secondary ready", secondary: { secondary: deployment(V2, true) }, now: 10, stage: "Stepping", weight: 10 },
    {
      name: "one second before the deadline",
      secondary: { secondary: deployment(V2, false) },
      now: 599,
      stage: "WaitingForSecondary",
      weight: 0,
    },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const p = runPlan({ image: V2, status: waiting, observed: c.secondary, now: c.now });
      assert.equal(p.status.canary?.stage, c.stage);
      assert.equal(p.weights.secondary, c.weight);
      assert.deepEqual(p.secondary, { image: V2, replicas: 1 });
    });
  }

  test("ready: step 0 begins now with the first weight", () => {
    const p = runPlan({ image: V2, status: waiting, observed: { secondary: deployment(V2) }, now: 12 });
    assert.equal(p.status.canary?.step, 0);
    assert.equal(p.status.canary?.stepStartedAt, iso(12));
    assert.deepEqual(p.events, [
      { type: "Normal", reason: "StepAdvanced", message: `shifted 10% of traffic to the secondary (image ${V2})` },
    ]);
    assert.equal(p.requeueAfterSeconds, 30, "the first analysis is one interval away");
  });

  test("not ready: requeued at the deadline", () => {
    const p = runPlan({ image: V2, status: waiting, observed: { secondary: deployment(V2, false) }, now: 100 });
    assert.equal(p.requeueAfterSeconds, 500);
  });

  test("past the deadline: rolled back with ProgressDeadlineExceeded, recorded at once", () => {
    const p = runPlan({
      image: V2,
      status: waiting,
      observed: { secondary: deployment(V2, false), routedWeights: routed(10) },
      now: 600,
    });
    assert.equal(p.status.canary?.stage, "RollingBack");
    assert.equal(p.status.canary?.outcome?.reason, "ProgressDeadlineExceeded");
    assert.equal(p.status.failedImages?.[0]?.image, V2);
    assert.equal(p.status.failedImages?.[0]?.reason, "ProgressDeadlineExceeded");
    assert.equal(p.status.failedImages?.[0]?.failedAt, iso(600));
    assert.deepEqual(p.weights, { primary: 100, secondary: 0 });
    assert.deepEqual(p.secondary, { image: V2, replicas: 1 }, "kept until the route shows it drained");
    assert.deepEqual(reasons(p), ["RollingBack"]);
  });

  test("past the deadline with no traffic on the secondary: the rollback completes in the same plan", () => {
    const p = runPlan({ image: V2, status: waiting, observed: { secondary: deployment(V2, false) }, now: 700 });
    assert.equal(p.status.canary, undefined);
    assert.equal(p.secondary, null);
    assert.equal(p.status.phase, "Failed");
    assert.deepEqual(reasons(p), ["RollingBack", "RolledBack"]);
    assert.equal(condition(p, "Progressing")?.reason, "RolledBack");
  });
});

describe("invalid spec", () => {
  const bad = { metrics: [{ name: "latency", query: "max({{nope}})", max: 1 }] };

  test("an unknown template variable starts no test and says why", () => {
    const p = runPlan({ image: V2, status: healthy, analysis: bad });
    assert.equal(p.status.canary, undefined);
    assert.equal(p.status.phase, "Invalid");
    assert.equal(condition(p, "InvalidSpec")?.status, "True");
    assert.match(condition(p, "InvalidSpec")?.message ?? "", /\{\{nope\}\}/);
  });

  test("a running test is held: no traffic to a secondary whose analysis cannot run", () => {
    const p = runPlan({
      image: V2,
      status: testing({ stage: "WaitingForSecondary", step: -1 }),
      analysis: bad,
      observed: { secondary: deployment(V2) },
      now: 10,
    });
    assert.equal(p.status.canary?.stage, "WaitingForSecondary");
    assert.equal(p.weights.secondary, 0);
    assert.equal(p.status.phase, "Invalid");
  });

  test("a valid spec says so", () => {
    const p = runPlan({ image: V1, status: healthy });
    assert.equal(condition(p, "InvalidSpec")?.status, "False");
  });
});

describe("a spec refused before any write (a host or gateway not allowed, a name an earlier app owns)", () => {
  const refused = { reason: "HostNotAllowed", message: 'spec.service.hosts[0] "payments.billing" is not allowed' };
  const app = seedApp();
  app.status = { phase: "Healthy", primaryImage: V1, weights: routed(0) };

  test("the plan is invalid: the refusal is the InvalidSpec condition with its reason, and one Warning", () => {
    const planning = startPlan({
      app,
      observed: { primary: deployment(V1, true, 3), secondary: null, routedWeights: routed(0), specRefused: refused },
      now: new Date(iso(0)),
    });
    assert.equal(planning.kind, "invalid");
    if (planning.kind !== "invalid") return;
    assert.equal(planning.plan.status.phase, "Invalid");
    const invalid = planning.plan.status.conditions?.find((c) => c.type === "InvalidSpec");
    assert.deepEqual([invalid?.status, invalid?.reason, invalid?.message], ["True", refused.reason, refused.message]);
    assert.deepEqual(planning.plan.events, [{ type: "Warning", reason: "HostNotAllowed", message: refused.message }]);
  });

  test("planned again on its own status: nothing new to write or say", () => {
    const first = startPlan({
      app,
      observed: { primary: null, secondary: null, routedWeights: null, specRefused: refused },
      now: new Date(iso(0)),
    });
    assert.equal(first.kind, "invalid");
    if (first.kind !== "invalid") return;
    const again = startPlan({
      app: { ...app, status: first.plan.status },
      observed: { primary: null, secondary: null, routedWeights: null, specRefused: refused },
      now: new Date(iso(5)),
    });
    assert.equal(again.kind, "invalid");
    if (again.kind !== "invalid") return;
    assert.deepEqual(again.plan.events, []);
    assert.deepEqual(again.plan.status, first.plan.status);
  });

  test("once the refusal is gone, the app is planned as usual and InvalidSpec turns False", () => {
    const first = startPlan({
      app,
      observed: { primary: null, secondary: null, routedWeights: null, specRefused: refused },
      now: new Date(iso(0)),
    });
    if (first.kind !== "invalid") return assert.fail("invalid expected");
    const later = startPlan({
      app: { ...app, status: first.plan.status },
      observed: { primary: deployment(V1, true, 3), secondary: null, routedWeights: routed(0) },
      now: new Date(iso(5)),
    });
    assert.equal(later.kind, "ready");
    if (later.kind !== "ready") return;
    assert.equal(later.plan.status.conditions?.find((c) => c.type === "InvalidSpec")?.status, "False");
    assert.notEqual(later.plan.status.phase, "Invalid");
  });
});
