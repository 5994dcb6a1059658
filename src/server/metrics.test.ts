import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { ControllerMetrics, PHASES } from "./metrics.js";

/** The sample lines of one metric family, without comments. */
async function samples(metrics: ControllerMetrics, name: string): Promise<string[]> {
  const text = await metrics.metrics();
  return text.split("\n").filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `));
}

describe("ControllerMetrics", () => {
  test("phase gauge: 1 for the current phase, 0 for every other", async () => {
    const m = new ControllerMetrics({ processMetrics: false });
    m.setAppState("shop", "web", { phase: "Progressing" });
    m.setAppState("shop", "web", { phase: "Promoting" });
    const lines = await samples(m, "canaryapp_phase");
    assert.equal(lines.length, PHASES.length);
    assert.ok(lines.includes('canaryapp_phase{namespace="shop",name="web",phase="Promoting"} 1'));
    assert.ok(lines.includes('canaryapp_phase{namespace="shop",name="web",phase="Progressing"} 0'));
    assert.equal(lines.filter((l) => l.endsWith(" 1")).length, 1);
  });

  test("weight, failed checks, transitions and analyses per app", async () => {
    const m = new ControllerMetrics({ processMetrics: false });
    m.setAppState("shop", "web", { secondaryWeight: 30, failedChecks: 1 });
    m.countTransition("shop", "web", "StepAdvanced");
    m.countTransition("shop", "web", "StepAdvanced");
    m.countAnalysis("shop", "web", "passed");
    m.countAnalysis("shop", "web", "failed");
    assert.deepEqual(await samples(m, "canaryapp_secondary_weight"), [
      'canaryapp_secondary_weight{namespace="shop",name="web"} 30',
    ]);
    assert.deepEqual(await samples(m, "canaryapp_failed_checks"), [
      'canaryapp_failed_checks{namespace="shop",name="web"} 1',
    ]);
    assert.deepEqual(await samples(m, "canaryapp_transitions_total"), [
      'canaryapp_transitions_total{namespace="shop",name="web",reason="StepAdvanced"} 2',
    ]);
    assert.deepEqual((await samples(m, "canaryapp_analysis_total")).sort(), [
      'canaryapp_analysis_total{namespace="shop",name="web",result="failed"} 1',
      'canaryapp_analysis_total{namespace="shop",name="web",result="passed"} 1',
    ]);
  });

  test("the mirror share and the A/B phase per app, 0 outside their phase; removeApp drops them", async () => {
    const m = new ControllerMetrics({ processMetrics: false });
    // As the status of each phase sets them (status.weights: mirror, then match, then a weight).
    m.setAppState("shop", "web", { secondaryWeight: 0, secondaryMirrorPercent: 20, secondaryMatched: false });
    m.setAppState("shop", "api", { secondaryWeight: 0, secondaryMirrorPercent: 0, secondaryMatched: true });
    assert.deepEqual(await samples(m, "canaryapp_secondary_mirror_percent"), [
      'canaryapp_secondary_mirror_percent{namespace="shop",name="web"} 20',
      'canaryapp_secondary_mirror_percent{namespace="shop",name="api"} 0',
    ]);
    assert.deepEqual(await samples(m, "canaryapp_secondary_matched"), [
      'canaryapp_secondary_matched{namespace="shop",name="web"} 0',
      'canaryapp_secondary_matched{namespace="shop",name="api"} 1',
    ]);
    m.setAppState("shop", "web", { secondaryWeight: 30, secondaryMirrorPercent: 0, secondaryMatched: false });
    m.setAppState("shop", "web", { phase: "Progressing" });
    assert.deepEqual(await samples(m, "canaryapp_secondary_mirror_percent"), [
      'canaryapp_secondary_mirror_percent{namespace="shop",name="web"} 0',
      'canaryapp_secondary_mirror_percent{namespace="shop",name="api"} 0',
    ]);
    const text = await m.metrics();
    assert.match(text, /^# TYPE canaryapp_secondary_mirror_percent gauge$/m);
    assert.match(text, /^# TYPE canaryapp_secondary_matched gauge$/m);
    m.removeApp("shop", "api");
    assert.deepEqual(await samples(m, "canaryapp_secondary_matched"), [
      'canaryapp_secondary_matched{namespace="shop",name="web"} 0',
    ]);
    m.removeApp("shop", "web");
    assert.deepEqual(await samples(m, "canaryapp_secondary_mirror_percent"), []);
    assert.deepEqual(await samples(m, "canaryapp_secondary_matched"), []);
  });

  test("removeApp drops every series of that app only", async () => {
    const m = new ControllerMetrics({ processMetrics: false });
    m.setAppState("shop", "web", { phase: "Healthy", secondaryWeight: 0, failedChecks: 0 });
    m.countTransition("shop", "web", "Promoted");
    m.countAnalysis("shop", "web", "passed");
    m.setAppState("shop", "api", { phase: "Healthy" });
    m.removeApp("shop", "web");
    m.removeApp("shop", "never-seen");
    const text = await m.metrics();
    assert.doesNotMatch(text, /name="web"/);
    assert.match(text, /canaryapp_phase\{namespace="shop",name="api",phase="Healthy"\} 1/);
  });

  test("reconcile hooks feed the duration histogram and the error counter", async () => {
    const m = new ControllerMetrics({ processMetrics: false });
    const hooks = m.controllerHooks();
    hooks.reconciled?.({ key: "shop/web", durationMs: 40, outcome: "success" });
    hooks.reconciled?.({ key: "shop/web", durationMs: 3000, outcome: "error" });
    hooks.reconciled?.({ key: "shop/web", durationMs: 1, outcome: "terminal" });
    const counts = await samples(m, "canaryapp_reconcile_duration_seconds_count");
    assert.ok(counts.includes('canaryapp_reconcile_duration_seconds_count{result="success"} 1'));
    assert.ok(counts.includes('canaryapp_reconcile_duration_seconds_count{result="error"} 1'));
    const buckets = await samples(m, "canaryapp_reconcile_duration_seconds_bucket");
    assert.ok(buckets.includes('canaryapp_reconcile_duration_seconds_bucket{le="0.05",result="success"} 1'));
    assert.ok(buckets.includes('canaryapp_reconcile_duration_seconds_bucket{le="2.5",result="error"} 0'));
    assert.deepEqual(await samples(m, "canaryapp_reconcile_errors_total"), ["canaryapp_reconcile_errors_total 2"]);
  });

  test("queue depth is read at scrape time; leader gauge", async () => {
    const m = new ControllerMetrics({ processMetrics: false });
    let depth = 3;
    m.setQueueDepthSource(() => depth);
    assert.deepEqual(await samples(m, "canaryapp_workqueue_depth"), ["canaryapp_workqueue_depth 3"]);
    depth = 0;
    assert.deepEqual(await samples(m, "canaryapp_workqueue_depth"), ["canaryapp_workqueue_depth 0"]);
    assert.deepEqual(await samples(m, "canaryapp_leader"), ["canaryapp_leader 0"]);
    let leading = true;
    m.setLeaderSource(() => leading);
    assert.deepEqual(await samples(m, "canaryapp_leader"), ["canaryapp_leader 1"]);
    leading = false;
    assert.deepEqual(await samples(m, "canaryapp_leader"), ["canaryapp_leader 0"]);
  });

  test("cached objects per cache are read at scrape time; a cache gone leaves no series", async () => {
    const m = new ControllerMetrics({ processMetrics: false });
    assert.deepEqual(await samples(m, "canaryapp_cached_objects"), []);
    let sizes: Record<string, number> = { canaryapps: 3, deployment: 6 };
    m.setCacheSource(() => sizes);
    assert.deepEqual(await samples(m, "canaryapp_cached_objects"), [
      'canaryapp_cached_objects{cache="canaryapps"} 3',
      'canaryapp_cached_objects{cache="deployment"} 6',
    ]);
    sizes = { canaryapps: 1 };
    assert.deepEqual(await samples(m, "canaryapp_cached_objects"), ['canaryapp_cached_objects{cache="canaryapps"} 1']);
  });

  test("two instances do not share series", async () => {
    const a = new ControllerMetrics();
    const b = new ControllerMetrics();
    a.setLeaderSource(() => true);
    assert.deepEqual(await samples(b, "canaryapp_leader"), ["canaryapp_leader 0"]);
  });
});

describe("ControllerMetrics for the dashboard", () => {
  test("analysis values beside their thresholds, per app and check", async () => {
    const m = new ControllerMetrics({ processMetrics: false });
    m.setAnalysis("shop", "web", [
      { name: "errors", value: 7, max: 0, passed: false, reason: "AboveMax" },
      { name: "secondary-traffic", value: 120, min: 20, passed: true, reason: "TrafficShown" },
      { name: "latency", passed: false, reason: "NoData" },
    ]);
    assert.deepEqual(await samples(m, "canaryapp_analysis_value"), [
      'canaryapp_analysis_value{namespace="shop",name="web",check="errors"} 7',
      'canaryapp_analysis_value{namespace="shop",name="web",check="secondary-traffic"} 120',
    ]);
    assert.deepEqual(await samples(m, "canaryapp_analysis_threshold_max"), [
      'canaryapp_analysis_threshold_max{namespace="shop",name="web",check="errors"} 0',
    ]);
    assert.deepEqual(await samples(m, "canaryapp_analysis_threshold_min"), [
      'canaryapp_analysis_threshold_min{namespace="shop",name="web",check="secondary-traffic"} 20',
    ]);
  });

  test("failed images: the count and one series an image, replaced as the status changes", async () => {
    const m = new ControllerMetrics({ processMetrics: false });
    m.setFailedImages("shop", "web", [{ image: "app:v3", reason: "AnalysisFailed" }]);
    m.setFailedImages("shop", "web", [{ image: "app:v4", reason: "PreRolloutFailed" }]);
    assert.deepEqual(await samples(m, "canaryapp_failed_images"), [
      'canaryapp_failed_images{namespace="shop",name="web"} 1',
    ]);
    assert.deepEqual(await samples(m, "canaryapp_failed_image_info"), [
      'canaryapp_failed_image_info{namespace="shop",name="web",image="app:v4",reason="PreRolloutFailed"} 1',
    ]);
  });

  test("step durations and API request latency are histograms; a removed app leaves no series", async () => {
    const m = new ControllerMetrics({ processMetrics: false });
    m.observeStep("shop", "web", 12);
    m.setAnalysis("shop", "web", [{ name: "errors", value: 0, max: 0, passed: true, reason: "ok" }]);
    m.setFailedImages("shop", "web", [{ image: "app:v3", reason: "AnalysisFailed" }]);
    m.observeApiRequest("Deployment", "apply", 0.02, true);
    m.countApiRequest("get");
    m.countApiRequest("get");
    m.countApiRequest("watch");
    const requests = await samples(m, "canaryapp_api_requests_total");
    assert.ok(requests.includes('canaryapp_api_requests_total{verb="get"} 2'), requests.join("\n"));
    assert.ok(requests.includes('canaryapp_api_requests_total{verb="watch"} 1'), requests.join("\n"));
    assert.ok(
      (await samples(m, "canaryapp_step_duration_seconds_count")).includes(
        'canaryapp_step_duration_seconds_count{namespace="shop",name="web"} 1',
      ),
    );
    assert.ok(
      (await samples(m, "canaryapp_api_request_duration_seconds_count")).includes(
        'canaryapp_api_request_duration_seconds_count{kind="Deployment",verb="apply",result="ok"} 1',
      ),
    );
    m.removeApp("shop", "web");
    for (const name of [
      "canaryapp_step_duration_seconds_count",
      "canaryapp_analysis_value",
      "canaryapp_analysis_threshold_max",
      "canaryapp_failed_images",
      "canaryapp_failed_image_info",
    ]) {
      assert.deepEqual(await samples(m, name), [], name);
    }
  });

  test("step durations: buckets are cumulative, the sum and count exact", async () => {
    const m = new ControllerMetrics({ processMetrics: false });
    for (const seconds of [0.5, 12, 30, 5000]) m.observeStep("shop", "web", seconds);
    const buckets = await samples(m, "canaryapp_step_duration_seconds_bucket");
    assert.ok(buckets.includes('canaryapp_step_duration_seconds_bucket{namespace="shop",name="web",le="1"} 1'));
    assert.ok(buckets.includes('canaryapp_step_duration_seconds_bucket{namespace="shop",name="web",le="10"} 1'));
    assert.ok(buckets.includes('canaryapp_step_duration_seconds_bucket{namespace="shop",name="web",le="30"} 3'));
    assert.ok(buckets.includes('canaryapp_step_duration_seconds_bucket{namespace="shop",name="web",le="3600"} 3'));
    assert.ok(buckets.includes('canaryapp_step_duration_seconds_bucket{namespace="shop",name="web",le="+Inf"} 4'));
    assert.deepEqual(await samples(m, "canaryapp_step_duration_seconds_sum"), [
      'canaryapp_step_duration_seconds_sum{namespace="shop",name="web"} 5042.5',
    ]);
  });
});

describe("ControllerMetrics exposition", () => {
  test("label values are escaped; infinite thresholds spelled as the text format wants", async () => {
    const m = new ControllerMetrics({ processMetrics: false });
    m.setAppState("shop", 'we"b\\x', { secondaryWeight: 5 });
    m.setFailedImages("shop", "web", [{ image: "app:v3", reason: "line one\nline two" }]);
    m.setAnalysis("shop", "web", [
      { name: "any", value: 1, min: -Infinity, max: Infinity, passed: true, reason: "ok" },
    ]);
    assert.deepEqual(await samples(m, "canaryapp_secondary_weight"), [
      'canaryapp_secondary_weight{namespace="shop",name="we\\"b\\\\x"} 5',
    ]);
    assert.deepEqual(await samples(m, "canaryapp_failed_image_info"), [
      'canaryapp_failed_image_info{namespace="shop",name="web",image="app:v3",reason="line one\\nline two"} 1',
    ]);
    assert.deepEqual(await samples(m, "canaryapp_analysis_threshold_min"), [
      'canaryapp_analysis_threshold_min{namespace="shop",name="web",check="any"} -Inf',
    ]);
    assert.deepEqual(await samples(m, "canaryapp_analysis_threshold_max"), [
      'canaryapp_analysis_threshold_max{namespace="shop",name="web",check="any"} +Inf',
    ]);
  });

  test("each family once, its HELP and TYPE before its samples, which follow each other", async () => {
    const m = new ControllerMetrics();
    for (const name of ["web", "api"]) {
      m.setAppState("shop", name, { phase: "Progressing", secondaryWeight: 10, failedChecks: 0 });
      m.countTransition("shop", name, "TestStarted");
      m.countAnalysis("shop", name, "passed");
      m.setAnalysis("shop", name, [{ name: "errors", value: 0, max: 1, passed: true, reason: "ok" }]);
      m.observeStep("shop", name, 3);
      m.setFailedImages("shop", name, [{ image: "app:v0", reason: "AnalysisFailed" }]);
    }
    m.countApiRequest("get");
    // prom-client's process metrics spell NaN "Nan", which Prometheus reads as well.
    const typed: string[] = [];
    let current: string | undefined;
    for (const line of (await m.metrics()).split("\n")) {
      const type = /^# TYPE (\S+) (\S+)$/.exec(line);
      if (type !== null) {
        assert.ok(!typed.includes(type[1] ?? ""), `${type[1]} twice`);
        typed.push((current = type[1] ?? ""));
        continue;
      }
      if (line === "" || line.startsWith("# HELP ")) continue;
      const family = /^([a-zA-Z_:][a-zA-Z0-9_:]*)/.exec(line)?.[1] ?? "";
      assert.ok(
        current !== undefined && [current, `${current}_bucket`, `${current}_sum`, `${current}_count`].includes(family),
        `${line} outside its family (${current})`,
      );
      assert.match(line, /^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})? (-?[0-9.e+-]+|[+-]Inf|NaN|Nan)$/, line);
    }
    for (const family of ["canaryapp_phase", "canaryapp_step_duration_seconds", "canaryapp_api_requests_total"]) {
      assert.ok(typed.includes(family), family);
    }
  });
});
