/**
 * The short chaos run of CI (`make chaos` runs the long ones): a few apps, some with failing checks, roll out
 * wave after wave while the controller is SIGKILLed and restarted at once, kube-apiserver is stopped and
 * started once, and Prometheus goes down and hangs. Every invariant holds. It runs its own control plane.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { INVARIANTS } from "../chaos/invariants.js";
import { formatReport, runChaos } from "../chaos/suite.js";

test("chaos, short: immediate restarts, one API-server restart, Prometheus faults", { timeout: 300_000 }, async () => {
  const report = await runChaos({
    durationMs: Number(process.env["CHAOS_CI_DURATION"] ?? 75) * 1000,
    apps: 6,
    intervalSeconds: 2,
    restartDelayMs: 0,
    replicas: 1,
    faults: ["kill", "apiserver", "kill", "prometheusDown", "kill", "prometheusHang"],
    faultGapMs: [3_000, 6_000],
    apiserverOutageMs: 12_000,
    maxApiserverRestarts: 1,
    prometheusFaultMs: 4_000,
  });
  console.log(formatReport(report).replace(/^/gm, "# "));
  assert.ok(report.kills >= 3, `the controller was killed ${report.kills} times`);
  assert.equal(report.apiserverRestarts, 1);
  assert.ok(report.waves >= 2, `${report.waves} waves`);
  for (const name of INVARIANTS) {
    assert.equal(report.check.counts[name], 0, `${name}: ${report.check.examples[name].join(" | ")}`);
  }
});
