/**
 * `make bench-dashboard`: what `kubectl canaryapp dashboard` costs with many apps (issue 35). On a local API
 * server (profile api), BENCH_DASHBOARD_APPS CanaryApps (default 1000) at rest, each with a status as the
 * controller writes it and one Event; then BENCH_DASHBOARD_ROLLING of them (default 50) step through a test, their
 * statuses and Events written every second by this bench as the controller would write them (no controller runs:
 * what is measured is the dashboard, which reads only CanaryApps and Events).
 *
 * Measured: the dashboard process's RSS (at rest, and its peak while the apps roll out), the JS heap of its page
 * in headless Chromium (the overview, every app on it), the time from start to the page listing every app, and
 * every HTTP request the dashboard makes (counted in its process by undici's diagnostics channel): the lists and
 * watches at start, then, at rest and while apps roll out, how many more (the goal: none).
 *
 * Prints a table and writes JSON (BENCH_JSON, else bench/results/dashboard-<date>.json).
 */
import { readFile } from "node:fs/promises";
import { setTimeout as sleep } from "node:timers/promises";
import { CoreV1Api, CustomObjectsApi } from "@kubernetes/client-node";
import pLimit from "p-limit";
import type { CanaryAppStatus } from "../src/api/types.js";
import { GROUP, PLURAL, VERSION } from "../src/api/types.js";
import { loadKubeConfig } from "../src/kube/client.js";
import { startControlPlane } from "../e2e/cluster/index.js";
import { launchChromium, startDashboardProcess } from "../e2e/dashboard-process.js";
import { MERGE_PATCH } from "../test/support/kube.js";
import { machine, resultsPath, writeResults } from "./results.js";

const APPS = Number(process.env["BENCH_DASHBOARD_APPS"] ?? 1000);
const ROLLING = Math.min(APPS, Number(process.env["BENCH_DASHBOARD_ROLLING"] ?? 50));
/** How long the apps rest, and roll out, while requests are counted. */
const REST_SECONDS = Number(process.env["BENCH_DASHBOARD_REST_SECONDS"] ?? 60);
const ROLL_SECONDS = Number(process.env["BENCH_DASHBOARD_ROLL_SECONDS"] ?? 30);
const NAMESPACE = "bench-dashboard";
const WEIGHTS = [10, 20, 30, 40, 50];

/** Preloaded into the dashboard: one stderr line per HTTP request it starts. */
const COUNTER = `data:text/javascript,${encodeURIComponent(`
import { subscribe } from "node:diagnostics_channel";
subscribe("undici:request:create", ({ request }) => process.stderr.write("REQUEST " + request.method + " " + request.path + "\\n"));
`)}`;

const image = (name: string, tag: string) => `registry.example.com/bench/${name}:${tag}`;

/** The status of an app at rest, as the controller writes it. */
function restingStatus(name: string, time: string): CanaryAppStatus {
  return {
    phase: "Healthy",
    observedGeneration: 1,
    message: `${image(name, "v1")} runs on the primary and takes all traffic.`,
    primaryImage: image(name, "v1"),
    primary: { image: image(name, "v1"), revision: "5d8f7c9b", template: { imageListenPort: 8080, pod: {} } },
    weights: { primary: 100, secondary: 0 },
    lastPromotion: { image: image(name, "v1"), time },
    conditions: [
      {
        type: "Ready",
        status: "True",
        reason: "PrimaryAvailable",
        message: "the primary is available",
        lastTransitionTime: time,
      },
      {
        type: "Progressing",
        status: "False",
        reason: "Promoted",
        message: "no test running",
        lastTransitionTime: time,
      },
      {
        type: "InvalidSpec",
        status: "False",
        reason: "Valid",
        message: "the spec can be acted on",
        lastTransitionTime: time,
      },
    ],
  };
}

