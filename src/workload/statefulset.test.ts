import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { withDefaults } from "../api/defaults.js";
import type { CanaryApp } from "../api/types.js";
import { LABELS, REVISION_ANNOTATION, REVISION_LABEL } from "../api/types.js";
import { wantRevision } from "../identity/revision.js";
import { strandedPods as decideStranded } from "../rollout/decisions.js";
import {
  STABLE_IMAGE_ANNOTATION,
  STABLE_REVISION_ANNOTATION,
  buildStatefulSet,
  observeStatefulSet,
  partitionFor,
  statefulSetPodSelector,
  setPods,
} from "./statefulset.js";
import type { TrackWants } from "./workload.js";

const app: CanaryApp = {
  apiVersion: "canaryapp.io/v1alpha1",
  kind: "CanaryApp",
  metadata: { name: "db", namespace: "shop", uid: "uid-1", generation: 1 },
  spec: {
    image: "example/db:v1",
    imageListenPort: 8080,
    replicas: 3,
    testReplicas: 1,
    workload: {
      kind: "StatefulSet",
      volumeClaimTemplates: [{ name: "data", mountPath: "/data", storage: "1Gi", storageClassName: "manual" }],
    },
  },
};
const spec = withDefaults(app.spec);
const V1 = { image: "example/db:v1", replicas: 3 };
const V2 = { image: "example/db:v2", replicas: 1 };
const r1 = wantRevision(spec, V1);
const r2 = wantRevision(spec, V2);
const wants = (partial: Partial<TrackWants>): TrackWants => ({
  primary: V1,
  secondary: null,
  promoting: false,
  ...partial,
});

describe("partitionFor: which template runs from which ordinal", () => {
  const cases: [string, TrackWants, { image: string; partition: number }][] = [
    ["no test: the primary's on every ordinal", wants({}), { image: V1.image, partition: 0 }],
    ["a test of one pod: the highest ordinal", wants({ secondary: V2 }), { image: V2.image, partition: 2 }],
    ["a test of two pods", wants({ secondary: { ...V2, replicas: 2 } }), { image: V2.image, partition: 1 }],
    [
      "never all ordinals: one keeps the primary's revision",
      wants({ secondary: { ...V2, replicas: 3 } }),
      { image: V2.image, partition: 1 },
    ],
    [
      "promotion: the primary takes the tested image on every ordinal",
      wants({ primary: { ...V1, image: V2.image }, secondary: V2, promoting: true }),
      { image: V2.image, partition: 0 },
    ],
    [
      "promotion pinned to a digest: the pinned template everywhere, not the tag's",
      wants({ primary: { ...V1, image: `example/db@sha256:${"a".repeat(64)}` }, secondary: V2, promoting: true }),
      { image: `example/db@sha256:${"a".repeat(64)}`, partition: 0 },
    ],
    [
      "both tracks the same revision: nothing to partition",
      wants({ secondary: { ...V1, replicas: 1 } }),
      { image: V1.image, partition: 0 },
    ],
    [
      "rollback draining: the tested ordinal keeps its pod until drained",
      wants({ secondary: V2 }),
      { image: V2.image, partition: 2 },
    ],
  ];
  for (const [name, input, expected] of cases) {
    test(name, () => {
      const { want, partition } = partitionFor(spec, input);
      assert.deepEqual({ image: want.image, partition }, expected);
      const sts = buildStatefulSet(app, spec, input);
      assert.equal(sts.spec.updateStrategy.rollingUpdate.partition, expected.partition);
      assert.equal(sts.spec.template.spec.containers[0]?.image, expected.image);
    });
  }
});

