/**
 * Traffic safety at the edges, on the real API server with a real Prometheus (the Deployment controller is
 * played by the test): the secondary is kept for the drain period after the route stops sending it traffic.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { ANNOTATIONS } from "../../src/api/types.js";
import { eventually } from "../support/kube.js";
import {
  appEvents,
  appSpec,
  changeImage,
  deployApp,
  getApp,
  image,
  SEED_QUERY,
  startRolloutEnv,
  untilSettled,
  untilWeight,
  type RolloutEnv,
} from "../support/rollout-env.js";
import { TEST_METRICS } from "../support/exporter.js";
import type { RolloutRecorder } from "../support/rollout-recorder.js";

/** When the route was first seen with nothing on the secondary after `since`, and when the secondary went. */
function drainWindow(recorder: RolloutRecorder, since: number): { drainedAt: number; removedAt: number } {
  const lastStep = recorder.weights.filter((w) => w.at > since && (w.value?.secondary ?? 0) > 0).at(-1);
  const drained = recorder.weights.find((w) => w.at > (lastStep?.at ?? since) && w.value?.secondary === 0);
  const removed = recorder.secondary.find((s) => s.at > (lastStep?.at ?? since) && s.value === null);
  assert.ok(lastStep && drained && removed, recorder.describe());
  return { drainedAt: drained.at, removedAt: removed.at };
}

describe("traffic safety", () => {
  let env: RolloutEnv;
  before(async () => {
    env = await startRolloutEnv("traffic-safety");
  });
  after(async () => env.stop());

  test(
    "drain before delete: the secondary outlives the drained route by drainSeconds, at promotion and rollback",
    { timeout: 120_000 },
    async () => {
      const name = "drain";
      const recorder = await deployApp(
        env,
        name,
        appSpec(env, name, { metrics: [], stepWeights: [20] }, { prometheusQuery: SEED_QUERY, drainSeconds: 3 }),
      );
      const promoted = await changeImage(env, name, image(name, "v2"));
      await untilSettled(recorder, "Healthy", promoted);
      const promotion = drainWindow(recorder, promoted.at);

      env.exporter.set(TEST_METRICS.errors, name, 5);
      const failing = await changeImage(env, name, image(name, "v3"));
      await untilSettled(recorder, "Failed", failing);
      const rollback = drainWindow(recorder, failing.at);

      const kept = [promotion.removedAt - promotion.drainedAt, rollback.removedAt - rollback.drainedAt];
      console.log(
        `# secondary kept ${kept.map((ms) => `${ms} ms`).join(" and ")} after the route showed 0 (drainSeconds: 3)`,
      );
      for (const ms of kept) assert.ok(ms >= 3_000 - 250, `kept only ${ms} ms after the route drained`);
    },
  );

  test(
    "annotations mean what they say: abort=false does not abort, and a Warning says what abort accepts",
    { timeout: 90_000 },
    async () => {
      const name = "words";
      const recorder = await deployApp(
        env,
        name,
        appSpec(env, name, { metrics: [], stepWeights: [20, 40] }, { prometheusQuery: SEED_QUERY }),
      );
      const patched = await changeImage(env, name, image(name, "v2"));
      await untilWeight(recorder, 20);
      await env.apps.annotate(name, { [ANNOTATIONS.abort]: "false" });
      const warning = await eventually("an InvalidAnnotation Event", async () =>
        (await appEvents(env, name)).find((e) => e.reason === "InvalidAnnotation"),
      );
      assert.equal(warning.type, "Warning");
      assert.match(warning.message, /canaryapp\.io\/abort=false is not understood: use canaryapp\.io\/abort=now/);
      await eventually("the annotation removed", async () =>
        (await getApp(env, name)).metadata.annotations?.[ANNOTATIONS.abort] === undefined ? true : undefined,
      );
      const status = await untilSettled(recorder, "Healthy", patched);
      assert.equal(status.primaryImage, image(name, "v2"), "the test went on and was promoted");
      assert.equal(status.failedImages?.length ?? 0, 0);
    },
  );
});
