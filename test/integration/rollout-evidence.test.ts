/**
 * Analysis that cannot be fooled, on the real API server with a real Prometheus: no promotion without
 * evidence that the new version served traffic, a query scoped to the secondary and its step, every series
 * of a threshold query judged, and a bounded wait when Prometheus is away.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { loadYaml } from "@kubernetes/client-node";
import type { CanaryApp } from "../../src/api/types.js";
import { childNames } from "../../src/api/meta.js";
import { SEED_SPEC } from "../../src/resources/fixtures.test-helpers.js";
import {
  appEvents,
  appSpec,
  changeImage,
  deployApp,
  image,
  INTERVAL_SECONDS,
  startRolloutEnv,
  untilSettled,
  untilWeight,
  type RolloutEnv,
} from "../support/rollout-env.js";
import { seen } from "../support/rollout-recorder.js";
import { startTcpProxy } from "../support/tcp-proxy.js";

/** The sample's query (config/samples): scoped to the secondary and to its step. */
const sampleQuery = async (): Promise<string> => {
  const file = join(import.meta.dirname, "..", "..", "..", "config", "samples", "canaryapp_v1alpha1_canaryapp.yaml");
  const sample = loadYaml<CanaryApp>(await readFile(file, "utf8"));
  return sample.spec.prometheusQuery ?? "";
};

/**
 * Istio's `istio_requests_total` as a sidecar at the destination reports it for a Deployment's pods
 * (docs/istio-telemetry.md), fed at a steady rate per track: `ok` and `errors` requests per second. The
 * Service reported is the per-track one the route sends to, never `<app>`, so the seed's query, which
 * selects `destination_service_name="<app>"`, sees neither track here.
 */
function istioTraffic(env: RolloutEnv, app: string) {
  const rates = new Map<"primary" | "secondary", { ok: number; errors: number }>();
  const series = (track: "primary" | "secondary", code: string) => ({
    reporter: "destination",
    destination_workload_namespace: env.namespace,
    destination_workload: childNames(app)[track],
    destination_canonical_service: app,
    destination_canonical_revision: track,
    destination_service_name: childNames(app)[track],
    response_code: code,
  });
  const tickMs = 200;
  const timer = setInterval(() => {
    for (const [track, rate] of rates) {
      env.exporter.add("istio_requests_total", series(track, "200"), (rate.ok * tickMs) / 1000);
      env.exporter.add("istio_requests_total", series(track, "500"), (rate.errors * tickMs) / 1000);
    }
  }, tickMs);
  return {
    set(track: "primary" | "secondary", ok: number, errors: number) {
      rates.set(track, { ok, errors });
    },
    stop: () => clearInterval(timer),
  };
}

