/**
 * `make bench`: measured figures, printed as a table and written as JSON (BENCH_JSON, else
 * bench/results/bench-<date>.json). Nothing here asserts a time; the numbers go into the notes and are
 * compared by people across changes.
 */
import { startControlPlane } from "../e2e/cluster/index.js";
import { chaosRuns } from "../test/chaos/runs.js";
import { formatReport, runChaos, type ChaosReport } from "../test/chaos/suite.js";
import { benchPlanner } from "./planner.js";
import { benchCapacity, type CapacityLatency } from "./capacity.js";
import { machine, resultsPath, writeResults } from "./results.js";
import { benchRollout, type RolloutLatency } from "./rollout.js";
import { benchScrape, formatScrape, type ScrapeResult } from "./scrape.js";
import { benchScale, formatScaleTable, scaleFloor, type ScaleResult } from "./scale.js";
import { benchShards, formatShards, type ShardsResult } from "./shards.js";
import { benchChurn, type ChurnResult } from "./churn.js";
import { benchFloorFlags, formatFloorFlags, type FloorFlagsResult } from "./floor-flags.js";
import { formatChurn } from "./churn-report.js";

/** The sizes of the scale table (BENCH_APPS, comma-separated), each measured on a control plane of its own. */
const appCounts = (process.env["BENCH_APPS"] ?? "1000,5000").split(",").map((n) => Number(n.trim()));
if (appCounts.some((n) => !Number.isInteger(n) || n < 1)) throw new Error(`BENCH_APPS: not a list of app counts`);
/** BENCH_ONLY=scale runs only the scale table (with its floor); unset runs every part. */
const only = process.env["BENCH_ONLY"];
const runs = (part: "planner" | "scrape" | "rollout" | "capacity" | "scale") => only === undefined || only === part;
/**
 * The shards under churn (bench/churn.ts, many minutes): only with BENCH_ONLY=churn or BENCH_CHURN=1, with
 * BENCH_CHURN_APPS apps (default 5,000) of which BENCH_CHURN_ROLLING roll out (default 200).
 */
const churn = only === "churn" || process.env["BENCH_CHURN"] === "1";
const churnApps = Number(process.env["BENCH_CHURN_APPS"] ?? 5000);
const churnRolling = Number(process.env["BENCH_CHURN_ROLLING"] ?? 200);
if (
  churn &&
  (!Number.isInteger(churnApps) || !Number.isInteger(churnRolling) || churnRolling < 1 || churnRolling > churnApps)
) {
  throw new Error("BENCH_CHURN_APPS, BENCH_CHURN_ROLLING: not app counts (rolling at least 1 and at most the apps)");
}
/**
 * The floor alone under V8's defaults and under the controller's flags (bench/floor-flags.ts): only with
 * BENCH_ONLY=floor, at each size of BENCH_APPS, BENCH_FLOOR_ROUNDS rounds (default 3).
 */
const floorRounds = Number(process.env["BENCH_FLOOR_ROUNDS"] ?? 3);
if (only === "floor" && (!Number.isInteger(floorRounds) || floorRounds < 1)) {
  throw new Error("BENCH_FLOOR_ROUNDS: not a number of rounds");
}
/** Rollouts per latency figure (BENCH_ROLLOUTS shortens a run; default 5 for the rollout, 3 per capacity mode). */
const rollouts = process.env["BENCH_ROLLOUTS"] === undefined ? undefined : Number(process.env["BENCH_ROLLOUTS"]);

const date = new Date().toISOString();
/** Every figure printed below, as measured (milliseconds and seconds as the names say). */
const figures: {
  date: string;
  machine: ReturnType<typeof machine>;
  apps: number[];
  planner?: ReturnType<typeof benchPlanner>;
  /** The per-app series at each size of BENCH_APPS (ADR 0020). */
  scrape?: ScrapeResult[];
  controlPlaneStartupMs?: number;
  rollout?: RolloutLatency;
  capacity?: CapacityLatency;
  /** One scale table per size of BENCH_APPS, in its order. */
  scale?: ScaleResult[];
  shards?: ShardsResult;
  churn?: ChurnResult;
  floorFlags?: FloorFlagsResult[];
  chaos?: ChaosReport[];
} = { date, machine: machine(), apps: appCounts };

if (runs("planner")) {
  const planner = benchPlanner();
  figures.planner = planner;
  console.log(`planner: ${planner.plansPerSecond} plans/s (${planner.microsPerPlan.toFixed(1)} µs per plan)`);
}

if (runs("scrape")) {
  figures.scrape = appCounts.map((apps) => benchScrape(apps));
  for (const scrape of figures.scrape) console.log(formatScrape(scrape));
}

