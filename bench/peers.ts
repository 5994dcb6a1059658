/**
 * `make bench-peers`: canaryapp, Flagger and Argo Rollouts, one at a time, on one local cluster (kwok nodes, a real
 * Prometheus), given the same work; each controller talks to the API server through a proxy that counts its
 * requests. Prints a table with the ratios, writes the figures as JSON, and (for the default work) rewrites
 * the README's table.
 *
 * Environment: BENCH_PEERS_APPS (20), BENCH_PEERS_INTERVAL seconds (10), BENCH_PEERS_ROLLOUTS (3),
 * BENCH_PEERS_REST_SECONDS (60), BENCH_PEERS_ONLY (some of canaryapp,flagger,argo-rollouts, comma-separated),
 * BENCH_PEERS_JSON (a file; default
 * bench/results/peers-<date>.json). `--dry-run` prints the work and the objects of one app, and starts nothing.
 */
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import pLimit from "p-limit";
import { startControlPlane } from "../e2e/cluster/index.js";
import { findRepoRoot } from "../e2e/cluster/toolchain.js";
import { startPrometheus } from "../e2e/prometheus.js";
import { loadKubeConfig } from "../src/kube/client.js";
import { createTestNamespace } from "../test/support/kube.js";
import { canaryapp } from "./peers/canaryapp.js";
import { rssMiBOf } from "./apps.js";
import { machine, resultsPath, writeResults } from "./results.js";
import { argoRollouts, argoRolloutsBuilt, argoRolloutsFiles } from "./peers/argo-rollouts.js";
import { flagger, flaggerBuilt, flaggerFiles } from "./peers/flagger.js";
import { PEER_NAMES, sleep, type Peer, type PeerContext, type Work } from "./peers/peer.js";
import { appOf, startCountingProxy, type CountedRequest } from "./peers/proxy.js";
import {
  markdownTable,
  readmeBlock,
  replaceBetweenMarkers,
  type PeerFigures,
  type PeersResult,
  type RolloutFigures,
} from "./peers/report.js";
import { NamespaceView } from "./peers/watch.js";

const env = (key: string, fallback: number) => {
  const value = Number(process.env[key] ?? fallback);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${key}=${process.env[key]}: a positive number, please`);
  return value;
};
const DEFAULT_WORK: Work = { apps: 20, intervalSeconds: 10, stepWeight: 10, maxWeight: 50 };
const work: Work = {
  ...DEFAULT_WORK,
  apps: env("BENCH_PEERS_APPS", DEFAULT_WORK.apps),
  intervalSeconds: env("BENCH_PEERS_INTERVAL", DEFAULT_WORK.intervalSeconds),
};
const rollouts = Math.min(env("BENCH_PEERS_ROLLOUTS", 3), work.apps);
const restSeconds = env("BENCH_PEERS_REST_SECONDS", 60);
const only = (process.env["BENCH_PEERS_ONLY"] ?? "")
  .split(",")
  .map((s) => s.trim())
  .filter((s) => s !== "");
for (const name of only) {
  if (!(PEER_NAMES as readonly string[]).includes(name)) {
    throw new Error(`BENCH_PEERS_ONLY=${only.join(",")}: some of ${PEER_NAMES.join(", ")}, comma-separated`);
  }
}
const allPeers: Peer[] = [canaryapp, flagger, argoRollouts];
const peers = allPeers.filter((p) => only.length === 0 || only.includes(p.name));
const steps = work.maxWeight / work.stepWeight;
const names = Array.from({ length: work.apps }, (_, i) => `app-${String(i).padStart(2, "0")}`);
const image = (app: string, tag: string) => `registry.example.com/peers/${app}:${tag}`;
const root = findRepoRoot();

if (process.argv.includes("--dry-run")) {
  console.log(
    `work: ${work.apps} apps, interval ${work.intervalSeconds} s, ${steps} steps of ${work.stepWeight} % to ${work.maxWeight} %, ` +
      `${rollouts} rollouts, ${restSeconds} s at rest; peers: ${peers.map((p) => p.label).join(", ")}`,
  );
  console.log(`flagger: ${flaggerFiles().binary} ${flaggerBuilt() ? "built" : "not built (make flagger)"}`);
  console.log(
    `argo-rollouts: ${argoRolloutsFiles().binary} ${argoRolloutsBuilt() ? "built" : "not built (make argo-rollouts)"}`,
  );
  for (const peer of peers) {
    const ctx = { namespace: `peers-${peer.name}`, prometheusUrl: "http://127.0.0.1:9090", work };
    console.log(`# ${peer.label} (interval used: ${peer.effectiveIntervalSeconds(work)} s), one app:`);
    console.log(JSON.stringify(peer.manifests(ctx, "app-00", image("app-00", "v1")), null, 2));
  }
  process.exit(0);
}

