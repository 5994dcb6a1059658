/** The demo's pure parts: the sample it applies, the checks of its verdict, its terminal lines, traffic lining-up. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { CanaryApp, FailedImage } from "../../src/api/types.js";
import { displayCommand, shellQuote } from "./kubectl.js";
import {
  demoSample,
  detection,
  foldWeights,
  readSample,
  seedQueryShape,
  storyChecks,
  tagOf,
  withTag,
} from "./story.js";
import {
  innerWindows,
  scrapeDeltas,
  unexplainedSecondaryTraffic,
  weightSegments,
  type MatrixSeries,
} from "./traffic.js";
import { analysisText, duration, elapsed, stageText, trafficText, weightBar } from "./view.js";

describe("commands as printed", () => {
  test("words a shell would split or expand are single-quoted", () => {
    assert.equal(shellQuote("canaryapp-sample"), "canaryapp-sample");
    assert.equal(shellQuote("--type=merge"), "--type=merge");
    assert.equal(shellQuote('{"spec":{"image":"a:v2"}}'), `'{"spec":{"image":"a:v2"}}'`);
    assert.equal(shellQuote("it's"), `'it'\\''s'`);
    assert.equal(shellQuote(""), "''");
    assert.equal(
      displayCommand("kubectl", ["-n", "demo", "patch", "canaryapp", "x", "-p", '{"a":1}']),
      `kubectl -n demo patch canaryapp x -p '{"a":1}'`,
    );
  });
});

describe("the sample the demo applies", () => {
  test("keeps the seed's fields and changes only Prometheus' URL and the interval", async () => {
    const seed = await readSample();
    const { app, overrides } = demoSample(seed, { prometheusURL: "http://127.0.0.1:9999", interval: "5s" });
    assert.equal(app.metadata.name, "canaryapp-sample");
    assert.equal(app.spec.image, seed.spec.image);
    assert.equal(app.spec.prometheusQuery, seed.spec.prometheusQuery);
    assert.equal(app.spec.replicas, seed.spec.replicas);
    assert.equal(app.spec.testReplicas, seed.spec.testReplicas);
    assert.equal(app.spec.imageListenPort, seed.spec.imageListenPort);
    assert.equal(app.spec.prometheusURL, "http://127.0.0.1:9999");
    assert.equal(app.spec.analysis?.interval, "5s");
    assert.deepEqual(
      overrides.map((o) => o.field),
      ["spec.prometheusURL", "spec.analysis.interval"],
    );
    assert.notEqual(seed.spec.prometheusURL, "http://127.0.0.1:9999", "the seed itself is not changed");
  });

  test("the sample's query catches an always-failing image at the first step with the demo's timing", async () => {
    const seed = await readSample();
    const query = seed.spec.prometheusQuery ?? "";
    // Scoped to the step: at the first analysis its window is one interval.
    assert.deepEqual(seedQueryShape(query, 5), { windowSeconds: 5, above: 2, window: "{{stepWindow}}" });
    assert.deepEqual(seedQueryShape("increase(x[20s]) > 2", 5), { windowSeconds: 20, above: 2, window: "20s" });
    const caught = detection(query, 5, 20, 10);
    assert.equal(caught.ok, true, caught.text);
    console.log(`# ${caught.text}`);
    assert.equal(detection(query, 5, 2, 10).ok, false, "2 requests/s leave too few errors to pass > 2");
  });

  test("image tags", () => {
    assert.equal(withTag("atzedevries/go-status-code-server:v1", "v3"), "atzedevries/go-status-code-server:v3");
    assert.equal(withTag("registry.local:5000/app", "v2"), "registry.local:5000/app:v2");
    assert.equal(tagOf("registry.local:5000/app:v2"), "v2");
    assert.equal(tagOf("registry.local:5000/app"), "registry.local:5000/app");
    assert.equal(tagOf(`team/app:v2@sha256:${"b2b8afa95a0c".padEnd(64, "0")}`), "v2@b2b8afa95a0c");
    assert.equal(tagOf(`team/app@sha256:${"b2b8afa95a0c".padEnd(64, "0")}`), "@b2b8afa95a0c");
  });

  test("weights fold into the steps a test went through", () => {
    assert.deepEqual(foldWeights([0, 0, 10, 10, 20, 30, 40, 50, 50, 0]), [10, 20, 30, 40, 50, 0]);
    assert.deepEqual(foldWeights([0, 10, 0]), [10, 0]);
    assert.deepEqual(foldWeights([0, 0]), []);
  });
});

describe("the story's verdict", () => {
  const images = { v1: "app:v1", v2: "app:v2", v3: "app:v3" };
  const failure: FailedImage = {
    image: "app:v3",
    failedAt: "2026-01-01T00:00:00Z",
    reason: "AnalysisFailed",
    message: "prometheusQuery returned 1 failing series (value 9)",
    metric: "prometheusQuery",
    value: 9,
  };
  const app: CanaryApp = {
    metadata: { name: "canaryapp-sample" },
    spec: { image: "app:v3", imageListenPort: 8088 },
    status: {
      phase: "Failed",
      primaryImage: "app:v2",
      weights: { primary: 100, secondary: 0 },
      lastPromotion: { image: "app:v2", time: "2026-01-01T00:00:00Z" },
      failedImages: [failure],
    },
  };
  const seen = {
    images,
    steps: [10, 20, 30, 40, 50],
    weights: { v2: [10, 20, 30, 40, 50, 0], v3: [10, 0] },
    app,
    failure,
    threshold: { above: 2 },
  };

  test("passes when everything happened as told", () => {
    const checks = storyChecks(seen);
    assert.deepEqual(
      checks.filter((c) => !c.ok),
      [],
    );
    assert.equal(checks.length, 5);
  });

  test("fails a skipped step, a v3 that reached the last step, a missing failure record, a promoted v3", () => {
    const failed = (changes: Partial<typeof seen>) =>
      storyChecks({ ...seen, ...changes })
        .filter((c) => !c.ok)
        .map((c) => c.name);
    assert.deepEqual(failed({ weights: { v2: [10, 30, 40, 50, 0], v3: [10, 0] } }), [
      "v2's weight climbed step by step, then returned to the primary",
    ]);
    assert.deepEqual(failed({ weights: { v2: seen.weights.v2, v3: [10, 20, 30, 40, 50, 0] } }), [
      "v3 was caught before its last step and rolled back",
    ]);
    assert.deepEqual(failed({ weights: { v2: seen.weights.v2, v3: [10] } }), [
      "v3 was caught before its last step and rolled back",
    ]);
    assert.deepEqual(failed({ failure: undefined }), ["v3 is recorded in status.failedImages"]);
    assert.deepEqual(failed({ failure: { ...failure, value: 1 } }), ["v3 is recorded in status.failedImages"]);
    const promoted: CanaryApp = { ...app, status: { ...app.status, phase: "Healthy", primaryImage: "app:v3" } };
    assert.deepEqual(failed({ app: promoted }), [
      "v2 was promoted",
      "the app ends Failed on v3, v2 keeps serving, no secondary",
    ]);
  });
});

describe("terminal lines", () => {
  test("times", () => {
    assert.equal(elapsed(5_234), "   5.2s");
    assert.equal(elapsed(102_000), " 102.0s");
    assert.equal(duration(112_400), "1m52s");
    assert.equal(duration(38_000), "38s");
  });

  test("the weight bar has 20 cells of 5 %, and a non-zero share shows", () => {
    assert.equal(weightBar({ primary: 90, secondary: 10 }), `${"█".repeat(18)}${"▒".repeat(2)}  90/10 `);
    assert.equal(weightBar({ primary: 100, secondary: 0 }), `${"█".repeat(20)} 100/0  `);
    assert.equal(weightBar({ primary: 99, secondary: 1 }), `${"█".repeat(19)}▒  99/1  `);
    assert.equal(weightBar({ primary: 1, secondary: 99 }), `█${"▒".repeat(19)}   1/99 `);
    assert.equal(weightBar(null), `${"·".repeat(20)} no route`);
  });

  test("the stage and the analysis in a few words", () => {
    const app = (canary: NonNullable<CanaryApp["status"]>["canary"]): CanaryApp => ({
      metadata: {},
      spec: { image: "a:v2", imageListenPort: 1 },
      status: { canary },
    });
    const base = { image: "a:v2", startedAt: "", stepStartedAt: "", failedChecks: 0 };
    assert.equal(stageText(app({ ...base, stage: "Stepping", step: 1 }), 5), "step 2/5");
    assert.equal(stageText(app({ ...base, stage: "RollingBack", step: 0 }), 5), "rolling back");
    assert.equal(stageText(app(undefined), 5), "");
    assert.equal(
      analysisText([{ name: "prometheusQuery", passed: true, reason: "NoFailingSeries" }]),
      "prometheusQuery ✔ no failing series",
    );
    assert.equal(
      analysisText([{ name: "prometheusQuery", passed: false, reason: "NonEmptyResult", value: 10.7785 }]),
      "prometheusQuery ✘ 10.78",
    );
    assert.equal(
      analysisText([
        { name: "secondary-traffic", kind: "traffic", passed: false, reason: "TooFewRequests", value: 12.2164 },
        { name: "prometheusQuery", passed: true, reason: "NoFailingSeries" },
      ]),
      "secondary-traffic … 12.22 requests (too few), prometheusQuery ✔ no failing series",
    );
    assert.equal(
      analysisText([{ name: "secondary-traffic", kind: "traffic", passed: true, reason: "TrafficShown", value: 26 }]),
      "secondary-traffic ✔ 26 requests",
    );
    assert.equal(
      analysisText([
        { name: "secondary-traffic", kind: "traffic", passed: true, reason: "TrafficShown", value: 21.996 },
      ]),
      "secondary-traffic ✔ 22 requests",
    );
  });

  test("traffic since the last line, by subset and response code", () => {
    const sent = (p: number, s: number, s500: number) => ({
      primary: { total: p, byCode: { "200": p } },
      secondary: { total: s + s500, byCode: { "200": s, "500": s500 } },
      unrouted: { total: 0, byCode: {} },
    });
    assert.equal(trafficText(sent(180, 20, 0), undefined), "primary 180 ok · secondary 20 ok");
    assert.equal(trafficText(sent(360, 20, 9), sent(180, 20, 0)), "primary 180 ok · secondary 9 (500×9)");
    assert.equal(trafficText(sent(380, 20, 9), sent(360, 20, 9)), "primary 20 ok");
  });
});

describe("lining up scrapes with the route's weights", () => {
  const series = (workload: string, code: string, values: [number, number][]): MatrixSeries => ({
    metric: { destination_workload: workload, response_code: code },
    values: values.map(([t, v]) => [t, String(v)]),
  });
  const isSecondary = (m: Record<string, string>) => m["destination_workload"] === "web-secondary";

  test("per-scrape counts sum the series; one that appears later counted from 0", () => {
    const deltas = scrapeDeltas(
      [
        series("web-primary", "200", [
          [100, 10],
          [101, 30],
          [102, 48],
        ]),
        series("web-secondary", "500", [
          [101, 2],
          [102, 4],
        ]),
      ],
      isSecondary,
    );
    assert.deepEqual(deltas, [
      { from: 100_000, to: 101_000, secondary: 2, total: 22 },
      { from: 101_000, to: 102_000, secondary: 2, total: 20 },
    ]);
  });

  test("secondary traffic is explained by weight within the slack, and only by that", () => {
    const segments = weightSegments(
      [
        { at: 100_000, value: { primary: 100, secondary: 0 } },
        { at: 105_000, value: { primary: 90, secondary: 10 } },
        { at: 110_000, value: null },
      ],
      120_000,
    );
    assert.deepEqual(segments, [
      { from: 100_000, to: 105_000, secondary: 0 },
      { from: 105_000, to: 110_000, secondary: 10 },
      { from: 110_000, to: 120_000, secondary: 0 },
    ]);
    const delta = (from: number, secondary: number) => ({ from, to: from + 1000, secondary, total: 20 });
    const deltas = [
      delta(99_000, 1),
      delta(102_000, 1),
      delta(104_500, 1),
      delta(107_000, 2),
      delta(110_500, 1),
      delta(115_000, 1),
    ];
    assert.deepEqual(
      unexplainedSecondaryTraffic(deltas, segments, 1000).map((d) => d.from),
      [102_000, 115_000],
      "before the timeline: not judged; just before or after a weighted segment: within the slack",
    );
    assert.deepEqual(innerWindows(segments, 1000, 4000), [{ from: 111_000, to: 119_000, secondary: 0 }]);
    assert.deepEqual(
      innerWindows(segments, 1000, 3000).map((w) => w.secondary),
      [0, 10, 0],
    );
  });
});
