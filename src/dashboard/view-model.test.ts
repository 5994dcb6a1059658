import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { CanaryApp, CanaryAppStatus, CanaryState } from "../api/types.js";
import { ANNOTATIONS } from "../api/types.js";
import {
  availableControls,
  detailOf,
  eventViews,
  nextAnalysisHistory,
  nextWeightHistory,
  progressOf,
  stepsOf,
  summarize,
} from "./view-model.js";

const V1 = "registry.example.com/web:v1";
const V2 = "registry.example.com/web:v2";

function app(status?: CanaryAppStatus, annotations: Record<string, string> = {}, image = V2): CanaryApp {
  return {
    metadata: { name: "web", namespace: "shop", generation: 2, annotations },
    spec: {
      image,
      imageListenPort: 8080,
      analysis: { stepWeight: 10, maxWeight: 50, metrics: [{ name: "errors", query: "sum(errors)", max: 0 }] },
    },
    ...(status !== undefined ? { status } : {}),
  };
}

function canary(over: Partial<CanaryState> = {}): CanaryState {
  return {
    image: V2,
    stage: "Stepping",
    step: 1,
    startedAt: "2026-01-01T00:00:00Z",
    stepStartedAt: "2026-01-01T00:00:10Z",
    failedChecks: 0,
    ...over,
  };
}

const stepping = (over: Partial<CanaryState> = {}, status: Partial<CanaryAppStatus> = {}): CanaryAppStatus => ({
  phase: "Progressing",
  primaryImage: V1,
  weights: { primary: 80, secondary: 20 },
  canary: canary(over),
  ...status,
});

describe("the step bar", () => {
  test("no test: no steps", () => {
    assert.deepEqual(stepsOf(app({ phase: "Healthy", primaryImage: V2 })), []);
  });
  test("at step 2 of 5: one done, one current, three to come", () => {
    assert.deepEqual(
      stepsOf(app(stepping())).map((s) => `${s.label}:${s.state}`),
      ["10%:done", "20%:current", "30%:pending", "40%:pending", "50%:pending"],
    );
  });
  test("before the first step: all to come", () => {
    assert.ok(stepsOf(app(stepping({ step: -1 }))).every((s) => s.state === "pending"));
  });
  test("a batch release has no traffic steps (its batches show instead)", () => {
    const a = app(stepping());
    a.spec.strategy = { type: "batches" };
    assert.deepEqual(stepsOf(a), []);
  });
});

describe("where the test is", () => {
  const cases: [string, CanaryAppStatus | undefined, string][] = [
    ["no status", undefined, ""],
    ["healthy", { phase: "Healthy" }, ""],
    ["waiting for the secondary", stepping({ stage: "WaitingForSecondary", step: -1 }), "waiting for the secondary"],
    ["before step 1", stepping({ step: -1 }), "before step 1 of 5"],
    ["stepping", stepping(), "step 2 of 5"],
    ["awaiting promotion", stepping({ stage: "AwaitingPromotion", step: 4 }), "step 5 of 5, awaiting promotion"],
    ["rolling back", stepping({ stage: "RollingBack" }), "rolling back"],
    ["promoting", stepping({ stage: "Promoting" }), "promoting"],
    [
      "a batch release",
      stepping({}, { batch: { current: 1, count: 2, batches: [], summary: "1/2 paused" } }),
      "batch 1/2 paused",
    ],
  ];
  for (const [name, status, want] of cases) test(name, () => assert.equal(progressOf(app(status)), want));
});

