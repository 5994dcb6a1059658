import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { V1Deployment } from "@kubernetes/client-node";
import { GROUP, VERSION, type CanaryApp, type CanaryAppStatus } from "../src/api/types.js";
import { assignShares } from "../src/controller/shards.js";
import type { AppScript } from "../test/chaos/invariants.js";
import {
  atRest,
  auditFigures,
  coverageOf,
  endingProblems,
  formatChurn,
  reachedFirstStep,
  rolloutFigures,
  uncoveredMs,
  type ChurnEvent,
  type ChurnResult,
  type CoverageSample,
  type FinalObjects,
  type RolloutEnding,
} from "./churn-report.js";

const v1 = "registry.example.com/canary/roll-0:v1";
const v2 = "registry.example.com/canary/roll-0:v2";

function app(status: CanaryAppStatus, generation = 2, image = v2): CanaryApp {
  return {
    apiVersion: `${GROUP}/${VERSION}`,
    kind: "CanaryApp",
    metadata: { name: "roll-0", generation },
    spec: { image, imageListenPort: 8080 },
    status,
  };
}

const deployment = (image: string): V1Deployment => ({
  spec: { selector: {}, template: { spec: { containers: [{ name: "app", image }] } } },
});

const route = (primary: number, secondary: number) => ({
  metadata: { name: "roll-0" },
  spec: {
    http: [
      {
        route: [
          { destination: { host: "roll-0", subset: "primary" }, weight: primary },
          { destination: { host: "roll-0", subset: "secondary" }, weight: secondary },
        ],
      },
    ],
  },
});

const script = (passes: boolean): AppScript => ({ name: "roll-0", initialImage: v1, waves: [{ image: v2, passes }] });

const failedV2 = { image: v2, failedAt: "2026-11-28T10:00:00Z", reason: "AnalysisFailed", message: "errors above 0" };

const promoted: FinalObjects = {
  app: app({ phase: "Healthy", observedGeneration: 2, primaryImage: v2, failedImages: [] }),
  primary: deployment(v2),
  secondary: undefined,
  virtualService: route(100, 0),
};

const rolledBack: FinalObjects = {
  app: app({ phase: "Failed", observedGeneration: 2, primaryImage: v1, failedImages: [failedV2] }),
  primary: deployment(v1),
  secondary: undefined,
  virtualService: route(100, 0),
};

describe("how a rolled-out app ended", () => {
  test("a passing image promoted, and a failing one rolled back, ended right", () => {
    assert.deepEqual(endingProblems(script(true), promoted), []);
    assert.deepEqual(endingProblems(script(false), rolledBack), []);
  });

  test("a passing image rolled back ended wrong: the phase, the primary, the record of the failure", () => {
    assert.deepEqual(endingProblems(script(true), rolledBack), [
      "phase Failed",
      `primary runs ${v1}`,
      `status.primaryImage ${v1}`,
      `${v2} in status.failedImages 1 times`,
    ]);
  });

  test("a failing image promoted ended wrong", () => {
    assert.deepEqual(endingProblems(script(false), promoted), [
      "phase Healthy",
      `primary runs ${v2}`,
      `status.primaryImage ${v2}`,
      `${v2} in status.failedImages 0 times`,
    ]);
  });

  test("a test still running, with weight on the secondary, has not ended", () => {
    const running: FinalObjects = {
      app: app({
        phase: "Progressing",
        observedGeneration: 2,
        primaryImage: v1,
        canary: { image: v2, stage: "Stepping", step: 1, startedAt: "", stepStartedAt: "", failedChecks: 0 },
      }),
      primary: deployment(v1),
      secondary: deployment(v2),
      virtualService: route(80, 20),
    };
    assert.deepEqual(endingProblems(script(true), running), [
      "phase Progressing",
      `primary runs ${v1}`,
      `status.primaryImage ${v1}`,
      "a test is still Stepping",
      "the primary does not take all traffic",
      "the secondary still exists",
    ]);
  });

  test("a status of an older generation, or a spec.image changed since, is not the end of this rollout", () => {
    const stale = { ...promoted, app: app({ ...promoted.app?.status, observedGeneration: 1 }, 2) };
    assert.deepEqual(endingProblems(script(true), stale), ["status of generation 1, the app's is 2"]);
    const other = { ...promoted, app: app({ ...promoted.app?.status }, 2, v1) };
    assert.deepEqual(endingProblems(script(true), other), [`spec.image ${v1}`]);
  });

  test("an app that is gone, or whose route and primary are gone", () => {
    assert.deepEqual(endingProblems(script(true), { ...promoted, app: undefined }), ["the app is missing"]);
    assert.deepEqual(endingProblems(script(true), { ...promoted, primary: undefined, virtualService: undefined }), [
      "primary runs undefined",
      "the primary does not take all traffic",
    ]);
  });

  test("at rest only on the change's generation, with no test and phase Healthy or Failed", () => {
    assert.equal(atRest(promoted.app as CanaryApp, 2), true);
    assert.equal(atRest(rolledBack.app as CanaryApp, 2), true);
    assert.equal(atRest(promoted.app as CanaryApp, 3), false);
    assert.equal(atRest(app({ phase: "Healthy", observedGeneration: 1, primaryImage: v1 }), 2), false);
    assert.equal(atRest(app({ phase: "Promoting", observedGeneration: 2 }), 2), false);
  });

  test("the first step is reached once the test of spec.image has a step, or is over", () => {
    const at = (step: number, image = v2) =>
      app({
        phase: "Progressing",
        observedGeneration: 2,
        canary: { image, stage: "Stepping", step, startedAt: "", stepStartedAt: "", failedChecks: 0 },
      });
    assert.equal(reachedFirstStep(at(-1), 2), false);
    assert.equal(reachedFirstStep(at(0), 2), true);
    assert.equal(reachedFirstStep(at(0, v1), 2), false);
    assert.equal(reachedFirstStep(rolledBack.app as CanaryApp, 2), true);
  });
});

