import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { markdownTable, type PeerFigures, type PeersResult, type RolloutFigures } from "./report.js";

const rollout = (app: string, seconds: number[], requests: number): RolloutFigures => {
  const [scaledUpSeconds = 0, firstWeightSeconds = 0, allTrafficSeconds = 0, fullSeconds = 0] = seconds;
  return { app, scaledUpSeconds, firstWeightSeconds, allTrafficSeconds, fullSeconds, requests, requestsByVerb: {} };
};
const peer = (label: string, over: Partial<PeerFigures>): PeerFigures => ({
  label,
  apps: 20,
  intervalSeconds: 10,
  steps: 5,
  atRest: { windowSeconds: 60, requests: 0, requestsPerMinute: 0, byVerb: {} },
  rssMiB: 100,
  rollouts: [],
  sharedRequestsDuringRollouts: 0,
  ...over,
});
const rest = (perMinute: number) => ({
  windowSeconds: 60,
  requests: perMinute,
  requestsPerMinute: perMinute,
  byVerb: {},
});

const canaryapp = peer("canaryapp", {
  rssMiB: 60,
  rollouts: [rollout("a", [0.04, 0.2, 50.2, 55.2], 40), rollout("b", [0.06, 0.3, 50.4, 55.4], 42)],
});
const flagger = peer("Flagger 1.44.0", {
  rssMiB: 66,
  atRest: rest(1440),
  rollouts: [rollout("a", [2, 12, 72, 82], 170), rollout("b", [8, 18, 78, 88], 172)],
});
const argo = peer("Argo Rollouts 1.10.1", {
  rssMiB: 90,
  atRest: rest(30),
  rollouts: [rollout("a", [0.5, 1.5, 52, 82], 80), rollout("b", [0.7, 1.7, 53, 83], 90)],
});
const result = (peers: PeerFigures[]): PeersResult => ({
  date: "2026-11-27T20:00:00.000Z",
  work: { apps: 20, intervalSeconds: 10, stepWeight: 10, maxWeight: 50, rollouts: 2 },
  machine: { cpus: 2, node: "v24" },
  peers,
});

describe("the table of make bench-peers with three peers", () => {
  const lines = markdownTable(result([canaryapp, flagger, argo])).split("\n");

  test("one column per peer, then each other peer's ratio to canaryapp", () => {
    assert.equal(
      lines[0],
      "|  | canaryapp | Flagger 1.44.0 | Argo Rollouts 1.10.1 | Flagger 1.44.0 ÷ canaryapp | Argo Rollouts 1.10.1 ÷ canaryapp |",
    );
    assert.equal(lines[1], "|---|---|---|---|---|---|");
    for (const line of lines) assert.equal(line.split("|").length, 8, line);
  });

  test("each row: the three figures, and the two ratios of medians", () => {
    const row = (label: string) => lines.find((l) => l.startsWith(`| ${label} |`));
    assert.equal(
      row("API requests/min at rest, 20 apps"),
      "| API requests/min at rest, 20 apps | 0 | 1,440 | 30 | ∞ | ∞ |",
    );
    assert.equal(
      row("image patch → first weight"),
      "| image patch → first weight | 0.20–0.30 s | 12.0–18.0 s | 1.5–1.7 s | 60× | 6.40× |",
    );
    assert.equal(
      row("image patch → all traffic on it, 5 steps (floor: 50 s of steps)"),
      "| image patch → all traffic on it, 5 steps (floor: 50 s of steps) | 50.2–50.4 s | 72.0–78.0 s | 52.0–53.0 s | 1.49× | 1.04× |",
    );
    assert.equal(
      row("API requests during one rollout (about that app)"),
      "| API requests during one rollout (about that app) | 40–42 | 170–172 | 80–90 | 4.17× | 2.07× |",
    );
    assert.equal(row("RSS, 20 apps"), "| RSS, 20 apps | 60 MiB | 66 MiB | 90 MiB | 1.10× | 1.50× |");
  });

  test("one peer alone (BENCH_PEERS_ONLY=argo-rollouts): its column, no ratio", () => {
    const alone = markdownTable(result([argo])).split("\n");
    assert.equal(alone[0], "|  | Argo Rollouts 1.10.1 |");
    assert.ok(alone.includes("| RSS, 20 apps | 90 MiB |"), alone.join("\n"));
  });

  test("two peers: the ratio of the second to the first, as before", () => {
    const two = markdownTable(result([canaryapp, argo])).split("\n");
    assert.equal(two[0], "|  | canaryapp | Argo Rollouts 1.10.1 | Argo Rollouts 1.10.1 ÷ canaryapp |");
    assert.ok(two.includes("| RSS, 20 apps | 60 MiB | 90 MiB | 1.50× |"), two.join("\n"));
  });
});
