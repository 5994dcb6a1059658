#!/usr/bin/env node
/**
 * `make chaos`: chaos runs, each on its own control plane, one per restart delay (and one with two replicas
 * for leader failover), each printing its report. Exit code 1 when any invariant was violated.
 *   node dist/test/chaos/main.js [--duration=S] [--apps=N] [--restart-delays=0,3,20] [--replicas=1|2]
 *                                 [--failover] [--interval=S] [--apiserver-outage=S]
 * Every flag has an environment variable: CHAOS_DURATION, CHAOS_APPS, CHAOS_RESTART_DELAYS, CHAOS_REPLICAS,
 * CHAOS_FAILOVER (1), CHAOS_INTERVAL, CHAOS_APISERVER_OUTAGE.
 */
import { parseArgs } from "node:util";
import { formatReport, runChaos, totalViolations, type ChaosOptions, type Fault } from "./suite.js";

const { values } = parseArgs({
  options: {
    duration: { type: "string", default: process.env["CHAOS_DURATION"] ?? "180" },
    apps: { type: "string", default: process.env["CHAOS_APPS"] ?? "12" },
    "restart-delays": { type: "string", default: process.env["CHAOS_RESTART_DELAYS"] ?? "0,3,20" },
    replicas: { type: "string", default: process.env["CHAOS_REPLICAS"] ?? "1" },
    failover: { type: "boolean", default: (process.env["CHAOS_FAILOVER"] ?? "1") === "1" },
    interval: { type: "string", default: process.env["CHAOS_INTERVAL"] ?? "2" },
    "apiserver-outage": { type: "string", default: process.env["CHAOS_APISERVER_OUTAGE"] ?? "15" },
  },
});

const number = (name: string, text: string | undefined): number => {
  const value = Number(text);
  if (!Number.isFinite(value) || value < 0) throw new Error(`chaos: --${name} must be a number ≥ 0, not ${text}`);
  return value;
};

const FAULTS: Fault[] = ["kill", "prometheusDown", "kill", "apiserver", "kill", "prometheusHang"];
const base = {
  durationMs: number("duration", values.duration) * 1000,
  apps: number("apps", values.apps),
  intervalSeconds: number("interval", values.interval),
  faults: FAULTS,
  faultGapMs: [3_000, 8_000] as [number, number],
  apiserverOutageMs: number("apiserver-outage", values["apiserver-outage"]) * 1000,
  prometheusFaultMs: 5_000,
  log: (line: string) => console.log(line),
};
const replicas = number("replicas", values.replicas) === 2 ? 2 : 1;
const runs: ChaosOptions[] = (values["restart-delays"] ?? "0")
  .split(",")
  .map((d) => ({ ...base, replicas, restartDelayMs: number("restart-delays", d) * 1000 }));
if (values.failover && replicas === 1) runs.push({ ...base, replicas: 2, restartDelayMs: 0 });

let violations = 0;
const reports: string[] = [];
for (const options of runs) {
  const report = await runChaos(options);
  const text = formatReport(report);
  console.log(text);
  reports.push(text);
  violations += totalViolations(report);
}
console.log(`\n${reports.join("\n\n")}`);
process.exit(violations === 0 ? 0 : 1);