describe("whether the apps are covered", () => {
  const replicas = ["churn-b", "churn-c"];
  const assigned = assignShares(replicas, 4);
  const asAssigned = [0, 1, 2, 3].map((share) => replicas.find((r) => assigned.get(r)?.includes(share)));
  const sample = (over: Partial<CoverageSample> = {}): CoverageSample => ({
    at: 0,
    holders: asAssigned,
    replicas: [
      { identity: "churn-b", shares: 2, apps: 60, loading: 0 },
      { identity: "churn-c", shares: 2, apps: 40, loading: 0 },
    ],
    ...over,
  });

  test("every share held by a live replica, none loading, all apps in their shares: covered, as assigned", () => {
    const c = coverageOf(sample(), 100);
    assert.equal(c.covered, true);
    assert.equal(c.asAssigned, true);
    assert.equal(c.appsCovered, 100);
    assert.equal(c.sharesWithoutLiveHolder, 0);
  });

  test("a share still held by the killed replica's Lease, or free, is not covered", () => {
    const c = coverageOf(sample({ holders: ["churn-a", ...asAssigned.slice(1)] }), 100);
    assert.equal(c.covered, false);
    assert.equal(c.sharesWithoutLiveHolder, 1);
    assert.equal(coverageOf(sample({ holders: [undefined, ...asAssigned.slice(1)] }), 100).covered, false);
  });

  test("a share loading, fewer apps or fewer shares than all, is not covered", () => {
    const [b, c] = sample().replicas as [CoverageSample["replicas"][number], CoverageSample["replicas"][number]];
    assert.equal(coverageOf(sample({ replicas: [{ ...b, loading: 1 }, c] }), 100).covered, false);
    assert.equal(coverageOf(sample({ replicas: [{ ...b, apps: 59 }, c] }), 100).covered, false);
    assert.equal(coverageOf(sample({ replicas: [{ ...b, shares: 1 }, c] }), 100).covered, false);
  });

  test("covered but not as the live replicas' assignment has it: a share yet to move", () => {
    const swapped = asAssigned.map((h) => (h === "churn-b" ? "churn-c" : "churn-b"));
    const c = coverageOf(sample({ holders: swapped }), 100);
    assert.equal(c.covered, true);
    assert.equal(c.asAssigned, false);
  });

  test("a new replica that holds nothing yet: still covered, not as assigned", () => {
    const c = coverageOf(
      sample({ replicas: [...sample().replicas, { identity: "churn-d", shares: 0, apps: 0, loading: 0 }] }),
      100,
    );
    assert.equal(c.covered, true);
    assert.equal(c.asAssigned, false);
  });

  test("the time not covered is each sample not covered up to the next one", () => {
    const samples = [
      { at: 0, covered: true },
      { at: 500, covered: false },
      { at: 1000, covered: false },
      { at: 1600, covered: true },
      { at: 2000, covered: false },
    ];
    assert.equal(uncoveredMs(samples), 1100);
    assert.equal(uncoveredMs([]), 0);
  });
});

