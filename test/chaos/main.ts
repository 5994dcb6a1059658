#!/usr/bin/env node
/**
 * `make chaos`: chaos runs, each on its own control plane, one per restart delay, one with two replicas
 * (leader failover) and the upgrade (rolling updates through share counts), each printing its report; all
 * reports again at the end. Exit code 1 when any invariant was violated. Flags and environment variables: see
 * chaosRuns (runs.ts); `make chaos ARGS=--duration=60`, `make chaos ARGS=--only=upgrade`.
 */
import { chaosRuns } from "./runs.js";
import { formatReport, runChaos, totalViolations } from "./suite.js";

let violations = 0;
const reports: string[] = [];
for (const options of chaosRuns(process.env, process.argv.slice(2))) {
  const report = await runChaos({ ...options, log: (line) => console.log(line) });
  const text = formatReport(report);
  console.log(text);
  reports.push(text);
  violations += totalViolations(report);
}
console.log(`\n${reports.join("\n\n")}`);
process.exit(violations === 0 ? 0 : 1);
