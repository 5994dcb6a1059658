import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { withDefaults } from "../api/defaults.js";
import { observePods } from "../canary/observe.js";
import { alreadyApplied, withAppliedHash } from "../resources/applied-hash.js";
import { desiredChildren } from "../resources/children.js";
import { seedApp } from "../resources/fixtures.test-helpers.js";
import type { Plan } from "../rollout/types.js";
import { istioRouter, readIstioWeights } from "../router/istio.js";
import { APP_CONTAINER, observeDeployment } from "../workload/deployment.js";
import { observeStatefulSet, statefulSetTarget } from "../workload/statefulset.js";
import { CHILD_KINDS, PODS } from "./kinds.js";
import { trimDeployment, trimPod } from "./trim.js";

const app = seedApp();
const spec = withDefaults(app.spec);
const plan: Plan = {
  primary: { image: "img:v1", replicas: 2 },
  secondary: { image: "img:v2", replicas: 1 },
  weights: { primary: 90, secondary: 10 },
  status: {},
  events: [],
  tellChildUpdates: true,
  removeAnnotations: [],
};

/** What the API server returns for an applied child: server metadata, a default in the spec, a status. */
function live(applied: { kind: string; metadata: object; spec?: object }): Record<string, unknown> {
  const copy = structuredClone(applied) as { kind: string; metadata: object; spec?: Record<string, unknown> };
  return {
    ...copy,
    metadata: {
      ...copy.metadata,
      uid: "5e1f-uid",
      resourceVersion: "42",
      generation: 3,
      creationTimestamp: "2026-01-01T00:00:00Z",
      managedFields: [{ manager: "canaryapp", operation: "Apply", fieldsV1: { "f:spec": {} } }],
    },
    spec: { ...copy.spec, serverDefault: "x" },
    status:
      copy.kind === "Deployment"
        ? {
            observedGeneration: 3,
            replicas: 2,
            updatedReplicas: 2,
            readyReplicas: 2,
            availableReplicas: 2,
            conditions: [{ type: "Available", status: "True", message: "Deployment has minimum availability." }],
          }
        : {},
  };
}

const trimOf = (kind: string) => CHILD_KINDS.find((k) => k.kind === kind)?.trim ?? ((o: unknown) => o);

