/**
 * The planner's decisions with a StatefulSet: the real planner, the real children (desiredChildren with
 * the StatefulSet target) and the real observation, against a simulated StatefulSet controller that rolls
 * ordinals as kube-controller-manager does (OrderedReady: from the highest ordinal down to the partition,
 * one at a time, each once the others are ready). Each case runs a test to its end and checks, at every
 * reconcile, what a StatefulSet canary promises: ordinals below the partition are never touched during a
 * test, only the highest ordinals ever run the tested revision before promotion, and a track given
 * traffic has ready pods behind its Service.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { describe, test } from "node:test";
import { withDefaults } from "../api/defaults.js";
import type { CanaryApp, MetricResult } from "../api/types.js";
import { ANNOTATIONS, ISTIO_CANONICAL_LABELS, REVISION_LABEL } from "../api/types.js";
import { observePods } from "../canary/observe.js";
import { desiredChildren } from "../resources/children.js";
import type { DestinationRuleObject } from "../router/istio.js";
import type { ServiceObject } from "../resources/service.js";
import { TRAFFIC_CHECK_NAME, analysisChecks } from "../analysis/checks.js";
import { at } from "../rollout/fixtures.test-helpers.js";
import type { Planning } from "../rollout/planner.js";
import { analysisDue, plan, startPlan } from "../rollout/planner.js";
import type { Plan, Weights } from "../rollout/types.js";
import { istioRouter } from "../router/istio.js";
import type { StatefulSetObject } from "./statefulset.js";
import { observeStatefulSet, statefulSetTarget } from "./statefulset.js";

const V1 = "example/db:v1";
const V2 = "example/db:v2";
const V3_BROKEN = "example/db:v3-never-ready";
const V4 = "example/db:v4";
const REPLICAS = 3;
const READY_AFTER = 3;

interface FakePod {
  revision: string;
  image: string;
  labels: Record<string, string>;
  readyAt: number;
  /** How many times this ordinal's pod was made (its claim is always `data-db-<ordinal>`). */
  incarnation: number;
}

const digestOf = (image: string) => `sha256:${createHash("sha256").update(image).digest("hex")}`;

/** kube-controller-manager's StatefulSet controller, at the level the canary depends on. */
class FakeStatefulSetController {
  sts: StatefulSetObject | null = null;
  generation = 0;
  pods: FakePod[] = [];
  currentRevision = "";

  apply(desired: StatefulSetObject): void {
    if (this.sts !== null && JSON.stringify(this.sts.spec) === JSON.stringify(desired.spec)) {
      this.sts = desired;
      return;
    }
    this.sts = structuredClone(desired);
    this.generation++;
  }

  private update(): string {
    return this.sts?.spec.template.metadata.labels[REVISION_LABEL] ?? "";
  }

  /** One pass of the controller at `time`: create missing pods, replace at most one outdated ordinal. */
  tick(time: number): boolean {
    const sts = this.sts;
    if (sts === null) return false;
    const update = this.update();
    const make = (old: FakePod | undefined): FakePod => ({
      revision: update,
      image: sts.spec.template.spec.containers[0]?.["image"] as string,
      labels: { ...sts.spec.template.metadata.labels },
      readyAt: (sts.spec.template.spec.containers[0]?.["image"] as string).startsWith(V3_BROKEN)
        ? Number.POSITIVE_INFINITY
        : time + READY_AFTER,
      incarnation: (old?.incarnation ?? 0) + 1,
    });
    if (this.pods.length < sts.spec.replicas) {
      if (this.pods.every((p) => p.readyAt <= time)) {
        this.pods.push(make(this.graveyard.get(this.pods.length)));
        return true;
      }
      return false;
    }
    if (this.pods.every((p) => p.revision === update)) this.currentRevision = update;
    if (!this.pods.every((p) => p.readyAt <= time)) return false;
    const partition = sts.spec.updateStrategy.rollingUpdate.partition;
    for (let n = this.pods.length - 1; n >= partition; n--) {
      if (this.pods[n]?.revision !== update) {
        this.pods[n] = make(this.pods[n]);
        return true;
      }
    }
    return false;
  }

