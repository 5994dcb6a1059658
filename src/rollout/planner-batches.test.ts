import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { withDefaults } from "../api/defaults.js";
import type { BatchPause, CanaryApp } from "../api/types.js";
import { ANNOTATIONS } from "../api/types.js";
import { scoreCheck } from "../analysis/verdicts.js";
import type { AnalysisCheck } from "../analysis/checks.js";
import { analysisChecks } from "../analysis/checks.js";
import { V1, V2, at, makeApp } from "./fixtures.test-helpers.js";
import { analysisDue, plan } from "./planner.js";
import { noMeshRouter } from "../router/none.js";
import type { MetricResult } from "../api/types.js";
import type { Observation, Plan, Weights } from "./types.js";

/** A Deployment whose pods of the current template become available `delay` seconds after a change. */
interface Workload {
  image: string;
  replicas: number;
  /** Pods of the current template available now. */
  available: number;
  readyAt: number;
}

type Analyst = (checks: AnalysisCheck[]) => MetricResult[];

const allPass: Analyst = (checks) => checks.map((c) => scoreCheck(c, { kind: "value", value: 100 }));

/**
 * A cluster that obeys plans, pod by pod: a scale-up's pods come `delay` seconds later, a scale-down takes
 * pods away at once, a new template starts from no available pod. The route takes the planned weights.
 */
class BatchWorld {
  time = 0;
  primary: Workload | null = null;
  secondary: Workload | null = null;
  route: Weights | null = null;
  /** [old, new] pods asked for after each reconcile that changed them: old runs V1, new V2. */
  readonly pods: [number, number][] = [];
  readonly plans: Plan[] = [];
  /** The controller dies right after persisting the status: nothing is applied. */
  crashAfterPersist = false;

  constructor(
    public app: CanaryApp,
    public analyst: Analyst = allPass,
    public delay = 5,
  ) {}

  observe(): Observation {
    const view = (w: Workload | null) =>
      w === null
        ? null
        : {
            image: w.image,
            replicas: w.replicas,
            available: w.available >= w.replicas,
            readyReplicas: w.available,
            currentAvailable: w.available,
          };
    const primary = view(this.primary);
    const secondary = view(this.secondary);
    // Without a mesh the split is what the pods make it, whatever was planned.
    const routedWeights = this.app.spec.mesh === "none" ? noMeshRouter.splitByPods!(primary, secondary) : this.route;
    return { primary, secondary, routedWeights };
  }

  reconcile(): Plan {
    this.settle();
    const observed = this.observe();
    const spec = withDefaults(this.app.spec);
    const now = at(this.time);
    const due = analysisDue({ app: this.app, spec, observed, now });
    const input = {
      app: this.app,
      spec,
      observed: due ? { ...observed, analysis: this.analyst(analysisChecks(spec)) } : observed,
      now,
    };
    const p = plan(input);
    this.plans.push(p);
    this.app = { ...this.app, status: structuredClone(p.status) };
    if (this.crashAfterPersist) return p;
    this.primary = this.apply(this.primary, p.primary);
    this.secondary = p.secondary === null ? null : this.apply(this.secondary, p.secondary);
    this.route = { ...p.weights };
    if (p.removeAnnotations.length > 0) {
      const annotations = { ...this.app.metadata.annotations };
      for (const key of p.removeAnnotations) delete annotations[key];
      this.app = { ...this.app, metadata: { ...this.app.metadata, annotations } };
    }
    this.record();
    return p;
  }

  private settle(): void {
    for (const w of [this.primary, this.secondary]) {
      if (w !== null && this.time >= w.readyAt) w.available = w.replicas;
    }
  }

  private apply(current: Workload | null, wanted: { image: string; replicas: number }): Workload {
    if (current === null || current.image !== wanted.image) {
      return { ...wanted, available: 0, readyAt: this.time + this.delay };
    }
    if (current.replicas === wanted.replicas) return current;
    return {
      ...wanted,
      available: Math.min(current.available, wanted.replicas),
      readyAt: wanted.replicas > current.available ? this.time + this.delay : current.readyAt,
    };
  }

  private record(): void {
    const count = (image: string) =>
      [this.primary, this.secondary].reduce((n, w) => n + (w?.image === image ? w.replicas : 0), 0);
    const now: [number, number] = [count(V1), count(V2)];
    const last = this.pods.at(-1);
    if (last?.[0] !== now[0] || last[1] !== now[1]) this.pods.push(now);
  }

