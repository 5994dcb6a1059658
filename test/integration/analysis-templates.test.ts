/**
 * Analysis templates against the real API server (ADR 0031): an app whose template does not exist starts no
 * test and says why (AnalysisReady, an Event); a template of the same name in another namespace is not used;
 * creating the template starts the test, which records the template's metrics; a change of the template
 * mid-test leaves the recorded metrics, and the verdicts, as they were.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { CanaryApp, Condition } from "../../src/api/types.js";
import { TEST_METRICS } from "../support/exporter.js";
import { analysisTemplates, createTestNamespace, eventually, testKubeConfig } from "../support/kube.js";
import { appSpec, deployApp, image, startRolloutEnv, untilSettled, type RolloutEnv } from "../support/rollout-env.js";

const analysisReady = (app: CanaryApp): Condition | undefined =>
  app.status?.conditions?.find((c) => c.type === "AnalysisReady");

/** The errors the app may have, given as an arg: the check fails when errors exceed it. */
const TEMPLATE_SPEC = {
  args: [{ name: "allowed", value: "0" }],
  metrics: [{ name: "errors-over", query: `max(${TEST_METRICS.errors}{app="{{name}}"}) - {{args.allowed}}`, max: 0 }],
};

describe("analysis templates", () => {
  let env: RolloutEnv;
  const kc = testKubeConfig();

  before(async () => {
    env = await startRolloutEnv("analysis-templates");
  });
  after(async () => {
    await env.stop();
  });

  test(
    "a missing template holds the test; its creation starts it; a change mid-test does not change it",
    { timeout: 120_000 },
    async () => {
      const name = "web";
      await deployApp(env, name, appSpec(env, name, { metrics: [] }));
      const other = await createTestNamespace(kc, "analysis-templates-other");
      // A template of the same name in another namespace: not the app's to use.
      await analysisTemplates(kc, other).create({ metadata: { name: "slo" }, spec: TEMPLATE_SPEC });

      const v2 = image(name, "v2");
      const patched = await env.apps.patchSpec(name, {
        image: v2,
        analysis: {
          ...appSpec(env, name).analysis,
          metrics: [],
          templates: [{ name: "slo", args: [{ name: "allowed", value: "1" }] }],
        },
      });
      const held = await eventually(
        "AnalysisReady False: TemplateNotFound",
        async () => {
          const app = await env.apps.get(name);
          const ready = analysisReady(app);
          return ready?.status === "False" &&
            (app.status?.observedGeneration ?? 0) >= (patched.metadata.generation ?? 0)
            ? { app, ready }
            : undefined;
        },
        { timeoutMs: 20_000 },
      );
      assert.equal(held.ready.reason, "TemplateNotFound");
      assert.match(
        held.ready.message,
        new RegExp(`CanaryAnalysisTemplate/slo does not exist in namespace ${env.namespace}`),
      );
      await eventually("a TemplateNotFound Event", async () => {
        const events = await env.core.listNamespacedEvent({ namespace: env.namespace });
        return events.items.some((e) => e.reason === "TemplateNotFound" && e.involvedObject.name === name) || undefined;
      });
      // A few intervals later, still no test: the analysis could not judge what the spec asks.
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      const still = await env.apps.get(name);
      assert.equal(still.status?.canary, undefined, "no test starts without its template");
      assert.equal(still.status?.primaryImage, image(name, "v1"));

      // The template appears in the app's namespace: the test starts and records its metrics.
      const templates = analysisTemplates(kc, env.namespace);
      await templates.create({ metadata: { name: "slo" }, spec: TEMPLATE_SPEC });
      const started = await eventually(
        "the test records the template's metrics",
        async () => {
          const app = await env.apps.get(name);
          return app.status?.canary?.analysisTemplates !== undefined ? app : undefined;
        },
        { timeoutMs: 20_000 },
      );
      const recorded = started.status?.canary?.analysisTemplates;
      assert.deepEqual(
        recorded?.map((t) => ({ kind: t.kind, name: t.name, metrics: t.metrics })),
        [
          {
            kind: "CanaryAnalysisTemplate",
            name: "slo",
            metrics: [
              {
                name: "errors-over",
                query: `max(${TEST_METRICS.errors}{app="{{name}}"}) - 1`,
                max: 0,
                template: "CanaryAnalysisTemplate/slo",
              },
            ],
          },
        ],
      );
      assert.equal(analysisReady(started)?.status, "True");

      // Mid-test, the template is changed to one that fails every step: the running test keeps its metrics.
      await templates.patchSpec("slo", {
        args: [{ name: "allowed", value: "0" }],
        metrics: [{ name: "errors-over", query: "vector(1)", max: 0 }],
      });
      const running = await env.apps.get(name);
      assert.equal(running.status?.canary?.image, v2, "the template changed while the test ran");
      await untilSettled(
        env.recorders.find((r) => r.name === name)!,
        "Healthy",
        { generation: patched.metadata.generation ?? 0 },
        60_000,
      );
      const promoted = await env.apps.get(name);
      assert.equal(promoted.status?.primaryImage, v2, "promoted by the metrics recorded when the test started");
      const events = await env.core.listNamespacedEvent({ namespace: env.namespace });
      assert.ok(
        !events.items.some((e) => e.involvedObject.name === name && /vector\(1\)/.test(e.message ?? "")),
        "no step was judged by the changed template",
      );
    },
  );
});