  /** A pod deleted (precondition: its resourceVersion): the StatefulSet controller makes it again on its next pass. */
  deletePod(name: string, resourceVersion: string): void {
    const n = Number(name.replace(/^db-/, ""));
    const pod = this.pods[n];
    // OrderedReady: only the highest ordinal is ever stranded in these cases; a gap would need a sparse list.
    assert.equal(n, this.pods.length - 1, "only the highest ordinal is deleted");
    if (pod === undefined || `${n}.${pod.incarnation}` !== resourceVersion) return;
    this.deleted.push(name);
    this.graveyard.set(n, pod);
    this.pods.pop();
  }

  readonly deleted: string[] = [];
  private readonly graveyard = new Map<number, FakePod>();

  wakeup(time: number): number | undefined {
    const pending = this.pods.map((p) => p.readyAt).filter((t) => t > time && Number.isFinite(t));
    return pending.length > 0 ? Math.min(...pending) : undefined;
  }

  object(time: number): unknown {
    if (this.sts === null) return undefined;
    const update = this.update();
    const current = this.currentRevision || update;
    return {
      ...this.sts,
      metadata: { ...this.sts.metadata, generation: this.generation },
      status: {
        observedGeneration: this.generation,
        replicas: this.pods.length,
        readyReplicas: this.pods.filter((p) => p.readyAt <= time).length,
        currentReplicas: this.pods.filter((p) => p.revision === current).length,
        updatedReplicas: this.pods.filter((p) => p.revision === update).length,
        currentRevision: current,
        updateRevision: update,
      },
    };
  }

  podObjects(time: number): unknown[] {
    return this.pods.map((p, n) => ({
      metadata: { name: `db-${n}`, labels: p.labels, resourceVersion: `${n}.${p.incarnation}` },
      spec: { containers: [{ name: "app", image: p.image }] },
      status: {
        conditions: [{ type: "Ready", status: p.readyAt <= time ? "True" : "False" }],
        containerStatuses: [
          { name: "app", imageID: `docker-pullable://${p.image.split("@")[0] ?? ""}@${digestOf(p.image)}` },
        ],
      },
    }));
  }
}

type Analyst = (names: string[]) => MetricResult[];
const verdict =
  (passed: boolean): Analyst =>
  (names) =>
    names.map((name) =>
      name === TRAFFIC_CHECK_NAME
        ? { name, kind: "traffic", value: 120, passed: true, reason: "120 requests" }
        : { name, kind: "threshold", value: passed ? 99.9 : 40, passed, reason: passed ? "ok" : "too low" },
    );

/** The controller's loop against the fake StatefulSet controller, checking the promises at every reconcile. */
class World {
  time = 0;
  route: Weights | null = null;
  services = new Map<string, ServiceObject>();
  readonly sts = new FakeStatefulSetController();
  readonly plans: Plan[] = [];
  /** Each ordinal's revision whenever it changed. */
  readonly ordinalLog: string[][] = [];

  constructor(
    public app: CanaryApp,
    public analyst: Analyst = verdict(true),
  ) {}