/** The status of an app at `step` of a test of v2. */
function steppingStatus(name: string, step: number, started: string, now: string): CanaryAppStatus {
  const weight = WEIGHTS[step] ?? 0;
  return {
    ...restingStatus(name, started),
    phase: "Progressing",
    message: `Testing ${image(name, "v2")}: step ${step + 1} of ${WEIGHTS.length}, ${weight}% of traffic on the secondary.`,
    weights: { primary: 100 - weight, secondary: weight },
    canary: {
      image: image(name, "v2"),
      stage: "Stepping",
      step,
      startedAt: started,
      stepStartedAt: now,
      failedChecks: 0,
      lastAnalysis: {
        time: now,
        passed: true,
        verdict: "Passed",
        metrics: [
          {
            name: "secondary-traffic",
            kind: "traffic",
            value: 1000 + step,
            min: 20,
            passed: true,
            reason: "ok",
            query: `sum(requests{app="${name}"})`,
          },
          {
            name: "errors",
            kind: "threshold",
            value: 0,
            max: 0,
            passed: true,
            reason: "ok",
            query: `sum(errors{app="${name}"})`,
          },
          {
            name: "latency",
            kind: "threshold",
            value: 120 + step,
            max: 500,
            passed: true,
            reason: "ok",
            query: `p99(latency{app="${name}"})`,
          },
        ],
      },
    },
  };
}

function rssKiB(pid: number, field: "VmRSS" | "VmHWM"): Promise<number> {
  return readFile(`/proc/${pid}/status`, "utf8").then((text) =>
    Number(new RegExp(`^${field}:\\s+(\\d+)`, "m").exec(text)?.[1] ?? 0),
  );
}

const mib = (kib: number) => Math.round((kib / 1024) * 10) / 10;

