/**
 * Writes the dashboard built by dashboard.ts: config/grafana/canaryapp-dashboard.json, its ConfigMap, and
 * the chart's copy. `--check` writes nothing and exits 1 naming each file that differs.
 */
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { findRepoRoot } from "../../e2e/cluster/toolchain.js";
import { dashboardConfigMap, dashboardJson } from "./dashboard.js";

export const DASHBOARD_FILES = {
  json: "config/grafana/canaryapp-dashboard.json",
  configMap: "config/grafana/canaryapp-dashboard-configmap.yaml",
  chart: "charts/canaryapp/dashboards/canaryapp-dashboard.json",
} as const;

/** What each generated file must hold. */
export function generated(): Record<string, string> {
  const json = dashboardJson();
  return {
    [DASHBOARD_FILES.json]: json,
    [DASHBOARD_FILES.configMap]: dashboardConfigMap(json),
    [DASHBOARD_FILES.chart]: json,
  };
}

async function main(): Promise<void> {
  const root = findRepoRoot();
  const check = process.argv.includes("--check");
  let stale = 0;
  for (const [file, content] of Object.entries(generated())) {
    const path = join(root, file);
    if (check) {
      const current = await readFile(path, "utf8").catch(() => "");
      if (current !== content) {
        console.error(`${file} is not what tools/grafana/dashboard.ts builds: run \`make dashboard\``);
        stale++;
      }
    } else {
      await writeFile(path, content);
      console.log(`wrote ${file}`);
    }
  }
  if (stale > 0) process.exitCode = 1;
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
