import type { ResolvedSpec } from "../api/defaults.js";
import type { ChildMeta } from "../api/meta.js";
import { appRef, childLabels, childMeta } from "../api/meta.js";
import type { CanaryApp, Track, WorkloadStatus } from "../api/types.js";
import { LABELS, REVISION_ANNOTATION, REVISION_LABEL } from "../api/types.js";
import type { SetPodObservation, SetPodsObservation, WorkloadObservation } from "../rollout/types.js";
import type { PodTemplate } from "./deployment.js";
import { APP_CONTAINER, meshLabels, podTemplate } from "./deployment.js";
import { wantRevision } from "../identity/revision.js";
import type { SharedObservation, SharedWorkloadTarget, TrackWant, TrackWants } from "./workload.js";

/** On the StatefulSet: the revision and image of the primary (the ordinals below the partition). */
export const STABLE_REVISION_ANNOTATION = "canaryapp.io/stable-revision";
export const STABLE_IMAGE_ANNOTATION = "canaryapp.io/stable-image";

export interface StatefulSetObject {
  apiVersion: "apps/v1";
  kind: "StatefulSet";
  metadata: ChildMeta;
  spec: {
    replicas: number;
    serviceName: string;
    podManagementPolicy: "OrderedReady" | "Parallel";
    selector: { matchLabels: Record<string, string> };
    updateStrategy: { type: "RollingUpdate"; rollingUpdate: { partition: number } };
    persistentVolumeClaimRetentionPolicy: { whenDeleted: "Retain"; whenScaled: "Retain" };
    template: PodTemplate;
    volumeClaimTemplates?: {
      apiVersion: "v1";
      kind: "PersistentVolumeClaim";
      metadata: { name: string };
      spec: {
        accessModes: string[];
        storageClassName?: string;
        resources: { requests: { storage: string } };
      };
    }[];
  };
}

/** The StatefulSet's name: the app's (its pods are `<name>-0`…, their claims `<template>-<name>-<ordinal>`). */
export const statefulSetName = (app: CanaryApp): string => appRef(app).name;

/** The StatefulSet fields of the spec; a spec without them is a wiring mistake. */
function statefulSetSpec(spec: ResolvedSpec) {
  if (spec.workload.kind !== "StatefulSet") throw new Error("the StatefulSet target was given a Deployment app");
  return spec.workload;
}

/**
 * What the StatefulSet's pod template must be, and from which ordinal on it applies: a test in progress
 * (a secondary whose revision differs from the primary's) runs its template on the highest
 * `secondary.replicas` ordinals; otherwise (no test, a promotion, whose primary takes the tested image —
 * pinned to its digest, so perhaps a revision of its own —, or its end) the primary's template runs on
 * every ordinal. A StatefulSet has one template: ordinals below the partition keep what they run.
 */
export function partitionFor(spec: ResolvedSpec, wants: TrackWants): { want: TrackWant; partition: number } {
  const { primary, secondary } = wants;
  if (wants.promoting || secondary === null || wantRevision(spec, secondary) === wantRevision(spec, primary)) {
    return { want: primary, partition: 0 };
  }
  // At least one ordinal keeps the primary's revision (the CRD requires replicas > testReplicas).
  return { want: secondary, partition: Math.max(1, primary.replicas - secondary.replicas) };
}

/**
 * The app's one StatefulSet. The pods carry the revision of their template as a label (the per-track
 * Services select by it), Istio's `app`, `version` and canonical labels (the revision is their version and
 * canonical revision: Istio reports both tracks as the workload `<name>`), and no track:
 * a pod's track follows from its revision, so a promotion does not change the template the tested
 * ordinals already run. Claims are retained whatever happens to the pods or the StatefulSet.
 */