const cp = await startControlPlane({ profile: "api" });
try {
  const kc = loadKubeConfig(cp.kubeconfigPath);
  const custom = kc.makeApiClient(CustomObjectsApi);
  const core = kc.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: NAMESPACE } } });
  const ref = { group: GROUP, version: VERSION, plural: PLURAL, namespace: NAMESPACE };
  const names = Array.from({ length: APPS }, (_, i) => `app-${String(i).padStart(4, "0")}`);
  const limit = pLimit(16);
  const created = Date.now();
  const event = (name: string, reason: string, message: string, uid: string) =>
    core.createNamespacedEvent({
      namespace: NAMESPACE,
      body: {
        metadata: { generateName: `${name}.` },
        involvedObject: { apiVersion: `${GROUP}/${VERSION}`, kind: "CanaryApp", name, namespace: NAMESPACE, uid },
        reason,
        message,
        type: "Normal",
        count: 1,
        firstTimestamp: new Date(),
        lastTimestamp: new Date(),
        source: { component: "canaryapp-controller" },
      },
    });
  const uids = new Map<string, string>();
  await Promise.all(
    names.map((name) =>
      limit(async () => {
        const app = (await custom.createNamespacedCustomObject({
          ...ref,
          body: {
            apiVersion: `${GROUP}/${VERSION}`,
            kind: "CanaryApp",
            metadata: { name },
            spec: { image: image(name, "v1"), imageListenPort: 8080, analysis: { stepWeight: 10, maxWeight: 50 } },
          },
        })) as { metadata: { uid: string } };
        uids.set(name, app.metadata.uid);
        const now = new Date().toISOString();
        await custom.patchNamespacedCustomObjectStatus(
          { ...ref, name, body: { status: restingStatus(name, now) } },
          MERGE_PATCH,
        );
        await event(name, "Promoted", `${image(name, "v1")} promoted`, app.metadata.uid);
      }),
    ),
  );
  const createSeconds = (Date.now() - created) / 1000;
  console.log(`# ${APPS} apps with statuses and Events in ${createSeconds.toFixed(1)} s`);

  const started = Date.now();
  const dashboard = await startDashboardProcess(["--kubeconfig", cp.kubeconfigPath, "-n", NAMESPACE], process.env, [
    "--import",
    COUNTER,
  ]);
  const requests = () =>
    dashboard
      .stderr()
      .split("\n")
      .filter((l) => l.startsWith("REQUEST "))
      .map((l) => l.slice("REQUEST ".length));
  const browser = await launchChromium();
  try {
    const page = await browser.newPage({ viewport: { width: 1366, height: 768 } });
    const cdp = await page.context().newCDPSession(page);
    const pageHeapMiB = async () => {
      await cdp.send("HeapProfiler.collectGarbage");
      const { metrics } = await cdp.send("Performance.getMetrics");
      return mib((metrics.find((m) => m.name === "JSHeapUsedSize")?.value ?? 0) / 1024);
    };
    await cdp.send("Performance.enable");
    await page.goto(dashboard.url);
    await page.getByText(`${APPS} apps, 0 testing an image`).waitFor({ timeout: 120_000 });
    const listedSeconds = (Date.now() - started) / 1000;
    await sleep(5000);
    const atStart = requests();
    const restRssKiB = await rssKiB(dashboard.pid, "VmRSS");
    const restPageMiB = await pageHeapMiB();
    console.log(
      `# at rest: RSS ${mib(restRssKiB)} MiB, page heap ${restPageMiB} MiB; counting requests for ${REST_SECONDS} s`,
    );
    await sleep(REST_SECONDS * 1000);
    const atRest = requests().slice(atStart.length);

    // ROLLING apps step through a test: a status write and an Event each per second, staggered.
    const rolling = names.slice(0, ROLLING);
    const rollStart = new Date().toISOString();
    let peakRssKiB = 0;
    let writes = 0;
    const deadline = Date.now() + ROLL_SECONDS * 1000;
    for (let tick = 0; Date.now() < deadline; tick++) {
      const at = Date.now();
      const now = new Date().toISOString();
      await Promise.all(
        rolling.map((name) =>
          limit(async () => {
            const step = tick % WEIGHTS.length;
            await custom.patchNamespacedCustomObjectStatus(
              { ...ref, name, body: { status: steppingStatus(name, step, rollStart, now) } },
              MERGE_PATCH,
            );
            await event(
              name,
              "StepAdvanced",
              `shifted ${WEIGHTS[step] ?? 0}% of traffic to the secondary`,
              uids.get(name) ?? "",
            );
            writes += 2;
          }),
        ),
      );
      peakRssKiB = Math.max(peakRssKiB, await rssKiB(dashboard.pid, "VmRSS"));
      await sleep(Math.max(0, 1000 - (Date.now() - at)));
    }
    await page.getByText(`${APPS} apps, ${ROLLING} testing an image`).waitFor({ timeout: 30_000 });
    const rollPageMiB = await pageHeapMiB();
    const whileRolling = requests().slice(atStart.length + atRest.length);
    const hwmKiB = await rssKiB(dashboard.pid, "VmHWM");

    const figures = {
      date: new Date().toISOString(),
      machine: machine(),
      apps: APPS,
      rolling: ROLLING,
      createSeconds,
      startToPageListsAllSeconds: listedSeconds,
      requestsAtStart: atStart,
      restSeconds: REST_SECONDS,
      requestsAtRest: atRest,
      rssMiBAtRest: mib(restRssKiB),
      pageHeapMiBAtRest: restPageMiB,
      rollSeconds: ROLL_SECONDS,
      writesWhileRolling: writes,
      requestsWhileRolling: whileRolling,
      rssMiBPeakWhileRolling: mib(peakRssKiB),
      rssMiBHighWater: mib(hwmKiB),
      pageHeapMiBWhileRolling: rollPageMiB,
    };
    console.log(`
dashboard: ${APPS} apps (${ROLLING} rolling out), namespace ${NAMESPACE}, ${figures.machine.cpus} CPUs, Node ${figures.machine.node}
| figure | value |
| --- | --- |
| start → the page lists every app | ${listedSeconds.toFixed(1)} s |
| API requests at start | ${atStart.length} (${atStart.map((r) => r.split("?")[0]).join(", ")}) |
| API requests at rest, ${REST_SECONDS} s | ${atRest.length} |
| RSS at rest | ${figures.rssMiBAtRest} MiB |
| page JS heap at rest (overview) | ${restPageMiB} MiB |
| API requests while ${ROLLING} roll out, ${ROLL_SECONDS} s (${writes} writes by the bench) | ${whileRolling.length} |
| RSS peak while rolling out (high-water mark) | ${figures.rssMiBPeakWhileRolling} MiB (${figures.rssMiBHighWater} MiB) |
| page JS heap while rolling out | ${rollPageMiB} MiB |
`);
    const path = resultsPath("dashboard", figures.date, "BENCH_JSON");
    await writeResults(path, figures);
    console.log(`# figures written to ${path}`);
  } finally {
    await browser.close();
    await dashboard.stop();
  }
} finally {
  await cp.stop();
}
