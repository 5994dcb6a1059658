/**
 * The dashboard in a real browser (issue 35), on the cluster profile: `kubectl canaryapp dashboard` on the
 * cluster's kubeconfig, Debian's Chromium driven by playwright-core, the controller and a real Prometheus
 * (test/support/rollout-env.ts, 2 s analysis intervals).
 *
 * - the page shows each step of a rollout as it happens (10 %, 20 % … 50 %), then the promoted image;
 * - a promote click, confirmed in its dialog, promotes a test that would otherwise wait a minute per step;
 * - an image rolled back by its analysis shows its reason, metric, value and query;
 * - `--all-namespaces --read-only` shows no controls and refuses them; a user who may not list CanaryApps reads
 *   why on the page.
 *
 * Runs under `make test-e2e` (KUBECONFIG set by e2e/cluster/with-cluster).
 */
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { KubeConfig } from "@kubernetes/client-node";
import type { Browser, Page } from "playwright-core";
import {
  appSpec,
  changeImage,
  deployApp,
  image,
  startRolloutEnv,
  type Patched,
  type RolloutEnv,
} from "../test/support/rollout-env.js";
import type { CanaryAppStatus } from "../src/api/types.js";
import type { RolloutRecorder } from "../test/support/rollout-recorder.js";
import { TEST_METRICS } from "../test/support/exporter.js";
import { testKubeConfigPath } from "../test/support/kube.js";
import { launchChromium, startDashboardProcess, type RunningDashboard } from "./dashboard-process.js";

/**
 * Records, in the page, every step that becomes current and every weight shown, in order (the page's own code:
 * this file is compiled without the DOM's types).
 */
const RECORD_STEPS = `(() => {
  window.seenSteps = [];
  window.seenWeights = [];
  const look = () => {
    const step = document.querySelector(".steps [aria-current=step]")?.textContent ?? "";
    if (step !== "" && window.seenSteps.at(-1) !== step) window.seenSteps.push(step);
    const weights = document.querySelector(".facts [data-testid=weights]")?.textContent ?? "";
    if (weights !== "" && window.seenWeights.at(-1) !== weights) window.seenWeights.push(weights);
  };
  new MutationObserver(look).observe(document.body, { subtree: true, childList: true, characterData: true });
  look();
})()`;

/**
 * The app at rest in `phase` after `patched`: no test, the secondary gone. (On the cluster profile the primary
 * runs the tested digest, so its image is not spec.image: e2e/promote-digest.test.ts.)
 */
function untilRest(
  recorder: RolloutRecorder,
  phase: "Healthy" | "Failed",
  patched: Pick<Patched, "generation">,
  timeoutMs = 60_000,
): Promise<CanaryAppStatus> {
  return recorder.until(
    `${recorder.name} at rest in ${phase}`,
    (r) => {
      const status = r.app?.status;
      return status !== undefined &&
        (status.observedGeneration ?? 0) >= patched.generation &&
        status.phase === phase &&
        status.canary === undefined &&
        r.currentSecondary() === null
        ? status
        : undefined;
    },
    timeoutMs,
  );
}

function recordSteps(page: Page): Promise<void> {
  return page.evaluate(RECORD_STEPS);
}

function seenSteps(page: Page): Promise<{ seenSteps: string[]; seenWeights: string[] }> {
  return page.evaluate("({ seenSteps: window.seenSteps, seenWeights: window.seenWeights })");
}