describe("buildStatefulSet", () => {
  const sts = buildStatefulSet(app, spec, wants({ secondary: V2 }));
  test("one StatefulSet named after the app, owned by it, sized by replicas", () => {
    assert.equal(sts.metadata.name, "db");
    assert.equal(sts.metadata.namespace, "shop");
    assert.equal(sts.metadata.ownerReferences[0]?.uid, "uid-1");
    assert.equal(sts.spec.replicas, 3);
    assert.equal(sts.spec.serviceName, "db");
    assert.equal(sts.spec.podManagementPolicy, "OrderedReady");
  });
  test("the selector holds no track or revision (a StatefulSet's selector is immutable)", () => {
    assert.deepEqual(sts.spec.selector.matchLabels, {
      "app.kubernetes.io/managed-by": "canaryapp",
      "canaryapp.io/app": "db",
    });
  });
  test("pods carry the revision of their template; the StatefulSet the stable revision and image", () => {
    assert.equal(sts.spec.template.metadata.labels[REVISION_LABEL], r2);
    assert.equal(sts.spec.template.metadata.labels.version, r2);
    assert.equal(sts.spec.template.metadata.labels["canaryapp.io/track"], undefined);
    assert.equal(sts.metadata.annotations?.[REVISION_ANNOTATION], r2);
    assert.equal(sts.metadata.annotations?.[STABLE_REVISION_ANNOTATION], r1);
    assert.equal(sts.metadata.annotations?.[STABLE_IMAGE_ANNOTATION], V1.image);
  });
  test("claims: one per pod from the templates, mounted in the app container, retained", () => {
    assert.deepEqual(sts.spec.volumeClaimTemplates, [
      {
        apiVersion: "v1",
        kind: "PersistentVolumeClaim",
        metadata: { name: "data" },
        spec: {
          accessModes: ["ReadWriteOnce"],
          storageClassName: "manual",
          resources: { requests: { storage: "1Gi" } },
        },
      },
    ]);
    assert.deepEqual(sts.spec.template.spec.containers[0]?.["volumeMounts"], [{ name: "data", mountPath: "/data" }]);
    assert.deepEqual(sts.spec.persistentVolumeClaimRetentionPolicy, { whenDeleted: "Retain", whenScaled: "Retain" });
  });
  test("a promotion does not change the template the tested ordinals run (same revision, same labels)", () => {
    const promoted = buildStatefulSet(
      app,
      spec,
      wants({ primary: { ...V1, image: V2.image }, secondary: V2, promoting: true }),
    );
    const done = buildStatefulSet(app, spec, wants({ primary: { ...V1, image: V2.image } }));
    assert.deepEqual(promoted.spec.template, sts.spec.template);
    assert.deepEqual(done.spec.template, sts.spec.template);
  });
  test("a Deployment app is not built as a StatefulSet", () => {
    assert.throws(() =>
      buildStatefulSet(app, withDefaults({ ...app.spec, workload: { kind: "Deployment" } }), wants({})),
    );
  });
});

describe("statefulSetPodSelector: the Services' pods", () => {
  const cases: [string, TrackWants, Record<string, string>, Record<string, string>][] = [
    ["no test: both the primary's revision", wants({}), { [REVISION_LABEL]: r1 }, { [REVISION_LABEL]: r1 }],
    ["a test: each track its revision", wants({ secondary: V2 }), { [REVISION_LABEL]: r1 }, { [REVISION_LABEL]: r2 }],
    [
      "a promotion: every pod of the app (the ordinals roll one by one)",
      wants({ primary: { ...V1, image: V2.image }, secondary: V2, promoting: true }),
      {},
      {},
    ],
  ];
  for (const [name, input, primary, secondary] of cases) {
    test(name, () => {
      assert.deepEqual(statefulSetPodSelector(app, spec, "primary", input), { "canaryapp.io/app": "db", ...primary });
      assert.deepEqual(statefulSetPodSelector(app, spec, "secondary", input), {
        "canaryapp.io/app": "db",
        ...secondary,
      });
    });
  }
});

type Status = Record<string, number | string>;
const observed = (partition: number, status: Status, generation = 2, template = V2.image, revision = r2) => ({
  metadata: {
    generation,
    annotations: {
      [REVISION_ANNOTATION]: revision,
      [STABLE_REVISION_ANNOTATION]: r1,
      [STABLE_IMAGE_ANNOTATION]: V1.image,
    },
  },
  spec: {
    replicas: 3,
    updateStrategy: { rollingUpdate: { partition } },
    template: { spec: { containers: [{ name: "app", image: template }] } },
  },
  status,
});