describe("which controls the page offers", () => {
  const cases: [string, CanaryApp, string[]][] = [
    ["no test", app({ phase: "Healthy", primaryImage: V2 }), []],
    ["stepping", app(stepping()), ["promote", "abort", "pause"]],
    [
      "paused",
      app(stepping({ pausedAt: "2026-01-01T00:01:00Z" }), { [ANNOTATIONS.paused]: "true" }),
      ["promote", "abort", "resume"],
    ],
    ["paused with no test", app({ phase: "Healthy" }, { [ANNOTATIONS.paused]: "true" }), ["resume"]],
    [
      "a batch waits for approval",
      app(stepping({ approval: { batch: 1, since: "2026-01-01T00:00:00Z" } })),
      ["approve", "promote", "abort", "pause"],
    ],
    ["rolling back: nothing to promote or abort", app(stepping({ stage: "RollingBack" })), ["pause"]],
    [
      "spec.image failed",
      app({
        phase: "Failed",
        failedImages: [{ image: V2, failedAt: "2026-01-01T00:00:00Z", reason: "AnalysisFailed", message: "" }],
      }),
      ["retry"],
    ],
  ];
  for (const [name, a, want] of cases) test(name, () => assert.deepEqual(availableControls(a), want));
});

describe("summary and detail", () => {
  test("an app without status", () => {
    const s = summarize(app());
    assert.equal(s.key, "shop/web");
    assert.equal(s.phase, "Unknown");
    assert.equal(s.weights, undefined);
    assert.equal(s.canary, undefined);
  });

  test("a stepping app", () => {
    const s = summarize(app(stepping({ pausedAt: "2026-01-01T00:01:00Z" })));
    assert.deepEqual(s.weights, { primary: 80, secondary: 20 });
    assert.deepEqual(s.canary, { image: V2, stage: "Stepping", paused: true, startedAt: "2026-01-01T00:00:00Z" });
    assert.equal(s.primaryImage, V1);
  });

  test("a failed image shows its reason, metric, value and the query that judged it", () => {
    const failed = {
      image: V2,
      failedAt: "2026-01-01T00:02:00Z",
      reason: "AnalysisFailed",
      message: "errors 3 > 0",
      metric: "errors",
      value: 3,
    };
    const fromSpec = detailOf(app({ phase: "Failed", failedImages: [failed] }), [], { weights: [], analyses: [] });
    assert.deepEqual(fromSpec.failedImages, [{ ...failed, query: "sum(errors)" }]);
    const asRun = detailOf(
      app({ phase: "Failed", failedImages: [{ ...failed, query: 'sum(errors{app="web"})' }] }),
      [],
      {
        weights: [],
        analyses: [],
      },
    );
    assert.equal(asRun.failedImages[0]?.query, 'sum(errors{app="web"})');
  });

  test("the last analysis with each metric against its bounds", () => {
    const d = detailOf(
      app(
        stepping({
          lastAnalysis: {
            time: "2026-01-01T00:00:20Z",
            passed: false,
            verdict: "Failed",
            metrics: [{ name: "errors", value: 3, max: 0, passed: false, reason: "AboveMax", query: "sum(errors)" }],
          },
        }),
      ),
      [],
      { weights: [], analyses: [] },
    );
    assert.deepEqual(d.analysis, {
      time: "2026-01-01T00:00:20Z",
      verdict: "Failed",
      metrics: [{ name: "errors", value: 3, max: 0, passed: false, reason: "AboveMax", query: "sum(errors)" }],
    });
  });

  test("a judged metric keeps the figures its verdict stands on", () => {
    const figures = { secondarySamples: 12, primarySamples: 12, secondaryMedian: 26, primaryMedian: 20, p: 0.001 };
    const d = detailOf(
      app(
        stepping({
          lastAnalysis: {
            time: "2026-01-01T00:00:20Z",
            passed: false,
            metrics: [{ name: "latency-p50", kind: "judge", value: 26, passed: false, reason: "Increased", figures }],
          },
        }),
      ),
      [],
      { weights: [], analyses: [] },
    );
    assert.deepEqual(d.analysis?.metrics[0]?.figures, figures);
  });
});

