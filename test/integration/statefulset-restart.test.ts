/**
 * A StatefulSet canary (ADR 0015) whose controller process is killed (SIGKILL) at every step boundary and
 * replaced: the status written before each change of the world lets the next process go on where the
 * killed one stopped. The api profile runs no StatefulSet controller: a stand-in (test/support) plays it,
 * moving the ordinals at or above the partition to the template's revision. Across all the restarts the
 * StatefulSet goes through exactly the states a test needs (all stable → the highest ordinal tested → all
 * promoted, or back), each once: no ordinal is moved twice, none below the partition ever.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { CanaryAppStatus, FailedImage } from "../../src/api/types.js";
import { TEST_METRICS } from "../support/exporter.js";
import { ReplacedController } from "../support/replaced-controller.js";
import {
  appEvents,
  appSpec,
  changeImage,
  image,
  startRolloutEnv,
  untilWeight,
  type Patched,
  type RolloutEnv,
  PROMOTED_STEP_BY_STEP,
} from "../support/rollout-env.js";
import { RolloutRecorder } from "../support/rollout-recorder.js";
import { statefulSetStandIn, type StatefulSetStandIn } from "../support/statefulset-stand-in.js";

describe("StatefulSet canary: controller killed at every step boundary", () => {
  const name = "vault";
  const [v1, v2, v3] = [image(name, "v1"), image(name, "v2"), image(name, "v3")];
  let env: RolloutEnv;
  let recorder: RolloutRecorder;
  let standIn: StatefulSetStandIn;
  const controllers = new ReplacedController(name, () => env.namespace);

  const killAndReplace = (): Promise<number> => controllers.killAndReplace();

  /** The StatefulSet's states (partition, and each ordinal's revision by template) since `since`. */
  const states = (since: number): [number, string[]][] =>
    (standIn.history.get(name) ?? [])
      .filter((s) => s.at >= since)
      .map((s) => [s.partition, s.ordinals.map((r) => r.slice(name.length + 1))]);

  const revisionOf = (status: CanaryAppStatus | undefined, which: "stable" | "canary"): string =>
    (which === "stable" ? status?.workload?.stableRevision : status?.workload?.canaryRevision)?.slice(
      name.length + 1,
    ) ?? "";

  function untilRest(phase: "Healthy" | "Failed", patched: Patched, timeoutMs = 90_000): Promise<CanaryAppStatus> {
    return recorder.until(
      `${name} at rest in ${phase}`,
      (r) => {
        const app = r.app;
        const status = app?.status;
        return status !== undefined &&
          (status.observedGeneration ?? 0) >= patched.generation &&
          status.phase === phase &&
          status.canary === undefined &&
          status.workload?.canaryReplicas === 0 &&
          r.currentWeights()?.primary === 100
          ? status
          : undefined;
      },
      timeoutMs,
    );
  }

  before(async () => {
    env = await startRolloutEnv("sts-restart", { controller: false });
    standIn = statefulSetStandIn(env.kc, env.namespace);
    controllers.start();
    env.exporter.set(TEST_METRICS.errors, name, 0);
    env.exporter.set(TEST_METRICS.latency, name, 120);
    env.exporter.set(TEST_METRICS.requests, name, 1000);
    recorder = await RolloutRecorder.start(env.kc, env.namespace, name);
    env.recorders.push(recorder);
    await env.apps.create({
      metadata: { name },
      spec: appSpec(env, name, {}, { replicas: 3, testReplicas: 1, workload: { kind: "StatefulSet" } }),
    });
    await untilRest("Healthy", { at: Date.now(), generation: 1 });
  });
  after(async () => {
    await controllers.stop();
    await standIn.stop();
    await env.stop();
  });

  test(
    "killed after each step and at promotion: every step once, the highest ordinal moved once",
    { timeout: 180_000 },
    async () => {
      const before = (await env.apps.get(name)).status;
      assert.equal(before?.primaryImage, v1);
      const stable = revisionOf(before, "stable");
      assert.notEqual(stable, "");
      const patched = await changeImage(env, name, v2);
      for (const weight of [10, 20, 30, 40, 50]) {
        await untilWeight(recorder, weight, 60_000);
        await killAndReplace();
      }
      await recorder.until(
        `${name} promoting`,
        (r) => (r.app?.status?.canary?.stage === "Promoting" || r.app?.status?.canary === undefined ? true : undefined),
        60_000,
      );
      await killAndReplace();
      const status = await untilRest("Healthy", patched);

      assert.equal(status.primaryImage, v2);
      assert.deepEqual(recorder.weightPairs(patched.at), PROMOTED_STEP_BY_STEP);
      const steps = (await appEvents(env, name))
        .filter((e) => e.reason === "StepAdvanced")
        .map((e) => /shifted (\d+)%/.exec(e.message)?.[1]);
      assert.deepEqual(steps, ["10", "20", "30", "40", "50"], "each step taken once");
      const tested = revisionOf(status, "stable");
      assert.notEqual(tested, stable);
      assert.deepEqual(states(patched.at), [
        [2, [stable, stable, tested]],
        [0, [tested, tested, tested]],
      ]);
      assert.equal(status.workload?.stableReplicas, 3);
      console.log(
        `# ${name}: ${controllers.kills} kills; the StatefulSet went through ${states(patched.at).length} states`,
      );
    },
  );

  test(
    "killed during the rollback: the failure recorded once, the tested ordinal back on its revision",
    { timeout: 120_000 },
    async () => {
      const stable = revisionOf((await env.apps.get(name)).status, "stable");
      env.exporter.set(TEST_METRICS.errors, name, 3);
      const patched = await changeImage(env, name, v3);
      const decided = await recorder.until(
        "the rollback decided",
        (r) => (r.app?.status?.canary?.stage === "RollingBack" ? r.app.status : undefined),
        60_000,
      );
      await killAndReplace();
      const first = decided.failedImages?.find((f) => f.image === v3);
      assert.ok(first !== undefined, "the failure is in the status that decided the rollback");

      const status = await untilRest("Failed", patched);
      const records = (status.failedImages ?? []).filter((f: FailedImage) => f.image === v3);
      assert.deepEqual(records, [first], "the failure is the one recorded at the decision, not recorded again");
      assert.equal(status.primaryImage, v2);
      const history = states(patched.at);
      const tested = history[0]?.[1][2] ?? "";
      assert.notEqual(tested, stable);
      assert.deepEqual(history, [
        [2, [stable, stable, tested]],
        [0, [stable, stable, stable]],
      ]);
      assert.equal(revisionOf(status, "stable"), stable);
    },
  );
});