// The parts that share one control plane; it is not started when none of them runs.
const sharedControlPlane = runs("rollout") || runs("capacity") || process.env["BENCH_SHARDS"] === "1";
const controlPlane = sharedControlPlane ? await startControlPlane({ profile: "api" }) : undefined;
if (controlPlane !== undefined) {
  figures.controlPlaneStartupMs = controlPlane.startupMs;
  console.log(`control plane (api profile) ready in ${(controlPlane.startupMs / 1000).toFixed(1)} s`);
}
try {
  // The rollout helpers read the control plane from the environment, as the tests do.
  if (controlPlane !== undefined) process.env["KUBECONFIG"] = controlPlane.kubeconfigPath;
  const ms = (s: { n: number; median: number; max: number }) => `median ${s.median} ms, max ${s.max} ms (n=${s.n})`;
  if (runs("rollout")) {
    const rollout = await benchRollout(rollouts ?? 5);
    figures.rollout = rollout;
    console.log(`rollout: spec.image patch → secondary Deployment created: ${ms(rollout.patchToSecondaryMs)}`);
    console.log(
      `rollout: time per step beyond the ${rollout.intervalMs / 1000} s interval: ${ms(rollout.stepExtraMs)}`,
    );
  }

  if (runs("capacity")) {
    const capacity = await benchCapacity(rollouts ?? 3);
    figures.capacity = capacity;
    for (const mode of ["fixed", "weighted"] as const) {
      console.log(
        `capacity (scaling: ${mode}, 10 replicas, steps 10/30/50 %): spec.image patch → first weight: ${ms(capacity.patchToFirstWeightMs[mode])}; → Healthy: ${ms(capacity.patchToHealthyMs[mode])}`,
      );
    }
  }

  // Optional: 3 sharded replicas (ADR 0016) with BENCH_SHARDS_APPS apps (default 3,000).
  if (controlPlane !== undefined && process.env["BENCH_SHARDS"] === "1") {
    const shards = await benchShards(controlPlane.kubeconfigPath, Number(process.env["BENCH_SHARDS_APPS"] ?? 3000));
    figures.shards = shards;
    for (const line of formatShards(shards)) console.log(line);
  }
} finally {
  await controlPlane?.stop();
}

if (runs("scale")) {
  const extraFlags = (process.env["BENCH_CONTROLLER_FLAGS"] ?? "").split(" ").filter((f) => f !== "");
  figures.scale = [];
  for (const apps of appCounts) {
    // The floor and the controller each on a fresh control plane of their own: neither answers the other's
    // objects, nor the size before's.
    const floorPlane = await startControlPlane({ profile: "api" });
    let floor;
    try {
      floor = await scaleFloor(floorPlane.kubeconfigPath, apps);
    } finally {
      await floorPlane.stop();
    }
    const plane = await startControlPlane({ profile: "api" });
    try {
      const scale = await benchScale(plane.kubeconfigPath, apps, floor, 20, undefined, extraFlags);
      figures.scale.push(scale);
      console.log(formatScaleTable(scale));
      console.log(
        `scale: CPU per new app: controller ${scale.cpuMsPerApp} ms (${scale.reconcilesPerApp} reconciles), floor script ${scale.floor.cpuMsPerApp} ms; controller CPU in ${scale.restWindowSeconds} s at rest: ${scale.cpuSecondsAtRest.toFixed(2)} s`,
      );
      console.log(
        `scale: ${scale.restart.runs.length} warm restarts over ${scale.apps} unchanged apps (medians): first reconcile ${scale.restart.secondsToFirstReconcile.toFixed(1)} s, all reconciled ${scale.restart.secondsToAllReconciled.toFixed(1)} s, ${scale.restart.writes} writes (${scale.restart.events} Events)`,
      );
      for (const run of scale.restart.runs) {
        console.log(
          `scale:   restart: caches synced ${run.secondsToCachesSynced.toFixed(2)} s, first reconcile ${run.secondsToFirstReconcile.toFixed(2)} s, all ${run.secondsToAllReconciled.toFixed(1)} s; CPU until the first: controller ${run.controllerCpuSeconds.toFixed(2)} s, API server ${run.apiServerCpuSeconds?.toFixed(2) ?? "–"} s (after ${run.secondsWaitedForQuiet} s of waiting for it to rest)`,
        );
      }
    } finally {
      await plane.stop();
    }
  }
}

// Optional: the floor under two flag sets.
if (only === "floor") {
  figures.floorFlags = [];
  for (const apps of appCounts) {
    const result = await benchFloorFlags(apps, floorRounds);
    figures.floorFlags.push(result);
    for (const line of formatFloorFlags(result)) console.log(line);
  }
}

// Optional: the shards under churn, on a control plane of its own (audited).
if (churn) {
  figures.churn = await benchChurn({ apps: churnApps, rolling: churnRolling });
  for (const line of formatChurn(figures.churn)) console.log(line);
}

// Optional: the chaos runs of `make chaos` (several minutes each), with their reports.
if (process.env["BENCH_CHAOS"] === "1") {
  const reports = [];
  for (const options of chaosRuns(process.env)) {
    const report = await runChaos(options);
    reports.push(report);
    console.log(formatReport(report));
  }
  figures.chaos = reports;
}

const jsonPath = resultsPath("bench", date, "BENCH_JSON");
await writeResults(jsonPath, figures);
console.log(`figures written to ${jsonPath}`);