describe("gates, batches and approvals", () => {
  test("the gates passed and the one waited at", () => {
    const waiting = {
      type: "confirm-promotion" as const,
      name: "qa",
      message: "HTTP 403",
      since: "2026-01-01T00:01:00Z",
      checkedAt: "2026-01-01T00:02:00Z",
    };
    const d = detailOf(app(stepping({ gates: { passed: ["pre-rollout"], waiting } })), [], {
      weights: [],
      analyses: [],
    });
    assert.deepEqual(d.gates, {
      passed: ["pre-rollout"],
      waiting: { type: "confirm-promotion", name: "qa", message: "HTTP 403", since: "2026-01-01T00:01:00Z" },
    });
  });

  test("a batch release's batches, the approval it waits for, and its rollback", () => {
    const batch = {
      current: 1,
      count: 2,
      summary: "1/2 paused",
      batches: [
        { batch: 1, replicas: 1, state: "paused" as const },
        { batch: 2, replicas: 3, state: "pending" as const },
      ],
      rollback: { state: "running" as const, reason: "AnalysisFailed" },
    };
    const a = app(stepping({ approval: { batch: 1, since: "2026-01-01T00:03:00Z" } }, { batch }));
    a.spec.strategy = { type: "batches" };
    const d = detailOf(a, [], { weights: [], analyses: [] });
    assert.deepEqual(d.batch, {
      summary: "1/2 paused",
      batches: batch.batches,
      rollback: { state: "running", reason: "AnalysisFailed" },
      approval: { batch: 1, since: "2026-01-01T00:03:00Z" },
    });
    assert.deepEqual(d.steps, []);
    assert.equal(d.progress, "batch 1/2 paused");
    assert.deepEqual(d.controls, ["approve", "promote", "abort", "pause"]);
  });
});

describe("Events", () => {
  test("oldest first, the newest kept, times from whichever the Event has", () => {
    const events = [
      { reason: "B", lastTimestamp: "2026-01-01T00:00:02Z" },
      { reason: "A", eventTime: "2026-01-01T00:00:01Z" },
      { reason: "C", metadata: { creationTimestamp: "2026-01-01T00:00:03Z" }, count: 4, type: "Warning" },
    ];
    assert.deepEqual(
      eventViews(events, 2).map((e) => `${e.reason}${e.count}${e.type}`),
      ["B1Normal", "C4Warning"],
    );
  });
});

describe("histories", () => {
  test("a weight point is added only when the weights change, at most `limit`", () => {
    let points = nextWeightHistory([], app(stepping()), 1000);
    points = nextWeightHistory(points, app(stepping()), 2000);
    assert.deepEqual(points, [{ t: 1000, primary: 80, secondary: 20 }]);
    points = nextWeightHistory(points, app(stepping({}, { weights: { primary: 70, secondary: 30 } })), 3000);
    points = nextWeightHistory(points, app(stepping({}, { weights: { primary: 60, secondary: 40 } })), 4000, 2);
    assert.deepEqual(
      points.map((p) => p.secondary),
      [30, 40],
    );
    assert.equal(nextWeightHistory(points, app(), 5000), points, "no status: unchanged");
  });

  test("an analysis point is added once per analysis", () => {
    const analysed = (time: string, value?: number) =>
      app(
        stepping({
          lastAnalysis: {
            time,
            passed: true,
            metrics: [
              { name: "errors", passed: value !== undefined, reason: "ok", ...(value !== undefined ? { value } : {}) },
            ],
          },
        }),
      );
    let points = nextAnalysisHistory([], analysed("2026-01-01T00:00:10Z", 0));
    points = nextAnalysisHistory(points, analysed("2026-01-01T00:00:10Z", 0));
    points = nextAnalysisHistory(points, analysed("2026-01-01T00:00:20Z"));
    assert.deepEqual(points, [
      { t: Date.parse("2026-01-01T00:00:10Z"), values: { errors: 0 } },
      { t: Date.parse("2026-01-01T00:00:20Z"), values: { errors: null } },
    ]);
  });
});
