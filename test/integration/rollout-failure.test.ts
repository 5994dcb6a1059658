/**
 * Tests that fail, on the real API server with a real Prometheus: a bad image rolls back and is
 * remembered until retried; a secondary that never becomes available rolls back at its deadline without
 * ever taking traffic; Prometheus going away fails the test, or holds it when told to wait.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { startPrometheus } from "../../e2e/prometheus.js";
import { ANNOTATIONS } from "../../src/api/types.js";
import { TEST_METRICS } from "../support/exporter.js";
import { eventually } from "../support/kube.js";
import {
  appEvents,
  appSpec,
  changeImage,
  deployApp,
  ERRORS_CHECK,
  image,
  INTERVAL_MS,
  LATENCY_CHECK,
  recordTimings,
  secondaryExists,
  startRolloutEnv,
  untilScraping,
  untilSettled,
  untilWeight,
  type RolloutEnv,
} from "../support/rollout-env.js";
import { seen, type RolloutRecorder } from "../support/rollout-recorder.js";
import { startTcpProxy } from "../support/tcp-proxy.js";

describe("rollout: failures", () => {
  let env: RolloutEnv;

  before(async () => {
    env = await startRolloutEnv("rollout-fail");
  });
  after(async () => {
    env.timings.print("failures");
    await env.stop();
  });

  describe("a bad image", () => {
    const name = "pay";
    const [v1, v3] = [image(name, "v1"), image(name, "v3")];
    let recorder: RolloutRecorder;

    test("rolls back on its first analysis and is recorded with the measured value", { timeout: 60_000 }, async () => {
      recorder = await deployApp(
        env,
        name,
        appSpec(env, name, { maxWeight: 20, metrics: [ERRORS_CHECK, LATENCY_CHECK] }),
      );
      env.exporter.set(TEST_METRICS.errors, name, 7);
      const patched = await changeImage(env, name, v3);
      const status = await untilSettled(recorder, "Failed", patched);

      assert.deepEqual(recorder.weightPairs(patched.at), [
        [100, 0],
        [90, 10],
        [100, 0],
      ]);
      assert.deepEqual(seen(recorder.secondary, patched.at), [v3, null], "the secondary ran v3, then was removed");
      assert.deepEqual(seen(recorder.primary), [null, v1], "the primary kept v1");
      assert.equal(await secondaryExists(env, name), false);

      assert.equal(status.primaryImage, v1);
      assert.deepEqual(status.weights, { primary: 100, secondary: 0 });
      const failed = status.failedImages?.[0];
      assert.equal(failed?.image, v3);
      assert.equal(failed?.reason, "AnalysisFailed");
      assert.equal(failed?.metric, "errors");
      assert.equal(failed?.value, 7);
      assert.match(failed?.message ?? "", /7 > 0/);
      assert.ok(Date.parse(failed?.failedAt ?? "") >= patched.at - 1000);
      const progressing = status.conditions?.find((c) => c.type === "Progressing");
      assert.equal(progressing?.status, "False");
      assert.equal(progressing?.reason, "RolledBack");
      assert.equal(status.conditions?.find((c) => c.type === "Ready")?.status, "True");

      const events = await appEvents(env, name);
      const warnings = events.filter((e) => e.type === "Warning").map((e) => e.reason);
      assert.deepEqual(warnings, ["AnalysisFailed", "RollingBack", "RolledBack"]);
      assert.match(events.find((e) => e.reason === "AnalysisFailed")?.message ?? "", /errors 7 > 0/);
      recordTimings(env, recorder, patched);
    });

    test("is not tested again while spec.image names it, and the status says so", { timeout: 60_000 }, async () => {
      const since = Date.now();
      // A new generation makes the controller look at the failed image again.
      const edited = await env.apps.patchSpec(name, { pod: { labels: { team: "payments" } } });
      const generation = edited.metadata.generation ?? 0;
      await recorder.until("the edit observed", (r) =>
        (r.app?.status?.observedGeneration ?? 0) >= generation ? true : undefined,
      );
      await sleep(3 * INTERVAL_MS);

      assert.deepEqual(seen(recorder.secondary, since), [], "no secondary appeared");
      assert.deepEqual(recorder.weightPairs(since), [[100, 0]]);
      const app = await env.apps.get(name);
      assert.equal(app.status?.phase, "Failed");
      assert.equal(app.status?.canary, undefined);
      const message = app.status?.message ?? "";
      assert.match(message, new RegExp(`Rolled back ${v3.replaceAll(".", "\\.")}`));
      assert.ok(message.includes(`${ANNOTATIONS.retry}=${v3}`), `the message names the retry command: ${message}`);
      const refused = (await appEvents(env, name)).filter((e) => e.reason === "FailedImage");
      assert.equal(refused.length, 1, "one FailedImage warning for the new generation");
      assert.ok(refused[0]?.message.includes(v3));
    });

    test("is tested again after the retry annotation, and promoted once healthy", { timeout: 60_000 }, async () => {
      env.exporter.set(TEST_METRICS.errors, name, 0);
      const since = Date.now();
      const annotated = await env.apps.annotate(name, { [ANNOTATIONS.retry]: v3 });
      const status = await recorder.until(
        "the retried image promoted",
        (r) =>
          r.app?.status?.phase === "Healthy" &&
          r.app.status.primaryImage === v3 &&
          r.currentSecondary() === null &&
          r.currentWeights()?.primary === 100
            ? r.app.status
            : undefined,
        60_000,
      );

      assert.equal(
        status.failedImages?.find((f) => f.image === v3),
        undefined,
        "v3 is no longer recorded as failed",
      );
      assert.equal(recorder.app?.metadata.annotations?.[ANNOTATIONS.retry], undefined, "the annotation was removed");
      assert.deepEqual(recorder.weightPairs(since), [
        [100, 0],
        [90, 10],
        [80, 20],
        [100, 0],
      ]);
      assert.deepEqual(seen(recorder.secondary, since), [v3, null]);
      const events = await appEvents(env, name);
      assert.ok(events.some((e) => e.reason === "RetryRequested"));
      // The two tests' TestStarted Events read the same, so they show as one Event with count 2.
      const started = events.filter((e) => e.reason === "TestStarted").reduce((n, e) => n + e.count, 0);
      assert.equal(started, 2, "a second test started");
      recordTimings(env, recorder, { at: since, generation: annotated.metadata.generation ?? 0 });
    });
  });

  test(
    "a secondary that never becomes available is rolled back at its progress deadline, having had no traffic",
    { timeout: 60_000 },
    async () => {
      const name = "slow";
      const recorder = await deployApp(env, name, appSpec(env, name, { progressDeadlineSeconds: 10 }));
      env.unavailable.add(`${name}-secondary`);
      const v2 = image(name, "v2");
      const patched = await changeImage(env, name, v2);
      const startedAt = await recorder.until("the test started", (r) => r.app?.status?.canary?.startedAt);
      const status = await untilSettled(recorder, "Failed", patched);

      assert.deepEqual(recorder.weightPairs(patched.at), [[100, 0]], "the secondary never got traffic");
      assert.deepEqual(seen(recorder.secondary, patched.at), [v2, null]);
      const failed = status.failedImages?.[0];
      assert.equal(failed?.image, v2);
      assert.equal(failed?.reason, "ProgressDeadlineExceeded");
      assert.match(failed?.message ?? "", /within 10s/);
      assert.equal(failed?.metric, undefined);
      // Both times are the controller's own, from the status.
      const waited = Date.parse(failed?.failedAt ?? "") - Date.parse(startedAt);
      assert.ok(waited >= 10_000, `rolled back ${waited} ms after the test started, before the deadline`);
      console.log(
        `# ${name}: rolled back ${Date.parse(failed?.failedAt ?? "") - patched.at} ms after the patch (progress deadline 10 s)`,
      );
      const reasons = (await appEvents(env, name)).map((e) => e.reason);
      assert.ok(!reasons.includes("StepAdvanced"));
      assert.ok(reasons.includes("RolledBack"));
    },
  );

  test("Prometheus going away mid-test fails the test (QueryFailed) by default", { timeout: 60_000 }, async () => {
    const name = "nometrics";
    // A Prometheus of this app's own, to be stopped.
    const own = await startPrometheus({ targets: [env.exporter.target], scrapeIntervalSeconds: 1 });
    try {
      await untilScraping(own);
      const recorder = await deployApp(env, name, appSpec(env, name, {}, { prometheusURL: own.url }));
      const v2 = image(name, "v2");
      const patched = await changeImage(env, name, v2);
      await untilWeight(recorder, 10);
      await own.stop();
      const status = await untilSettled(recorder, "Failed", patched);

      assert.deepEqual(seen(recorder.primary), [null, image(name, "v1")], "never promoted");
      const failed = status.failedImages?.[0];
      assert.equal(failed?.image, v2);
      assert.equal(failed?.reason, "AnalysisFailed");
      assert.equal(failed?.metric, "errors");
      assert.equal(failed?.value, undefined, "no value was measured");
      assert.match(failed?.message ?? "", /query failed/);
      const failedAnalysis = env.controller?.observer.statuses
        .filter((s) => s.app === name)
        .map((s) => s.canary?.lastAnalysis)
        .find((a) => a !== undefined && !a.passed);
      assert.equal(failedAnalysis?.metrics[0]?.reason, "QueryFailed");
      const pairs = recorder.weightPairs(patched.at);
      assert.deepEqual(pairs.at(-1), [100, 0]);
      assert.ok(
        pairs.every(([, s]) => s <= 20),
        `rolled back at the first analysis without Prometheus: ${JSON.stringify(pairs)}`,
      );
    } finally {
      await own.stop();
    }
  });

  test(
    "with failWhenPrometheusFails false the secondary gets no traffic while Prometheus is away, and the test goes on after",
    { timeout: 90_000 },
    async () => {
      const name = "patient";
      const proxy = await startTcpProxy(new URL(env.prometheus.url).host);
      try {
        const recorder = await deployApp(
          env,
          name,
          appSpec(env, name, { stepWeights: [10, 20], failWhenPrometheusFails: false }, { prometheusURL: proxy.url }),
        );
        const v2 = image(name, "v2");
        const patched = await changeImage(env, name, v2);
        await untilWeight(recorder, 10);
        await proxy.down();
        const downAt = Date.now();
        // Two analyses that could not reach Prometheus, then one more interval.
        const inconclusive = new Set<string>();
        await recorder.until(
          "two inconclusive analyses",
          (r) => {
            const last = r.app?.status?.canary?.lastAnalysis;
            if (last !== undefined && !last.passed) inconclusive.add(last.time);
            return inconclusive.size >= 2 ? true : undefined;
          },
          30_000,
        );
        await sleep(INTERVAL_MS);
        const held = await env.apps.get(name);
        // No verdict can be had: no traffic goes to an image nobody can judge (the test stays at its step).
        assert.deepEqual(
          recorder.weightPairs(downAt),
          [
            [90, 10],
            [100, 0],
          ],
          "the secondary's weight went to 0 while Prometheus was away",
        );
        assert.deepEqual(seen(recorder.primary), [null, image(name, "v1")], "not promoted while Prometheus was away");
        assert.equal(held.status?.phase, "Progressing");
        assert.equal(held.status?.canary?.step, 0);
        assert.equal(held.status?.canary?.failedChecks, 0, "an unreachable Prometheus is not a failed check");
        assert.equal(held.status?.canary?.lastAnalysis?.metrics[0]?.reason, "QueryFailed");
        assert.match(held.status?.message ?? "", /inconclusive/);
        await eventually("two AnalysisInconclusive Events", async () => {
          const events = (await appEvents(env, name)).filter((e) => e.reason === "AnalysisInconclusive");
          return events.reduce((n, e) => n + e.count, 0) >= 2 ? true : undefined;
        });

        await proxy.up();
        const status = await untilSettled(recorder, "Healthy", patched);
        // Back at 10 % once Prometheus answers; the step starts over and is judged on its own traffic.
        assert.deepEqual(recorder.weightPairs(patched.at), [
          [100, 0],
          [90, 10],
          [100, 0],
          [90, 10],
          [80, 20],
          [100, 0],
        ]);
        assert.equal(status.primaryImage, v2);
        assert.equal(status.failedImages?.length ?? 0, 0);
      } finally {
        await proxy.stop();
      }
    },
  );
});