  reconcile(): Plan {
    const spec = withDefaults(this.app.spec);
    const split = observeStatefulSet(this.sts.object(this.time));
    const revision = split.secondary?.revision;
    const observed = {
      primary: split.primary,
      secondary: split.secondary,
      routedWeights: this.route === null ? null : { ...this.route },
      ...(split.status !== undefined ? { workload: split.status } : {}),
      setPods: statefulSetTarget.setPods(this.sts.object(this.time), this.sts.podObjects(this.time), "db"),
      ...(revision !== undefined
        ? { secondaryPods: observePods(this.sts.podObjects(this.time), "db", "app", { [REVISION_LABEL]: revision }) }
        : {}),
    };
    const now = at(this.time);
    const due = analysisDue({ app: this.app, spec, observed, now });
    if (due) this.checkQueriesSelectTheTestedPods(startPlan({ app: this.app, observed, now }));
    const names = analysisChecks(spec).map((c) => c.name);
    const result = plan({
      app: this.app,
      spec,
      observed: due ? { ...observed, analysis: this.analyst(names) } : observed,
      now,
    });
    this.plans.push(result);
    this.app = { ...this.app, status: structuredClone(result.status) };
    const children = desiredChildren(this.app, spec, result, istioRouter, statefulSetTarget);
    assert.deepEqual(children.remove, [], "nothing is ever removed");
    for (const child of children.apply) {
      if (child.kind === "StatefulSet") this.sts.apply(child as StatefulSetObject);
      if (child.kind === "Service") this.services.set(child.metadata.name, child as ServiceObject);
    }
    // A user's route naming `subset: primary` reaches the same pods as the primary's Service.
    const rule = children.apply.find((c) => c.kind === "DestinationRule") as DestinationRuleObject | undefined;
    assert.deepEqual(
      rule?.spec.subsets.map((s) => [s.name, s.labels]),
      [["primary", this.services.get(`${this.app.metadata.name ?? ""}-primary`)?.spec.selector]],
      "the DestinationRule's one subset selects the primary Service's pods",
    );
    for (const pod of result.deletePods ?? []) this.sts.deletePod(pod.name, pod.resourceVersion);
    this.route = { ...result.weights };
    if (result.removeAnnotations.length > 0) {
      const annotations = { ...this.app.metadata.annotations };
      for (const key of result.removeAnnotations) delete annotations[key];
      this.app = { ...this.app, metadata: { ...this.app.metadata, annotations } };
    }
    this.checkPromises(result);
    return result;
  }

  /**
   * The checks the planner asks for select, by Istio's canonical revision, the pods the test runs (the
   * highest ordinals) and none of the others: Istio reports both revisions as the workload `db`.
   */
  private checkQueriesSelectTheTestedPods(planning: Planning): void {
    assert.equal(planning.kind, "analysisDue");
    if (planning.kind !== "analysisDue") return;
    const revisionOfPod = (n: number) => this.sts.pods[n]?.labels[ISTIO_CANONICAL_LABELS.revision];
    const tested = revisionOfPod(REPLICAS - 1);
    const stable = revisionOfPod(0);
    assert.notEqual(tested, stable, "the tested ordinal's canonical revision differs from the stable one's");
    const builtins = planning.checks.filter((c) => c.query.includes("istio_requests_total"));
    assert.ok(builtins.length > 0, "the evidence of traffic is asked for");
    for (const check of builtins) {
      assert.match(check.query, new RegExp(`destination_canonical_revision="${tested}"`), check.name);
      assert.doesNotMatch(check.query, /destination_workload=/, check.name);
    }
  }

  /** Ready pods the Service of `track` selects. */
  readyBehind(service: string): number {
    const selector = this.services.get(service)?.spec.selector ?? {};
    return this.sts.pods.filter(
      (p) => p.readyAt <= this.time && Object.entries(selector).every(([k, v]) => p.labels[k] === v),
    ).length;
  }

  private checkPromises(p: Plan): void {
    const stage = p.status.canary?.stage;
    const sts = this.sts.sts;
    if (sts === null) return;
    const partition = sts.spec.updateStrategy.rollingUpdate.partition;
    const testing = stage === "WaitingForSecondary" || stage === "Stepping" || stage === "AwaitingPromotion";
    if (testing) {
      assert.equal(partition, REPLICAS - 1, `t=${this.time}: a test of one pod keeps the partition at replicas - 1`);
      const stable = this.sts.pods.slice(0, partition).map((pod) => pod.revision);
      assert.equal(new Set(stable).size, 1, `t=${this.time}: the ordinals below the partition run one revision`);
    }
    if (p.weights.secondary > 0) {
      assert.ok(this.readyBehind("db-secondary") > 0, `t=${this.time}: the secondary has traffic and a ready pod`);
    }
    if (p.weights.primary > 0 && this.sts.pods.length === REPLICAS) {
      assert.ok(this.readyBehind("db-primary") > 0, `t=${this.time}: the primary has traffic and a ready pod`);
    }
    const now = this.sts.pods.map((pod) => `${pod.image}#${pod.incarnation}`);
    if (JSON.stringify(this.ordinalLog.at(-1)) !== JSON.stringify(now)) this.ordinalLog.push(now);
  }

