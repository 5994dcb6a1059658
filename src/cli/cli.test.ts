import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { withDefaults } from "../api/defaults.js";
import { normalRule } from "../api/match-rule.js";
import type { CanaryApp, CanaryAppSpec, CanaryAppStatus, CanaryState } from "../api/types.js";
import { buildHTTPRoute } from "../router/gateway-api.js";
import { buildVirtualService } from "../router/istio.js";
import type { Weights } from "../rollout/types.js";
import { controlAnnotations } from "./controls.js";
import { historyRows, renderHistory } from "./history.js";
import { applyWatched } from "./kube.js";
import { parseTimeout } from "./program.js";
import { age, batchLine, progressBar, readRoute, renderSnapshot, routeWeights, type Snapshot } from "./view.js";
import { judge } from "./wait.js";
import { reportedOn } from "../router/route-status.test-helpers.js";

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
    assert.deepEqual(controlAnnotations("approve", a), { "canaryapp.io/approve": "now" });
  });
  test("a batch release shows its batches, each batch's replicas and state, and the rollback", () => {
    assert.equal(
      batchLine({
        current: 1,
        count: 2,
        summary: "1/2 paused",
        batches: [
          { batch: 1, replicas: 1, state: "paused" },
          { batch: 2, replicas: 4, state: "pending" },
        ],
      }),
      "Batch:       1/2 paused  (new replicas per batch: 1 paused, 4 pending)",
    );
    assert.match(
      batchLine({ current: 1, count: 2, summary: "1/2 rolled back", batches: [], rollback: { state: "finished" } }),
      /rollback finished$/,
    );
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
              metrics: [
                { name: "latency", value: 120, max: 500, passed: true, reason: "ok" },
                {
                  name: "latency-p50",
                  kind: "judge",
                  value: 26.1,
                  passed: false,
                  reason: "Increased",
                  figures: {
                    secondarySamples: 12,
                    primarySamples: 12,
                    secondaryMedian: 26.1,
                    primaryMedian: 20,
                    shift: 6.04,
                    shiftLow: 5.2,
                    shiftHigh: 7,
                    p: 0.00012,
                    alpha: 0.0056,
                  },
                },
                { name: "canary-score", kind: "score", value: 50, min: 95, passed: false, reason: "ScoreFailed" },
              ],
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
    assert.match(
      text,
      /^Analysis: +passed 5s ago: latency=120 \(max 500\) ok, latency-p50=26\.1 vs 20 \(shift 6\.04 \[5\.2, 7\], p 0\.0001 α 0\.0056, 12\/12 samples\) Increased, canary-score=50 \(min 95\) ScoreFailed$/m,
    );
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

describe("view: the mirror and A/B phases, and the HTTPRoute of mesh: gateway-api", () => {
  const RULE = { headers: { "x-canary": { exact: "insider" } } };
  const NOW = new Date("2026-01-01T00:01:00Z");

  /** An app with 2 mirror steps, 1 A/B step, then 30 % and 60 % (5 steps), routed by an HTTPRoute. */
  function phased(spec: Partial<CanaryAppSpec> = {}): CanaryApp {
    const base = app(undefined);
    return {
      ...base,
      metadata: { ...base.metadata, uid: "u1" },
      spec: {
        ...base.spec,
        mesh: "gateway-api",
        service: { port: 80, hosts: ["web.example.com"], gateways: ["istio-system/public"] },
        analysis: {
          interval: "30s",
          mirror: { percent: 20, iterations: 2 },
          match: { rules: [RULE] },
          stepWeights: [30, 60],
          metrics: [{ name: "latency", query: "p99", max: 500 }],
        },
        ...spec,
      },
    };
  }

  function testing(a: CanaryApp, step: number, weights: CanaryAppStatus["weights"]): CanaryApp {
    const canary: CanaryState = {
      image: V2,
      stage: "Stepping",
      step,
      startedAt: "2026-01-01T00:00:00Z",
      stepStartedAt: "2026-01-01T00:00:30Z",
      failedChecks: 0,
    };
    return { ...a, status: { phase: "Progressing", observedGeneration: 2, primaryImage: V1, weights, canary } };
  }

  /** The HTTPRoute the controller writes for `weights`, with the status its implementation writes. */
  function httpRoute(
    a: CanaryApp,
    weights: Weights,
    gateway: { status: "True" | "False"; reason: string; message?: string },
  ) {
    const route = buildHTTPRoute(a, withDefaults(a.spec), weights);
    return reportedOn(route, {
      generation: 3,
      at: "2026-01-01T00:00:31Z",
      verdict: (parentRef) =>
        parentRef["kind"] !== "Gateway" || gateway.status === "True"
          ? { accepted: true }
          : {
              accepted: false,
              reason: gateway.reason,
              ...(gateway.message !== undefined ? { message: gateway.message } : {}),
            },
    });
  }

  const ACCEPTED = { status: "True", reason: "Accepted" } as const;

  function render(a: CanaryApp, route: unknown): string {
    const s: Snapshot = { app: a, deployments: [], pods: [], virtualService: undefined, httpRoute: route, events: [] };
    return renderSnapshot(s, { now: NOW });
  }

  test("mid-mirror: the step is a mirror step; the Traffic line reads the accepted HTTPRoute's mirror", () => {
    const a = testing(phased(), 0, { primary: 100, secondary: 0, mirror: 20 });
    const text = render(a, httpRoute(a, { primary: 100, secondary: 0, mirror: 20 }, ACCEPTED));
    assert.match(
      text,
      /^Steps: +\[\.{20}\] step 1 of 5: mirror 20%, 0% of 60% \(mirror 20% ×2, A\/B ×1, weights 30,60\)$/m,
    );
    assert.match(text, /^Traffic: +primary 100% {2}secondary 0% {2}mirror 20% {2}\(planned 100\/0, mirror 20%\)$/m);
    assert.doesNotMatch(text, /^Route:/m, "a carried route has nothing to explain");
    assert.match(text, /^└── HTTPRoute\/demo {2}primary 100 {2}secondary 0 {2}mirror 20%$/m);
  });

  test("mid-A/B: the step is the A/B step; the Traffic line reads the HTTPRoute's match rule", () => {
    const a = testing(phased(), 2, { primary: 100, secondary: 0, match: true });
    const text = render(a, httpRoute(a, { primary: 100, secondary: 0, match: [normalRule(RULE)] }, ACCEPTED));
    assert.match(
      text,
      /^Steps: +\[\.{20}\] step 3 of 5: A\/B \(requests matching spec\.analysis\.match\), 0% of 60% \(/m,
    );
    assert.match(text, /^Traffic: +primary 100% {2}secondary 0% {2}A\/B 1 rule {2}\(planned 100\/0, A\/B\)$/m);
    assert.match(text, /^└── HTTPRoute\/demo {2}primary 100 {2}secondary 0 {2}A\/B 1 rule$/m);
  });

  test("a weighted step after the phases: its weight of the highest, the phases in the sequence", () => {
    const a = testing(phased(), 3, { primary: 70, secondary: 30 });
    const text = render(a, httpRoute(a, { primary: 70, secondary: 30 }, ACCEPTED));
    assert.match(text, /^Steps: +\[#{10}\.{10}\] step 4 of 5, 30% of 60% \(mirror 20% ×2, A\/B ×1, weights 30,60\)$/m);
    assert.match(text, /^Traffic: +primary 70% {2}secondary 30% {2}\(planned 70\/30\)$/m);
  });

  test("a route its Gateway has not accepted: no routed split, the reason on one line", () => {
    const a = testing(phased(), 3, { primary: 70, secondary: 30 });
    const route = httpRoute(
      a,
      { primary: 70, secondary: 30 },
      {
        status: "False",
        reason: "NotAllowedByListeners",
        message: "no listener of the Gateway\nallows routes from namespace ns",
      },
    );
    const text = render(a, route);
    assert.match(text, /^Traffic: +primary -% {2}secondary -% {2}\(planned 70\/30\)$/m);
    const routeLines = text.split("\n").filter((l) => l.startsWith("Route:"));
    assert.deepEqual(routeLines, [
      "Route:       not carried: RouteNotAccepted: HTTPRoute demo: parent Gateway istio-system/public: Accepted False (NotAllowedByListeners: no listener of the Gateway allows routes from namespace ns)",
    ]);
    assert.match(text, /^└── HTTPRoute\/demo {2}primary 70 {2}secondary 30 {2}\(not carried: RouteNotAccepted\)$/m);
    assert.equal(readRoute({ app: a, virtualService: undefined }), undefined, "no HTTPRoute read: none shown");
  });

  test("a route no implementation has reported on yet is not carried either", () => {
    const a = testing(phased(), 0, { primary: 100, secondary: 0, mirror: 20 });
    const route = buildHTTPRoute(a, withDefaults(a.spec), { primary: 100, secondary: 0, mirror: 20 });
    const reading = readRoute({ app: a, virtualService: undefined, httpRoute: route });
    assert.equal(reading?.notCarried?.reason, "RouteNotReported");
    assert.deepEqual(reading?.weights, { primary: 100, secondary: 0 }, "the split as written, for the tree");
  });

  test("analysis.weighted: false: phases only, no weight to grow towards", () => {
    const a = testing(phased({ analysis: { match: { rules: [RULE], iterations: 2 }, weighted: false } }), 1, {
      primary: 100,
      secondary: 0,
      match: true,
    });
    const text = render(a, undefined);
    assert.match(
      text,
      /^Steps: +\[\.{20}\] step 2 of 2: A\/B \(requests matching spec\.analysis\.match\) \(A\/B ×2, no weighted steps\)$/m,
    );
    assert.match(text, /^Traffic: +primary -% {2}secondary -% {2}\(planned 100\/0, A\/B\)$/m);
  });

  test("mesh: istio in the A/B phase: the split is the canary route's, not the A/B route's", () => {
    const a = testing(phased({ mesh: "istio" }), 2, { primary: 100, secondary: 0, match: true });
    const vs = buildVirtualService(a, withDefaults(a.spec), {
      primary: 100,
      secondary: 0,
      match: [normalRule(RULE)],
    });
    assert.equal(vs.spec.http[0]?.name, "ab-match", "the A/B route comes first");
    const text = renderSnapshot({ app: a, deployments: [], pods: [], virtualService: vs, events: [] }, { now: NOW });
    assert.match(text, /^Traffic: +primary 100% {2}secondary 0% {2}A\/B 1 rule {2}\(planned 100\/0, A\/B\)$/m);
    assert.match(text, /^└── VirtualService\/demo {2}primary 100 {2}secondary 0 {2}A\/B 1 rule$/m);
  });

  test("a spec the controller cannot resolve still shows its weighted steps", () => {
    const a = testing(phased({ analysis: { interval: "soon", stepWeights: [30, 60] } }), 0, {
      primary: 70,
      secondary: 30,
    });
    assert.match(render(a, undefined), /^Steps: +\[#{10}\.{10}\] step 1 of 2, 30% of 60% \(weights 30,60\)$/m);
  });

  test("get -w: the watched HTTPRoute goes into the snapshot, and out when it is deleted", () => {
    const route = { metadata: { name: "demo" } };
    const withRoute = applyWatched({}, "httpRoute", [route]);
    assert.equal(withRoute.httpRoute, route);
    assert.equal("httpRoute" in applyWatched(withRoute, "httpRoute", []), false);
  });
});

test("--timeout durations", () => {
  assert.equal(parseTimeout("10m"), 600_000);
  assert.equal(parseTimeout("1m30s"), 90_000);
  assert.equal(parseTimeout("45"), 45_000);
  assert.throws(() => parseTimeout("soon"), /invalid --timeout/);
});