describe("the rollouts' figures", () => {
  const ending = (
    name: string,
    passes: boolean,
    seconds: number | undefined,
    problems: string[] = [],
  ): RolloutEnding => ({
    name,
    passes,
    seconds,
    problems,
  });

  test("right endings by kind; wrong ones and those not ended counted, with examples", () => {
    const f = rolloutFigures(
      [
        ending("roll-0", true, 14),
        ending("roll-1", true, 20),
        ending("roll-2", true, 30, ["phase Failed"]),
        ending("roll-3", false, 6),
        ending("roll-4", false, undefined, ["a test is still Stepping"]),
      ],
      600,
      31.25,
    );
    assert.equal(f.rolling, 5);
    assert.equal(f.passing, 3);
    assert.equal(f.failing, 2);
    assert.equal(f.promoted, 2);
    assert.equal(f.rolledBack, 1);
    assert.equal(f.wrong, 2);
    assert.equal(f.notEnded, 1);
    assert.deepEqual(f.examples, [
      "roll-2 (passing): phase Failed",
      "roll-4 (failing): did not end in 600 s; a test is still Stepping",
    ]);
    assert.equal(f.secondsToAllEnded, 31.3);
    assert.deepEqual(f.perAppSeconds, { median: 14, max: 30 });
  });

  test("an app not ended is wrong even when its objects look right", () => {
    const f = rolloutFigures([ending("roll-0", true, undefined)], 600, undefined);
    assert.equal(f.wrong, 1);
    assert.equal(f.promoted, 0);
    assert.equal(f.secondsToAllEnded, undefined);
  });
});

describe("the report", () => {
  const event = (over: Partial<ChurnEvent>): ChurnEvent => ({
    replica: "churn-a",
    atMs: 5_000,
    shares: [1, 2, 3],
    rollingApps: 20,
    midRollout: 15,
    firstMs: 17_000,
    asAssignedMs: 17_000,
    coveredAgainMs: 18_500,
    uncoveredMs: 18_500,
    leastCovered: 3_300,
    ...over,
  });
  const replica = (identity: string) => ({
    identity,
    shares: 11,
    apps: 1_660,
    rollingApps: 66,
    loading: 0,
    rssMiB: 150,
    writes: 9_000,
  });
  const result: ChurnResult = {
    apps: 5_000,
    rolling: 200,
    failEvery: 5,
    shares: 32,
    intervalSeconds: 2,
    secondsToAllChildren: 61.2,
    secondsToRollingHealthy: 3.4,
    before: ["churn-a", "churn-b", "churn-c"].map(replica),
    after: ["churn-b", "churn-c", "churn-d"].map(replica),
    kill: event({}),
    add: { ...event({ replica: "churn-d", atMs: 24_000, uncoveredMs: 2_500, leastCovered: 4_400 }), readyMs: 900 },
    overall: { spanMs: 37_500, uncoveredMs: 21_000 },
    mostAppsCounted: 5_000,
    mostSharesCounted: 32,
    rollouts: rolloutFigures([{ name: "roll-0", passes: true, seconds: 14, problems: [] }], 600, 14),
    audit: auditFigures({
      writes: 40_000,
      replicas: ["churn-a", "churn-b"],
      writesBy: { "churn-a": 20_000, "churn-b": 20_000 },
      apps: 5_000,
      overlaps: [
        "churn-rolling/roll-3: churn-a (3 writes 0–10 ms) and churn-b (1 writes 5–5 ms) overlap 0 ms",
        "churn-rolling/roll-3: churn-a (1 writes 20–20 ms) and churn-b (1 writes 20–20 ms) overlap 0 ms",
      ],
      tenures: 5_100,
      handovers: 100,
      longestHandoverMs: 16_000,
      unattributed: [],
    }),
    shareOverlaps: [],
    timeline: ["0 200 rollouts started", "5000 SIGKILL churn-a"],
  };
  const lines = formatChurn(result);

  test("apps written by two counted once each, whatever their windows", () => {
    assert.equal(result.audit.appsWrittenByTwo, 1);
    assert.equal(result.audit.overlaps, 2);
  });

  test("one line per replica before and after, and a line for each event", () => {
    assert.equal(lines.filter((l) => l.startsWith("churn: before: ")).length, 3);
    assert.equal(lines.filter((l) => l.startsWith("churn: after: ")).length, 3);
    assert.ok(
      lines.some((l) => l.startsWith("churn: SIGKILL churn-a at 5.0 s (3 shares, 20 rolling apps, 15 mid-rollout)")),
    );
    assert.ok(lines.some((l) => l.includes("every app covered again after 18.5 s")));
    assert.ok(lines.some((l) => l.startsWith("churn: churn-d added at 24.0 s: Ready after 0.9 s")));
    assert.ok(
      lines.some((l) =>
        l.startsWith("churn: overall: from the kill until every app was covered after the addition 37.5 s"),
      ),
    );
  });

  test("the rollouts and the overlaps, with their examples", () => {
    assert.ok(lines.some((l) => l.includes("1 promoted and 0 rolled back as their images call for; ended wrong: 0")));
    assert.ok(
      lines.some((l) =>
        l.startsWith(
          "churn: apps written by two replicas at once (kube-apiserver audit): 1  e.g. churn-rolling/roll-3",
        ),
      ),
    );
    assert.ok(lines.includes("churn: shares held by two replicas at once (their logs): 0"));
  });

  test("a time not reached reads as a dash", () => {
    const late = formatChurn({ ...result, kill: event({ coveredAgainMs: undefined }) });
    assert.ok(late.some((l) => l.includes("every app covered again after – s")));
  });
});
