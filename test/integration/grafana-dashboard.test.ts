/**
 * The Grafana dashboard (tools/grafana/dashboard.ts): the committed JSON, ConfigMap and chart copy are what
 * the code builds, and every PromQL expression of its panels parses and returns data on a real Prometheus
 * that scraped a running controller through a promoted release and a rolled-back one.
 */
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { findRepoRoot } from "../../e2e/cluster/toolchain.js";
import { buildDashboard, dashboardExpressions } from "../../tools/grafana/dashboard.js";
import { generated } from "../../tools/grafana/generate.js";
import { TEST_METRICS } from "../support/exporter.js";
import { eventually } from "../support/kube.js";
import { spawnController, type ControllerProcess } from "../support/process.js";
import {
  appSpec,
  changeImage,
  deployApp,
  image,
  startRolloutEnv,
  untilSettled,
  type RolloutEnv,
} from "../support/rollout-env.js";

/** What Grafana puts in place of the dashboard's variables, for a query over every app and controller. */
export function substituteVariables(expr: string): string {
  return expr
    .replaceAll("$__rate_interval", "1m")
    .replaceAll("$__range", "15m")
    .replaceAll(/\$(namespace|app|job)\b/g, ".*");
}

describe("Grafana dashboard", () => {
  test("the committed dashboard files are what tools/grafana/dashboard.ts builds (make dashboard)", async () => {
    const root = findRepoRoot();
    for (const [file, content] of Object.entries(generated())) {
      assert.equal(await readFile(join(root, file), "utf8"), content, `${file}: run \`make dashboard\``);
    }
    const board = buildDashboard();
    const titles = (board.panels ?? []).map((p) => p.title);
    for (const title of ["Phase", "Secondary weight", "Rolled back (failed images)", "Reconciles", "Memory"]) {
      assert.ok(titles.includes(title), `panel ${title}`);
    }
  });

  describe("every PromQL expression against a Prometheus scraping the controller", () => {
    let env: RolloutEnv;
    let controller: ControllerProcess;

    before(async () => {
      env = await startRolloutEnv("dashboard", { controller: false });
      // The controller as it runs in a cluster (src/main.js, its /metrics included), scraped by the env's Prometheus.
      controller = spawnController([`--namespaces=${env.namespace}`, "--leader-elect=false"], "dashboard");
      await env.prometheus.setTargets([env.exporter.target, `127.0.0.1:${await controller.port()}`]);
    });
    after(async () => {
      await controller.kill("SIGTERM");
      await env.stop();
    });

    test(
      "after a promoted and a rolled-back release, each expression parses and returns data",
      { timeout: 180_000 },
      async () => {
        // A release that is promoted...
        const good = await deployApp(env, "good", appSpec(env, "good", { maxWeight: 20 }));
        const promoted = await changeImage(env, "good", image("good", "v2"));
        await untilSettled(good, "Healthy", promoted);
        // ...and one that fails its analysis and is rolled back (its image recorded as failed).
        const bad = await deployApp(env, "bad", appSpec(env, "bad", { maxWeight: 20 }));
        env.exporter.set(TEST_METRICS.errors, "bad", 7);
        const rolledBack = await changeImage(env, "bad", image("bad", "v2"));
        const status = await untilSettled(bad, "Failed", rolledBack);
        assert.equal(status.failedImages?.[0]?.image, image("bad", "v2"));

        const expressions = dashboardExpressions(buildDashboard());
        assert.ok(expressions.length >= 12, `${expressions.length} expressions`);
        for (const expr of expressions) {
          const query = substituteVariables(expr);
          assert.doesNotMatch(query, /\$/, "every variable is substituted");
          await eventually(
            `${query}: data`,
            async () => {
              const response = await fetch(`${env.prometheus.url}/api/v1/query?query=${encodeURIComponent(query)}`);
              const body = (await response.json()) as { status: string; error?: string; data?: { result?: unknown[] } };
              // A parse error is final: fail at once, naming it.
              assert.equal(body.status, "success", `${query}: ${body.error ?? ""}`);
              return (body.data?.result?.length ?? 0) > 0 ? true : undefined;
            },
            { timeoutMs: 20_000, intervalMs: 500 },
          );
        }
      },
    );
  });
});
