import assert from "node:assert/strict";
import { test } from "node:test";
import type { CanaryApp, CanaryState } from "../api/types.js";
import { ControllerMetrics } from "../server/metrics.js";
import { MetricsObserver } from "./metrics-observer.js";

const app: CanaryApp = { metadata: { name: "web", namespace: "shop" }, spec: { image: "a:v2", imageListenPort: 80 } };
const canary = (over: Partial<CanaryState>): CanaryState => ({
  image: "a:v2",
  stage: "Stepping",
  step: 0,
  startedAt: "2026-01-01T00:00:00Z",
  stepStartedAt: "2026-01-01T00:00:00Z",
  failedChecks: 0,
  ...over,
});

test("a step's duration is observed once, when the next step begins or the test leaves its steps", async () => {
  const metrics = new ControllerMetrics({ processMetrics: false });
  const observer = new MetricsObserver(metrics);
  const seen = (c: CanaryState | undefined) => observer.appObserved(app, c === undefined ? {} : { canary: c });
  seen(canary({ stepBeganAt: "2026-01-01T00:00:10Z" }));
  seen(canary({ stepBeganAt: "2026-01-01T00:00:10Z", stepStartedAt: "2026-01-01T00:00:12Z" }));
  seen(canary({ step: 1, stepBeganAt: "2026-01-01T00:00:14Z" }));
  seen(
    canary({ step: 1, stage: "Promoting", stepBeganAt: "2026-01-01T00:00:14Z", stepStartedAt: "2026-01-01T00:00:20Z" }),
  );
  seen(undefined);
  const text = await metrics.metrics();
  assert.match(text, /canaryapp_step_duration_seconds_count\{namespace="shop",name="web"\} 2/);
  assert.match(text, /canaryapp_step_duration_seconds_sum\{namespace="shop",name="web"\} 10/);
});

test("the weight, the mirror share and the A/B phase follow status.weights, 0 outside their phase", async () => {
  const metrics = new ControllerMetrics({ processMetrics: false });
  const observer = new MetricsObserver(metrics);
  const gauges = async () =>
    (await metrics.metrics())
      .split("\n")
      .filter((l) => /^canaryapp_secondary_(weight|mirror_percent|matched)\{/.test(l))
      .map((l) => l.replace(/\{[^}]*\}/, ""));
  observer.appObserved(app, { phase: "Progressing", weights: { primary: 100, secondary: 0, mirror: 20 } });
  assert.deepEqual(await gauges(), [
    "canaryapp_secondary_weight 0",
    "canaryapp_secondary_mirror_percent 20",
    "canaryapp_secondary_matched 0",
  ]);
  observer.appObserved(app, { phase: "Progressing", weights: { primary: 100, secondary: 0, match: true } });
  assert.deepEqual(await gauges(), [
    "canaryapp_secondary_weight 0",
    "canaryapp_secondary_mirror_percent 0",
    "canaryapp_secondary_matched 1",
  ]);
  observer.appObserved(app, { phase: "Healthy" });
  assert.deepEqual(await gauges(), [
    "canaryapp_secondary_weight 0",
    "canaryapp_secondary_mirror_percent 0",
    "canaryapp_secondary_matched 0",
  ]);
  observer.appRemoved("shop", "web");
  assert.deepEqual(await gauges(), []);
});