export function buildStatefulSet(app: CanaryApp, spec: ResolvedSpec, wants: TrackWants): StatefulSetObject {
  const { name } = appRef(app);
  const workload = statefulSetSpec(spec);
  const { want, partition } = partitionFor(spec, wants);
  const revision = wantRevision(spec, want);
  const claims = workload.volumeClaimTemplates;
  const template = podTemplate(
    spec,
    want,
    { ...meshLabels(name, revision), ...childLabels(name), [REVISION_LABEL]: revision },
    claims.map((c) => ({ name: c.name, mountPath: c.mountPath })),
  );
  return {
    apiVersion: "apps/v1",
    kind: "StatefulSet",
    metadata: {
      ...childMeta(app, statefulSetName(app)),
      annotations: {
        [REVISION_ANNOTATION]: revision,
        [STABLE_REVISION_ANNOTATION]: wantRevision(spec, wants.primary),
        [STABLE_IMAGE_ANNOTATION]: wants.primary.image,
      },
    },
    spec: {
      replicas: wants.primary.replicas,
      serviceName: workload.serviceName ?? name,
      podManagementPolicy: workload.podManagementPolicy,
      // Immutable once created: the app's labels only, never a track or a revision.
      selector: { matchLabels: childLabels(name) },
      updateStrategy: { type: "RollingUpdate", rollingUpdate: { partition } },
      // A pod replaced by a promotion or a rollback gets its own claim back; none is ever deleted by us.
      persistentVolumeClaimRetentionPolicy: { whenDeleted: "Retain", whenScaled: "Retain" },
      template,
      ...(claims.length > 0
        ? {
            volumeClaimTemplates: claims.map((c) => ({
              apiVersion: "v1" as const,
              kind: "PersistentVolumeClaim" as const,
              metadata: { name: c.name },
              spec: {
                accessModes: c.accessModes ?? ["ReadWriteOnce"],
                ...(c.storageClassName !== undefined ? { storageClassName: c.storageClassName } : {}),
                resources: { requests: { storage: c.storage } },
              },
            })),
          }
        : {}),
    },
  };
}

interface StatefulSetLike {
  metadata?: { generation?: number; annotations?: Record<string, string> };
  spec?: {
    replicas?: number;
    updateStrategy?: { rollingUpdate?: { partition?: number } };
    template?: { spec?: { containers?: { name?: string; image?: string }[] } };
  };
  status?: {
    observedGeneration?: number;
    replicas?: number;
    readyReplicas?: number;
    availableReplicas?: number;
    currentReplicas?: number;
    updatedReplicas?: number;
    currentRevision?: string;
    updateRevision?: string;
  };
}

/**
 * The two tracks of one StatefulSet. The template (and its revision annotation) is the secondary's while
 * the partition leaves it the highest ordinals, else the primary's; the primary's revision and image are
 * in the stable annotations. A track is available when the StatefulSet controller has seen the latest
 * spec, the track's ordinals run its revision (currentReplicas / updatedReplicas), and every pod is ready:
 * the status counts readiness over both revisions, so a track cannot be told ready while a pod of the
 * other one is not. That errs towards waiting; traffic reaches only ready pods either way (the Services'
 * endpoints). A track's ready pods are at least the ready pods less the other track's.
 */
export function observeStatefulSet(object: unknown): SharedObservation {
  if (!object) return { primary: null, secondary: null, status: undefined };
  const sts = object as StatefulSetLike;
  const replicas = sts.spec?.replicas ?? 1;
  const partition = Math.min(replicas, sts.spec?.updateStrategy?.rollingUpdate?.partition ?? 0);
  const status = sts.status ?? {};
  const annotations = sts.metadata?.annotations ?? {};
  const containers = sts.spec?.template?.spec?.containers ?? [];
  const image = (containers.find((c) => c.name === APP_CONTAINER) ?? containers[0])?.image ?? "";
  const revision = annotations[REVISION_ANNOTATION];
  const stableRevision = annotations[STABLE_REVISION_ANNOTATION] ?? revision;
  const stableImage = annotations[STABLE_IMAGE_ANNOTATION] ?? image;
  const caughtUp = (status.observedGeneration ?? 0) >= (sts.metadata?.generation ?? 1);
  const ready = status.readyReplicas ?? 0;
  const allReady = caughtUp && ready >= replicas && (status.replicas ?? 0) <= replicas;
  const current = status.currentReplicas ?? 0;
  const updated = status.updatedReplicas ?? 0;
  const rolledOut = status.currentRevision !== undefined && status.currentRevision === status.updateRevision;
  const workloadStatus = statefulSetStatus(status);
  const track = (
    trackImage: string,
    trackRevision: string | undefined,
    count: number,
    available: boolean,
    trackReady: number,
  ): WorkloadObservation => ({
    image: trackImage,
    replicas: count,
    available,
    readyReplicas: trackReady,
    ...(trackRevision !== undefined ? { revision: trackRevision } : {}),
    ...(caughtUp ? { currentAvailable: trackReady } : {}),
  });
  const testing = revision !== stableRevision && partition > 0;
  if (!testing) {
    return {
      primary: track(image, revision, replicas, allReady && rolledOut && updated >= replicas, Math.min(ready, updated)),
      secondary: null,
      status: workloadStatus,
    };
  }
  const canaries = replicas - partition;
  return {
    primary: track(
      stableImage,
      stableRevision,
      partition,
      allReady && current >= partition,
      Math.max(0, Math.min(current, ready - updated)),
    ),
    secondary: track(
      image,
      revision,
      canaries,
      allReady && !rolledOut && updated >= canaries,
      rolledOut ? 0 : Math.max(0, Math.min(updated, ready - current)),
    ),
    status: workloadStatus,
  };
}

