/**
 * The floor of the scale bench (bench/floor.ts) in a process of its own, so that it can run under other Node/V8
 * flags than the bench's: `node [flags] dist/bench/floor-main.js <kubeconfig> <apps>` prints its FloorResult and
 * the flags it ran under (`execArgv`) as one JSON line. `make bench` with BENCH_ONLY=floor runs it under V8's
 * defaults and under the controller's flags (bench/floor-flags.ts).
 */
import { scaleFloor } from "./scale.js";

const [kubeconfigPath, apps] = process.argv.slice(2);
if (kubeconfigPath === undefined || !Number.isInteger(Number(apps)) || Number(apps) < 1) {
  throw new Error("usage: floor-main.js <kubeconfig> <apps>");
}
console.log(JSON.stringify({ ...(await scaleFloor(kubeconfigPath, Number(apps))), execArgv: process.execArgv }));
