/**
 * Every change to the pod is tested (issue 11, item 6): a change to `pod` (here one env variable) with the
 * same image starts a test on the secondary, which runs the new template while the primary keeps the old
 * one, and only a passed test hands it to the primary. A failed one is recorded as a revision (image +
 * revision + what else changed). The Deployment controller is played by the test (api profile).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { V1Deployment } from "@kubernetes/client-node";
import { childNames } from "../../src/api/meta.js";
import type { EnvVar } from "../../src/api/types.js";
import {
  appEvents,
  appSpec,
  deployApp,
  image,
  startRolloutEnv,
  untilSettled,
  type RolloutEnv,
} from "../support/rollout-env.js";
import { TEST_METRICS } from "../support/exporter.js";
import { getDeployment } from "../support/workloads.js";

function envOf(deployment: V1Deployment | undefined): EnvVar[] {
  return (deployment?.spec?.template.spec?.containers[0]?.env ?? []).map((e) => ({ name: e.name, value: e.value }));
}

describe("every change to the pod is tested", () => {
  let env: RolloutEnv;

  before(async () => {
    env = await startRolloutEnv("pod-revision");
  });
  after(async () => {
    await env.stop();
  });

  test(
    "a pod.env change starts a test on the secondary and reaches the primary only once it passed",
    { timeout: 90_000 },
    async () => {
      const name = "envtest";
      const names = childNames(name);
      const recorder = await deployApp(
        env,
        name,
        appSpec(env, name, {}, { pod: { env: [{ name: "FOO", value: "1" }] } }),
      );
      const before = (await env.apps.get(name)).status?.primary?.revision;

      const edited = await env.apps.patchSpec(name, { pod: { env: [{ name: "FOO", value: "2" }] } });
      const patched = { at: Date.now(), generation: edited.metadata.generation ?? 0 };

      // The test runs the new template on the secondary; the primary keeps the old one meanwhile.
      const during = await recorder.until("a test of the new template", (r) =>
        r.app?.status?.canary?.changes !== undefined && r.currentSecondary() !== null ? r.app.status.canary : undefined,
      );
      assert.equal(during.image, image(name, "v1"), "the image did not change");
      assert.equal(during.changes, "env FOO changed");
      assert.deepEqual(envOf(await getDeployment(env.kc, env.namespace, names.secondary)), [
        { name: "FOO", value: "2" },
      ]);
      assert.deepEqual(envOf(await getDeployment(env.kc, env.namespace, names.primary)), [{ name: "FOO", value: "1" }]);

      const status = await untilSettled(recorder, "Healthy", patched);
      assert.deepEqual(recorder.weightPairs(patched.at).slice(0, 2), [
        [100, 0],
        [90, 10],
      ]);
      assert.deepEqual(envOf(await getDeployment(env.kc, env.namespace, names.primary)), [{ name: "FOO", value: "2" }]);
      assert.notEqual(status.primary?.revision, before, "the primary runs a new revision");
      assert.deepEqual(status.primary?.template?.pod.env, [{ name: "FOO", value: "2" }]);
      const started = (await appEvents(env, name)).find((e) => e.reason === "TestStarted");
      assert.match(started?.message ?? "", /env FOO changed/);
    },
  );

  test(
    "a failed pod change is recorded as a failed revision, and the primary keeps its template",
    { timeout: 90_000 },
    async () => {
      const name = "envfail";
      const names = childNames(name);
      const recorder = await deployApp(
        env,
        name,
        appSpec(env, name, {}, { pod: { env: [{ name: "FOO", value: "1" }] } }),
      );
      env.exporter.set(TEST_METRICS.errors, name, 3);

      const edited = await env.apps.patchSpec(name, { pod: { env: [{ name: "FOO", value: "bad" }] } });
      const status = await untilSettled(recorder, "Failed", { generation: edited.metadata.generation ?? 0 });

      const failed = status.failedImages?.[0];
      assert.equal(failed?.image, image(name, "v1"));
      assert.equal(failed?.reason, "AnalysisFailed");
      assert.equal(failed?.changes, "env FOO changed");
      assert.match(failed?.revision ?? "", /^[0-9a-f]{10}$/);
      assert.deepEqual(envOf(await getDeployment(env.kc, env.namespace, names.primary)), [{ name: "FOO", value: "1" }]);
    },
  );
});
