import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { parseDurationSeconds } from "../api/defaults.js";
import type { AnalysisSpec } from "../api/types.js";
import { ANNOTATIONS } from "../api/types.js";
import { scoreCheck } from "../analysis/verdicts.js";
import type { Analyst, Quirks, Step } from "./fake-world.test-helpers.js";
import { FakeWorld } from "./fake-world.test-helpers.js";
import { V1, V2, V3, makeApp } from "./fixtures.test-helpers.js";
import { isEnding, isTesting } from "./test-facts.js";
import { plan } from "./planner.js";
import type { QueryOutcome } from "../analysis/outcome.js";

const V4 = "example/app:v4";

type AnalystMode = "pass" | "fail" | "error" | "empty";

/** Something that happens to the app or the world between, or as, reconciles. */
type Op =
  | { kind: "reconcile" }
  | { kind: "tick"; seconds: number }
  | { kind: "image"; image: string }
  | { kind: "annotate"; key: keyof typeof ANNOTATIONS; value: string }
  | { kind: "unannotate"; key: keyof typeof ANNOTATIONS }
  | { kind: "quirks"; quirks: Quirks }
  | { kind: "analyst"; mode: AnalystMode };

const images = fc.constantFrom(V1, V2, V3, V4);

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 10, arbitrary: fc.constant<Op>({ kind: "reconcile" }) },
  { weight: 8, arbitrary: fc.integer({ min: 0, max: 90 }).map<Op>((seconds) => ({ kind: "tick", seconds })) },
  { weight: 2, arbitrary: images.map<Op>((image) => ({ kind: "image", image })) },
  {
    weight: 2,
    arbitrary: fc
      .record({
        key: fc.constantFrom<keyof typeof ANNOTATIONS>("paused", "promote", "abort", "retry"),
        value: fc.oneof(images, fc.constantFrom("true", "false", "now")),
      })
      .map<Op>(({ key, value }) => ({ kind: "annotate", key, value })),
  },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom<keyof typeof ANNOTATIONS>("paused", "promote", "abort", "retry")
      .map<Op>((key) => ({ kind: "unannotate", key })),
  },
  {
    weight: 4,
    arbitrary: fc
      .oneof(
        // Mostly an honest world, now and then one that lags or lies.
        { weight: 2, arbitrary: fc.constant<Quirks>({}) },
        {
          weight: 1,
          arbitrary: fc.record(
            {
              secondaryAvailable: fc.boolean(),
              staleRoute: fc.boolean(),
              routeMissing: fc.boolean(),
              crashAfterPersist: fc.boolean(),
            },
            { requiredKeys: [] },
          ),
        },
      )
      .map<Op>((quirks) => ({ kind: "quirks", quirks })),
  },
  {
    weight: 4,
    arbitrary: fc
      .constantFrom<AnalystMode>("pass", "fail", "error", "empty")
      .map<Op>((mode) => ({ kind: "analyst", mode })),
  },
);

const analysisSpec: fc.Arbitrary<AnalysisSpec> = fc.record({
  interval: fc.constantFrom("5s", "10s", "30s"),
  threshold: fc.integer({ min: 1, max: 3 }),
  progressDeadlineSeconds: fc.constantFrom(30, 120, 600),
  failWhenPrometheusFails: fc.boolean(),
  manualPromotion: fc.boolean(),
  stepWeights: fc.option(fc.constantFrom([50], [5, 25, 60], [1, 2, 3, 4, 99]), { nil: undefined }),
});

function analystFor(mode: AnalystMode): Analyst {
  const outcome: QueryOutcome =
    mode === "pass"
      ? { kind: "value", value: 100 }
      : mode === "fail"
        ? { kind: "value", value: 50 }
        : mode === "error"
          ? { kind: "error", message: "connection refused" }
          : { kind: "empty" };
  return (checks) => checks.map((c) => scoreCheck(c, outcome));
}

/** The checker's memory across reconciles. */
interface Tracker {
  /** When the running test's step last advanced. */
  lastAdvance: number | undefined;
  /** Images that passed through Promoting: with the first image, the only ones the primary may run. */
  provenImages: Set<string>;
}

