import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { withDefaults } from "../api/defaults.js";
import type { CanaryStage, CanaryState, Condition, FailedImage, Phase } from "../api/types.js";
import { ANNOTATIONS, MAX_FAILED_IMAGES } from "../api/types.js";
import { findCondition, setCondition } from "./conditions.js";
import { findFailedImage, forgetFailedImage, recordFailedImage } from "../identity/failed-images.js";
import { at, iso } from "./fixtures.test-helpers.js";
import type { PhaseFacts } from "./phase.js";
import { derivePhase } from "./phase.js";
import type { RequeueFacts } from "./requeue.js";
import { DRAIN_POLL_SECONDS, requeueAfterSeconds } from "./requeue.js";
import { readRequests } from "./requests.js";
import { secondaryWeight, splitWeights, stepWeight } from "./steps.js";

describe("weights", () => {
  const weights = [10, 20, 30, 40, 50];
  const canary = (stage: CanaryStage, step: number) => ({
    image: "i",
    stage,
    step,
    startedAt: iso(0),
    stepStartedAt: iso(0),
    failedChecks: 0,
  });

  const cases: { stage: CanaryStage; step: number; ready: boolean; weight: number }[] = [
    { stage: "WaitingForSecondary", step: -1, ready: true, weight: 0 },
    { stage: "Stepping", step: 0, ready: true, weight: 10 },
    { stage: "Stepping", step: 3, ready: true, weight: 40 },
    { stage: "Stepping", step: 3, ready: false, weight: 0 },
    { stage: "Stepping", step: 9, ready: true, weight: 50 },
    { stage: "AwaitingPromotion", step: 4, ready: true, weight: 50 },
    { stage: "Promoting", step: 4, ready: true, weight: 50 },
    { stage: "Promoting", step: -1, ready: true, weight: 0 },
    { stage: "Promoting", step: 4, ready: false, weight: 0 },
    { stage: "Finalising", step: 4, ready: true, weight: 0 },
    { stage: "RollingBack", step: 4, ready: true, weight: 0 },
  ];
  for (const c of cases) {
    test(`${c.stage} step ${c.step} ${c.ready ? "ready" : "not ready"} → ${c.weight}`, () =>
      assert.equal(secondaryWeight(canary(c.stage, c.step), weights, c.ready), c.weight));
  }

  test("no test: no weight", () => assert.equal(secondaryWeight(undefined, weights, true), 0));
  test("stepWeight before the first step is 0", () => assert.equal(stepWeight(weights, -1), 0));

  for (const [share, split] of [
    [0, { primary: 100, secondary: 0 }],
    [37, { primary: 63, secondary: 37 }],
    [100, { primary: 0, secondary: 100 }],
    [140, { primary: 0, secondary: 100 }],
    [-3, { primary: 100, secondary: 0 }],
    [12.6, { primary: 87, secondary: 13 }],
    [NaN, { primary: 100, secondary: 0 }],
  ] as const) {
    test(`split ${share} → ${split.primary}/${split.secondary}`, () => assert.deepEqual(splitWeights(share), split));
  }
});

describe("setCondition", () => {
  const ready: Condition = { type: "Ready", status: "True", reason: "A", message: "a", lastTransitionTime: iso(0) };

  test("adds a missing condition, stamped now", () => {
    assert.deepEqual(setCondition([], { type: "Ready", status: "True", reason: "A", message: "a" }, iso(5)), [
      { ...ready, lastTransitionTime: iso(5) },
    ]);
  });

  test("keeps lastTransitionTime when only reason or message change", () => {
    const next = setCondition([ready], { type: "Ready", status: "True", reason: "B", message: "b" }, iso(5));
    assert.deepEqual(findCondition(next, "Ready"), { ...ready, reason: "B", message: "b" });
  });

  test("moves lastTransitionTime when the status changes", () => {
    const next = setCondition([ready], { type: "Ready", status: "False", reason: "B", message: "b" }, iso(5));
    assert.equal(findCondition(next, "Ready")?.lastTransitionTime, iso(5));
  });

  test("keeps other conditions and their order", () => {
    const other: Condition = { ...ready, type: "Other" };
    const next = setCondition([ready, other], { type: "Ready", status: "False", reason: "B", message: "b" }, iso(5));
    assert.deepEqual(
      next.map((c) => c.type),
      ["Ready", "Other"],
    );
    assert.equal(next[1], other);
  });
});

