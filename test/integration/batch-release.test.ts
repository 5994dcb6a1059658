/**
 * A batch release (spec.strategy.type: batches) on the real API server, with a controller process SIGKILLed
 * and replaced at every batch boundary: when batch 1 is decided, when it waits for approval, when batch 2 is
 * decided, when the hand-over begins and when it ends. The status written before each change of the world lets
 * each new process go on where the old one stopped: the exact replica sequence is that of an undisturbed
 * release, each batch is approved once, and the failure of a failing release is recorded once.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { CanaryApp, CanaryAppStatus } from "../../src/api/types.js";
import { ANNOTATIONS } from "../../src/api/types.js";
import { TEST_METRICS } from "../support/exporter.js";
import { eventually } from "../support/kube.js";
import { ReplacedController } from "../support/replaced-controller.js";
import {
  appEvents,
  appSpec,
  changeImage,
  deployApp,
  image,
  startRolloutEnv,
  untilSettled,
  type RolloutEnv,
} from "../support/rollout-env.js";
import { podSequence, type RolloutRecorder } from "../support/rollout-recorder.js";

describe("batch release: controller killed at every batch boundary", () => {
  const name = "batched";
  const [v1, v2, v3] = [image(name, "v1"), image(name, "v2"), image(name, "v3")];
  let env: RolloutEnv;
  let recorder: RolloutRecorder;
  const controllers = new ReplacedController(name, () => env.namespace);

  /** SIGKILLs the running controller and starts another. */
  const killAndReplace = async (where: string): Promise<void> => {
    await controllers.killAndReplace(where);
    console.log(`# ${name}: killed ${where}`);
  };

  /** Waits for the status to satisfy `check`, then kills the controller there. */
  const killWhen = async (where: string, check: (status: CanaryAppStatus) => boolean): Promise<CanaryApp> => {
    const app = await recorder.until(
      where,
      (r) => (r.app?.status !== undefined && check(r.app.status) ? structuredClone(r.app) : undefined),
      60_000,
    );
    await killAndReplace(where);
    return app;
  };

  before(async () => {
    env = await startRolloutEnv("batch-release", { controller: false });
    controllers.start();
    recorder = await deployApp(
      env,
      name,
      appSpec(env, name, {}, { replicas: 4, strategy: { type: "batches", batches: { count: 2, pause: "first" } } }),
    );
  });
  after(async () => {
    await controllers.stop();
    await env.stop();
  });

  test(
    "4 replicas, 2 batches, pause first: 3/1, paused, approved, 0/4, handed over",
    { timeout: 180_000 },
    async () => {
      const patched = await changeImage(env, name, v2);
      const since = patched.at - 1;
      await killWhen("when batch 1 is decided", (s) => s.canary?.stage === "Stepping" && s.canary.step === 0);
      const paused = await killWhen("while batch 1 waits for approval", (s) => s.canary?.approval?.batch === 1);
      assert.equal(paused.status?.conditions?.find((c) => c.type === "Ready")?.reason, "WaitingForApproval");
      assert.equal(paused.status?.batch?.summary, "1/2 paused");
      // Paused is a rest: it stays paused, with three old and one new, across the restart.
      await eventually("the new controller's caches synced", () =>
        controllers.current.logs.some((l) => String(l["msg"]).startsWith("caches synced")) ? true : undefined,
      );
      assert.equal(recorder.app?.status?.canary?.approval?.batch, 1);
      assert.deepEqual(podSequence(recorder, v1, v2, since).at(-1), [3, 1]);

      await env.apps.annotate(name, { [ANNOTATIONS.approve]: "now" });
      await killWhen("when batch 2 is decided", (s) => s.canary?.step === 1 && s.canary.approval === undefined);
      await killWhen("when the hand-over begins", (s) => s.canary?.stage === "Promoting");
      await killWhen("when the hand-over ends", (s) => s.canary?.stage === "Finalising");
      const status = await untilSettled(recorder, "Healthy", patched, 90_000);

      assert.deepEqual(podSequence(recorder, v1, v2, since), [
        [4, 0],
        [4, 1],
        [3, 1],
        [3, 4],
        [0, 4],
        [0, 6],
        [0, 4],
        [0, 6],
        [0, 4],
      ]);
      assert.equal(status.primaryImage, v2);
      assert.equal(status.batch?.summary, "2/2 finished");
      assert.equal(recorder.app?.metadata.annotations?.[ANNOTATIONS.approve], undefined, "the approval was consumed");
      const events = await appEvents(env, name);
      const count = (reason: string) => events.filter((e) => e.reason === reason).reduce((n, e) => n + e.count, 0);
      assert.equal(count("BatchApproved"), 1, "batch 1 approved once");
      assert.equal(count("NothingToApprove"), 0);
      assert.ok(count("Promoted") <= 1);
      console.log(
        `# ${name}: ${controllers.kills} kills; replica sequence ${JSON.stringify(podSequence(recorder, v1, v2, since))}`,
      );
    },
  );

  test(
    "a failing batch 1 rolls back to 4/0 across a kill, deletes the new, records the image once",
    { timeout: 180_000 },
    async () => {
      env.exporter.set(TEST_METRICS.errors, name, 3);
      const patched = await changeImage(env, name, v3);
      const since = patched.at - 1;
      const decided = await killWhen("when the rollback is decided", (s) => s.canary?.stage === "RollingBack");
      const first = decided.status?.failedImages?.find((f) => f.image === v3);
      assert.ok(first !== undefined, "the failure is in the status that decided the rollback");
      const status = await untilSettled(recorder, "Failed", patched, 90_000);
      assert.deepEqual(podSequence(recorder, v2, v3, since), [
        [4, 0],
        [4, 1],
        [3, 1],
        [4, 1],
        [4, 0],
      ]);
      const records = (status.failedImages ?? []).filter((f) => f.image === v3);
      assert.deepEqual(records, [first], "recorded once, at the decision");
      assert.equal(status.batch?.rollback?.state, "finished");
      assert.equal(status.primaryImage, v2);
    },
  );
});