/** Every invariant that must hold of one reconcile, whatever the world did before. */
function checkStep(step: Step, tracker: Tracker, intervalSeconds: number): void {
  const { input, plan: p } = step;
  const before = input.app.status;
  const after = p.status;
  const canary = after.canary;

  // Weights: whole numbers 0..100 that sum to 100, and the status records them.
  for (const w of [p.weights.primary, p.weights.secondary]) assert.ok(Number.isInteger(w) && w >= 0 && w <= 100);
  assert.equal(p.weights.primary + p.weights.secondary, 100);
  assert.deepEqual(after.weights, p.weights);

  // No traffic to a secondary that is not observed ready with the image under test.
  if (p.weights.secondary > 0) {
    const observed = input.observed.secondary;
    assert.ok(canary !== undefined, "traffic to a secondary outside a test");
    assert.ok(
      observed !== null && observed.available && observed.image === canary.image,
      "traffic to a secondary not ready",
    );
    assert.equal(p.secondary?.image, canary.image);
  }
  if (canary !== undefined) assert.equal(p.secondary?.image, canary.image);
  else assert.equal(p.secondary, null);

  // The primary runs the primary image, or the image this test proved, once promotion began.
  if (canary?.stage === "Promoting") {
    if (before?.canary?.stage !== "Promoting") {
      assert.equal(before?.canary?.image, canary.image, "only a tested image is promoted");
      assert.ok(before?.canary !== undefined && isTesting(before.canary.stage));
      const lastStep = input.spec.analysis.weights.length - 1;
      const earned =
        ANNOTATIONS.promote in (input.app.metadata.annotations ?? {}) ||
        before.canary.stage === "AwaitingPromotion" ||
        (canary.lastAnalysis?.passed === true && before.canary.step >= lastStep);
      assert.ok(earned, "promotion without passing the last step or a promote request");
    }
    tracker.provenImages.add(canary.image);
    assert.equal(p.primary.image, canary.image);
  } else {
    assert.equal(p.primary.image, after.primaryImage);
  }
  assert.ok(tracker.provenImages.has(p.primary.image), `untested image on the primary: ${p.primary.image}`);

  // A failure is recorded the moment a rollback is decided (unless a retry request in the same
  // reconcile asks to forget it).
  const retrying = ANNOTATIONS.retry in (input.app.metadata.annotations ?? {});
  if (
    canary?.stage === "RollingBack" &&
    canary.outcome?.result !== "Superseded" &&
    before?.canary?.stage !== "RollingBack" &&
    !retrying
  ) {
    assert.equal(after.failedImages?.[0]?.image, canary.image);
  }

  // Steps advance one at a time, at most once an interval, within one test. (A test that ends and a new
  // one of the same image started in the same second share image and startedAt: an ending stage that
  // turns into a testing stage is a new test.)
  const sameTest =
    canary !== undefined &&
    before?.canary !== undefined &&
    before.canary.image === canary.image &&
    before.canary.startedAt === canary.startedAt &&
    !(isEnding(before.canary.stage) && isTesting(canary.stage));
  if (canary !== undefined && before?.canary !== undefined && sameTest) {
    assert.ok(canary.step <= before.canary.step + 1, "a step was skipped");
    if (canary.step > before.canary.step) {
      const last = tracker.lastAdvance;
      if (last !== undefined && before.canary.step >= 0) {
        assert.ok(step.time - last >= intervalSeconds, "two steps within one interval");
      }
      tracker.lastAdvance = step.time;
    }
  } else if (canary !== undefined) {
    tracker.lastAdvance = canary.step >= 0 ? step.time : undefined;
  }

  // A due analysis is acted on.
  if (step.analysed) {
    const acted = p.events.some((e) =>
      ["AnalysisPassed", "AnalysisFailed", "AnalysisInconclusive", "AnalysisResumed"].includes(e.reason),
    );
    assert.ok(acted, "an analysis ran and nothing came of it");
  }

  // Replaying on its own status with the same observation (a controller that died after the status
  // write) changes nothing and says nothing new, apart from repeating the rejection of a request that
  // could not be honoured, or was not understood, while its annotation is still there to be removed
  // (at-least-once, harmless).
  const replayed = plan({ ...input, app: { ...input.app, status: after } });
  assert.deepEqual(replayed.status, after, "replay changed the status");
  assert.deepEqual([replayed.primary, replayed.secondary, replayed.weights], [p.primary, p.secondary, p.weights]);
  assert.equal(replayed.requeueAfterSeconds, p.requeueAfterSeconds);
  assert.deepEqual(replayed.removeAnnotations, p.removeAnnotations);
  if (p.removeAnnotations.length === 0) assert.deepEqual(replayed.events, [], "replay emitted events");
  for (const e of replayed.events) {
    assert.ok(["NothingToPromote", "PromoteRejected", "InvalidAnnotation"].includes(e.reason), e.reason);
  }
}

