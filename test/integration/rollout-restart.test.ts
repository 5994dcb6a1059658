/**
 * A controller process killed (SIGKILL) in the middle of a test, then replaced: the status written before
 * each change of the world lets the new process go on exactly where the old one stopped, with no step
 * repeated or skipped, and a failure recorded once.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { FailedImage } from "../../src/api/types.js";
import { TEST_METRICS } from "../support/exporter.js";
import { eventually } from "../support/kube.js";
import { ReplacedController } from "../support/replaced-controller.js";
import {
  appEvents,
  appSpec,
  changeImage,
  deployApp,
  image,
  INTERVAL_MS,
  recordTimings,
  startRolloutEnv,
  untilSettled,
  untilWeight,
  type RolloutEnv,
  PROMOTED_STEP_BY_STEP,
} from "../support/rollout-env.js";
import { seen, type RolloutRecorder } from "../support/rollout-recorder.js";

describe("rollout: controller killed mid-test", () => {
  const name = "sturdy";
  const [v1, v2, v3] = [image(name, "v1"), image(name, "v2"), image(name, "v3")];
  let env: RolloutEnv;
  let recorder: RolloutRecorder;
  const controllers = new ReplacedController(name, () => env.namespace);

  /** SIGKILLs the running controller and starts another; resolves with the time the kill was sent. */
  const killAndReplace = async (): Promise<number> => {
    const killedAt = await controllers.killAndReplace();
    const next = controllers.current;
    // Reported, not awaited: the test goes on while the new process starts.
    void eventually("the new controller's caches synced", () =>
      next.logs.some((l) => String(l["msg"]).startsWith("caches synced")) ? true : undefined,
    ).then(
      () =>
        console.log(`# ${name}: the new controller had synced its caches ${Date.now() - killedAt} ms after the kill`),
      () => undefined,
    );
    return killedAt;
  };

  before(async () => {
    env = await startRolloutEnv("rollout-restart", { controller: false });
    controllers.start();
    recorder = await deployApp(env, name, appSpec(env, name));
  });
  after(async () => {
    env.timings.print("restart");
    await controllers.stop();
    await env.stop();
  });

  test("killed just after the 30 % step, the next controller goes on at 40 %", { timeout: 90_000 }, async () => {
    const patched = await changeImage(env, name, v2);
    await untilWeight(recorder, 30);
    const killedAt = await killAndReplace();
    const status = await untilSettled(recorder, "Healthy", patched);

    assert.deepEqual(recorder.weightPairs(patched.at), PROMOTED_STEP_BY_STEP);
    assert.deepEqual(seen(recorder.primary), [null, v1, v2]);
    assert.equal(status.primaryImage, v2);
    const steps = (await appEvents(env, name))
      .filter((e) => e.reason === "StepAdvanced")
      .map((e) => /shifted (\d+)%/.exec(e.message)?.[1]);
    assert.deepEqual(steps, ["10", "20", "30", "40", "50"], "each step taken once");

    const forty = recorder.weights.find((w) => w.at >= killedAt && w.value?.secondary === 40);
    const thirty = recorder.weights.find((w) => w.value?.secondary === 30 && w.at >= patched.at);
    if (forty !== undefined && thirty !== undefined) {
      console.log(
        `# ${name}: the step across the restart took ${forty.at - thirty.at - INTERVAL_MS} ms beyond its interval (killed ${killedAt - thirty.at} ms after 30 % appeared)`,
      );
    }
    recordTimings(env, recorder, patched);
  });

  test(
    "killed during a rollback, the next controller finishes it and records the failure once",
    { timeout: 90_000 },
    async () => {
      env.exporter.set(TEST_METRICS.errors, name, 3);
      const patched = await changeImage(env, name, v3);
      const decided = await recorder.until("the rollback decided", (r) =>
        r.app?.status?.canary?.stage === "RollingBack" ? r.app.status : undefined,
      );
      await killAndReplace();
      const world = `weights ${JSON.stringify(recorder.currentWeights())}, secondary ${recorder.currentSecondary()}`;
      console.log(`# ${name}: killed during the rollback; the world then: ${world}`);
      const first = decided.failedImages?.find((f) => f.image === v3);
      assert.ok(first !== undefined, "the failure is in the status that decided the rollback");

      const status = await untilSettled(recorder, "Failed", patched);
      const records = (status.failedImages ?? []).filter((f: FailedImage) => f.image === v3);
      assert.equal(records.length, 1);
      assert.deepEqual(records[0], first, "the failure is the one recorded at the decision, not recorded again");
      assert.equal(records[0]?.value, 3);
      assert.deepEqual(recorder.weightPairs(patched.at), [
        [100, 0],
        [90, 10],
        [100, 0],
      ]);
      assert.deepEqual(seen(recorder.primary), [null, v1, v2], "the primary kept v2");
      const events = await appEvents(env, name);
      const count = (reason: string) =>
        events.filter((e) => e.reason === reason && e.message.includes(v3)).reduce((n, e) => n + e.count, 0);
      // The killed process may have died before it wrote the decision's Events; the next one never writes
      // them again. The end of the rollback is reported by whichever process completes it, once.
      assert.ok(count("AnalysisFailed") <= 1 && count("RollingBack") <= 1);
      assert.equal(count("RolledBack"), 1);
      console.log(
        `# ${name}: Events after the kill: AnalysisFailed ${count("AnalysisFailed")}, RollingBack ${count("RollingBack")}, RolledBack ${count("RolledBack")}`,
      );
    },
  );
});
