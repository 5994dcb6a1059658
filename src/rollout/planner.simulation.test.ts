import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ANNOTATIONS } from "../api/types.js";
import type { Analyst } from "./fake-world.test-helpers.js";
import { FakeWorld } from "./fake-world.test-helpers.js";
import { V1, V2, V3, makeApp } from "./fixtures.test-helpers.js";
import { scoreCheck } from "../analysis/verdicts.js";

/** A world where V1 runs and is promoted; the app then asks for `image`. */
function deployed(options: Parameters<typeof makeApp>[0] = {}, analyst?: Analyst): FakeWorld {
  const world = new FakeWorld(makeApp({ image: V1, ...options }), 5, analyst);
  world.runToRest();
  assert.equal(world.app.status?.phase, "Healthy");
  return world;
}

const eventReasons = (world: FakeWorld): string[] => world.steps.flatMap((s) => s.plan.events.map((e) => e.reason));

describe("simulation: the planner driving a world that obeys it", () => {
  test("first deploy: the primary is created and becomes Healthy, with nothing to poll afterwards", () => {
    const world = new FakeWorld(makeApp({ image: V1 }));
    world.runToRest();
    assert.equal(world.primary?.image, V1);
    assert.equal(world.secondary, null);
    assert.deepEqual(world.route, { primary: 100, secondary: 0 });
    assert.equal(world.steps.at(-1)?.plan.requeueAfterSeconds, undefined);
  });

  test("default steps: 10, 20, 30, 40, 50 %, then 0 after promotion", () => {
    const world = deployed();
    const start = world.steps.length;
    world.setImage(V2);
    world.runToRest();
    const sequence = world.steps.slice(start).map((s) => s.plan.weights.secondary);
    assert.deepEqual(dedupe(sequence), [0, 10, 20, 30, 40, 50, 0]);
    assert.equal(world.primary?.image, V2);
    assert.equal(world.secondary, null);
    assert.equal(world.app.status?.primaryImage, V2);
    assert.equal(world.app.status?.phase, "Healthy");
    assert.equal(world.app.status?.canary, undefined);
    assert.equal(world.app.status?.lastPromotion?.image, V2);
    const analyses = world.steps.slice(start).filter((s) => s.analysed);
    assert.equal(analyses.length, 5, "one analysis per step");
    for (let i = 1; i < analyses.length; i++) {
      assert.ok(analyses[i]!.time - analyses[i - 1]!.time >= 30, "steps are one interval apart");
    }
    assert.deepEqual(eventReasons(world).slice(eventReasons(world).indexOf("TestStarted")), [
      "TestStarted",
      "StepAdvanced",
      ...Array<string[]>(4).fill(["AnalysisPassed", "StepAdvanced"]).flat(),
      "AnalysisPassed",
      "Promoting",
      "PrimaryUpdated",
      "Promoted",
    ]);
  });

  test("explicit stepWeights are followed exactly", () => {
    const world = deployed({ analysis: { stepWeights: [1, 5, 25, 75], interval: "1m" } });
    const start = world.steps.length;
    world.setImage(V2);
    world.runToRest();
    assert.deepEqual(dedupe(world.steps.slice(start).map((s) => s.plan.weights.secondary)), [0, 1, 5, 25, 75, 0]);
    assert.equal(world.primary?.image, V2);
  });

  test("a failing image is rolled back, recorded, and not tested again", () => {
    const failAtThird: Analyst = (checks, w) => {
      const weight = w.route?.secondary ?? 0;
      return checks.map((c) => scoreCheck(c, { kind: "value", value: weight >= 30 ? 91.5 : 99.9 }));
    };
    const world = deployed({ analysis: { threshold: 2 } }, failAtThird);
    const start = world.steps.length;
    world.setImage(V2);
    world.runToRest();
    assert.deepEqual(dedupe(world.steps.slice(start).map((s) => s.plan.weights.secondary)), [0, 10, 20, 30, 0]);
    const status = world.app.status;
    assert.equal(status?.phase, "Failed");
    assert.equal(status?.primaryImage, V1);
    assert.equal(world.primary?.image, V1);
    assert.equal(world.secondary, null);
    assert.deepEqual(
      status?.failedImages?.map((f) => [f.image, f.reason, f.metric, f.value]),
      [[V2, "AnalysisFailed", "request-success-rate", 91.5]],
    );
    assert.equal(eventReasons(world).filter((r) => r === "AnalysisFailed").length, 2);

    // A new image is tested normally afterwards.
    world.analyst = (checks) => checks.map((c) => scoreCheck(c, { kind: "value", value: 100 }));
    world.setImage(V3);
    world.runToRest();
    assert.equal(world.app.status?.primaryImage, V3);
    assert.equal(world.app.status?.failedImages?.[0]?.image, V2);
  });

  test("manual promotion waits at the last step until the annotation, which is then removed", () => {
    const world = deployed({ analysis: { manualPromotion: true } });
    world.setImage(V2);
    world.runToRest();
    assert.equal(world.app.status?.canary?.stage, "AwaitingPromotion");
    assert.deepEqual(world.route, { primary: 50, secondary: 50 });
    world.annotate(ANNOTATIONS.promote, "now");
    world.runToRest();
    assert.equal(world.app.status?.primaryImage, V2);
    assert.equal(world.app.metadata.annotations?.[ANNOTATIONS.promote], undefined);
  });

  test("a controller that dies after every status write still ends where an undisturbed one does", () => {
    const world = deployed();
    world.setImage(V2);
    for (let i = 0; i < 2000; i++) {
      // One reconcile a second, every other one cut short right after its status write: the next one
      // resumes from that status and a world that has not changed.
      world.quirks.crashAfterPersist = i % 2 === 0;
      world.reconcile();
      world.time += 1;
      if (world.app.status?.canary === undefined) break;
    }
    world.quirks.crashAfterPersist = false;
    world.runToRest();
    assert.equal(world.app.status?.phase, "Healthy");
    assert.equal(world.primary?.image, V2);
    const reasons = eventReasons(world);
    assert.equal(reasons.filter((r) => r === "StepAdvanced").length, 5, "no step repeated or skipped");
    assert.equal(reasons.filter((r) => r === "Promoted").length, 1);
  });
});

function dedupe(values: number[]): number[] {
  return values.filter((v, i) => i === 0 || values[i - 1] !== v);
}