/** A world's starting point: the spec's analysis, how long rollouts take, what the checks say at first. */
interface Setup {
  analysis: AnalysisSpec;
  readyDelay: number;
  analyst: AnalystMode;
}

const setup: fc.Arbitrary<Setup> = fc.record({
  analysis: analysisSpec,
  readyDelay: fc.constantFrom(1, 5, 45),
  analyst: fc.constantFrom<AnalystMode>("pass", "pass", "fail", "error", "empty"),
});

function runScenario({ analysis, readyDelay, analyst }: Setup, ops: Op[]): void {
  const world = new FakeWorld(makeApp({ image: V1, analysis }), readyDelay, analystFor(analyst));
  const tracker: Tracker = { lastAdvance: undefined, provenImages: new Set([V1]) };
  const intervalSeconds = parseDurationSeconds(analysis.interval ?? "30s");
  const reconcile = () => checkStep(world.reconcile(), tracker, intervalSeconds);
  reconcile();
  world.time += 5;
  reconcile();
  // Start with a test on its way, so the random part spends its time where the decisions are.
  world.setImage(V2);
  for (const o of ops) {
    switch (o.kind) {
      case "reconcile":
        reconcile();
        break;
      case "tick":
        world.time += o.seconds;
        break;
      case "image":
        world.setImage(o.image);
        break;
      case "annotate":
        world.annotate(ANNOTATIONS[o.key], o.value);
        break;
      case "unannotate":
        world.annotate(ANNOTATIONS[o.key], undefined);
        break;
      case "quirks":
        world.quirks = o.quirks;
        break;
      case "analyst":
        world.analyst = analystFor(o.mode);
        break;
    }
  }
  // The world stops lying: the controller always comes to rest, never in the middle of a test.
  world.quirks = {};
  world.annotate(ANNOTATIONS.paused, undefined);
  world.analyst = analystFor("pass");
  for (let i = 0; i < 3000; i++) {
    world.time += 1;
    reconcile();
    if (world.app.status?.canary === undefined) break;
    if (world.app.status.canary.stage === "AwaitingPromotion") world.annotate(ANNOTATIONS.promote, "now");
  }
  assert.equal(world.app.status?.canary, undefined, "a test never ended");
  assert.equal(world.secondary, null);
  assert.deepEqual(world.route, { primary: 100, secondary: 0 });
}

describe("planner properties over random worlds", () => {
  test("weights, readiness, proven images, write-ahead failures, step pacing and replay idempotence", () => {
    fc.assert(
      fc.property(setup, fc.array(op, { minLength: 10, maxLength: 200 }), (start, ops) => {
        runScenario(start, ops);
      }),
      { numRuns: 300 },
    );
  });

  test("a secondary that flaps with every reconcile never gets traffic while it is down", () => {
    fc.assert(
      fc.property(fc.array(fc.boolean(), { minLength: 20, maxLength: 200 }), (flaps) => {
        const world = new FakeWorld(makeApp({ image: V1, analysis: { interval: "10s" } }), 1);
        world.runToRest();
        world.setImage(V2);
        const tracker: Tracker = { lastAdvance: undefined, provenImages: new Set([V1]) };
        for (const up of flaps) {
          world.quirks = { secondaryAvailable: up };
          const step = world.reconcile();
          checkStep(step, tracker, 10);
          if (!up) assert.equal(step.plan.weights.secondary, 0);
          world.time += 4;
        }
      }),
      { numRuns: 200 },
    );
  });
});

/** What happens to the controller between two reconciles in the crash-replay property. */
type Life =
  | { kind: "reconcile" }
  | { kind: "tick"; seconds: number }
  /** The controller dies between the status write and the apply; its successor runs `delay` seconds later. */
  | { kind: "crash"; delay: number }
  | { kind: "image"; image: string }
  | { kind: "analyst"; mode: "pass" | "fail" };

