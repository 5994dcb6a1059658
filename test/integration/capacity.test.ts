/**
 * Capacity follows weight (spec.scaling: weighted), on the real API server with a real Prometheus (the
 * Deployment controller is played by the test, which holds back how many of the secondary's pods become
 * available): the secondary is sized for the weight it takes next, and the weight moves only once those
 * pods are Available, and the wait for them is said; the primary keeps its replicas until promotion.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { eventually } from "../support/kube.js";
import { getDeployment } from "../support/workloads.js";
import {
  appEvents,
  appSpec,
  changeImage,
  deployApp,
  image,
  INTERVAL_MS,
  startRolloutEnv,
  untilSettled,
  untilWeight,
  type RolloutEnv,
} from "../support/rollout-env.js";

describe("capacity follows weight", () => {
  let env: RolloutEnv;
  before(async () => {
    env = await startRolloutEnv("capacity");
  });
  after(async () => env.stop());

  test(
    "capacity follows weight: the secondary scales to ceil(replicas × weight / 100) before the weight moves",
    { timeout: 120_000 },
    async () => {
      const name = "weighted";
      const secondary = `${name}-secondary`;
      const recorder = await deployApp(
        env,
        name,
        appSpec(env, name, { stepWeights: [10, 30, 50] }, { replicas: 10, scaling: "weighted" }),
      );
      // Only one pod of the secondary comes up until the test lets more.
      env.podLimits.set(secondary, 1);
      const patched = await changeImage(env, name, image(name, "v2"));
      await untilWeight(recorder, 10);

      // Sized for the next step (30 % of 10 → 3 pods) at once; with 1 Available the weight stays at 10.
      await sleep(3 * INTERVAL_MS);
      assert.equal((await getDeployment(env.kc, env.namespace, secondary))?.spec?.replicas, 3);
      assert.equal(recorder.currentWeights()?.secondary, 10, recorder.describe());
      assert.equal((await getDeployment(env.kc, env.namespace, `${name}-primary`))?.spec?.replicas, 10);
      // The wait says so: in the Progressing condition, and in one Event however many reconciles it lasts.
      const waiting = (await env.apps.get(name)).status?.conditions?.find((c) => c.type === "Progressing");
      assert.equal(waiting?.reason, "WaitingForCapacity");
      assert.match(waiting?.message ?? "", /waiting for 3 secondary pods Available before 30% \(1 of 3 so far\)/);
      const said = (await appEvents(env, name)).filter((e) => e.reason === "WaitingForCapacity");
      assert.equal(said.length, 1, JSON.stringify(said));
      assert.equal(said[0]?.count, 1);

      // The 3 pods come up: the step's analysis runs, the weight moves to 30, the secondary grows for 50.
      env.podLimits.set(secondary, 3);
      await untilWeight(recorder, 30);
      await eventually("the secondary sized for 50 %", async () =>
        (await getDeployment(env.kc, env.namespace, secondary))?.spec?.replicas === 5 ? true : undefined,
      );
      await sleep(2 * INTERVAL_MS);
      assert.equal(recorder.currentWeights()?.secondary, 30, recorder.describe());

      env.podLimits.delete(secondary);
      await untilSettled(recorder, "Healthy", patched);
      // Never more weight than the secondary's pods could take: 10 % on 1 pod, 30 % on 3, 50 % on 5.
      assert.deepEqual(
        recorder.weightPairs(patched.at).map(([, s]) => s),
        [0, 10, 30, 50, 0],
      );
      assert.equal((await getDeployment(env.kc, env.namespace, `${name}-primary`))?.spec?.replicas, 10);
    },
  );
});