const defaultWork =
  peers.length === allPeers.length &&
  work.apps === DEFAULT_WORK.apps &&
  work.intervalSeconds === DEFAULT_WORK.intervalSeconds &&
  process.env["BENCH_PEERS_JSON"] === undefined;
const readmePath = join(root, "README.md");
// Fail before the long run, not after it, when the README has lost its block.
if (defaultWork) replaceBetweenMarkers(await readFile(readmePath, "utf8"), "");

const controlPlane = await startControlPlane({ profile: "cluster" });
console.log(`control plane (cluster profile) ready in ${(controlPlane.startupMs / 1000).toFixed(1)} s`);
const prometheus = await startPrometheus({ targets: [] });
const admin = loadKubeConfig(controlPlane.kubeconfigPath);
const figures: PeerFigures[] = [];
try {
  for (const peer of peers) figures.push(await measure(peer));
} finally {
  await prometheus.stop();
  await controlPlane.stop();
}

const result: PeersResult = {
  date: new Date().toISOString(),
  work: { ...work, rollouts },
  machine: machine(),
  peers: figures,
};
console.log("");
console.log(markdownTable(result));
for (const p of figures) {
  const top = formatByVerb(p.atRest.byVerb, 6);
  console.log(
    `${p.label}: at rest, ${p.atRest.requests} requests in ${p.atRest.windowSeconds} s${top ? `: ${top}` : ""}`,
  );
  console.log(
    `${p.label}: requests during the rollouts that name no one app (lists, watches): ${p.sharedRequestsDuringRollouts}`,
  );
}
const jsonPath = resultsPath("peers", result.date, "BENCH_PEERS_JSON");
await writeResults(jsonPath, result);
console.log(`figures written to ${jsonPath}`);
if (defaultWork) {
  await writeFile(readmePath, replaceBetweenMarkers(await readFile(readmePath, "utf8"), readmeBlock(result)));
  console.log('README.md: the table of "Compared with Flagger and Argo Rollouts" rewritten');
} else {
  console.log("README.md left alone (its table is measured with the default work and every peer)");
}