describe("observeStatefulSet: the two tracks of one StatefulSet", () => {
  test("missing", () =>
    assert.deepEqual(observeStatefulSet(undefined), { primary: null, secondary: null, status: undefined }));

  const full = { observedGeneration: 2, replicas: 3, readyReplicas: 3 };
  const cases: [string, ReturnType<typeof observed>, { primary: boolean; secondary: boolean | null }][] = [
    [
      "test: the canary ordinal updated and every pod ready",
      observed(2, { ...full, currentReplicas: 2, updatedReplicas: 1, currentRevision: "db-a", updateRevision: "db-b" }),
      { primary: true, secondary: true },
    ],
    [
      "test: the StatefulSet controller has not seen the template",
      observed(2, {
        ...full,
        observedGeneration: 1,
        currentReplicas: 3,
        updatedReplicas: 3,
        currentRevision: "db-a",
        updateRevision: "db-a",
      }),
      { primary: false, secondary: false },
    ],
    [
      "test: the canary pod is being replaced",
      observed(2, {
        ...full,
        readyReplicas: 2,
        currentReplicas: 2,
        updatedReplicas: 0,
        currentRevision: "db-a",
        updateRevision: "db-b",
      }),
      { primary: false, secondary: false },
    ],
    [
      "test: the canary pod is there but not ready",
      observed(2, {
        ...full,
        readyReplicas: 2,
        currentReplicas: 2,
        updatedReplicas: 1,
        currentRevision: "db-a",
        updateRevision: "db-b",
      }),
      { primary: false, secondary: false },
    ],
    [
      "rolled out on one revision",
      observed(
        0,
        { ...full, currentReplicas: 3, updatedReplicas: 3, currentRevision: "db-b", updateRevision: "db-b" },
        2,
        V1.image,
        r1,
      ),
      { primary: true, secondary: null },
    ],
    [
      "promotion under way: two of three updated",
      observed(
        0,
        { ...full, currentReplicas: 1, updatedReplicas: 2, currentRevision: "db-a", updateRevision: "db-b" },
        2,
        V2.image,
        r1,
      ),
      { primary: false, secondary: null },
    ],
  ];
  for (const [name, input, expected] of cases) {
    test(name, () => {
      const o = observeStatefulSet(input);
      assert.equal(o.primary?.available, expected.primary);
      assert.equal(o.secondary === null ? null : o.secondary.available, expected.secondary);
    });
  }

  test("a test: the primary shows the stable image and revision, the secondary the template's", () => {
    const o = observeStatefulSet(
      observed(2, { ...full, currentReplicas: 2, updatedReplicas: 1, currentRevision: "db-a", updateRevision: "db-b" }),
    );
    assert.deepEqual(
      { image: o.primary?.image, revision: o.primary?.revision, replicas: o.primary?.replicas },
      { image: V1.image, revision: r1, replicas: 2 },
    );
    assert.deepEqual(
      { image: o.secondary?.image, revision: o.secondary?.revision, replicas: o.secondary?.replicas },
      { image: V2.image, revision: r2, replicas: 1 },
    );
    assert.deepEqual(o.status, {
      kind: "StatefulSet",
      stableRevision: "db-a",
      canaryRevision: "db-b",
      stableReplicas: 2,
      canaryReplicas: 1,
    });
  });

  test("status without a test: no canary revision, no canary pods", () => {
    const o = observeStatefulSet(
      observed(
        0,
        { ...full, currentReplicas: 3, updatedReplicas: 3, currentRevision: "db-b", updateRevision: "db-b" },
        2,
        V1.image,
        r1,
      ),
    );
    assert.deepEqual(o.status, { kind: "StatefulSet", stableRevision: "db-b", stableReplicas: 3, canaryReplicas: 0 });
  });
});

describe("strandedPods over setPods (Kubernetes' forced rollback: pods OrderedReady would wait for forever)", () => {
  // The StatefulSet target reports the facts (setPods); rollout/decisions.ts decides which pods are stranded.
  const strandedPods = (set: unknown, pods: readonly unknown[], app: string) => decideStranded(setPods(set, pods, app));
  const sts = (over: { partition?: number; generation?: number; observed?: number } = {}) => ({
    metadata: { name: "db", generation: over.generation ?? 2, annotations: { [REVISION_ANNOTATION]: "good" } },
    spec: { replicas: 3, updateStrategy: { rollingUpdate: { partition: over.partition ?? 0 } } },
    status: { observedGeneration: over.observed ?? 2 },
  });
  const pod = (name: string, revision: string, ready: boolean, extra: Record<string, unknown> = {}) => ({
    metadata: {
      name,
      resourceVersion: `rv-${name}`,
      labels: { [LABELS.app]: "db", [REVISION_LABEL]: revision },
      ...extra,
    },
    status: { conditions: [{ type: "Ready", status: ready ? "True" : "False" }] },
  });

  test("a pod of another revision, not Ready, on an ordinal the template applies to", () => {
    const pods = [pod("db-0", "good", true), pod("db-1", "good", true), pod("db-2", "bad", false)];
    assert.deepEqual(strandedPods(sts(), pods, "db"), [{ name: "db-2", resourceVersion: "rv-db-2", revision: "bad" }]);
  });

  const kept: [string, ReturnType<typeof sts>, ReturnType<typeof pod>][] = [
    ["Ready (it serves; the StatefulSet controller replaces it itself)", sts(), pod("db-2", "bad", true)],
    ["of the template's revision", sts(), pod("db-2", "good", false)],
    ["below the partition (ordinals a test never touches)", sts({ partition: 2 }), pod("db-1", "bad", false)],
    [
      "before the StatefulSet controller saw the template",
      sts({ generation: 3, observed: 2 }),
      pod("db-2", "bad", false),
    ],
    ["already terminating", sts(), pod("db-2", "bad", false, { deletionTimestamp: "2026-11-27T12:00:00Z" })],
    [
      "of another app",
      sts(),
      {
        ...pod("db-2", "bad", false),
        metadata: { name: "db-2", resourceVersion: "1", labels: { [LABELS.app]: "other", [REVISION_LABEL]: "bad" } },
      },
    ],
    ["not one of the StatefulSet's ordinals", sts(), pod("db-backup", "bad", false)],
  ];
  for (const [why, set, p] of kept) {
    test(`not a pod ${why}`, () => assert.deepEqual(strandedPods(set, [p], "db"), []));
  }

  test("no StatefulSet: nothing", () =>
    assert.deepEqual(strandedPods(undefined, [pod("db-2", "bad", false)], "db"), []));
});
