/**
 * Progressive delivery on the real API server with a real Prometheus: a good image goes through every
 * weight of its sequence and is promoted; an image changed mid-test ends the test cleanly and the new
 * image is tested instead. The Deployment controller is played by the test (api profile).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  appEvents,
  appSpec,
  changeImage,
  deployApp,
  ERRORS_CHECK,
  image,
  LATENCY_CHECK,
  recordTimings,
  secondaryExists,
  SEED_QUERY,
  startRolloutEnv,
  untilSettled,
  untilWeight,
  type RolloutEnv,
  PROMOTED_STEP_BY_STEP,
} from "../support/rollout-env.js";
import { seen } from "../support/rollout-recorder.js";

describe("rollout: promotion", () => {
  let env: RolloutEnv;

  before(async () => {
    env = await startRolloutEnv("rollout-promote");
  });
  after(async () => {
    env.timings.print("promotion");
    await env.stop();
  });

  test("a good image is promoted through 10, 20, 30, 40 and 50 %", { timeout: 90_000 }, async () => {
    const name = "shop";
    const recorder = await deployApp(env, name, appSpec(env, name, { metrics: [] }, { prometheusQuery: SEED_QUERY }));
    const v1 = image(name, "v1");
    const v2 = image(name, "v2");

    const patched = await changeImage(env, name, v2);
    const status = await untilSettled(recorder, "Healthy", patched);

    assert.deepEqual(recorder.weightPairs(patched.at), PROMOTED_STEP_BY_STEP);
    assert.deepEqual(seen(recorder.secondary, patched.at), [v2, null], "the secondary ran v2, then was removed");
    assert.deepEqual(seen(recorder.primary), [null, v1, v2], "the primary ran v1, then v2");
    assert.equal(await secondaryExists(env, name), false);

    assert.equal(status.phase, "Healthy");
    assert.equal(status.primaryImage, v2);
    assert.deepEqual(status.weights, { primary: 100, secondary: 0 });
    assert.equal(status.lastPromotion?.image, v2);
    assert.ok(
      Date.parse(status.lastPromotion?.time ?? "") >= patched.at - 1000,
      "lastPromotion.time is this promotion",
    );
    assert.equal(status.failedImages?.length ?? 0, 0);
    const progressing = status.conditions?.find((c) => c.type === "Progressing");
    assert.equal(progressing?.status, "False");
    assert.equal(progressing?.reason, "Promoted");

    const events = await appEvents(env, name);
    const reasons = events.map((e) => e.reason);
    for (const reason of ["TestStarted", "StepAdvanced", "PrimaryUpdated", "Promoted"]) {
      assert.ok(reasons.includes(reason), `a ${reason} Event (got ${reasons.join(", ")})`);
    }
    const steps = events.filter((e) => e.reason === "StepAdvanced").map((e) => /shifted (\d+)%/.exec(e.message)?.[1]);
    assert.deepEqual(steps, ["10", "20", "30", "40", "50"]);
    assert.ok(
      events.every((e) => e.type === "Normal"),
      "no warnings for a good image",
    );

    // What one rollout costs the API server: each transition is one status write, and a weight the transition's
    // own Event tells (StepAdvanced) is not told a second time as "Updated VirtualService".
    const writes = env.controller?.observer.writesSince(patched.at) ?? [];
    const byVerb = new Map<string, number>();
    for (const w of writes) byVerb.set(`${w.verb} ${w.kind}`, (byVerb.get(`${w.verb} ${w.kind}`) ?? 0) + 1);
    console.log(`# ${name}: ${writes.length} writes: ${[...byVerb].map(([k, n]) => `${k} ${n}`).join(", ")}`);
    console.log(`# ${name}: Events ${reasons.join(", ")}`);
    // Each transition is written once: the mark that its Events were told rides on a later write (it was a
    // write of its own, 27 status writes for these 9 transitions).
    const transitions = events.filter((e) =>
      ["TestStarted", "StepAdvanced", "Promoting", "PrimaryUpdated", "Promoted"].includes(e.reason),
    ).length;
    assert.equal(transitions, 9);
    const statusWrites = writes.filter((w) => w.verb === "status").length;
    assert.ok(statusWrites < 2 * transitions, `${statusWrites} status writes for ${transitions} transitions`);

    const timings = recordTimings(env, recorder, patched);
    console.log(
      `# ${name}: secondary created ${timings.secondaryCreatedMs} ms after the patch; steps took ${timings.stepExtraMs.join(", ")} ms beyond the interval`,
    );
  });

  test("an explicit stepWeights sequence is followed: 20 %, then 60 %", { timeout: 60_000 }, async () => {
    const name = "cart";
    const recorder = await deployApp(
      env,
      name,
      appSpec(env, name, { stepWeights: [20, 60], metrics: [ERRORS_CHECK, LATENCY_CHECK] }),
    );
    const patched = await changeImage(env, name, image(name, "v2"));
    const status = await untilSettled(recorder, "Healthy", patched);
    assert.deepEqual(recorder.weightPairs(patched.at), [
      [100, 0],
      [80, 20],
      [40, 60],
      [100, 0],
    ]);
    assert.equal(status.primaryImage, image(name, "v2"));
    recordTimings(env, recorder, patched);
  });

  test(
    "an image changed mid-test ends that test, then the new image is tested and promoted",
    { timeout: 90_000 },
    async () => {
      const name = "web";
      const recorder = await deployApp(env, name, appSpec(env, name));
      const [v1, v2, v4] = [image(name, "v1"), image(name, "v2"), image(name, "v4")];

      const patched = await changeImage(env, name, v2);
      await untilWeight(recorder, 10);
      const patchedAgain = await changeImage(env, name, v4);
      // The superseded test hands all traffic back before the new one takes any.
      await recorder.until("the route back on the primary", (r) =>
        r.currentWeights()?.secondary === 0 ? true : undefined,
      );
      await recorder.until("the secondary on v4", (r) => (r.currentSecondary() === v4 ? true : undefined));
      const status = await untilSettled(recorder, "Healthy", patchedAgain);

      assert.deepEqual(recorder.weightPairs(patched.at), [
        [100, 0],
        [90, 10],
        [100, 0],
        [90, 10],
        [80, 20],
        [70, 30],
        [60, 40],
        [50, 50],
        [100, 0],
      ]);
      assert.deepEqual(seen(recorder.secondary, patched.at), [v2, v4, null]);
      assert.deepEqual(seen(recorder.primary), [null, v1, v4], "v2 never reached the primary");
      assert.equal(status.primaryImage, v4);
      assert.equal(status.lastPromotion?.image, v4);
      assert.equal(
        status.failedImages?.find((f) => f.image === v2),
        undefined,
        "a superseded image is not recorded as failed",
      );

      const events = await appEvents(env, name);
      assert.ok(events.some((e) => e.reason === "TestSuperseded" && e.message.includes(v4)));
      const promoted = events.filter((e) => e.reason === "Promoted");
      assert.equal(promoted.length, 1);
      assert.ok(promoted[0]?.message.includes(v4));
      assert.ok(!events.some((e) => e.type === "Warning"), `no warnings: ${JSON.stringify(events)}`);
      recordTimings(env, recorder, patched);
    },
  );
});
