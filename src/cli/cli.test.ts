import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { CanaryApp, CanaryAppStatus } from "../api/types.js";
import { controlAnnotations } from "./controls.js";
import { historyRows, renderHistory } from "./history.js";
import { parseTimeout } from "./program.js";
import { age, progressBar, renderSnapshot, routeWeights } from "./view.js";
import { judge } from "./wait.js";

const V1 = "registry.example.com/app:v1";
const V2 = "registry.example.com/app:v2";

function app(status: CanaryAppStatus | undefined, generation = 2, image = V2): CanaryApp {
  return {
    metadata: { name: "demo", namespace: "ns", generation, annotations: {} },
    spec: {
      image,
      imageListenPort: 8080,
      prometheusQuery: "errors > 0",
      analysis: { stepWeight: 25, maxWeight: 50, metrics: [{ name: "latency", query: "p99", max: 500 }] },
    },
    ...(status ? { status } : {}),
  };
}

const failedV2 = {
  image: V2,
  failedAt: "2026-01-01T00:00:10Z",
  reason: "AnalysisFailed",
  message: "latency 900 > 500",
  metric: "latency",
  value: 900,
};

describe("wait: judge", () => {
  const table: [string, CanaryApp, "healthy" | "failed", string][] = [
    ["no status yet", app(undefined), "healthy", "pending"],
    [
      "status of the previous generation",
      app({ phase: "Healthy", observedGeneration: 1, primaryImage: V1 }),
      "healthy",
      "pending",
    ],
    ["promoted", app({ phase: "Healthy", observedGeneration: 2, primaryImage: V2 }), "healthy", "reached"],
    [
      "healthy on another image (status not caught up)",
      app({ phase: "Healthy", observedGeneration: 2, primaryImage: V1 }),
      "healthy",
      "pending",
    ],
    ["progressing", app({ phase: "Progressing", observedGeneration: 2, primaryImage: V1 }), "healthy", "pending"],
    ["rolling back", app({ phase: "RollingBack", observedGeneration: 2, primaryImage: V1 }), "healthy", "pending"],
    [
      "failed while waiting for healthy",
      app({ phase: "Failed", observedGeneration: 2, primaryImage: V1, failedImages: [failedV2] }),
      "healthy",
      "other",
    ],
    [
      "failed as wanted",
      app({ phase: "Failed", observedGeneration: 2, primaryImage: V1, failedImages: [failedV2] }),
      "failed",
      "reached",
    ],
    [
      "promoted while waiting for failed",
      app({ phase: "Healthy", observedGeneration: 2, primaryImage: V2 }),
      "failed",
      "other",
    ],
    ["invalid", app({ phase: "Invalid", observedGeneration: 2, message: "bad" }), "healthy", "other"],
    [
      "a rejected child",
      app({
        phase: "Progressing",
        observedGeneration: 2,
        conditions: [
          { type: "ChildrenApplied", status: "False", reason: "Rejected", message: "no", lastTransitionTime: "" },
        ],
      }),
      "healthy",
      "other",
    ],
  ];
  for (const [name, given, want, kind] of table) {
    test(name, () => assert.equal(judge(given, want).kind, kind));
  }

  test("a failure names the image, reason, metric, value and message", () => {
    const verdict = judge(app({ phase: "Failed", observedGeneration: 2, failedImages: [failedV2] }), "healthy");
    assert.equal(
      verdict.message,
      `${V2} failed at 2026-01-01T00:00:10Z: AnalysisFailed (latency=900): latency 900 > 500`,
    );
  });
});

describe("controls: the README's annotations", () => {
  const a = app({});
  test("promote, abort, pause set; resume removes", () => {
    assert.deepEqual(controlAnnotations("promote", a), { "canaryapp.io/promote": "now" });
    assert.deepEqual(controlAnnotations("abort", a), { "canaryapp.io/abort": "now" });
    assert.deepEqual(controlAnnotations("pause", a), { "canaryapp.io/paused": "true" });
    assert.deepEqual(controlAnnotations("resume", a), { "canaryapp.io/paused": null });
  });
  test("retry names the given image, else spec.image", () => {
    assert.deepEqual(controlAnnotations("retry", a, V1), { "canaryapp.io/retry": V1 });
    assert.deepEqual(controlAnnotations("retry", a), { "canaryapp.io/retry": V2 });
  });
});

describe("history", () => {
  test("each failed image with the query that judged it", () => {
    const seed = { ...failedV2, image: V1, metric: "prometheusQuery", value: 3 };
    const aborted = { image: "x:v0", failedAt: "t", reason: "Aborted", message: "aborted" };
    const rows = historyRows(app({ failedImages: [failedV2, seed, aborted] }));
    assert.deepEqual(
      rows.map((r) => [r.image, r.metric, r.value, r.query]),
      [
        [V2, "latency", 900, "p99"],
        [V1, "prometheusQuery", 3, "errors > 0"],
        ["x:v0", undefined, undefined, undefined],
      ],
    );
    const text = renderHistory(rows, false).split("\n");
    assert.match(text[0] ?? "", /^IMAGE\s+FAILED AT\s+REASON\s+METRIC\s+VALUE\s+QUERY$/);
    assert.match(text[1] ?? "", /app:v2\s+2026-01-01T00:00:10Z\s+AnalysisFailed\s+latency\s+900\s+p99$/);
    assert.equal(renderHistory([], false), "No failed images.");
  });
});