describe("failedImages", () => {
  const entry = (image: string, at = 0): FailedImage => ({ image, failedAt: iso(at), reason: "R", message: "m" });

  test("newest first", () => {
    assert.deepEqual(
      recordFailedImage([entry("a")], entry("b", 1)).map((e) => e.image),
      ["b", "a"],
    );
  });

  test("one entry per image, the newest", () => {
    const list = recordFailedImage([entry("a"), entry("b")], entry("b", 9));
    assert.deepEqual(
      list.map((e) => [e.image, e.failedAt]),
      [
        ["b", iso(9)],
        ["a", iso(0)],
      ],
    );
  });

  test(`bounded to ${MAX_FAILED_IMAGES}`, () => {
    let list: FailedImage[] = [];
    for (let i = 0; i < MAX_FAILED_IMAGES + 3; i++) list = recordFailedImage(list, entry(`i${i}`, i));
    assert.equal(list.length, MAX_FAILED_IMAGES);
    assert.equal(list[0]?.image, `i${MAX_FAILED_IMAGES + 2}`);
    assert.equal(findFailedImage(list, "i0"), undefined);
  });

  test("forget", () => {
    assert.deepEqual(forgetFailedImage([entry("a"), entry("b")], "a"), [entry("b")]);
    assert.deepEqual(forgetFailedImage(undefined, "a"), []);
  });
});

describe("requests: each control accepts only its documented values", () => {
  const cases: { annotations: Record<string, string>; reads: Partial<ReturnType<typeof readRequests>> }[] = [
    { annotations: { [ANNOTATIONS.paused]: "true" }, reads: { paused: true, invalid: [] } },
    { annotations: { [ANNOTATIONS.paused]: " True " }, reads: { paused: true, invalid: [] } },
    { annotations: { [ANNOTATIONS.paused]: "false" }, reads: { paused: false, invalid: [] } },
    {
      annotations: {},
      reads: { paused: false, promote: false, abort: false, approve: false, retry: undefined, invalid: [] },
    },
    {
      annotations: { [ANNOTATIONS.paused]: "yes" },
      reads: {
        paused: undefined,
        invalid: [{ annotation: ANNOTATIONS.paused, value: "yes", accepted: "true or false" }],
      },
    },
    { annotations: { [ANNOTATIONS.promote]: "now" }, reads: { promote: true, invalid: [] } },
    { annotations: { [ANNOTATIONS.promote]: "NOW" }, reads: { promote: true, invalid: [] } },
    {
      annotations: { [ANNOTATIONS.promote]: "" },
      reads: { promote: false, invalid: [{ annotation: ANNOTATIONS.promote, value: "", accepted: "now" }] },
    },
    { annotations: { [ANNOTATIONS.abort]: "now" }, reads: { abort: true, invalid: [] } },
    {
      annotations: { [ANNOTATIONS.abort]: "false" },
      reads: { abort: false, invalid: [{ annotation: ANNOTATIONS.abort, value: "false", accepted: "now" }] },
    },
    { annotations: { [ANNOTATIONS.approve]: "now" }, reads: { approve: true, invalid: [] } },
    {
      annotations: { [ANNOTATIONS.approve]: "yes" },
      reads: { approve: false, invalid: [{ annotation: ANNOTATIONS.approve, value: "yes", accepted: "now" }] },
    },
    { annotations: { [ANNOTATIONS.retry]: " img:1 " }, reads: { retry: "img:1" } },
    { annotations: { [ANNOTATIONS.retry]: "" }, reads: { retry: "spec:1" } },
  ];
  for (const c of cases) {
    test(JSON.stringify(c.annotations), () => {
      const read = readRequests(c.annotations, "spec:1");
      for (const [key, value] of Object.entries(c.reads)) {
        assert.deepEqual(read[key as keyof typeof read], value, key);
      }
    });
  }
});

describe("phase", () => {
  const canary = (stage: CanaryStage, extra: Partial<CanaryState> = {}): CanaryState => ({
    image: "i",
    stage,
    step: 0,
    startedAt: iso(0),
    stepStartedAt: iso(0),
    failedChecks: 0,
    ...extra,
  });
  const base: PhaseFacts = { canary: undefined, specImageFailed: false, primaryRunning: true, invalid: false };
  const cases: { name: string; facts: Partial<PhaseFacts>; phase: Phase }[] = [
    { name: "at rest", facts: {}, phase: "Healthy" },
    { name: "primary not running yet", facts: { primaryRunning: false }, phase: "Initializing" },
    { name: "spec.image failed", facts: { specImageFailed: true }, phase: "Failed" },
    { name: "invalid at rest", facts: { invalid: true, specImageFailed: true }, phase: "Invalid" },
    { name: "waiting", facts: { canary: canary("WaitingForSecondary") }, phase: "Progressing" },
    { name: "stepping", facts: { canary: canary("Stepping") }, phase: "Progressing" },
    { name: "paused", facts: { canary: canary("Stepping", { pausedAt: iso(1) }) }, phase: "Paused" },
    { name: "invalid while stepping", facts: { canary: canary("Stepping"), invalid: true }, phase: "Invalid" },
    { name: "awaiting promotion", facts: { canary: canary("AwaitingPromotion") }, phase: "Progressing" },
    { name: "promoting", facts: { canary: canary("Promoting"), invalid: true }, phase: "Promoting" },
    { name: "finalising", facts: { canary: canary("Finalising") }, phase: "Promoting" },
    {
      name: "rolling back a failure",
      facts: { canary: canary("RollingBack", { outcome: { result: "Failed", reason: "r", message: "m" } }) },
      phase: "RollingBack",
    },
    {
      name: "ending a superseded test",
      facts: { canary: canary("RollingBack", { outcome: { result: "Superseded", reason: "r", message: "m" } }) },
      phase: "Progressing",
    },
  ];
  for (const c of cases) test(c.name, () => assert.equal(derivePhase({ ...base, ...c.facts }), c.phase));
});

