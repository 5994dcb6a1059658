/**
 * Promote exactly what was tested (issue 11, item 5), on the cluster profile: real Deployments and kwok
 * pods that report an image digest (e2e/cluster/fake-nodes.ts POD_STAGES). The primary ends on the digest
 * the secondary's pods ran, with the user's reference kept in status; a failed image is recorded with its
 * digest, so the same build named by digest is the same failure.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { CanaryAppStatus } from "../src/api/types.js";
import { childNames } from "../src/api/meta.js";
import { fakeDigest } from "./cluster/fake-nodes.js";
import {
  appSpec,
  changeImage,
  deployApp,
  image,
  startRolloutEnv,
  type RolloutEnv,
} from "../test/support/rollout-env.js";
import type { RolloutRecorder } from "../test/support/rollout-recorder.js";
import { TEST_METRICS } from "../test/support/exporter.js";
import { getDeployment } from "../test/support/workloads.js";

function untilRest(
  recorder: RolloutRecorder,
  phase: "Healthy" | "Failed",
  generation: number,
): Promise<CanaryAppStatus> {
  return recorder.until(
    `${recorder.name} at rest in ${phase}`,
    (r) => {
      const status = r.app?.status;
      return status !== undefined &&
        (status.observedGeneration ?? 0) >= generation &&
        status.phase === phase &&
        status.canary === undefined &&
        r.currentSecondary() === null
        ? status
        : undefined;
    },
    90_000,
  );
}

describe("promote exactly what was tested", () => {
  let env: RolloutEnv;
  const name = "pinned";
  let recorder: RolloutRecorder;

  before(async () => {
    env = await startRolloutEnv("digest", { deploymentStandIn: false });
    recorder = await deployApp(env, name, appSpec(env, name, { stepWeight: 25, maxWeight: 50 }));
  });
  after(async () => {
    await env.stop();
  });

  test("the primary ends on the digest the secondary's pods ran", { timeout: 120_000 }, async () => {
    const v2 = image(name, "v2");
    const patched = await changeImage(env, name, v2);
    const status = await untilRest(recorder, "Healthy", patched.generation);

    const digest = fakeDigest(v2);
    const primary = await getDeployment(env.kc, env.namespace, childNames(name).primary);
    assert.equal(primary?.spec?.template.spec?.containers[0]?.image, `registry.example.com/canary/${name}@${digest}`);
    assert.equal(status.primaryImage, v2, "status keeps the user's reference");
    assert.equal(status.primary?.image, v2);
    assert.equal(status.primary?.digest, digest);
    assert.equal(status.lastPromotion?.digest, digest);
  });

  test(
    "a failed image is recorded with its digest, and the same build by digest is not tested again",
    { timeout: 120_000 },
    async () => {
      const v3 = image(name, "v3");
      env.exporter.set(TEST_METRICS.errors, name, 5);
      const patched = await changeImage(env, name, v3);
      const failedStatus = await untilRest(recorder, "Failed", patched.generation);
      assert.equal(failedStatus.failedImages?.[0]?.image, v3);
      assert.equal(failedStatus.failedImages?.[0]?.digest, fakeDigest(v3));

      const byDigest = `registry.example.com/canary/${name}@${fakeDigest(v3)}`;
      const since = Date.now();
      const again = await changeImage(env, name, byDigest);
      const status = await untilRest(recorder, "Failed", again.generation);
      assert.equal(status.failedImages?.length, 1, "one failure, whatever the build is called");
      assert.equal(recorder.secondary.filter((s) => s.at >= since && s.value !== null).length, 0, "no secondary ran");
    },
  );
});
