/** The runs `make chaos` makes from its flags and environment (no cluster needed). */
import assert from "node:assert/strict";
import { test } from "node:test";
import { chaosRuns } from "../chaos/runs.js";

test("by default: a run per restart delay, the failover, then the upgrade 1 → 32 → 64 with 20 apps", () => {
  const runs = chaosRuns({});
  assert.deepEqual(
    runs.map((r) => [r.replicas, r.restartDelayMs, r.shareCounts]),
    [
      [1, 0, undefined],
      [1, 3_000, undefined],
      [1, 20_000, undefined],
      [2, 0, undefined],
      [2, 0, [1, 32, 64]],
    ],
  );
  const upgrade = runs.at(-1);
  assert.equal(upgrade?.apps, 20);
  assert.deepEqual(upgrade?.faults, []);
});

test("--only=upgrade runs the upgrade alone, shortened by its flags or environment", () => {
  const flags = chaosRuns({}, ["--only=upgrade", "--upgrade-shares=1,4,8", "--upgrade-apps=6"]);
  assert.deepEqual(
    flags.map((r) => [r.shareCounts, r.apps]),
    [[[1, 4, 8], 6]],
  );
  const env = chaosRuns({ CHAOS_ONLY: "upgrade", CHAOS_UPGRADE_SHARES: "4,8", CHAOS_UPGRADE_DURATION: "10" });
  assert.deepEqual(
    env.map((r) => [r.shareCounts, r.durationMs]),
    [[[4, 8], 10_000]],
  );
});

test("the upgrade left out, or only the fault runs", () => {
  assert.ok(chaosRuns({ CHAOS_UPGRADE: "false" }).every((r) => r.shareCounts === undefined));
  assert.equal(chaosRuns({}, ["--only=faults"]).length, 4);
});

test("a share-count list of fewer than two whole counts, or another --only, is refused", () => {
  assert.throws(() => chaosRuns({}, ["--upgrade-shares=32"]), /two or more whole share counts/);
  assert.throws(() => chaosRuns({}, ["--upgrade-shares=1,0"]), /two or more whole share counts/);
  assert.throws(() => chaosRuns({}, ["--only=kills"]), /--only must be/);
});