  annotate(key: string, value: string): void {
    this.app = structuredClone(this.app);
    this.app.metadata.annotations = { ...this.app.metadata.annotations, [key]: value };
  }

  setImage(image: string): void {
    this.app = structuredClone(this.app);
    this.app.spec.image = image;
    this.app.metadata.generation = (this.app.metadata.generation ?? 1) + 1;
  }

  /** Reconciles as watches and requeues would, until nothing more happens by itself. */
  runToRest(max = 500): void {
    for (let i = 0; i < max; i++) {
      this.settle();
      const before = JSON.stringify([this.app, this.primary, this.secondary, this.route]);
      const p = this.reconcile();
      if (JSON.stringify([this.app, this.primary, this.secondary, this.route]) !== before) continue;
      const wakeups = [
        ...(p.requeueAfterSeconds !== undefined ? [this.time + p.requeueAfterSeconds] : []),
        ...[this.primary, this.secondary].flatMap((w) =>
          w !== null && w.readyAt > this.time && w.available < w.replicas ? [w.readyAt] : [],
        ),
      ];
      if (wakeups.length === 0) return;
      this.time = Math.min(...wakeups);
    }
    throw new Error(`no rest after ${max} reconciles`);
  }
}

function released(pause: BatchPause, analyst?: Analyst, mesh: "istio" | "none" = "istio"): BatchWorld {
  const app = makeApp({
    image: V1,
    spec: { replicas: 4, strategy: { type: "batches", batches: { count: 2, pause } }, mesh },
  });
  const world = new BatchWorld(app, analyst);
  world.runToRest();
  assert.equal(world.app.status?.phase, "Healthy");
  world.pods.length = 0;
  world.setImage(V2);
  return world;
}

const reasons = (world: BatchWorld): string[] => world.plans.flatMap((p) => p.events.map((e) => e.reason));

