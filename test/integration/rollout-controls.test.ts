/**
 * The manual controls on a running test, on the real API server with a real Prometheus: pause holds the
 * weight until the annotation goes, promote hands the image to the primary from a middle step, abort rolls
 * back and records the image. The one-shot annotations are removed by the controller.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { ANNOTATIONS } from "../../src/api/types.js";
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
  type Patched,
  type RolloutEnv,
} from "../support/rollout-env.js";
import { seen, type RolloutRecorder } from "../support/rollout-recorder.js";

describe("rollout: manual controls", () => {
  const name = "ctl";
  const [v1, v2, v3] = [image(name, "v1"), image(name, "v2"), image(name, "v3")];
  let env: RolloutEnv;
  let recorder: RolloutRecorder;
  let patched: Patched;

  before(async () => {
    env = await startRolloutEnv("rollout-controls");
    recorder = await deployApp(env, name, appSpec(env, name));
  });
  after(async () => {
    env.timings.print("controls");
    await env.stop();
  });

  test("paused holds the weight over several intervals; removing it resumes", { timeout: 60_000 }, async () => {
    patched = await changeImage(env, name, v2);
    await untilWeight(recorder, 10);
    await env.apps.annotate(name, { [ANNOTATIONS.paused]: "true" });
    const pausedAt = await recorder.until("phase Paused", (r) =>
      r.app?.status?.phase === "Paused" ? Date.now() : undefined,
    );
    await sleep(3 * INTERVAL_MS);

    assert.deepEqual(recorder.weightPairs(pausedAt), [[90, 10]], "the weight held while paused");
    const paused = await env.apps.get(name);
    assert.equal(paused.status?.phase, "Paused");
    assert.ok(paused.status?.canary?.pausedAt !== undefined);
    assert.equal(paused.metadata.annotations?.[ANNOTATIONS.paused], "true", "paused is the user's to remove");
    assert.match(paused.status?.message ?? "", /^Paused testing .* at step 1 of 5/);

    await env.apps.annotate(name, { [ANNOTATIONS.paused]: null });
    const resumedAt = await recorder.until("phase Progressing", (r) =>
      r.app?.status?.phase === "Progressing" ? Date.now() : undefined,
    );
    const stepAt = await untilWeight(recorder, 20);
    console.log(`# ${name}: next step ${stepAt - resumedAt} ms after the resume (interval ${INTERVAL_MS} ms)`);
    const reasons = (await appEvents(env, name)).map((e) => e.reason);
    assert.ok(reasons.includes("Paused") && reasons.includes("Resumed"), reasons.join(", "));
  });

  test("promote=now promotes from a middle step at once", { timeout: 60_000 }, async () => {
    await untilWeight(recorder, 30);
    const annotated = await env.apps.annotate(name, { [ANNOTATIONS.promote]: "now" });
    const status = await untilSettled(recorder, "Healthy", { generation: annotated.metadata.generation ?? 0 });

    assert.deepEqual(recorder.weightPairs(patched.at), [
      [100, 0],
      [90, 10],
      [80, 20],
      [70, 30],
      [100, 0],
    ]);
    assert.deepEqual(seen(recorder.primary), [null, v1, v2]);
    assert.equal(status.primaryImage, v2);
    assert.equal(status.lastPromotion?.image, v2);
    assert.equal(status.conditions?.find((c) => c.type === "Progressing")?.reason, "Promoted");
    const app = await env.apps.get(name);
    assert.equal(app.metadata.annotations?.[ANNOTATIONS.promote], undefined, "the promote annotation was removed");
    const manual = (await appEvents(env, name)).find((e) => e.reason === "PromotedManually");
    assert.match(manual?.message ?? "", /at step 3 of 5/);
    recordTimings(env, recorder, patched);
  });

  test("abort=now rolls back and records the image as Aborted", { timeout: 60_000 }, async () => {
    const aborted = await changeImage(env, name, v3);
    await untilWeight(recorder, 10);
    await env.apps.annotate(name, { [ANNOTATIONS.abort]: "now" });
    const status = await untilSettled(recorder, "Failed", aborted);

    assert.deepEqual(recorder.weightPairs(aborted.at), [
      [100, 0],
      [90, 10],
      [100, 0],
    ]);
    assert.deepEqual(seen(recorder.secondary, aborted.at), [v3, null]);
    assert.equal(status.primaryImage, v2);
    const failed = status.failedImages?.[0];
    assert.equal(failed?.image, v3);
    assert.equal(failed?.reason, "Aborted");
    assert.equal(status.conditions?.find((c) => c.type === "Progressing")?.reason, "Aborted");
    const app = await env.apps.get(name);
    assert.equal(app.metadata.annotations?.[ANNOTATIONS.abort], undefined, "the abort annotation was removed");
    const warnings = (await appEvents(env, name)).filter((e) => e.type === "Warning").map((e) => e.reason);
    assert.deepEqual(warnings, ["RollingBack", "RolledBack"]);
  });
});