/** status.workload: the StatefulSet controller's revisions and how many pods run each. */
function statefulSetStatus(status: NonNullable<StatefulSetLike["status"]>): WorkloadStatus {
  const stable = status.currentReplicas ?? 0;
  const differs = status.updateRevision !== undefined && status.updateRevision !== status.currentRevision;
  return {
    kind: "StatefulSet",
    ...(status.currentRevision !== undefined ? { stableRevision: status.currentRevision } : {}),
    ...(differs && status.updateRevision !== undefined ? { canaryRevision: status.updateRevision } : {}),
    stableReplicas: stable,
    canaryReplicas: Math.max(0, (status.replicas ?? 0) - stable),
  };
}

/**
 * The pods of `track`: those of the revision it must run. With no test the secondary's Service selects
 * the primary's revision (it gets no weight then), so neither Service is ever left without endpoints;
 * during a promotion both select every pod of the app.
 */
export function statefulSetPodSelector(
  app: CanaryApp,
  spec: ResolvedSpec,
  track: Track,
  wants: TrackWants,
): Record<string, string> {
  const name = appRef(app).name;
  // While the ordinals roll onto the promoted revision, every ready pod serves: the tested one and those
  // the promotion has not reached yet, as a Deployment's rolling update serves both.
  if (wants.promoting) return { [LABELS.app]: name };
  const want = track === "secondary" && wants.secondary !== null ? wants.secondary : wants.primary;
  return { [LABELS.app]: name, [REVISION_LABEL]: wantRevision(spec, want) };
}

/** A StatefulSet as the workload: both tracks in one object, split by a partitioned rolling update (ADR 0015). */
export const statefulSetTarget: SharedWorkloadTarget = {
  shared: true,
  apiVersion: "apps/v1",
  kind: "StatefulSet",
  appContainer: APP_CONTAINER,
  objectName: statefulSetName,
  desired: buildStatefulSet,
  observe: observeStatefulSet,
  podSelector: statefulSetPodSelector,
  setPods: (object, pods, app) => setPods(object, pods, app),
};

interface PodLike {
  metadata?: {
    name?: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    deletionTimestamp?: unknown;
  };
  status?: { conditions?: { type?: string; status?: string }[] };
}

/**
 * The app's pods of the StatefulSet and what its template says of them, as facts (which are stranded is decided
 * in rollout/decisions.ts, `strandedPods`). Undefined when there is no StatefulSet. Pure.
 */
export function setPods(statefulSet: unknown, pods: readonly unknown[], app: string): SetPodsObservation | undefined {
  if (!statefulSet) return undefined;
  const sts = statefulSet as StatefulSetLike & { metadata?: { name?: string } };
  const setName = sts.metadata?.name ?? app;
  const observed: SetPodObservation[] = [];
  for (const object of pods) {
    const meta = (object as PodLike).metadata ?? {};
    if (meta.labels?.[LABELS.app] !== app) continue;
    observed.push({
      name: meta.name ?? "",
      resourceVersion: meta.resourceVersion ?? "",
      revision: meta.labels[REVISION_LABEL],
      ordinal: ordinalOf(meta.name ?? "", setName),
      ready: ((object as PodLike).status?.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True"),
      terminating: meta.deletionTimestamp !== undefined,
    });
  }
  return {
    revision: sts.metadata?.annotations?.[REVISION_ANNOTATION],
    caughtUp: (sts.status?.observedGeneration ?? 0) >= (sts.metadata?.generation ?? 1),
    partition: sts.spec?.updateStrategy?.rollingUpdate?.partition ?? 0,
    pods: observed,
  };
}

/** The ordinal of pod `<set>-<n>`, or undefined for any other name. */
function ordinalOf(podName: string, setName: string): number | undefined {
  const prefix = `${setName}-`;
  if (!podName.startsWith(prefix)) return undefined;
  const rest = podName.slice(prefix.length);
  return /^(0|[1-9][0-9]*)$/.test(rest) ? Number(rest) : undefined;
}