  setImage(image: string): void {
    this.app = structuredClone(this.app);
    this.app.spec.image = image;
    this.app.metadata.generation = (this.app.metadata.generation ?? 1) + 1;
  }

  annotate(key: string, value: string): void {
    this.app = structuredClone(this.app);
    this.app.metadata.annotations = { ...this.app.metadata.annotations, [key]: value };
  }

  /** Reconciles and lets the fake controller act until nothing changes and nothing is due. */
  runToRest(max = 3000): void {
    for (let i = 0; i < max; i++) {
      const before = JSON.stringify([this.app, this.route, this.sts.sts, this.sts.pods]);
      const p = this.reconcile();
      const acted = this.sts.tick(this.time);
      if (acted || JSON.stringify([this.app, this.route, this.sts.sts, this.sts.pods]) !== before) continue;
      const wakeups = [
        ...(p.requeueAfterSeconds !== undefined ? [this.time + p.requeueAfterSeconds] : []),
        ...[this.sts.wakeup(this.time)].filter((t): t is number => t !== undefined),
      ];
      if (wakeups.length === 0) return;
      this.time = Math.min(...wakeups);
    }
    throw new Error(`no rest after ${max} reconciles`);
  }
}

function statefulApp(manualPromotion = false): CanaryApp {
  return {
    apiVersion: "canaryapp.io/v1alpha1",
    kind: "CanaryApp",
    metadata: { name: "db", namespace: "shop", uid: "uid-1", generation: 1 },
    spec: {
      image: V1,
      imageListenPort: 8080,
      replicas: REPLICAS,
      testReplicas: 1,
      workload: { kind: "StatefulSet", volumeClaimTemplates: [{ name: "data", mountPath: "/data", storage: "1Gi" }] },
      analysis: {
        interval: "10s",
        stepWeights: [20, 50],
        // The default analysis: Istio's metrics of the secondary's canonical revision, and its traffic.
        manualPromotion,
      },
    },
  };
}

/** A world resting on v1. */
function deployed(manualPromotion = false): World {
  const world = new World(statefulApp(manualPromotion));
  world.runToRest();
  assert.equal(world.app.status?.phase, "Healthy");
  assert.deepEqual(
    world.sts.pods.map((p) => p.image),
    [V1, V1, V1],
  );
  return world;
}

const pinned = (image: string) => `example/db@${digestOf(image)}`;
const images = (world: World) => world.sts.pods.map((p) => p.image);
const incarnations = (world: World) => world.sts.pods.map((p) => p.incarnation);

