/**
 * A controller that stays alive through a kube-apiserver outage: it does not stop, it retries with backoff
 * rather than in a hot loop, its informers recover when the server is back and see what changed while it was
 * down (a spec change made through a second API server on the same etcd), a spec change made right after the
 * restart is acted on, and an app in the middle of a rollout ends right with every step taken once.
 * It runs its own control plane (api profile with an observer API server), so the outage disturbs no other file.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { startControlPlane, type ControlPlane } from "../../e2e/cluster/index.js";
import { loadKubeConfig } from "../../src/kube/client.js";
import { canaryApps } from "../support/kube.js";
import {
  appEvents,
  appSpec,
  changeImage,
  deployApp,
  image,
  startRolloutEnv,
  untilSettled,
  untilWeight,
  type RolloutEnv,
  PROMOTED_STEP_BY_STEP,
} from "../support/rollout-env.js";
import { seen, type RolloutRecorder } from "../support/rollout-recorder.js";

const OUTAGE_MS = 10_000;

describe("kube-apiserver outage under a running controller", () => {
  let cp: ControlPlane;
  let env: RolloutEnv;
  const recorders = new Map<string, RolloutRecorder>();
  const previousKubeconfig = process.env["KUBECONFIG"];

  before(async () => {
    cp = await startControlPlane({ profile: "api", observer: true, handleSignals: false });
    // The env's helpers (and the controller) read the control plane from the environment.
    process.env["KUBECONFIG"] = cp.kubeconfigPath;
    env = await startRolloutEnv("outage");
    for (const name of ["moving", "changed-during", "changed-after"]) {
      recorders.set(name, await deployApp(env, name, appSpec(env, name)));
    }
  });
  after(async () => {
    await env.stop();
    await cp.stop();
    process.env["KUBECONFIG"] = previousKubeconfig;
  });

  test("stays alive, recovers its informers and ends a rollout right", { timeout: 180_000 }, async () => {
    const controller = env.controller;
    assert.ok(controller);
    const moving = recorders.get("moving");
    const during = recorders.get("changed-during");
    const afterwards = recorders.get("changed-after");
    assert.ok(moving && during && afterwards);
    let stopped: unknown;
    void controller.running.done.then((reason) => (stopped = reason));

    const patched = await changeImage(env, "moving", image("moving", "v2"));
    await untilWeight(moving, 20);
    const stoppedAt = Date.now();
    await cp.stopApiServer();
    // Through the second API server: the same etcd, a change the controller's caches cannot have seen.
    assert.ok(cp.observerKubeconfigPath);
    const observerApps = canaryApps(loadKubeConfig(cp.observerKubeconfigPath), env.namespace);
    const changedDuring = await observerApps.patchSpec("changed-during", { image: image("changed-during", "v2") });
    await new Promise((resolve) => setTimeout(resolve, OUTAGE_MS));
    const attempts = controller.observer.writesSince(stoppedAt).length;
    assert.equal(stopped, undefined, "the controller did not stop during the outage");
    await cp.startApiServer();
    const restartedAt = Date.now();
    const changedAfter = await changeImage(env, "changed-after", image("changed-after", "v2"));
    console.log(`# outage of ${Date.now() - stoppedAt} ms: ${attempts} write attempts while the server was down`);
    // Retries back off: a handful per app over the outage, not a hot loop.
    assert.ok(attempts <= 30, `${attempts} write attempts during a ${OUTAGE_MS} ms outage`);

    const [movingStatus, duringStatus, afterStatus] = await Promise.all([
      untilSettled(moving, "Healthy", patched, 90_000),
      untilSettled(during, "Healthy", { generation: changedDuring.metadata.generation ?? 0 }, 90_000),
      untilSettled(afterwards, "Healthy", changedAfter, 90_000),
    ]);
    console.log(`# all three apps settled ${Date.now() - restartedAt} ms after the restart`);
    assert.equal(stopped, undefined, "the controller is still running");
    assert.equal(controller.running.health().healthy, true);
    assert.equal(controller.running.ready(), true);

    assert.equal(movingStatus.primaryImage, image("moving", "v2"));
    assert.deepEqual(
      moving.weightPairs(patched.at),
      PROMOTED_STEP_BY_STEP,
      "every step once, none skipped, across the outage",
    );
    const steps = (await appEvents(env, "moving"))
      .filter((e) => e.reason === "StepAdvanced")
      .map((e) => /shifted (\d+)%/.exec(e.message)?.[1]);
    assert.deepEqual(steps, ["10", "20", "30", "40", "50"], "each step's Event once");

    // The changes the caches could only learn of after the outage were acted on.
    assert.equal(duringStatus.primaryImage, image("changed-during", "v2"));
    assert.deepEqual(seen(during.primary), [null, image("changed-during", "v1"), image("changed-during", "v2")]);
    assert.equal(afterStatus.primaryImage, image("changed-after", "v2"));
    for (const name of ["moving", "changed-during", "changed-after"]) {
      const promoted = (await appEvents(env, name)).filter((e) => e.reason === "Promoted");
      assert.equal(
        promoted.reduce((n, e) => n + e.count, 0),
        1,
        `${name}: one Promoted Event`,
      );
    }
  });
});