describe("cache trims", () => {
  const children = desiredChildren(app, spec, plan, istioRouter).apply.map(withAppliedHash);

  test("every child kind has a trim, and drift repair sees a trimmed child exactly as the whole one", () => {
    assert.equal(children.length, 7);
    for (const child of children) {
      const whole = live(child);
      const trimmed = trimOf(child.kind)(structuredClone(whole)) as Record<string, unknown>;
      assert.equal(alreadyApplied(child, whole), true, `${child.kind} ${child.metadata.name} whole`);
      assert.equal(alreadyApplied(child, trimmed), true, `${child.kind} ${child.metadata.name} trimmed`);
      const meta = trimmed["metadata"] as Record<string, unknown>;
      assert.equal(meta["managedFields"], undefined);
      assert.equal(meta["uid"], undefined);
      assert.equal(meta["creationTimestamp"], undefined);
      assert.equal(meta["resourceVersion"], "42");
      // An edit by hand (a label and a spec field) is still drift once trimmed.
      const edited = structuredClone(whole) as { metadata: { labels: Record<string, string> }; spec: object };
      edited.metadata.labels = { ...edited.metadata.labels, "canaryapp.io/app": "other" };
      assert.equal(alreadyApplied(child, trimOf(child.kind)(edited as never)), false, `${child.kind} label edit`);
    }
  });

  test("a trimmed Deployment is observed as the whole one and keeps only the status counters", () => {
    for (const child of children.filter((c) => c.kind === "Deployment")) {
      const whole = live(child);
      const trimmed = trimDeployment(structuredClone(whole));
      assert.deepEqual(observeDeployment(trimmed), observeDeployment(whole));
      assert.deepEqual(Object.keys(trimmed["status"] as object).sort(), [
        "availableReplicas",
        "observedGeneration",
        "readyReplicas",
        "replicas",
        "updatedReplicas",
      ]);
    }
  });

  test("a Deployment whose pods are refused keeps the ReplicaFailure condition, observed as the whole one", () => {
    for (const child of children.filter((c) => c.kind === "Deployment")) {
      const whole = live(child);
      const status = whole["status"] as { availableReplicas: number; conditions: object[] };
      status.availableReplicas = 0;
      const refusal = 'pods "x" is forbidden: violates PodSecurity "restricted:latest": runAsNonRoot != true';
      status.conditions.push({ type: "ReplicaFailure", status: "True", reason: "FailedCreate", message: refusal });
      const trimmed = trimDeployment(structuredClone(whole));
      assert.equal(observeDeployment(trimmed)?.podsRefused, refusal);
      assert.deepEqual(observeDeployment(trimmed), observeDeployment(whole));
      assert.deepEqual((trimmed["status"] as { conditions: object[] }).conditions, [
        { type: "ReplicaFailure", status: "True", message: refusal },
      ]);
    }
  });

  test("a trimmed StatefulSet is observed as the whole one, drift repair sees it whole, and keeps only what is read", () => {
    const stateful = seedApp({ replicas: 3, workload: { kind: "StatefulSet" } });
    const sts = desiredChildren(stateful, withDefaults(stateful.spec), plan, istioRouter, statefulSetTarget)
      .apply.map(withAppliedHash)
      .find((c) => c.kind === "StatefulSet");
    assert.ok(sts);
    const whole = {
      ...live(sts),
      status: {
        observedGeneration: 3,
        replicas: 3,
        readyReplicas: 3,
        availableReplicas: 3,
        currentReplicas: 2,
        updatedReplicas: 1,
        currentRevision: "canaryapp-sample-a",
        updateRevision: "canaryapp-sample-b",
        collisionCount: 0,
        conditions: [],
      },
    };
    const trimmed = trimOf("StatefulSet")(structuredClone(whole) as never) as Record<string, unknown>;
    assert.equal(alreadyApplied(sts, trimmed), true);
    assert.deepEqual(observeStatefulSet(trimmed), observeStatefulSet(whole));
    assert.deepEqual(Object.keys(trimmed["status"] as object).sort(), [
      "availableReplicas",
      "currentReplicas",
      "currentRevision",
      "observedGeneration",
      "readyReplicas",
      "replicas",
      "updateRevision",
      "updatedReplicas",
    ]);
  });

  test("a trimmed VirtualService routes the same weights", () => {
    const vs = children.find((c) => c.kind === "VirtualService");
    assert.ok(vs);
    const whole = live(vs);
    assert.deepEqual(
      readIstioWeights(trimOf("VirtualService")(structuredClone(whole) as never)),
      readIstioWeights(whole),
    );
  });

  test("a trimmed Pod is observed as the whole one and holds nothing else of its spec or status", () => {
    const pod = (ready: boolean, deleting: boolean) => ({
      metadata: {
        name: "canaryapp-sample-secondary-abc",
        namespace: "demo",
        resourceVersion: "7",
        uid: "p-uid",
        labels: { "canaryapp.io/app": "canaryapp-sample", "canaryapp.io/track": "secondary" },
        ...(deleting ? { deletionTimestamp: "2026-01-01T00:00:00Z" } : {}),
        managedFields: [{ manager: "kubelet" }],
      },
      spec: {
        nodeName: "node-1",
        volumes: [{ name: "kube-api-access", projected: { sources: [] } }],
        containers: [
          { name: "istio-proxy", image: "istio/proxyv2:1.24", args: ["proxy"] },
          { name: APP_CONTAINER, image: "img:v2", env: [{ name: "A", value: "b" }], resources: {} },
        ],
      },
      status: {
        phase: "Running",
        podIP: "10.0.0.7",
        conditions: [
          { type: "Initialized", status: "True", lastTransitionTime: "2026-01-01T00:00:00Z" },
          { type: "Ready", status: ready ? "True" : "False", lastTransitionTime: "2026-01-01T00:00:00Z" },
        ],
        containerStatuses: [
          { name: APP_CONTAINER, imageID: "docker.io/img@sha256:abc", ready, restartCount: 0, state: {} },
        ],
      },
    });
    for (const [ready, deleting] of [
      [true, false],
      [false, false],
      [true, true],
    ] as const) {
      const whole = pod(ready, deleting);
      const trimmed = trimPod(structuredClone(whole));
      assert.deepEqual(
        observePods([trimmed], "canaryapp-sample", APP_CONTAINER),
        observePods([whole], "canaryapp-sample", APP_CONTAINER),
      );
      assert.equal(PODS.trim, trimPod);
      assert.deepEqual(Object.keys(trimmed.spec), ["containers"]);
      assert.deepEqual(Object.keys(trimmed.status).sort(), ["conditions", "containerStatuses"]);
      assert.deepEqual(trimmed.spec.containers[1], { name: APP_CONTAINER, image: "img:v2" });
    }
  });
});