const life: fc.Arbitrary<Life> = fc.oneof(
  { weight: 10, arbitrary: fc.constant<Life>({ kind: "reconcile" }) },
  { weight: 6, arbitrary: fc.integer({ min: 0, max: 40 }).map<Life>((seconds) => ({ kind: "tick", seconds })) },
  {
    weight: 6,
    arbitrary: fc
      .oneof(
        fc.integer({ min: 0, max: 5 }),
        fc.integer({ min: 0, max: 3600 }),
        // Status keeps whole milliseconds.
        fc.integer({ min: 0, max: 60_000 }).map((ms) => ms / 1000),
      )
      .map<Life>((delay) => ({ kind: "crash", delay })),
  },
  { weight: 1, arbitrary: images.map<Life>((image) => ({ kind: "image", image })) },
  {
    weight: 1,
    arbitrary: fc.constantFrom<"pass" | "fail">("pass", "fail").map<Life>((mode) => ({ kind: "analyst", mode })),
  },
);

/**
 * The route as applied, read as tests: every weight the secondary got follows the plan (the first step's
 * weight from 0, then each next step's), and each step's weight stayed on the route for at least one
 * interval before the next one replaced it.
 */
function checkRoute(world: FakeWorld, planned: readonly number[], intervalSeconds: number): void {
  const log = world.routeLog;
  const shown = log.map((e) => `${e.weights.secondary}@${e.time}`).join(" → ");
  for (let i = 1; i < log.length; i++) {
    const before = log[i - 1];
    const after = log[i];
    if (before === undefined || after === undefined) continue;
    const [from, to] = [before.weights.secondary, after.weights.secondary];
    if (to === 0 || to < from) continue;
    const expected = from === 0 ? planned[0] : planned[planned.indexOf(from) + 1];
    assert.equal(to, expected, `the route went ${from} → ${to}, skipping a step: ${shown}`);
    if (from > 0) {
      // The world's clock adds floating seconds: a difference of 30 may come out as 29.99999999999997.
      assert.ok(
        after.time - before.time >= intervalSeconds - 1e-9,
        `${from}% was on the route ${after.time - before.time}s, less than the ${intervalSeconds}s interval: ${shown}`,
      );
    }
  }
}

describe("crash replay: die between persist and act, for any time", () => {
  test("the route's sequence is the plan's and each step carries its weight for a whole interval", () => {
    const start = fc.record({
      interval: fc.constantFrom("5s", "10s", "30s"),
      stepWeights: fc.constantFrom<number[]>([10, 20, 30, 40, 50], [50], [5, 25, 60], [1, 2, 3, 4, 99]),
      readyDelay: fc.constantFrom(1, 5, 45),
    });
    fc.assert(
      fc.property(
        start,
        fc.array(life, { minLength: 5, maxLength: 120 }),
        ({ interval, stepWeights, readyDelay }, lives) => {
          const analysis: AnalysisSpec = { interval, stepWeights, threshold: 1 };
          const world = new FakeWorld(makeApp({ image: V1, analysis }), readyDelay, analystFor("pass"));
          const intervalSeconds = parseDurationSeconds(interval);
          world.runToRest();
          world.setImage(V2);
          for (const l of lives) {
            switch (l.kind) {
              case "reconcile":
                world.reconcile();
                break;
              case "tick":
                world.time += l.seconds;
                break;
              case "crash":
                world.quirks = { crashAfterPersist: true };
                world.reconcile();
                world.quirks = {};
                world.time += l.delay;
                break;
              case "image":
                world.setImage(l.image);
                break;
              case "analyst":
                world.analyst = analystFor(l.mode);
                break;
            }
          }
          world.analyst = analystFor("pass");
          world.runToRest();
          assert.equal(world.app.status?.canary, undefined, "a test never ended");
          checkRoute(world, stepWeights, intervalSeconds);
        },
      ),
      {
        numRuns: 300,
        examples: [
          // The case: the 30 % step decided, the controller dead before the apply, its successor a
          // minute late (the old clock judged the step at once: the route went 20 → 40 %).
          [
            { interval: "5s", stepWeights: [10, 20, 30, 40, 50], readyDelay: 1 },
            [
              { kind: "reconcile" },
              { kind: "tick", seconds: 1 },
              { kind: "reconcile" },
              { kind: "tick", seconds: 5 },
              { kind: "reconcile" },
              { kind: "tick", seconds: 5 },
              { kind: "crash", delay: 60 },
              { kind: "reconcile" },
            ],
          ],
        ],
      },
    );
  });
});
