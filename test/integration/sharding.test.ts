/**
 * Sharding (ADR 0016): three controller processes, all active, share 30 CanaryApps cut into 32 shares held on
 * Leases. The apps roll out wave after wave while one replica after another is SIGKILLed mid-rollout (and
 * started again once its shares have moved): the others take the victim's shares within about a lease
 * duration, no share is held by two replicas at once (so, fenced, no app is written by two), each replica's
 * caches hold only the apps of its shares (and their children), and every chaos invariant holds. It runs its
 * own control plane (api profile), as the chaos test does.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { INVARIANTS } from "../chaos/invariants.js";
import { formatReport, runChaos } from "../chaos/suite.js";

const APPS = 30;

test(
  "3 sharded replicas: each works on about a third; a killed one's shares are taken over; invariants hold",
  { timeout: 600_000 },
  async () => {
    const report = await runChaos({
      durationMs: Number(process.env["SHARDING_DURATION"] ?? 30) * 1000,
      apps: APPS,
      intervalSeconds: 2,
      restartDelayMs: 2_000,
      replicas: 3,
      shards: 32,
      faults: ["kill"],
      faultGapMs: [4_000, 6_000],
      apiserverOutageMs: 0,
      prometheusFaultMs: 0,
    });
    console.log(formatReport(report).replace(/^/gm, "# "));
    assert.ok(report.kills >= 1, `killed ${report.kills} times`);
    assert.equal(report.takeoversMs.length, report.kills, "every kill's shares were taken over");
    for (const ms of report.takeoversMs) {
      // Lease duration 15 s, then up to one round (2 s) of the survivors, plus the loaded machine's slack.
      assert.ok(ms < 40_000, `took over after ${ms} ms`);
      console.log(`# shares of a killed replica taken over after ${ms} ms (lease duration 15 s)`);
    }
    const perReplica = Object.values(report.appsPerReplica);
    assert.equal(perReplica.length, 3);
    assert.equal(
      perReplica.reduce((a, b) => a + b, 0),
      APPS,
      `every app in exactly one replica's shares: ${JSON.stringify(report.appsPerReplica)}`,
    );
    // 32 shares over 3 replicas is 10 or 11 shares each; 30 apps hashed into them give each about a third.
    for (const n of perReplica) assert.ok(n >= 4 && n <= 18, `apps per replica ${perReplica.join(", ")}`);
    // Each replica's caches hold the apps of its own shares and no other (with their children): about a third.
    const cached = JSON.stringify(report.cachedPerReplica);
    for (const [identity, apps] of Object.entries(report.appsPerReplica)) {
      assert.equal(report.cachedPerReplica[identity]?.apps, apps, `${identity} caches its apps only: ${cached}`);
    }
    const objects = Object.values(report.cachedPerReplica).map((c) => c.objects);
    const total = objects.reduce((a, b) => a + b, 0);
    for (const n of objects) assert.ok(n > 0 && n < total * 0.6, `cached objects per replica: ${cached}`);
    assert.deepEqual(report.shareOverlaps, [], "no share held by two replicas at once");
    // At the end, after the kills and the moves they caused (each share gained loaded by its label): every child
    // carries its share, and every replica caches exactly the children of its shares.
    assert.deepEqual(report.shareLabelErrors, [], "every child labelled with its share, no pod template");
    assert.deepEqual(report.cacheMismatches, [], "each replica caches exactly its shares' children");
    for (const name of INVARIANTS) {
      assert.equal(report.check.counts[name], 0, `${name}: ${report.check.examples[name].join(" | ")}`);
    }
  },
);