/** One peer, from an empty namespace to its figures; its controller is stopped before the next starts. */
async function measure(peer: Peer): Promise<PeerFigures> {
  const namespace = await createTestNamespace(admin, `peers-${peer.name}`);
  const proxy = await startCountingProxy(
    controlPlane.kubeconfigPath,
    join(controlPlane.workDir, `${peer.name}-kubeconfig`),
  );
  const ctx: PeerContext = {
    admin,
    adminKubeconfig: controlPlane.kubeconfigPath,
    controllerKubeconfig: proxy.kubeconfigPath,
    namespace,
    prometheusUrl: prometheus.url,
    work,
    logDir: controlPlane.workDir,
  };
  const interval = peer.effectiveIntervalSeconds(work);
  const log = (text: string) => console.log(`${peer.label}: ${text}`);
  const view = new NamespaceView(admin, peer.paths(namespace));
  await peer.prepare(ctx);
  await view.start();
  log("starting");
  const controller = await peer.start(ctx);
  try {
    log(`started (pid ${controller.pid}); creating ${work.apps} apps in ${namespace}`);
    const limit = pLimit(5);
    await Promise.all(names.map((app) => limit(() => peer.create(ctx, app, image(app, "v1")))));
    const started = Date.now();
    await view.until(
      `${work.apps} apps at rest on v1`,
      () => names.every((app) => peer.atRest(view, namespace, app, image(app, "v1"))),
      (120 + 10 * interval) * 1000,
    );
    log(`${work.apps} apps at rest in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    // Let the last status writes pass before the quiet window starts.
    await sleep(Math.max(5, interval) * 1000);
    const from = Date.now();
    await sleep(restSeconds * 1000);
    const to = Date.now();
    const rssMiB = rssMiBOf(controller.pid);
    const window = proxy.requests.filter((r) => r.at >= from && r.at < to);
    const byVerb = countByVerb(window);
    log(`${window.length} API requests in ${restSeconds} s at rest; RSS ${rssMiB.toFixed(0)} MiB`);

    const rolled = names.slice(0, rollouts);
    const rolloutStart = Date.now();
    const timeoutMs = ((steps + 8) * interval + 120) * 1000;
    const results = await Promise.all(
      rolled.map(async (app, i): Promise<RolloutFigures> => {
        // Spread over one interval: a controller that works on a timer (Flagger) is caught at different phases.
        await sleep((i * interval * 1000) / rolled.length);
        const v2 = image(app, "v2");
        await peer.changeImage(ctx, app, v2);
        const at = Date.now();
        const [scaled, weighted, allTraffic, done] = await Promise.all([
          view.until(`${app}: v2 scaled up`, () => peer.scaledUp(view, namespace, app, v2), timeoutMs),
          view.until(`${app}: v2 weighted`, () => peer.weighted(view, namespace, app), timeoutMs),
          view.until(`${app}: all traffic on v2`, () => peer.allTrafficOn(view, namespace, app, v2), timeoutMs),
          view.until(`${app}: at rest on v2`, () => peer.atRest(view, namespace, app, v2), timeoutMs),
        ]);
        const about = proxy.requests.filter((r) => r.at >= at && r.at <= done && appOf(r.name, [app]) === app);
        return {
          app,
          scaledUpSeconds: (scaled - at) / 1000,
          firstWeightSeconds: (weighted - at) / 1000,
          allTrafficSeconds: (allTraffic - at) / 1000,
          fullSeconds: (done - at) / 1000,
          requests: about.length,
          requestsByVerb: countByVerb(about),
        };
      }),
    );
    const rolloutEnd = Date.now();
    const checks = await peer.checks?.(ctx, rolled);
    if (checks !== undefined) log(`checks: ${checks}`);
    for (const r of results) {
      log(
        `${r.app}: scaled up ${r.scaledUpSeconds.toFixed(2)} s, first weight ${r.firstWeightSeconds.toFixed(2)} s, ` +
          `all traffic on v2 ${r.allTrafficSeconds.toFixed(1)} s, done ${r.fullSeconds.toFixed(1)} s, ${r.requests} requests about it: ${formatByVerb(r.requestsByVerb)}`,
      );
    }
    return {
      label: peer.label,
      apps: work.apps,
      intervalSeconds: interval,
      steps,
      atRest: {
        windowSeconds: restSeconds,
        requests: window.length,
        requestsPerMinute: (window.length / restSeconds) * 60,
        byVerb,
      },
      rssMiB,
      rollouts: results,
      ...(checks !== undefined ? { checks } : {}),
      sharedRequestsDuringRollouts: proxy.requests.filter(
        (r) => r.at >= rolloutStart && r.at <= rolloutEnd && appOf(r.name, names) === undefined,
      ).length,
    };
  } finally {
    await controller.stop();
    view.stop();
    await proxy.stop();
  }
}

/** Requests counted by verb and resource (`patch deployments`). */
function countByVerb(requests: readonly CountedRequest[]): Record<string, number> {
  const byVerb: Record<string, number> = {};
  for (const r of requests) byVerb[`${r.verb} ${r.resource}`] = (byVerb[`${r.verb} ${r.resource}`] ?? 0) + 1;
  return byVerb;
}

/** `patch deployments 12, create events 9, ...`, most first. */
function formatByVerb(byVerb: Record<string, number>, top = Infinity): string {
  return Object.entries(byVerb)
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([k, v]) => `${k} ${v}`)
    .join(", ");
}

/** The resident set of a process, from /proc (what `ps` and a container's memory accounting see). */