describe("the planner with a StatefulSet", () => {
  test("automatic promotion: only the highest ordinal is tested, then all take the tested build", () => {
    const world = deployed();
    const start = world.ordinalLog.length;
    world.setImage(V2);
    world.runToRest();
    const status = world.app.status;
    assert.equal(status?.phase, "Healthy");
    assert.equal(status?.primaryImage, V2);
    assert.equal(status?.primary?.digest, digestOf(V2), "the digest the tested pod ran");
    assert.deepEqual(images(world), [pinned(V2), pinned(V2), pinned(V2)]);
    // The tested ordinal, then (promoted by digest, a template of its own) every ordinal from the highest down.
    assert.deepEqual(
      world.ordinalLog.slice(start - 1).map((o) => o.map((x) => x.split("#")[0])),
      [
        [V1, V1, V1],
        [V1, V1, V2],
        [V1, V1, pinned(V2)],
        [V1, pinned(V2), pinned(V2)],
        [pinned(V2), pinned(V2), pinned(V2)],
      ],
    );
    assert.deepEqual(status?.workload?.canaryReplicas, 0);
    assert.deepEqual(status?.workload?.stableReplicas, REPLICAS);
    const routed = world.plans.map((p) => p.weights.secondary).filter((w, i, all) => i === 0 || all[i - 1] !== w);
    assert.deepEqual(routed, [0, 20, 50, 0]);
  });

  test("rollback: the tested ordinal returns to the stable revision; the others are never touched", () => {
    const world = deployed();
    const before = incarnations(world);
    world.analyst = verdict(false);
    world.setImage(V2);
    world.runToRest();
    const status = world.app.status;
    assert.equal(status?.phase, "Failed");
    assert.equal(status?.failedImages?.[0]?.image, V2);
    assert.deepEqual(images(world), [V1, V1, V1]);
    const after = incarnations(world);
    assert.deepEqual(after.slice(0, 2), before.slice(0, 2), "ordinals 0 and 1 kept their pods");
    assert.equal(after[2], (before[2] ?? 0) + 2, "ordinal 2: made for the test, then again for the rollback");
    assert.equal(world.sts.sts?.spec.updateStrategy.rollingUpdate.partition, 0);
  });

  test("a canary that never becomes Ready: rolled back at the progress deadline, its pod deleted so the StatefulSet restores the stable revision, and the next image promoted", () => {
    const world = deployed();
    const before = incarnations(world);
    world.setImage(V3_BROKEN);
    world.runToRest();
    const status = world.app.status;
    assert.equal(status?.phase, "Failed");
    assert.equal(status?.failedImages?.[0]?.image, V3_BROKEN);
    // OrderedReady waits for the broken pod even after the template is reverted (Kubernetes' forced
    // rollback): only deleting it lets the controller make it again at the stable revision.
    assert.deepEqual(world.sts.deleted, ["db-2"]);
    assert.deepEqual(images(world), [V1, V1, V1]);
    assert.ok(
      world.sts.pods.every((pod) => pod.readyAt <= world.time),
      "every pod Ready again",
    );
    assert.deepEqual(incarnations(world).slice(0, 2), before.slice(0, 2), "ordinals 0 and 1 never touched");
    const told = world.plans.flatMap((p) => p.events).filter((e) => e.reason === "StrandedPodsDeleted");
    assert.equal(told.length, 1);
    assert.match(told[0]?.message ?? "", /^deleting db-2 \(revision [0-9a-f]+\): not Ready/);
    world.setImage(V4);
    world.runToRest();
    assert.equal(world.app.status?.phase, "Healthy");
    assert.equal(world.app.status?.primaryImage, V4);
    assert.deepEqual(images(world), [pinned(V4), pinned(V4), pinned(V4)]);
  });

  test("manual promotion: the test waits on the highest ordinal until promoted", () => {
    const world = deployed(true);
    world.setImage(V2);
    world.runToRest();
    assert.equal(world.app.status?.canary?.stage, "AwaitingPromotion");
    assert.deepEqual(images(world), [V1, V1, V2]);
    assert.equal(world.app.status?.workload?.canaryReplicas, 1);
    assert.equal(world.app.status?.workload?.stableReplicas, 2);
    world.annotate(ANNOTATIONS.promote, "now");
    world.runToRest();
    assert.equal(world.app.status?.phase, "Healthy");
    assert.deepEqual(images(world), [pinned(V2), pinned(V2), pinned(V2)]);
  });

  test("abort while waiting for promotion: back to v1 on the same ordinal", () => {
    const world = deployed(true);
    world.setImage(V2);
    world.runToRest();
    const before = incarnations(world);
    world.annotate(ANNOTATIONS.abort, "now");
    world.runToRest();
    assert.deepEqual(images(world), [V1, V1, V1]);
    assert.deepEqual(incarnations(world).slice(0, 2), before.slice(0, 2));
    assert.equal(world.app.status?.canary, undefined);
  });
});