describe("view", () => {
  test("progress bar, ages, route weights", () => {
    assert.equal(progressBar(25, 50, 10), "[#####.....]");
    assert.equal(progressBar(0, 50, 4), "[....]");
    const now = new Date("2026-01-01T01:00:00Z");
    assert.equal(age("2026-01-01T00:59:30Z", now), "30s");
    assert.equal(age("2026-01-01T00:57:00Z", now), "3m");
    assert.equal(age("2025-12-30T01:00:00Z", now), "2d");
    assert.deepEqual(
      routeWeights({
        spec: {
          http: [
            {
              route: [
                { destination: { subset: "primary" }, weight: 75 },
                { destination: { subset: "secondary" }, weight: 25 },
              ],
            },
          ],
        },
      }),
      { primary: 75, secondary: 25 },
    );
  });

  test("the tree: app, deployments with their pods, the VirtualService", () => {
    const text = renderSnapshot(
      {
        app: app({
          phase: "Progressing",
          observedGeneration: 2,
          primaryImage: V1,
          canary: {
            image: V2,
            stage: "Stepping",
            step: 0,
            startedAt: "2026-01-01T00:00:00Z",
            stepStartedAt: "2026-01-01T00:00:00Z",
            failedChecks: 0,
            lastAnalysis: {
              time: "2026-01-01T00:00:05Z",
              passed: true,
              metrics: [{ name: "latency", value: 120, max: 500, passed: true, reason: "ok" }],
            },
          },
        }),
        deployments: [
          {
            metadata: { name: "demo-secondary", labels: { "canaryapp.io/track": "secondary" } },
            spec: { replicas: 1, selector: {}, template: { spec: { containers: [{ name: "app", image: V2 }] } } },
            status: { readyReplicas: 1 },
          },
          {
            metadata: { name: "demo-primary", labels: { "canaryapp.io/track": "primary" } },
            spec: { replicas: 2, selector: {}, template: { spec: { containers: [{ name: "app", image: V1 }] } } },
            status: { readyReplicas: 2 },
          },
        ],
        pods: [
          {
            metadata: { name: "demo-primary-a", labels: { "canaryapp.io/track": "primary" } },
            status: { phase: "Running" },
          },
        ],
        virtualService: {
          metadata: { name: "demo" },
          spec: {
            http: [
              {
                route: [
                  { destination: { subset: "primary" }, weight: 75 },
                  { destination: { subset: "secondary" }, weight: 25 },
                ],
              },
            ],
          },
        },
        events: [],
      },
      { now: new Date("2026-01-01T00:00:10Z") },
    );
    assert.match(text, /^Steps: +\[##########\.{10}\] step 1 of 2, 25% of 50%/m);
    assert.match(text, /^Analysis: +passed 5s ago: latency=120 \(max 500\) ok$/m);
    const tree = text.slice(text.indexOf("CanaryApp/demo")).split("\n");
    assert.match(tree[1] ?? "", /^├── Deployment\/demo-primary {2}.*app:v1 {2}ready 2\/2/);
    assert.match(tree[2] ?? "", /^│ {3}└── Pod\/demo-primary-a {2}Running/);
    assert.match(tree[3] ?? "", /^├── Deployment\/demo-secondary {2}.*app:v2 {2}ready 1\/1/);
    assert.equal(tree[4], "└── VirtualService/demo  primary 75  secondary 25");
  });

  test("a StatefulSet: its revisions in the header, its pods by ordinal as stable or canary", () => {
    const pod = (ordinal: number, revision: string, image: string) => ({
      metadata: {
        name: `demo-${ordinal}`,
        labels: { "canaryapp.io/revision": "r", "controller-revision-hash": revision },
      },
      spec: { containers: [{ name: "app", image }] },
      status: { phase: "Running" },
    });
    const text = renderSnapshot(
      {
        app: app({
          phase: "Progressing",
          observedGeneration: 2,
          primaryImage: V1,
          workload: {
            kind: "StatefulSet",
            stableRevision: "demo-5b9c",
            canaryRevision: "demo-7d4f",
            stableReplicas: 2,
            canaryReplicas: 1,
          },
        }),
        deployments: [],
        pods: [pod(2, "demo-7d4f", V2), pod(10, "demo-5b9c", V1), pod(0, "demo-5b9c", V1)],
        virtualService: undefined,
        events: [],
      },
      { now: new Date("2026-01-01T00:00:10Z") },
    );
    assert.match(text, /^Workload: +StatefulSet {2}stable demo-5b9c \(2 pods\) {2}canary demo-7d4f \(1 pods\)$/m);
    const tree = text.slice(text.indexOf("CanaryApp/demo")).split("\n");
    assert.equal(tree[1], "└── StatefulSet/demo  stable 2  canary 1");
    assert.match(tree[2] ?? "", /^ {4}├── Pod\/demo-0 .*app:v1 {2}stable demo-5b9c$/);
    assert.match(tree[3] ?? "", /^ {4}├── Pod\/demo-2 .*app:v2 {2}canary demo-7d4f$/);
    assert.match(tree[4] ?? "", /^ {4}└── Pod\/demo-10 .*app:v1 {2}stable demo-5b9c$/);
  });
});

test("--timeout durations", () => {
  assert.equal(parseTimeout("10m"), 600_000);
  assert.equal(parseTimeout("1m30s"), 90_000);
  assert.equal(parseTimeout("45"), 45_000);
  assert.throws(() => parseTimeout("soon"), /invalid --timeout/);
});
