/**
 * Captures real CanaryApps in every phase, as the controller wrote them, into the Argo CD health fixtures
 * (integrations/argocd/resource_customizations/canaryapp.io/CanaryApp/testdata/captured-*.yaml). It drives
 * one app through a whole story on the real API server with the real controller and Prometheus:
 *
 *   node dist/e2e/cluster/with-cluster.js --profile api -- node dist/test/support/capture-argocd-fixtures.js
 *
 * Only managedFields are dropped (noise for a health check); everything else is the object as read.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { dumpYaml } from "@kubernetes/client-node";
import { findRepoRoot } from "../../e2e/cluster/toolchain.js";
import { ANNOTATIONS, type CanaryApp } from "../../src/api/types.js";
import { TEST_METRICS } from "./exporter.js";
import { appSpec, image, startRolloutEnv, untilSettled } from "./rollout-env.js";
import { RolloutRecorder } from "./rollout-recorder.js";

const TESTDATA = join(findRepoRoot(), "integrations/argocd/resource_customizations/canaryapp.io/CanaryApp/testdata");

function save(name: string, app: CanaryApp | undefined): void {
  if (app === undefined) throw new Error(`${name}: no app to capture`);
  const copy = structuredClone(app) as CanaryApp & { metadata: { managedFields?: unknown } };
  delete copy.metadata.managedFields;
  writeFileSync(join(TESTDATA, `captured-${name}.yaml`), dumpYaml(copy));
  console.log(`captured ${name}: phase ${copy.status?.phase ?? "-"}, stage ${copy.status?.canary?.stage ?? "-"}`);
}

const env = await startRolloutEnv("argocd-fixtures");
const name = "shop";
const v = (tag: string) => image(name, tag);
try {
  env.exporter.set(TEST_METRICS.errors, name, 0);
  env.exporter.set(TEST_METRICS.latency, name, 120);
  const recorder = await RolloutRecorder.start(env.kc, env.namespace, name);
  env.recorders.push(recorder);
  const phase = (p: string, extra: (app: CanaryApp) => boolean = () => true) =>
    recorder.until(`phase ${p}`, (r) =>
      r.app?.status?.phase === p && extra(r.app) ? structuredClone(r.app) : undefined,
    );
  const stage = (s: string) =>
    recorder.until(`stage ${s}`, (r) => (r.app?.status?.canary?.stage === s ? structuredClone(r.app) : undefined));

  // Initializing: the primary is not available yet.
  env.unavailable.add(`${name}-primary`);
  await env.apps.create({ metadata: { name }, spec: appSpec(env, name) });
  save("initializing", await phase("Initializing"));
  env.unavailable.delete(`${name}-primary`);
  save("healthy", await phase("Healthy", (a) => a.status?.primaryImage === v("v1")));

  // A new image, as a Git commit synced by Argo CD changes it: the status is of the previous generation.
  env.unavailable.add(`${name}-secondary`);
  save("stale-generation", await env.apps.patchSpec(name, { image: v("v2") }));
  save("waiting-for-secondary", await stage("WaitingForSecondary"));
  env.unavailable.delete(`${name}-secondary`);
  save(
    "stepping",
    await recorder.until("a passed analysis", (r) =>
      r.app?.status?.canary?.lastAnalysis?.passed === true ? structuredClone(r.app) : undefined,
    ),
  );

  await env.apps.annotate(name, { [ANNOTATIONS.paused]: "true" });
  save("paused", await phase("Paused"));
  await env.apps.annotate(name, { [ANNOTATIONS.paused]: null });
  await phase("Progressing");

  // Promoting lasts while the primary rolls out the tested image: keep it unavailable for a moment.
  env.unavailable.add(`${name}-primary`);
  await env.apps.annotate(name, { [ANNOTATIONS.promote]: "now" });
  save("promoting", await phase("Promoting"));
  env.unavailable.delete(`${name}-primary`);
  save("promoted", await phase("Healthy", (a) => a.status?.primaryImage === v("v2")));

  // v3 fails its analysis: rolling back, then Failed with the image, reason and value recorded.
  env.exporter.set(TEST_METRICS.errors, name, 3);
  const failing = await env.apps.patchSpec(name, { image: v("v3") });
  save("rolling-back", await phase("RollingBack"));
  save(
    "failed",
    await untilSettled(recorder, "Failed", { generation: failing.metadata.generation ?? 0 }).then(() =>
      env.apps.get(name),
    ),
  );
  env.exporter.set(TEST_METRICS.errors, name, 0);

  // A manual gate: v4 passes every step and waits for canaryapp.io/promote.
  await env.apps.patchSpec(name, {
    image: v("v4"),
    analysis: { ...appSpec(env, name).analysis, manualPromotion: true },
  });
  save("awaiting-promotion", await stage("AwaitingPromotion"));
  // Superseded: a newer image while a test runs ends the old test on the way to the next.
  await env.apps.patchSpec(name, { image: v("v5") });
  save(
    "superseded",
    await recorder.until("a superseded test", (r) =>
      r.app?.status?.canary?.outcome?.result === "Superseded" ? structuredClone(r.app) : undefined,
    ),
  );
  await recorder.until("v5 awaiting promotion", (r) =>
    r.app?.status?.canary?.image === v("v5") && r.app.status.canary.stage === "AwaitingPromotion" ? true : undefined,
  );
  await env.apps.annotate(name, { [ANNOTATIONS.promote]: "now" });
  await phase("Healthy", (a) => a.status?.primaryImage === v("v5"));

  // Invalid: a query with an unknown template variable cannot be run.
  const analysis = appSpec(env, name).analysis;
  await env.apps.patchSpec(name, {
    analysis: { ...analysis, metrics: [{ name: "errors", query: 'max(errors{app="{{nmae}}"})', max: 0 }] },
  });
  save("invalid", await phase("Invalid"));
  await env.apps.patchSpec(name, { analysis });
  await phase("Healthy");

  // A child the API server rejects (a probe port name longer than 15 characters).
  await env.apps.patchSpec(name, {
    pod: { readinessProbe: { httpGet: { path: "/", port: "a-port-name-that-is-too-long" } } },
  });
  save(
    "child-rejected",
    await recorder.until("ChildrenApplied=False", (r) =>
      r.app?.status?.conditions?.some((c) => c.type === "ChildrenApplied" && c.status === "False")
        ? structuredClone(r.app)
        : undefined,
    ),
  );
} finally {
  await env.stop();
}
