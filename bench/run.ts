/**
 * `make bench`: measured figures, printed as a table. Nothing here asserts a time; the numbers go into
 * the notes and are compared by people across changes.
 */
import { startControlPlane } from "../e2e/cluster/index.js";
import { chaosRuns } from "../test/chaos/runs.js";
import { formatReport, runChaos } from "../test/chaos/suite.js";
import { benchPlanner } from "./planner.js";
import { benchCapacity } from "./capacity.js";
import { benchRollout } from "./rollout.js";
import { benchScale } from "./scale.js";

const apps = Number(process.env["BENCH_APPS"] ?? 200);

const planner = benchPlanner();
console.log(`planner: ${planner.plansPerSecond} plans/s (${planner.microsPerPlan.toFixed(1)} µs per plan)`);

const controlPlane = await startControlPlane({ profile: "api" });
console.log(`control plane (api profile) ready in ${(controlPlane.startupMs / 1000).toFixed(1)} s`);
try {
  // The rollout helpers read the control plane from the environment, as the tests do.
  process.env["KUBECONFIG"] = controlPlane.kubeconfigPath;
  const rollout = await benchRollout();
  const ms = (s: { n: number; median: number; max: number }) => `median ${s.median} ms, max ${s.max} ms (n=${s.n})`;
  console.log(`rollout: spec.image patch → secondary Deployment created: ${ms(rollout.patchToSecondaryMs)}`);
  console.log(`rollout: time per step beyond the ${rollout.intervalMs / 1000} s interval: ${ms(rollout.stepExtraMs)}`);

  const capacity = await benchCapacity();
  for (const mode of ["fixed", "weighted"] as const) {
    console.log(
      `capacity (scaling: ${mode}, 10 replicas, steps 10/30/50 %): spec.image patch → first weight: ${ms(capacity.patchToFirstWeightMs[mode])}; → Healthy: ${ms(capacity.patchToHealthyMs[mode])}`,
    );
  }

  const scale = await benchScale(controlPlane.kubeconfigPath, apps);
  console.log(`scale: ${scale.apps} CanaryApps → all children in ${scale.secondsToAllChildren.toFixed(1)} s`);
  console.log(
    `scale: ${scale.writesWhileCreating} API writes to converge (${(scale.writesWhileCreating / scale.apps).toFixed(1)} per app)`,
  );
  console.log(`scale: ${scale.writesAtRest} API writes in ${scale.restWindowSeconds} s at rest`);
  console.log(
    `scale: controller process (V8 old space capped at ${scale.maxOldSpaceMiB} MiB) with ${scale.apps} apps cached: rss ${scale.rssMiB} MiB, heap used ${scale.heapUsedMiB} MiB`,
  );
  console.log(`scale: controller CPU in ${scale.restWindowSeconds} s at rest: ${scale.cpuSecondsAtRest.toFixed(2)} s`);
  console.log(
    `scale: warm restart over ${scale.apps} unchanged apps: all reconciled in ${scale.restart.secondsToAllReconciled.toFixed(1)} s, ${scale.restart.writes} writes (${scale.restart.events} Events)`,
  );
} finally {
  await controlPlane.stop();
}

// Optional: the chaos runs of `make chaos` (several minutes each), with their reports.
if (process.env["BENCH_CHAOS"] === "1") {
  for (const options of chaosRuns(process.env)) console.log(formatReport(await runChaos(options)));
}
