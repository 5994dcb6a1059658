/**
 * The reconciler over caches that lag behind its own writes, as real ones do for a moment: the app's status
 * write can be seen (and reconciled again) before the child's watch event arrives.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { pino } from "pino";
import type { CanaryApp, CanaryAppStatus } from "../api/types.js";
import { FakeClock } from "../controller/fake-clock.test-helpers.js";
import { FakeInformer } from "../controller/fake-informer.test-helpers.js";
import type { ObjectWithMeta } from "../controller/informer.js";
import { seedApp } from "../resources/fixtures.test-helpers.js";
import type { ChildObject } from "../resources/children.js";
import { istioRouter } from "../router/istio.js";
import type { PlannedEvent } from "../rollout/types.js";
import { deploymentTarget } from "../workload/deployment.js";
import { AnalysisRuns } from "./analysis-runs.js";
import type { ClusterWriter, EventSink, ReconcileObserver } from "./ports.js";
import { CanaryReconciler } from "./reconciler.js";

const KINDS = ["Deployment", "Service", "StatefulSet", "DestinationRule", "VirtualService"];

/** A reconciler whose writes are recorded and reach the caches only when the test says so. */
function harness() {
  const clock = new FakeClock(Date.UTC(2026, 10, 25));
  const log = pino({ level: "silent" });
  const app = seedApp();
  const apps = new FakeInformer<CanaryApp & ObjectWithMeta>([app]);
  const children = new Map(KINDS.map((kind) => [kind, new FakeInformer<ObjectWithMeta>()]));
  const writes: string[] = [];
  const events: string[] = [];
  /** What the API server holds now; `deliver` shows it to the caches. */
  const server: { kind: string; obj: ChildObject | undefined; name: string; namespace: string }[] = [];
  let rv = 1;
  const writer: ClusterWriter = {
    apply: (obj) => {
      writes.push(`apply ${obj.kind} ${obj.metadata.name}`);
      server.push({ kind: obj.kind, obj, name: obj.metadata.name, namespace: obj.metadata.namespace });
      return Promise.resolve();
    },
    create: (obj) => {
      writes.push(`create ${obj.kind} ${obj.metadata.name}`);
      server.push({ kind: obj.kind, obj, name: obj.metadata.name, namespace: obj.metadata.namespace });
      return Promise.resolve(true);
    },
    deletePod: (_namespace, name) => {
      writes.push(`delete Pod ${name}`);
      return Promise.resolve(true);
    },
    remove: (ref) => {
      writes.push(`delete ${ref.kind} ${ref.name}`);
      server.push({ kind: ref.kind, obj: undefined, name: ref.name, namespace: ref.namespace });
      return Promise.resolve();
    },
    replaceStatus: (_app: CanaryApp, status: CanaryAppStatus) => {
      writes.push("status");
      // The status write reaches the app's cache at once: the race under test is the child's event coming later.
      const cached = apps.get(app.metadata.namespace ?? "", app.metadata.name ?? "");
      rv += 1;
      apps.set({ ...(cached ?? app), status, metadata: { ...app.metadata, resourceVersion: String(rv) } });
      return Promise.resolve(String(rv));
    },
    removeAnnotations: () => Promise.resolve(undefined),
    read: () => Promise.resolve(undefined),
  };
  const sink: EventSink = {
    record: (_app: CanaryApp, event: PlannedEvent) => {
      events.push(event.reason);
      return Promise.resolve();
    },
    tell: (_app: CanaryApp, event: PlannedEvent) => {
      events.push(event.reason);
      return Promise.resolve(true);
    },
  };
  const observer: ReconcileObserver = {
    appObserved: () => undefined,
    appRemoved: () => undefined,
    analysisRan: () => undefined,
    eventRecorded: () => undefined,
    wrote: () => undefined,
  };
  const reconciler = new CanaryReconciler({
    caches: { canaryApps: apps, children },
    writer,
    events: sink,
    analyses: new AnalysisRuns({
      provider: { run: () => Promise.reject(new Error("no analysis in this test")) },
      requeue: () => undefined,
      hostOf: () => "prometheus",
      deadlineMs: () => 10_000,
      clock,
      log,
    }),
    router: istioRouter,
    workload: deploymentTarget,
    observer,
    log,
    clock,
  });
  for (const [kind, cache] of children) {
    const seen = (obj: ObjectWithMeta) => reconciler.childSeen(kind, obj);
    cache.onAdd(seen);
    cache.onUpdate(seen);
    cache.onDelete(seen);
  }
  const key = `${app.metadata.namespace ?? ""}/${app.metadata.name ?? ""}`;
  return {
    reconcile: () => reconciler.reconcile(key),
    writes,
    events,
    children,
    /** The children's watch events arrive: every write so far is shown to the caches, in order. */
    deliver: () => {
      for (const { kind, obj, name, namespace } of server.splice(0)) {
        const cache = children.get(kind);
        if (obj === undefined) cache?.remove(namespace, name);
        else cache?.set(structuredClone(obj));
      }
    },
  };
}

describe("CanaryReconciler over caches behind its own writes", () => {
  test("a child written and not yet seen in its cache is not written again", async () => {
    const h = harness();
    await h.reconcile();
    const created = h.writes.filter((w) => w.startsWith("create"));
    assert.equal(created.length, 6, h.writes.join(", "));
    // The status write is seen, the children's events are not yet: the next reconcile writes no child.
    h.writes.length = 0;
    await h.reconcile();
    assert.deepEqual(
      h.writes.filter((w) => w !== "status"),
      [],
    );
    assert.ok(!h.events.includes("Updated"), h.events.join(", "));
  });

  test("once the cache shows the child, a change someone else made is repaired as always", async () => {
    const h = harness();
    await h.reconcile();
    h.deliver();
    h.writes.length = 0;
    await h.reconcile();
    assert.deepEqual(h.writes, [], "the caches show everything written: nothing to do");
    // Someone edits the VirtualService: its watch event comes, and the reconcile puts it back.
    const vs = h.children.get("VirtualService")?.list()[0];
    assert.ok(vs !== undefined);
    h.children.get("VirtualService")?.set({ ...structuredClone(vs), spec: { hosts: ["elsewhere"] } } as ObjectWithMeta);
    await h.reconcile();
    assert.deepEqual(h.writes, [`apply VirtualService ${vs.metadata?.name ?? ""}`]);
    assert.ok(h.events.includes("Updated"), "the repair is told");
  });
});