describe("requeue", () => {
  const analysis = withDefaults({ image: "i", imageListenPort: 1 }).analysis;
  const facts = (canary: CanaryState | undefined, secondaryReady = true): RequeueFacts => ({
    canary,
    analysis,
    drainSeconds: 5,
    secondaryReady,
    invalid: false,
    now: at(100),
  });
  const state = (stage: CanaryStage, extra: Partial<CanaryState> = {}): CanaryState => ({
    image: "i",
    stage,
    step: 0,
    startedAt: iso(0),
    stepStartedAt: iso(90),
    failedChecks: 0,
    ...extra,
  });
  const cases: { name: string; facts: RequeueFacts; seconds: number | undefined }[] = [
    { name: "no test: event-driven", facts: facts(undefined), seconds: undefined },
    { name: "waiting: the deadline", facts: facts(state("WaitingForSecondary"), false), seconds: 590 },
    { name: "stepping: the next analysis", facts: facts(state("Stepping")), seconds: 20 },
    {
      name: "stepping, overdue analysis: at least 1",
      facts: facts(state("Stepping", { stepStartedAt: iso(0) })),
      seconds: 1,
    },
    {
      name: "stepping, 0.2 s before the analysis: 0.2 s, not a whole second",
      facts: { ...facts(state("Stepping", { stepStartedAt: iso(70) })), now: at(99.8) },
      seconds: 0.2,
    },
    { name: "stepping, secondary down: the deadline", facts: facts(state("Stepping"), false), seconds: 590 },
    {
      name: "stepping, the step not on the route: looked at again once its interval is over",
      facts: facts(state("Stepping", { stepStartedAt: iso(0) })),
      seconds: 1,
    },
    {
      name: "stepping, the step not on the route and its apply refused: the deadline (RouteRefused)",
      facts: { ...facts(state("Stepping", { stepStartedAt: iso(0) })), applyRefused: true },
      seconds: 500,
    },
    {
      name: "stepping on the route, an apply refused (a child after the route): the next analysis",
      facts: { ...facts(state("Stepping", { stepRoutedAt: iso(80) })), applyRefused: true },
      seconds: 20,
    },
    { name: "paused: event-driven", facts: facts(state("Stepping", { pausedAt: iso(95) })), seconds: undefined },
    { name: "awaiting promotion: a person decides", facts: facts(state("AwaitingPromotion")), seconds: undefined },
    { name: "promoting: the deadline", facts: facts(state("Promoting")), seconds: 590 },
    {
      name: "promoting past the deadline: watched",
      facts: facts(state("Promoting", { stepStartedAt: iso(-600) })),
      seconds: undefined,
    },
    { name: "finalising: poll the route", facts: facts(state("Finalising")), seconds: DRAIN_POLL_SECONDS },
    { name: "rolling back: poll the route", facts: facts(state("RollingBack")), seconds: DRAIN_POLL_SECONDS },
    {
      name: "rolling back, the route's apply refused: once an interval, not a refused write every 2 s",
      facts: { ...facts(state("RollingBack")), applyRefused: true },
      seconds: 30,
    },
    {
      name: "rolling back, an apply refused after the route showed the drain: the rest of the drain",
      facts: { ...facts(state("RollingBack", { drainedAt: iso(98) })), applyRefused: true },
      seconds: 3,
    },
    {
      name: "rolling back, drained 2 s ago: the rest of the drain",
      facts: facts(state("RollingBack", { drainedAt: iso(98) })),
      seconds: 3,
    },
    {
      name: "finalising, drained long ago: at least 1",
      facts: facts(state("Finalising", { drainedAt: iso(0) })),
      seconds: 1,
    },
  ];
  for (const c of cases) test(c.name, () => assert.equal(requeueAfterSeconds(c.facts), c.seconds));
});
