/**
 * The floor under two sets of Node/V8 flags: V8's defaults (as the scale table's floor runs, inside the bench
 * process) and the controller's own (src/node-flags.ts). The second is what the floor's work itself costs in
 * the controller's runtime, so their ratio is the least any controller running those flags can score against
 * the scale table's floor, however little it does beyond the floor's writes.
 */
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { startControlPlane } from "../e2e/cluster/index.js";
import { controllerNodeFlags } from "../src/node-flags.js";
import type { FloorResult } from "./floor.js";
import { median, ratio, round } from "./scale.js";

const FLOOR_MAIN = fileURLToPath(new URL("./floor-main.js", import.meta.url));

/** One floor run: its flags and result. */
export interface FloorRun {
  flags: "defaults" | "controller";
  /** The flags the floor's process ran under, as it reported them (`process.execArgv`). */
  nodeFlags: string[];
  result: FloorResult;
}

export interface FloorFlagsResult {
  apps: number;
  /** The controller's flags, as the controller runs with them (CONTROLLER_NODE_FLAGS or the default). */
  controllerFlags: string[];
  /** In the order they ran: defaults and controller alternating, each on a fresh control plane. */
  runs: FloorRun[];
  /** Median CPU per app (ms) under each set, and the controller set's over the defaults'. */
  medianCpuMsPerApp: { defaults: number; controller: number; ratio: number };
}

/** The floor over `apps` apps in a child process under `nodeFlags`, on a control plane of its own. */
async function floorUnder(nodeFlags: readonly string[], apps: number): Promise<FloorResult & { execArgv: string[] }> {
  const plane = await startControlPlane({ profile: "api" });
  try {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [...nodeFlags, FLOOR_MAIN, plane.kubeconfigPath, String(apps)],
      { maxBuffer: 1 << 20 },
    );
    const last = stdout.trim().split("\n").at(-1) ?? "";
    return JSON.parse(last) as FloorResult & { execArgv: string[] };
  } finally {
    await plane.stop();
  }
}

/** `rounds` rounds of the floor under V8's defaults, then under the controller's flags, over `apps` apps. */
export async function benchFloorFlags(apps: number, rounds: number): Promise<FloorFlagsResult> {
  const controllerFlags = controllerNodeFlags();
  const runs: FloorRun[] = [];
  for (let i = 0; i < rounds; i++) {
    for (const [flags, nodeFlags] of [
      ["defaults", []],
      ["controller", controllerFlags],
    ] as const) {
      const { execArgv, ...result } = await floorUnder(nodeFlags, apps);
      runs.push({ flags, nodeFlags: execArgv, result });
    }
  }
  const of = (flags: FloorRun["flags"]) =>
    round(median(runs.filter((r) => r.flags === flags).map((r) => r.result.cpuMsPerApp)), 2);
  const { value: controller, floor: defaults, ratio: times } = ratio(of("controller"), of("defaults"));
  return { apps, controllerFlags, runs, medianCpuMsPerApp: { defaults, controller, ratio: times } };
}

/** The lines `make bench` prints for it. */
export function formatFloorFlags(result: FloorFlagsResult): string[] {
  const { defaults, controller, ratio } = result.medianCpuMsPerApp;
  return [
    `floor under two flag sets, ${result.apps} apps, rounds: ${result.runs.length / 2}; CPU per new app (median) ${defaults} ms under V8's defaults, ${controller} ms under the controller's flags (${result.controllerFlags.join(" ")}): ${ratio}×`,
    ...result.runs.map(
      (r) => `floor:   ${r.flags}: ${r.result.cpuMsPerApp} ms per app, ${r.result.secondsToAllChildren.toFixed(1)} s`,
    ),
  ];
}