describe("rollout: evidence before any verdict", () => {
  let env: RolloutEnv;
  const feeds: { stop(): void }[] = [];

  before(async () => {
    env = await startRolloutEnv("rollout-evidence");
  });
  after(async () => {
    for (const feed of feeds) feed.stop();
    await env.stop();
  });

  test(
    "(1) the seed's manifest on a Prometheus without Istio metrics: never promoted, rolled back NoEvidence",
    { timeout: 60_000 },
    async () => {
      const name = "seed";
      const { prometheusQuery, imageListenPort } = SEED_SPEC;
      const recorder = await deployApp(env, name, {
        image: image(name, "v1"),
        imageListenPort,
        ...(prometheusQuery !== undefined ? { prometheusQuery } : {}),
        prometheusURL: env.prometheus.url,
        analysis: { interval: `${INTERVAL_SECONDS}s`, inconclusiveLimit: 2 },
      });
      const v2 = image(name, "v2");
      const patched = await changeImage(env, name, v2);
      const status = await untilSettled(recorder, "Failed", patched);

      assert.deepEqual(seen(recorder.primary), [null, image(name, "v1")], "never promoted");
      assert.deepEqual(recorder.weightPairs(patched.at), [
        [100, 0],
        [90, 10],
        [100, 0],
      ]);
      const failed = status.failedImages?.[0];
      assert.equal(failed?.image, v2);
      assert.equal(failed?.reason, "NoEvidence");
      assert.equal(failed?.metric, "secondary-traffic");
      assert.match(failed?.message ?? "", /no evidence that the secondary served traffic in 2 analyses in a row/);
      assert.match(
        failed?.query ?? "",
        new RegExp(`istio_requests_total\\{.*destination_canonical_revision="secondary"\\}\\[\\d+s\\]`),
        "the query as run",
      );
      const events = await appEvents(env, name);
      const inconclusive = events.filter((e) => e.reason === "AnalysisInconclusive");
      assert.ok(inconclusive.length >= 1);
      assert.match(inconclusive[0]?.message ?? "", /prometheusQuery returned no failing series \[/);
      console.log(`# ${failed?.reason}: ${failed?.message} (query ${failed?.query})`);
    },
  );

  test(
    "(2) a primary with errors at rest and a healthy secondary: promoted with the sample's scoped query",
    { timeout: 90_000 },
    async () => {
      const name = "calm";
      const traffic = istioTraffic(env, name);
      feeds.push(traffic);
      traffic.set("primary", 40, 5);
      const query = await sampleQuery();
      const recorder = await deployApp(
        env,
        name,
        appSpec(env, name, { stepWeights: [20, 50], metrics: [], trafficQuery: undefined }, { prometheusQuery: query }),
      );
      traffic.set("secondary", 30, 0);
      const v2 = image(name, "v2");
      const patched = await changeImage(env, name, v2);
      const status = await untilSettled(recorder, "Healthy", patched);
      assert.equal(status.primaryImage, v2);
      assert.deepEqual(recorder.weightPairs(patched.at), [
        [100, 0],
        [80, 20],
        [50, 50],
        [100, 0],
      ]);
      const passed = (await appEvents(env, name)).filter((e) => e.reason === "AnalysisPassed");
      assert.equal(passed.length, 2);
      assert.match(passed[0]?.message ?? "", /secondary-traffic \d+(\.\d+)? requests to the secondary in \d+s ≥ 20/);
      assert.match(
        passed[0]?.message ?? "",
        /prometheusQuery returned no failing series \[window \d+s; \d+(\.\d+)? requests;/,
      );
      console.log(`# ${passed[0]?.message}`);
    },
  );

  test(
    "(2b) the seed's unscoped query never sees the secondary under Istio's labels: the built-in success rate judges it too",
    { timeout: 60_000 },
    async () => {
      // Istio reports the secondary's requests against `<name>-secondary` (the Service the route sends to),
      // never against `<name>`: the seed's `destination_service_name="<name>"` selects nothing of the new
      // version, and an empty result passes seed mode. Such a query does not count as a check, so the
      // analysis also runs the built-in success rate, as for a spec with no check (checks.ts blindToSecondary).
      const name = "blind";
      const traffic = istioTraffic(env, name);
      feeds.push(traffic);
      traffic.set("primary", 40, 0);
      traffic.set("secondary", 20, 10);
      const unscoped = (SEED_SPEC.prometheusQuery ?? "").replace("canaryapp-sample", name);
      const recorder = await deployApp(
        env,
        name,
        appSpec(
          env,
          name,
          { stepWeights: [20, 50], metrics: [], trafficQuery: undefined },
          { prometheusQuery: unscoped },
        ),
      );
      const v2 = image(name, "v2");
      const patched = await changeImage(env, name, v2);
      const status = await untilSettled(recorder, "Failed", patched);
      assert.deepEqual(seen(recorder.primary), [null, image(name, "v1")], "never promoted");
      const failed = status.failedImages?.[0];
      assert.equal(failed?.metric, "request-success-rate");
      assert.ok((failed?.value ?? 100) < 99, `the secondary's success rate: ${failed?.value}`);
      console.log(`# unscoped: ${failed?.message} (the seed's query alone saw no failing series)`);
    },
  );

  test(
    "(3) a secondary clearly worse than the primary: rolled back, with the figures and the query as run",
    { timeout: 60_000 },
    async () => {
      const name = "worse";
      const traffic = istioTraffic(env, name);
      feeds.push(traffic);
      traffic.set("primary", 40, 1);
      const query = await sampleQuery();
      const recorder = await deployApp(
        env,
        name,
        appSpec(env, name, { metrics: [], trafficQuery: undefined }, { prometheusQuery: query }),
      );
      traffic.set("secondary", 20, 15);
      const v3 = image(name, "v3");
      const patched = await changeImage(env, name, v3);
      const status = await untilSettled(recorder, "Failed", patched);
      assert.deepEqual(seen(recorder.primary), [null, image(name, "v1")], "never promoted");
      const failed = status.failedImages?.[0];
      assert.equal(failed?.reason, "AnalysisFailed");
      assert.equal(failed?.metric, "prometheusQuery");
      assert.ok((failed?.value ?? 0) > 2, `errors in the step: ${failed?.value}`);
      assert.match(
        failed?.query ?? "",
        new RegExp(
          `destination_canonical_service="${name}",destination_canonical_revision="secondary".*\\[\\d+s\\]\\)\\) > 2$`,
        ),
      );
      const event = (await appEvents(env, name)).find((e) => e.reason === "AnalysisFailed");
      assert.match(event?.message ?? "", /secondary-traffic \d+(\.\d+)? requests .*\[window \d+s;/);
      console.log(`# ${failed?.message}; value ${failed?.value}; query ${failed?.query}`);
    },
  );

  test(
    "(2c) a primary with errors at rest and a healthy secondary: promoted in compare mode, with the figures",
    { timeout: 90_000 },
    async () => {
      const name = "peer";
      const traffic = istioTraffic(env, name);
      feeds.push(traffic);
      traffic.set("primary", 40, 5);
      const recorder = await deployApp(
        env,
        name,
        appSpec(env, name, {
          stepWeights: [20, 50],
          metrics: [],
          trafficQuery: undefined,
          compare: { minSamples: 50 },
        }),
      );
      traffic.set("secondary", 30, 0);
      const v2 = image(name, "v2");
      const patched = await changeImage(env, name, v2);
      const status = await untilSettled(recorder, "Healthy", patched);
      assert.equal(status.primaryImage, v2);
      const passes = env.controller?.observer.statuses
        .filter((s) => s.app === name)
        .map((s) => s.canary?.lastAnalysis?.metrics.find((m) => m.name === "compare-with-primary"))
        .filter((m) => m !== undefined);
      const compared = passes?.at(-1);
      assert.equal(compared?.passed, true);
      assert.ok((compared?.figures?.["primaryErrors"] ?? 0) > 0, "the primary had errors in the window");
      assert.equal(compared?.figures?.["secondaryErrors"], 0);
      assert.ok((compared?.figures?.["secondaryRequests"] ?? 0) >= 50);
      assert.match(
        compared?.query ?? "",
        /label_replace\(sum\(increase\(istio_requests_total\{.*destination_canonical_service="peer",destination_canonical_revision="primary"/,
      );
      console.log(`# compare: ${compared?.message}`);
    },
  );

  test(
    "(3c) a secondary clearly worse than the primary in compare mode: rolled back, with the figures",
    { timeout: 60_000 },
    async () => {
      const name = "rival";
      const traffic = istioTraffic(env, name);
      feeds.push(traffic);
      traffic.set("primary", 40, 1);
      const recorder = await deployApp(
        env,
        name,
        appSpec(env, name, { metrics: [], trafficQuery: undefined, compare: { minSamples: 50 } }),
      );
      traffic.set("secondary", 25, 10);
      const v3 = image(name, "v3");
      const patched = await changeImage(env, name, v3);
      const status = await untilSettled(recorder, "Failed", patched);
      assert.deepEqual(seen(recorder.primary), [null, image(name, "v1")], "never promoted");
      const failed = status.failedImages?.[0];
      assert.equal(failed?.reason, "AnalysisFailed");
      assert.equal(failed?.metric, "compare-with-primary");
      assert.ok((failed?.value ?? 0) > 20, `secondary error percentage ${failed?.value}`);
      assert.match(
        failed?.message ?? "",
        /errors \d+(\.\d+)?\/\d+(\.\d+)? \(\d+(\.\d+)? %\) vs primary .* z \d+(\.\d+)? > 2\.326/,
      );
      console.log(`# compare: ${failed?.message}`);
    },
  );

  test(
    "(4) a threshold query with several series, one bad: fails, naming the series",
    { timeout: 60_000 },
    async () => {
      const name = "pods";
      const metric = "canary_test_pod_latency_ms";
      env.exporter.setSeries(metric, { app: name, pod: "a" }, 120);
      env.exporter.setSeries(metric, { app: name, pod: "b" }, 130);
      const check = { name: "pod-latency", query: `max by (pod) (${metric}{app="{{name}}"})`, max: 500 };
      const recorder = await deployApp(env, name, appSpec(env, name, { metrics: [check] }));
      env.exporter.setSeries(metric, { app: name, pod: "c" }, 900);
      const v2 = image(name, "v2");
      const patched = await changeImage(env, name, v2);
      const status = await untilSettled(recorder, "Failed", patched);
      const failed = status.failedImages?.[0];
      assert.equal(failed?.reason, "AnalysisFailed");
      assert.equal(failed?.metric, "pod-latency");
      assert.equal(failed?.value, 900);
      assert.equal(failed?.message, 'pod-latency {pod="c"}: 900 > 500 (1 of 3 series)');
      const last = env.controller?.observer.statuses
        .filter((s) => s.app === name)
        .map((s) => s.canary?.lastAnalysis)
        .find((a) => a !== undefined && !a.passed);
      const result = last?.metrics.find((m) => m.name === "pod-latency");
      assert.deepEqual(result?.failingSeries, ['{pod="c"}']);
      assert.deepEqual(
        [...(result?.values ?? [])].sort((a, b) => a - b),
        [120, 130, 900],
      );
    },
  );

  test(
    "(5) Prometheus away with failWhenPrometheusFails false: the secondary's weight is 0 within one reconcile, NoEvidence at the deadline",
    { timeout: 90_000 },
    async () => {
      const name = "away";
      const proxy = await startTcpProxy(new URL(env.prometheus.url).host);
      try {
        const recorder = await deployApp(
          env,
          name,
          appSpec(
            env,
            name,
            { stepWeights: [10, 20], failWhenPrometheusFails: false, progressDeadlineSeconds: 10 },
            { prometheusURL: proxy.url },
          ),
        );
        const v2 = image(name, "v2");
        const patched = await changeImage(env, name, v2);
        await untilWeight(recorder, 10);
        await proxy.down();
        const downAt = Date.now();
        // The first analysis without an answer withholds the traffic in the same reconcile: its status says
        // so and names weight 0 in one write.
        const withheld = await recorder.until(
          "traffic withheld",
          (r) => (r.app?.status?.canary?.trafficWithheld === true ? r.app.status : undefined),
          30_000,
        );
        assert.deepEqual(withheld.weights, { primary: 100, secondary: 0 });
        assert.equal(withheld.canary?.lastAnalysis?.verdict, "Inconclusive");
        const status = await untilSettled(recorder, "Failed", patched);
        const endedAt = Date.now();
        assert.deepEqual(recorder.weightPairs(downAt).at(-1), [100, 0]);
        assert.deepEqual(seen(recorder.primary), [null, image(name, "v1")], "never promoted");
        const failed = status.failedImages?.[0];
        assert.equal(failed?.reason, "NoEvidence");
        assert.match(failed?.message ?? "", /no verdict for 10s: .*query failed/);
        const waited = (endedAt - downAt) / 1000;
        assert.ok(waited >= 10 && waited <= 10 + 3 * INTERVAL_SECONDS + 5, `ended ${waited}s after Prometheus left`);
        console.log(`# NoEvidence ${waited.toFixed(1)}s after Prometheus went away (deadline 10s)`);
      } finally {
        await proxy.stop();
      }
    },
  );
});
