import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { appView } from "./fixtures.test-helpers.js";
import { ISTIO_DURATION_BUCKETS_MS, IstioTelemetry, istioLabels } from "./telemetry.js";
import type { SimulatedRequest } from "./traffic.js";

const ok: SimulatedRequest = {
  track: "secondary",
  workload: "web-secondary",
  pod: "p",
  code: 200,
  flags: "-",
  latencyMs: 12,
};
const noUpstream: SimulatedRequest = {
  track: "secondary",
  workload: "web-secondary",
  pod: null,
  code: 503,
  flags: "UH",
  latencyMs: 0.5,
};

describe("istioLabels", () => {
  test("Istio's standard labels, as a destination sidecar reports them", () => {
    assert.deepEqual(istioLabels(appView(null, [], []), ok, "loadgen"), {
      reporter: "destination",
      source_workload: "mesh-traffic-simulator",
      source_workload_namespace: "loadgen",
      destination_workload: "web-secondary",
      destination_workload_namespace: "shop",
      destination_service: "web.shop.svc.cluster.local",
      destination_service_name: "web",
      destination_service_namespace: "shop",
      destination_app: "web",
      destination_version: "secondary",
      response_code: "200",
      request_protocol: "http",
      response_flags: "-",
      connection_security_policy: "mutual_tls",
    });
  });
});

describe("IstioTelemetry", () => {
  test("counts requests and observes durations in Istio's buckets", async () => {
    const telemetry = new IstioTelemetry();
    telemetry.record(appView(null, [], []), [ok, ok, noUpstream]);
    const text = await telemetry.metrics();
    assert.match(text, /# TYPE istio_requests_total counter/);
    assert.match(text, /# TYPE istio_request_duration_milliseconds histogram/);
    const ok200 = text
      .split("\n")
      .find((l) => l.startsWith("istio_requests_total{") && l.includes('response_code="200"'));
    assert.ok(ok200?.endsWith(" 2"), ok200);
    assert.ok(ok200?.includes('source_workload_namespace="shop"'), "callers default to the app's namespace");
    const uh = text.split("\n").find((l) => l.startsWith("istio_requests_total{") && l.includes('response_flags="UH"'));
    assert.ok(uh?.includes('response_code="503"') && uh.endsWith(" 1"), uh);
    const le = [
      ...text.matchAll(
        /istio_request_duration_milliseconds_bucket\{le="([^"]+)"[^}]*response_code="200"[^}]*\} (\d+)/g,
      ),
    ];
    assert.deepEqual(
      le.map((m) => m[1]),
      [...ISTIO_DURATION_BUCKETS_MS.map(String), "+Inf"],
    );
    const cumulative: Record<string, number> = Object.fromEntries(le.map((m) => [m[1] ?? "", Number(m[2])] as const));
    assert.deepEqual([cumulative["10"], cumulative["25"]], [0, 2]);
  });
});
