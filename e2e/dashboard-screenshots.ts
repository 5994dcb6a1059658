/**
 * `make dashboard-screenshots`: the dashboard's overview and an app's page during a rollout, as PNGs in docs/
 * (DASHBOARD_SCREENSHOTS_DIR another folder). Runs under e2e/cluster/with-cluster (KUBECONFIG set): five apps on
 * the controller and a real Prometheus (test/support/rollout-env.ts), one rolling out step by step, one held at
 * its first step, one rolled back, one paused, one at rest; then headless Chromium takes the pictures.
 */
import { mkdir } from "node:fs/promises";
import { join, resolve } from "node:path";
import { ANNOTATIONS } from "../src/api/types.js";
import { findRepoRoot } from "./cluster/toolchain.js";
import { launchChromium, startDashboardProcess } from "./dashboard-process.js";
import { TEST_METRICS } from "../test/support/exporter.js";
import { testKubeConfigPath } from "../test/support/kube.js";
import {
  appSpec,
  changeImage,
  deployApp,
  ERRORS_CHECK,
  image,
  LATENCY_CHECK,
  startRolloutEnv,
  untilWeight,
} from "../test/support/rollout-env.js";

const out = resolve(process.env["DASHBOARD_SCREENSHOTS_DIR"] ?? join(findRepoRoot(), "docs"));
const VIEWPORT = { width: 1366, height: 768 };

const env = await startRolloutEnv("shop", { deploymentStandIn: false });
try {
  const [web, checkout, search, , inventory] = await Promise.all([
    deployApp(env, "web", appSpec(env, "web", { interval: "3s", metrics: [ERRORS_CHECK, LATENCY_CHECK] })),
    deployApp(env, "checkout", appSpec(env, "checkout", { interval: "10m" })),
    deployApp(env, "search", appSpec(env, "search")),
    deployApp(env, "ledger", appSpec(env, "ledger")),
    deployApp(env, "inventory", appSpec(env, "inventory", { interval: "10m", stepWeight: 20, maxWeight: 60 })),
  ]);
  const dashboard = await startDashboardProcess(["--kubeconfig", testKubeConfigPath(), "-n", env.namespace]);
  const browser = await launchChromium();
  try {
    const page = await browser.newPage({ viewport: VIEWPORT });
    await page.goto(`${dashboard.url}#/${env.namespace}/web`);
    env.exporter.set(TEST_METRICS.errors, "search", 3);
    await Promise.all([
      changeImage(env, "web", image("web", "v2")),
      changeImage(env, "checkout", image("checkout", "v2")),
      changeImage(env, "search", image("search", "v2")),
      changeImage(env, "inventory", image("inventory", "v3")),
    ]);
    await Promise.all([
      untilWeight(checkout, 10),
      untilWeight(inventory, 20),
      search.until("search rolled back", (r) => (r.app?.status?.phase === "Failed" ? true : undefined), 60_000),
    ]);
    await env.apps.annotate("inventory", { [ANNOTATIONS.paused]: "true" });
    // The app's page at its fourth step: three steps of weights and analyses behind it.
    await untilWeight(web, 40, 60_000);
    await page.getByText("step 4 of 5").first().waitFor();
    await page.waitForTimeout(500);
    await mkdir(out, { recursive: true });
    await page.screenshot({ path: join(out, "dashboard-app.png"), fullPage: true });
    await page.goto(`${dashboard.url}#/`);
    await page.locator(`tr[data-app="${env.namespace}/inventory"]`).getByText("Paused").waitFor();
    await page.screenshot({ path: join(out, "dashboard-overview.png") });
    console.log(`wrote ${join(out, "dashboard-overview.png")} and ${join(out, "dashboard-app.png")}`);
  } finally {
    await browser.close();
    await dashboard.stop();
  }
} finally {
  await env.stop();
}
