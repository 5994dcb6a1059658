/**
 * The comparative judge (ADR 0030) on the cluster profile, with the traffic simulator as Istio's data plane
 * (its latency histograms labelled as Istio labels them) and a real Prometheus: two apps judged on the median
 * latency and the 5xx ratio of each track's samples over the step, secondary against primary.
 *
 * - `steady`: the new image answers as the old one does (10–30 ms, no errors): noise only, promoted;
 * - `slower`: the new image answers 30 % slower at the median (16–36 ms) with the same (zero) error rate:
 *   rolled back by the latency metric, the failed image recording it with the figures.
 *
 * Runs under `make test-e2e` (KUBECONFIG set by e2e/cluster/with-cluster).
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { CustomObjectsApi } from "@kubernetes/client-node";
import type { AnalysisRecord, CanaryApp, CanaryAppStatus, MetricCheck } from "../src/api/types.js";
import { startEnvironment, type Environment } from "./demo/environment.js";
import { demoSample, readSample, withTag } from "./demo/story.js";
import { testKubeConfigPath } from "../test/support/kube.js";
import { waitFor } from "./cluster/wait.js";

const SELECTOR = `reporter="destination",destination_workload_namespace="{{namespace}}",destination_canonical_service="{{name}}",destination_canonical_revision="{{revision}}"`;

/** The median latency of one track (`{{revision}}`), in ms, over 10 s windows. */
const P50 = `histogram_quantile(0.5, sum by (le) (rate(istio_request_duration_milliseconds_bucket{${SELECTOR}}[10s])))`;

/** The 5xx ratio of one track; 0 when it answered no 5xx. */
const ERROR_RATIO = `(sum(rate(istio_requests_total{${SELECTOR},response_code=~"5.*"}[10s])) or on() vector(0)) / sum(rate(istio_requests_total{${SELECTOR}}[10s]))`;

const JUDGED: MetricCheck[] = [
  { name: "latency-p50", query: P50, judge: { direction: "increase", minSamples: 8 }, interval: "2s" },
  { name: "error-ratio", query: ERROR_RATIO, judge: { direction: "increase", minSamples: 8 }, interval: "2s" },
];

const suffix = randomBytes(3).toString("hex");

async function judgedApp(name: string, prometheusURL: string): Promise<CanaryApp> {
  const { app } = demoSample(await readSample(), { prometheusURL, interval: "16s" });
  app.metadata = { name };
  delete app.spec.prometheusQuery;
  app.spec.analysis = { ...app.spec.analysis, stepWeights: [30, 50], metrics: JUDGED };
  return app;
}

// The two rollouts run side by side: each test waits on its own app.
describe("the comparative judge on Istio's latency histograms", { concurrency: true }, () => {
  let env: Environment;
  let api: CustomObjectsApi;
  const namespace = `judge-${suffix}`;
  const started = Date.now();

  before(async () => {
    env = await startEnvironment({
      namespace,
      kubeconfig: testKubeConfigPath(),
      rps: 50,
      traffic: {
        // 16–36 ms: the median 30 % above the 10–30 ms every other image answers in.
        behaviours: {
          images: {
            ":slow": { errorRate: 0, latencyMs: 16, jitterMs: 20 },
            ":v3": { errorRate: 1, latencyMs: 10, jitterMs: 20 },
          },
          default: { errorRate: 0, latencyMs: 10, jitterMs: 20 },
        },
      },
    });
    api = env.kc.makeApiClient(CustomObjectsApi);
    for (const name of ["steady", "slower"]) {
      await api.createNamespacedCustomObject({
        group: "canaryapp.io",
        version: "v1alpha1",
        namespace,
        plural: "canaryapps",
        body: await judgedApp(name, env.prometheus.url),
      });
    }
    await Promise.all(["steady", "slower"].map((name) => until(name, (s) => s.phase === "Healthy")));
  });
  after(async () => {
    await env?.stop();
    console.log(`# judge e2e: ${((Date.now() - started) / 1000).toFixed(1)} s in all`);
  });

  function read(name: string): Promise<CanaryApp> {
    return api.getNamespacedCustomObject({
      group: "canaryapp.io",
      version: "v1alpha1",
      namespace,
      plural: "canaryapps",
      name,
    }) as Promise<CanaryApp>;
  }

  function until(
    name: string,
    done: (s: CanaryAppStatus) => boolean,
    seen?: AnalysisRecord[],
  ): Promise<CanaryAppStatus> {
    return waitFor(
      `${name}: ${done.toString()}`,
      async () => {
        const s = (await read(name)).status;
        const last = s?.canary?.lastAnalysis;
        if (seen !== undefined && last !== undefined && seen.at(-1)?.time !== last.time) seen.push(last);
        return s !== undefined && done(s) ? s : undefined;
      },
      { timeoutMs: 150_000, intervalMs: 500 },
    );
  }

  async function changeImage(name: string, tag: string): Promise<string> {
    const app = await read(name);
    const image = withTag(app.spec.image, tag);
    await api.patchNamespacedCustomObject({
      group: "canaryapp.io",
      version: "v1alpha1",
      namespace,
      plural: "canaryapps",
      name,
      body: [{ op: "replace", path: "/spec/image", value: image }],
    });
    return image;
  }

  test("noise only: promoted, every judged metric passing at each step", { timeout: 180_000 }, async () => {
    const image = await changeImage("steady", "v2");
    const seen: AnalysisRecord[] = [];
    const end = await until("steady", (s) => s.primaryImage === image && s.canary === undefined, seen);
    assert.equal(end.phase, "Healthy");
    assert.deepEqual(end.failedImages ?? [], []);
    const judged = seen.flatMap((a) => a.metrics.filter((m) => m.kind === "judge" || m.kind === "score"));
    assert.ok(judged.length >= 2, `judged results seen: ${JSON.stringify(seen)}`);
    for (const a of seen) {
      const latency = a.metrics.find((m) => m.name === "latency-p50");
      const score = a.metrics.find((m) => m.name === "canary-score");
      console.log(
        `# steady step: latency-p50 ${latency?.reason}: ${latency?.message}; score ${score?.value} ${score?.reason}`,
      );
    }
    const passed = seen.filter((a) => a.passed);
    assert.ok(passed.length >= 2, "both steps passed on their analysis");
    for (const a of passed) {
      const score = a.metrics.find((m) => m.name === "canary-score");
      assert.equal(score?.reason, "ScorePassed");
      assert.equal(score?.value, 100);
    }
  });

  test(
    "+30 % median latency, the same error rate: rolled back by the latency metric",
    { timeout: 180_000 },
    async () => {
      const image = await changeImage("slower", "slow");
      const end = await until(
        "slower",
        (s) => (s.failedImages ?? []).some((f) => f.image === image) && s.canary === undefined,
      );
      const failed = (end.failedImages ?? []).find((f) => f.image === image);
      console.log(`# slower: ${JSON.stringify(failed)}`);
      assert.equal(failed?.reason, "AnalysisFailed");
      assert.equal(failed?.metric, "latency-p50");
      assert.ok((failed?.value ?? 0) > 20, `the secondary's median ${failed?.value} ms`);
      assert.match(
        failed?.message ?? "",
        /latency-p50 secondary median [\d.]+ vs primary [\d.]+; shift .*p [\d.e-]+ < α/,
      );
      assert.match(failed?.message ?? "", /canary-score 50 < 75/);
      assert.notEqual(end.primaryImage, image);
    },
  );
});
