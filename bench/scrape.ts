/**
 * What the per-app series cost the controller (ADR 0020): the heap they hold and the CPU of one scrape of
 * `/metrics`, for N apps that have each rolled out once (phase, weight, failed checks, three transitions, an
 * analysis with one check and its threshold, a step, failed images: 31 series an app). Measured in a process of
 * its own that runs with the controller's Node flags (src/node-flags.ts), without an API server.
 *
 *   node dist/bench/scrape.js [apps]      (default 5000)
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { ControllerMetrics } from "../src/server/metrics.js";
import { controllerNodeFlags } from "../src/node-flags.js";

export interface ScrapeResult {
  apps: number;
  /** Heap held by the apps' series, after a full collection. */
  heapMiB: number;
  /** CPU of each of five scrapes, in order. */
  scrapeCpuMs: number[];
  /** Size of one scrape's text. */
  bytes: number;
  lines: number;
}

const SCRAPES = 5;

function heapUsed(): number {
  (globalThis as { gc?: () => void }).gc?.();
  return process.memoryUsage().heapUsed;
}

async function measure(apps: number): Promise<ScrapeResult> {
  const before = heapUsed();
  const metrics = new ControllerMetrics({ processMetrics: false });
  for (let i = 0; i < apps; i++) {
    const namespace = `bench-${i % 50}`;
    const name = `app-${i}`;
    metrics.setAppState(namespace, name, { phase: "Healthy", secondaryWeight: 0, failedChecks: 0 });
    for (const reason of ["TestStarted", "StepAdvanced", "Promoted"]) metrics.countTransition(namespace, name, reason);
    metrics.countAnalysis(namespace, name, "passed");
    metrics.setAnalysis(namespace, name, [{ name: "error-rate", value: 0.01, max: 0.05, passed: true, reason: "ok" }]);
    metrics.observeStep(namespace, name, 12);
    metrics.setFailedImages(namespace, name, []);
  }
  const heapMiB = (heapUsed() - before) / 2 ** 20;
  const scrapeCpuMs: number[] = [];
  let text = "";
  for (let k = 0; k < SCRAPES; k++) {
    const cpu = process.cpuUsage();
    text = await metrics.metrics();
    const used = process.cpuUsage(cpu);
    scrapeCpuMs.push(Math.round((used.user + used.system) / 1000));
  }
  return {
    apps,
    heapMiB: Math.round(heapMiB * 10) / 10,
    scrapeCpuMs,
    bytes: text.length,
    lines: text.split("\n").length,
  };
}

/** Runs the measure in a child process with the controller's flags. */
export function benchScrape(apps: number): ScrapeResult {
  const self = fileURLToPath(import.meta.url);
  const run = spawnSync(process.execPath, [...controllerNodeFlags(), "--expose-gc", self, String(apps), "--child"], {
    encoding: "utf8",
  });
  if (run.status !== 0) throw new Error(`scrape bench: ${run.stderr}`);
  return JSON.parse(run.stdout.trim().split("\n").at(-1) ?? "{}") as ScrapeResult;
}

export function formatScrape(r: ScrapeResult): string {
  return `scrape: ${r.apps} apps' series (${r.lines} lines, ${(r.bytes / 1e6).toFixed(1)} MB): heap ${r.heapMiB} MiB; CPU per scrape ${r.scrapeCpuMs.join(", ")} ms`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const apps = Number(process.argv[2] ?? 5000);
  if (process.argv[3] === "--child") console.log(JSON.stringify(await measure(apps)));
  else console.log(formatScrape(benchScrape(apps)));
}