describe("batch release: 4 replicas in 2 batches", () => {
  test("pause first: 3 old / 1 new, paused; approved; 0 / 4; handed over; the secondary deleted", () => {
    const world = released("first");
    world.runToRest();
    assert.deepEqual(world.pods, [
      [4, 1],
      [3, 1],
    ]);
    const status = world.app.status;
    assert.equal(status?.canary?.approval?.batch, 1);
    assert.equal(status?.batch?.summary, "1/2 paused");
    assert.deepEqual(
      status?.batch?.batches.map((b) => [b.replicas, b.state]),
      [
        [1, "paused"],
        [4, "pending"],
      ],
    );
    assert.equal(status?.conditions?.find((c) => c.type === "Ready")?.reason, "WaitingForApproval");
    assert.equal(status?.weights?.secondary, 25, "with Istio the weight is the replica share");
    assert.equal(world.plans.at(-1)?.requeueAfterSeconds, undefined, "a paused batch waits for a person only");
    assert.match(status?.message ?? "", /kubectl canaryapp approve web -n shop/);

    world.annotate(ANNOTATIONS.approve, "now");
    world.runToRest();
    assert.deepEqual(world.pods, [
      [4, 1],
      [3, 1],
      [3, 4],
      [0, 4],
      [0, 6],
      [0, 4],
      [0, 6],
      [0, 4],
    ]);
    assert.equal(world.secondary, null, "the secondary is deleted");
    assert.equal(world.primary?.image, V2);
    assert.equal(world.primary?.replicas, 4);
    assert.equal(world.app.status?.phase, "Healthy");
    assert.equal(world.app.status?.batch?.summary, "2/2 finished");
    assert.equal(world.app.metadata.annotations?.[ANNOTATIONS.approve], undefined, "the approval is consumed");
    const told = reasons(world);
    assert.ok(told.includes("WaitingForApproval") && told.includes("BatchApproved") && told.includes("Promoted"));
    assert.ok(!told.includes("NothingToApprove"), told.join(","));
  });

  test("pause none: no wait between batches", () => {
    const world = released("none");
    world.runToRest();
    assert.deepEqual(world.pods, [
      [4, 1],
      [3, 1],
      [3, 4],
      [0, 4],
      [0, 6],
      [0, 4],
      [0, 6],
      [0, 4],
    ]);
    assert.ok(!reasons(world).includes("WaitingForApproval"));
  });

  for (const mesh of ["istio", "none"] as const) {
    test(`${mesh}: a failing analysis at batch 1 rolls back to 4 / 0, deletes the new, and records the image`, () => {
      const failing: Analyst = (checks) => checks.map((c) => scoreCheck(c, { kind: "value", value: 50 }));
      const world = released("first", failing, mesh);
      world.runToRest();
      assert.deepEqual(world.pods, [
        [4, 1],
        [3, 1],
        [4, 1],
        [4, 0],
      ]);
      assert.equal(world.secondary, null);
      const status = world.app.status;
      assert.equal(status?.phase, "Failed");
      assert.equal(status?.failedImages?.[0]?.image, V2);
      assert.equal(status?.batch?.rollback?.state, "finished");
      assert.equal(status?.batch?.summary, "1/2 rolled back");
    });
  }

  test("mesh none: the same replica sequence; the route's split is the pods'", () => {
    const world = released("none", allPass, "none");
    world.runToRest();
    assert.deepEqual(world.pods, [
      [4, 1],
      [3, 1],
      [3, 4],
      [0, 4],
      [0, 6],
      [0, 4],
      [0, 6],
      [0, 4],
    ]);
  });

  for (const control of ["abort", "promote"] as const) {
    test(`${control} while a batch waits for approval ends the wait`, () => {
      const world = released("first");
      world.runToRest();
      assert.equal(world.app.status?.canary?.approval?.batch, 1);
      world.annotate(ANNOTATIONS[control], "now");
      world.runToRest();
      const status = world.app.status;
      assert.equal(status?.canary, undefined);
      assert.equal(status?.phase, control === "abort" ? "Failed" : "Healthy");
      assert.notEqual(status?.conditions?.find((c) => c.type === "Ready")?.reason, "WaitingForApproval");
      assert.equal(world.secondary, null);
      assert.equal(world.primary?.replicas, 4);
      assert.equal(world.primary?.image, control === "abort" ? V1 : V2);
      assert.deepEqual(world.pods.at(-1), control === "abort" ? [4, 0] : [0, 4]);
      const states = status?.batch?.batches.map((b) => b.state) ?? [];
      assert.ok(!states.includes("paused"), JSON.stringify(status?.batch));
    });
  }

  test("a paused release holds an approval until it is resumed", () => {
    const world = released("first");
    world.runToRest();
    world.annotate(ANNOTATIONS.paused, "true");
    world.annotate(ANNOTATIONS.approve, "now");
    world.runToRest();
    assert.equal(world.app.status?.canary?.approval?.batch, 1, "still waiting");
    assert.equal(world.app.metadata.annotations?.[ANNOTATIONS.approve], "now", "the approval is kept for later");
    assert.deepEqual(world.pods.at(-1), [3, 1]);
    world.annotate(ANNOTATIONS.paused, "false");
    world.runToRest();
    assert.equal(world.app.status?.phase, "Healthy");
    assert.equal(world.primary?.image, V2);
  });

  test("an approval with no batch waiting is removed with a Warning", () => {
    const world = released("first");
    world.annotate(ANNOTATIONS.approve, "now");
    world.reconcile();
    assert.ok(reasons(world).includes("NothingToApprove"));
    assert.equal(world.app.metadata.annotations?.[ANNOTATIONS.approve], undefined);
  });

  test("a controller that dies after every status write finds the same replicas when it comes back", () => {
    const world = released("first");
    for (let i = 0; i < 200 && world.app.status?.canary?.approval === undefined; i++) {
      world.crashAfterPersist = true;
      const first = world.reconcile();
      world.crashAfterPersist = false;
      const again = world.reconcile();
      assert.equal(again.primary.replicas, first.primary.replicas);
      assert.equal(again.secondary?.replicas, first.secondary?.replicas);
      assert.deepEqual(
        again.events.filter((e) => e.reason !== "AnalysisPassed"),
        [],
        "the replay says nothing new",
      );
      world.time += 3;
    }
    assert.equal(world.app.status?.canary?.approval?.batch, 1);
    assert.deepEqual(world.pods.slice(0, 2), [
      [4, 1],
      [3, 1],
    ]);
  });
});