describe("kubectl canaryapp dashboard in Chromium", () => {
  let env: RolloutEnv;
  let dashboard: RunningDashboard;
  let browser: Browser;
  let web: RolloutRecorder;
  let held: RolloutRecorder;
  const started = Date.now();

  before(async () => {
    env = await startRolloutEnv("dashboard", { deploymentStandIn: false });
    [web, held, dashboard, browser] = await Promise.all([
      deployApp(env, "web", appSpec(env, "web")),
      // A minute per step: only a promote moves it on within the test.
      deployApp(env, "held", appSpec(env, "held", { interval: "60s" })),
      startDashboardProcess(["--kubeconfig", testKubeConfigPath(), "-n", env.namespace]),
      launchChromium(),
    ]);
  });
  after(async () => {
    await browser?.close();
    await dashboard?.stop();
    await env?.stop();
    console.log(`# dashboard browser test: ${((Date.now() - started) / 1000).toFixed(1)} s in all`);
  });

  test("the overview lists every app with its phase", { timeout: 30_000 }, async () => {
    const page = await browser.newPage({ viewport: { width: 1366, height: 768 } });
    await page.goto(dashboard.url);
    await page.getByRole("heading", { name: "CanaryApps" }).waitFor();
    for (const name of ["web", "held"]) {
      const row = page.locator(`tr[data-app="${env.namespace}/${name}"]`);
      await row.getByText("Healthy").waitFor();
    }
    await page.getByRole("link", { name: `${env.namespace}/web` }).click();
    await page.getByRole("heading", { name: `${env.namespace}/web` }).waitFor();
    assert.match(page.url(), new RegExp(`#/${env.namespace}/web$`));
    await page.close();
  });

  test(
    "the page shows each step of a rollout as it happens, then the promoted image",
    { timeout: 60_000 },
    async () => {
      const page = await browser.newPage({ viewport: { width: 1366, height: 768 } });
      await page.goto(`${dashboard.url}#/${env.namespace}/web`);
      await page.getByTestId("phase").getByText("Healthy").waitFor();
      await recordSteps(page);
      const v2 = image("web", "v2");
      const patched = await changeImage(env, "web", v2);
      // While it steps: each metric of the last analysis against its threshold, and the Events as they come.
      const errors = page.locator('tr[data-metric="errors"]');
      await errors.waitFor({ timeout: 30_000 });
      const metric = await errors.locator("td").allTextContents();
      assert.deepEqual(metric.slice(0, 3), ["0", "every series ≤ 0", "passed"]);
      await page.locator(".events").getByText("StepAdvanced").first().waitFor();
      await untilRest(web, "Healthy", patched);
      await page.locator(".facts").getByText(`${v2}`).first().waitFor();
      await page.getByTestId("phase").getByText("Healthy").waitFor();
      const seen = await seenSteps(page);
      assert.deepEqual(
        seen.seenSteps,
        ["10%", "20%", "30%", "40%", "50%"].map((w, i) => `step ${i + 1}, current: ${w}`),
        "every step, in order, each shown as current",
      );
      for (const weight of [10, 20, 30, 40, 50]) {
        assert.ok(
          seen.seenWeights.includes(`primary ${100 - weight}% secondary ${weight}%`),
          `weights ${100 - weight}/${weight} shown: ${seen.seenWeights.join(" | ")}`,
        );
      }
      await page.close();
    },
  );

  test("a promote click, confirmed, promotes the image under test", { timeout: 60_000 }, async () => {
    const page = await browser.newPage({ viewport: { width: 1366, height: 768 } });
    await page.goto(`${dashboard.url}#/${env.namespace}/held`);
    const v2 = image("held", "v2");
    const patched = await changeImage(env, "held", v2);
    await page.locator(".steps [aria-current=step]").getByText("10%").waitFor({ timeout: 30_000 });
    // By keyboard first: the dialog opens on Cancel, and Escape leaves without a change.
    await page.getByRole("button", { name: "Promote" }).focus();
    await page.keyboard.press("Enter");
    const dialog = page.getByRole("dialog");
    await dialog.getByText(`promote ${env.namespace}/held?`).waitFor();
    assert.equal(await page.evaluate("document.activeElement.textContent"), "Cancel");
    await page.keyboard.press("Escape");
    await dialog.waitFor({ state: "hidden" });
    await page.getByRole("button", { name: "Promote" }).click();
    await dialog.getByText(`promote ${env.namespace}/held?`).waitFor();
    await dialog.getByRole("button", { name: "Yes, promote" }).click();
    await page.getByRole("status").getByText("canaryapp.canaryapp.io/held promoted").waitFor();
    const status = await untilRest(held, "Healthy", patched, 40_000);
    assert.equal(status.primaryImage, v2);
    await page.getByTestId("phase").getByText("Healthy").waitFor();
    await page.locator(".facts").getByText(v2).first().waitFor();
    await page.close();
  });

  test("a rolled-back image shows its reason, metric, value and query", { timeout: 60_000 }, async () => {
    const page = await browser.newPage({ viewport: { width: 1366, height: 768 } });
    await page.goto(new URL(`app/${env.namespace}/web`, dashboard.url).toString());
    await page.getByTestId("phase").getByText("Healthy").waitFor();
    env.exporter.set(TEST_METRICS.errors, "web", 5);
    const v3 = image("web", "v3");
    const patched = await changeImage(env, "web", v3);
    const status = await untilRest(web, "Failed", patched);
    const failed = status.failedImages?.[0];
    assert.equal(failed?.image, v3);
    const row = page.locator(`tr[data-failed="${v3}"]`);
    await row.waitFor();
    const cells = await row.locator("td").allTextContents();
    assert.equal(cells[1], failed?.reason);
    assert.equal(cells[2], "errors");
    assert.equal(cells[3], "5");
    assert.match(cells[4] ?? "", new RegExp(TEST_METRICS.errors));
    await page.getByTestId("phase").getByText("Failed").waitFor();
    await page.getByRole("button", { name: "Retry" }).waitFor();
    await page.close();
  });

  test(
    "--all-namespaces --read-only: every namespace, no controls, and the server refuses them",
    { timeout: 30_000 },
    async () => {
      const readOnly = await startDashboardProcess([
        "--kubeconfig",
        testKubeConfigPath(),
        "--all-namespaces",
        "--read-only",
      ]);
      try {
        const page = await browser.newPage();
        await page.goto(`${readOnly.url}#/${env.namespace}/web`);
        await page.getByTestId("phase").waitFor();
        await page.getByText("all namespaces · read-only").first().waitFor();
        assert.equal(await page.getByRole("heading", { name: "Controls" }).count(), 0);
        const answer = await fetch(new URL(`api/apps/${env.namespace}/web/promote`, readOnly.url), {
          method: "POST",
          headers: { "Content-Type": "application/json" },
          body: "{}",
        });
        assert.equal(answer.status, 403);
        assert.match(((await answer.json()) as { message: string }).message, /read-only/);
        await page.close();
      } finally {
        await readOnly.stop();
      }
    },
  );

  test("a user who may not list CanaryApps reads why on the page", { timeout: 30_000 }, async () => {
    // A ServiceAccount bound to nothing: every list is forbidden.
    const name = "nobody";
    await env.core.createNamespacedServiceAccount({ namespace: env.namespace, body: { metadata: { name } } });
    const { status } = await env.core.createNamespacedServiceAccountToken({
      namespace: env.namespace,
      name,
      body: { spec: { expirationSeconds: 3600 } },
    });
    const cluster = env.kc.getCurrentCluster();
    assert.ok(cluster !== null && status?.token !== undefined);
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [cluster],
      users: [{ name, token: status.token }],
      contexts: [{ name, cluster: cluster.name, user: name }],
      currentContext: name,
    });
    const dir = await mkdtemp(join(tmpdir(), "canaryapp-dashboard-"));
    const path = join(dir, "kubeconfig");
    await writeFile(path, kc.exportConfig(), { mode: 0o600 });
    const forbidden = await startDashboardProcess(["--kubeconfig", path, "-n", env.namespace]);
    try {
      const page = await browser.newPage();
      await page.goto(forbidden.url);
      const alert = page.getByRole("alert");
      await alert.getByText("canaryapps").waitFor();
      const text = (await alert.textContent()) ?? "";
      assert.match(text, /canaryapps.*forbidden.*cannot list resource "canaryapps"/s);
      assert.match(text, /events.*forbidden/s);
      await page.close();
    } finally {
      await forbidden.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
