/**
 * `kubectl canaryapp` during real rollouts (real controller, real Prometheus, real kubectl): the demo's
 * story — v2 passes its analysis and is promoted, v3 fails it and is rolled back — as a pipeline sees it
 * through `set image` and `wait`, and as a person sees it through `get -w` and `history`.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { TEST_METRICS } from "../support/exporter.js";
import { Kubectl, linkPlugin } from "../support/kubectl.js";
import { appSpec, deployApp, image, startRolloutEnv, type RolloutEnv } from "../support/rollout-env.js";
import type { RolloutRecorder } from "../support/rollout-recorder.js";

describe("kubectl canaryapp during real rollouts", () => {
  const name = "shop";
  const [v2, v3] = [image(name, "v2"), image(name, "v3")];
  let env: RolloutEnv;
  let kubectl: Kubectl;
  let recorder: RolloutRecorder;
  const plugin = (...args: string[]) =>
    kubectl.run(["canaryapp", ...args, "-n", env.namespace], { timeoutMs: 120_000 });

  before(async () => {
    env = await startRolloutEnv("plugin-rollout");
    kubectl = new Kubectl(linkPlugin());
    recorder = await deployApp(env, name, appSpec(env, name));
  });
  after(async () => {
    await env.stop();
  });

  test("set image v2; get -w follows every step; wait exits 0 when v2 is promoted", { timeout: 120_000 }, async () => {
    const live = kubectl.spawn(["canaryapp", "get", name, "-w", "-n", env.namespace]);
    try {
      await live.until(/^Phase: +Healthy$/m);
      const set = await plugin("set", "image", name, v2);
      assert.equal(set.code, 0, set.stderr);
      const wait = await plugin("wait", name, "--for=healthy", "--timeout=10m");
      const exitedAt = Date.now();
      assert.equal(wait.code, 0, wait.stderr);
      assert.equal(wait.stdout.trim(), `canaryapp.canaryapp.io/${name} condition met: ${v2} is healthy on the primary`);
      const promotedAt = recorder.statuses.findLast((s) => s.value.phase === "Healthy")?.at ?? 0;
      console.log(
        `# wait --for=healthy: exit 0 ${wait.ms} ms after set image, ${exitedAt - promotedAt} ms after the status said Healthy`,
      );
      // The last redraw: Healthy on v2, with the Promoted event among the last ones.
      await live.until(/^Phase: +Healthy\n^Image: +\S+:v2\n^Primary: +\S+:v2$[^]*^ +\d+s +Normal +Promoted /m);

      // Each redraw of a step shows the bar and the step; the test saw all five, in order.
      const steps = [...live.stdout.matchAll(/^Steps: +\[[#.]+\] step (\d) of 5, (\d+)% of 50%/gm)].map((m) =>
        Number(m[2]),
      );
      assert.deepEqual([...new Set(steps)], [10, 20, 30, 40, 50], live.stdout);
      // The evidence check comes first (requests to the secondary in the step), then the app's own check.
      assert.match(
        live.stdout,
        /^Analysis: +passed \d+s ago: secondary-traffic=\d+ \(min 20\) ok, errors=0 \(max 0\) ok$/m,
      );
      assert.match(live.stdout, /^Traffic: +primary 70% +secondary 30%/m);
      assert.match(live.stdout, /^ +\d+s +Normal +Promoted /m);
    } finally {
      await live.stop();
    }
  });

  test("set image v3 with errors: wait exits 2 with the reason; history names it", { timeout: 120_000 }, async () => {
    env.exporter.set(TEST_METRICS.errors, name, 3);
    const set = await plugin("set", "image", name, v3);
    assert.equal(set.code, 0, set.stderr);
    const wait = await plugin("wait", name, "--for=healthy", "--timeout=2m");
    const exitedAt = Date.now();
    const failedAt = recorder.statuses.findLast((s) => s.value.phase === "Failed")?.at ?? 0;
    console.log(
      `# wait --for=healthy: exit ${wait.code} ${wait.ms} ms after set image, ${exitedAt - failedAt} ms after the status said Failed`,
    );
    assert.equal(wait.code, 2, wait.stdout);
    assert.match(
      wait.stderr.trim(),
      new RegExp(
        `^error: canaryapp.canaryapp.io/${name} will not become healthy: ${v3.replace(/[.]/g, "\\.")} failed at \\S+: AnalysisFailed \\(errors=3\\): errors 3 > 0$`,
      ),
    );

    const history = await plugin("history", name);
    assert.equal(history.code, 0, history.stderr);
    assert.match(
      history.stdout.split("\n")[1] ?? "",
      /shop:v3 +\S+ +AnalysisFailed +errors +3 +max\(canary_test_errors\{app="\{\{name\}\}"\}\)$/,
    );
    const failed = await plugin("wait", name, "--for=failed", "--timeout=10s");
    assert.equal(failed.code, 0, failed.stderr);
  });
});
