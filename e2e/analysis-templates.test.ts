/**
 * One ClusterCanaryAnalysisTemplate used by two apps in two namespaces with different args (ADR 0031), on the
 * cluster profile (kwok nodes, the traffic simulator as Istio's data plane, a real Prometheus; each namespace
 * its own simulator, Prometheus and controller process). The template bounds the secondary's p99 latency by
 * `{{args.maxMs}}`; both apps test the same healthy image (the simulator answers it in 10–30 ms,
 * e2e/sim/behaviour.ts): the app whose bound is 1000 ms promotes it, the app whose bound is 5 ms rolls it back on
 * the template's metric. Each verdict names the template.
 *
 * Runs under `make test-e2e` (KUBECONFIG set by e2e/cluster/with-cluster).
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { dumpYaml } from "@kubernetes/client-node";
import type { CanaryApp, MetricResult } from "../src/api/types.js";
import { startEnvironment, type Environment } from "./demo/environment.js";
import { StoryRecorder } from "./demo/recorder.js";
import { demoSample, readSample, withTag } from "./demo/story.js";
import { analysisTemplates, testKubeConfig, testKubeConfigPath } from "../test/support/kube.js";

const kubeconfig = testKubeConfigPath();
const kc = testKubeConfig();
const suffix = randomBytes(3).toString("hex");
const TEMPLATE = `latency-ceiling-${suffix}`;
const LABEL = `ClusterCanaryAnalysisTemplate/${TEMPLATE}`;
const SECONDARY = `reporter="destination",destination_workload_namespace="{{namespace}}",destination_canonical_service="{{name}}",destination_canonical_revision="{{secondaryRevision}}"`;

interface Outcome {
  app: CanaryApp;
  /** The template's metric as the test's analyses judged it, every time. */
  judged: MetricResult[];
}

/** Deploys the sample with the template and `maxMs`, then tests v2 until it is promoted or rolled back. */
async function runApp(env: Environment, maxMs: string): Promise<Outcome> {
  const { app } = demoSample(await readSample(), { prometheusURL: env.prometheus.url, interval: "5s" });
  const name = app.metadata.name ?? "canaryapp-sample";
  app.spec.analysis = {
    ...app.spec.analysis,
    templates: [{ name: TEMPLATE, kind: "ClusterCanaryAnalysisTemplate", args: [{ name: "maxMs", value: maxMs }] }],
  };
  const recorder = await StoryRecorder.start(env.kc, env.namespace, name);
  const judged: MetricResult[] = [];
  try {
    await env.kubectl.run(["-n", env.namespace, "apply", "-f", "-"], dumpYaml(app, { lineWidth: -1 }));
    await recorder.until(
      `${env.namespace}/${name} Healthy on v1`,
      (r) =>
        r.app()?.status?.phase === "Healthy" && r.app()?.status?.primaryImage === app.spec.image ? true : undefined,
      { timeoutMs: 120_000 },
    );
    const v2 = withTag(app.spec.image, "v2");
    await env.kubectl.run([
      "-n",
      env.namespace,
      "patch",
      "canaryapp",
      name,
      "--type=merge",
      "-p",
      JSON.stringify({ spec: { image: v2 } }),
    ]);
    let seen = "";
    const done = await recorder.until(
      `${env.namespace}/${name}: the test of ${v2} ended`,
      (r) => {
        const a = r.app();
        const analysis = a?.status?.canary?.lastAnalysis;
        const metric = analysis?.metrics.find((m) => m.name === "latency-p99");
        if (analysis !== undefined && metric !== undefined && analysis.time !== seen) {
          seen = analysis.time;
          judged.push(metric);
        }
        const ended =
          a?.status?.canary === undefined &&
          (a?.status?.primaryImage === v2 || a?.status?.failedImages?.some((f) => f.image === v2) === true);
        return ended ? a : undefined;
      },
      { timeoutMs: 240_000 },
    );
    return { app: done, judged };
  } finally {
    await recorder.stop();
  }
}

describe("a cluster analysis template, two apps, two args", () => {
  const envs: Environment[] = [];
  const cluster = analysisTemplates(kc, undefined);

  before(async () => {
    await cluster.create({
      metadata: { name: TEMPLATE },
      spec: {
        args: [{ name: "maxMs" }],
        metrics: [
          {
            name: "latency-p99",
            // The secondary's p99 over the bound: at most 1 passes.
            query: `histogram_quantile(0.99, sum(rate(istio_request_duration_milliseconds_bucket{${SECONDARY}}[{{interval}}])) by (le)) / {{args.maxMs}}`,
            max: 1,
          },
        ],
      },
    });
    envs.push(
      ...(await Promise.all(
        ["tpl-lenient", "tpl-strict"].map((label) =>
          startEnvironment({ namespace: `${label}-${suffix}`, kubeconfig, rps: 50 }),
        ),
      )),
    );
  });
  after(async () => {
    await Promise.all(envs.map((env) => env.stop()));
    await cluster.delete(TEMPLATE).catch(() => undefined);
  });

  test(
    "the lenient app promotes v2; the strict app rolls it back on the template's metric",
    { timeout: 420_000 },
    async () => {
      const [lenientEnv, strictEnv] = envs;
      assert.ok(lenientEnv !== undefined && strictEnv !== undefined);
      const [lenient, strict] = await Promise.all([runApp(lenientEnv, "1000"), runApp(strictEnv, "5")]);
      const v2 = withTag(lenient.app.spec.image, "v2");

      assert.equal(lenient.app.status?.primaryImage, v2, "the lenient app promoted v2");
      assert.ok(lenient.judged.length > 0, "the template's metric was judged in the lenient app's test");
      for (const metric of lenient.judged) {
        assert.equal(metric.template, LABEL);
        assert.equal(metric.passed, true, `${metric.name}: ${metric.message ?? ""}`);
        assert.match(metric.query ?? "", / \/ 1000$/, "the lenient app's arg");
      }

      assert.notEqual(strict.app.status?.primaryImage, v2, "the strict app kept v1");
      const failure = strict.app.status?.failedImages?.find((f) => f.image === v2);
      assert.ok(failure, "v2 is a failed image of the strict app");
      assert.equal(failure.metric, "latency-p99");
      assert.match(failure.message, new RegExp(`latency-p99 \\(${LABEL.replace("/", "\\/")}\\)`));
      const failed = strict.judged.at(-1);
      assert.equal(failed?.template, LABEL);
      assert.equal(failed?.passed, false);
      assert.match(failed?.query ?? "", / \/ 5$/, "the strict app's arg");
    },
  );
});
