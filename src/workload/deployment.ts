import type { ResolvedSpec } from "../api/defaults.js";
import type { CanaryApp, Track } from "../api/types.js";
import { ISTIO_CANONICAL_LABELS, LABELS, REVISION_ANNOTATION } from "../api/types.js";
import { wantRevision } from "../identity/revision.js";
import type { ChildMeta } from "../api/meta.js";
import { appRef, childLabels, childMeta, deploymentName } from "../api/meta.js";
import type { WorkloadObservation } from "../rollout/types.js";
import type { TrackWant, WorkloadTarget } from "./workload.js";

/** The name of the app's container in both Deployments; the observer reads the image from it. */
export const APP_CONTAINER = "app";

export interface DeploymentObject {
  apiVersion: "apps/v1";
  kind: "Deployment";
  metadata: ChildMeta;
  spec: {
    /** Absent on a primary that an autoscaler sizes (spec.autoscalerRef). */
    replicas?: number;
    selector: { matchLabels: Record<string, string> };
    paused: false;
    progressDeadlineSeconds: number;
    strategy: { type: "RollingUpdate"; rollingUpdate: { maxUnavailable: number | string; maxSurge: number | string } };
    template: PodTemplate;
  };
}

/**
 * The primary or secondary Deployment. Pods carry Istio's `app` and `version` labels (telemetry and
 * DestinationRule subsets read them) besides the controller's own; user labels never override ours.
 */
export function buildDeployment(app: CanaryApp, spec: ResolvedSpec, track: Track, want: TrackWant): DeploymentObject {
  const { name } = appRef(app);
  const selector = { [LABELS.app]: name, [LABELS.track]: track };
  const revision = wantRevision(spec, want);
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    // The revision tells the planner which template a Deployment holds when the image alone cannot.
    metadata: {
      ...childMeta(app, deploymentName(name, track), track),
      annotations: { [REVISION_ANNOTATION]: revision },
    },
    spec: {
      // An autoscaler owns the primary's size: a replicas field in our apply would undo its every change.
      ...(track === "primary" && spec.autoscalerRef !== undefined ? {} : { replicas: want.replicas }),
      selector: { matchLabels: selector },
      // `kubectl rollout pause` on a child would hold a promotion forever: the controller keeps it running.
      paused: false,
      progressDeadlineSeconds: spec.analysis.progressDeadlineSeconds,
      // Never below the wanted capacity while the primary takes a promoted image.
      strategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 0, maxSurge: "25%" } },
      template: podTemplate(spec, want, { ...meshLabels(name, track), ...childLabels(name, track) }),
    },
  };
}

/**
 * The labels by which Istio names a pod's service and revision in its telemetry: `app` and `version`
 * (destination_app, destination_version) and the canonical service labels, which win over any other
 * label Istio would read (ADR 0023). `revision` is what tells the track's pods apart: the track for a
 * Deployment, the pod template's revision for a StatefulSet.
 */
export function meshLabels(name: string, revision: string): Record<string, string> {
  return {
    app: name,
    version: revision,
    [ISTIO_CANONICAL_LABELS.name]: name,
    [ISTIO_CANONICAL_LABELS.revision]: revision,
  };
}

/** A pod template as the workloads run it. */
export interface PodTemplate {
  metadata: { labels: Record<string, string>; annotations?: Record<string, string> };
  spec: Record<string, unknown> & { containers: Record<string, unknown>[] };
}

/**
 * The pod template of a track's workload: the app container with `want`'s image and template (spec's when
 * absent). `labels` are the controller's and win over the user's; `mounts` are added to the container.
 */
export function podTemplate(
  spec: ResolvedSpec,
  want: TrackWant,
  labels: Record<string, string>,
  mounts: { name: string; mountPath: string }[] = [],
): PodTemplate {
  const pod = want.template?.pod ?? spec.pod;
  const port = want.template?.imageListenPort ?? spec.imageListenPort;
  const container: Record<string, unknown> = {
    name: APP_CONTAINER,
    image: want.image,
    ports: [{ name: "http", containerPort: port, protocol: "TCP" }],
    ...(pod.command ? { command: pod.command } : {}),
    ...(pod.args ? { args: pod.args } : {}),
    ...(pod.env ? { env: pod.env } : {}),
    ...(pod.resources ? { resources: pod.resources } : {}),
    ...(pod.readinessProbe ? { readinessProbe: pod.readinessProbe } : {}),
    ...(pod.livenessProbe ? { livenessProbe: pod.livenessProbe } : {}),
    ...(mounts.length > 0 ? { volumeMounts: mounts } : {}),
  };
  return {
    metadata: {
      labels: { ...pod.labels, ...labels },
      ...(pod.annotations ? { annotations: pod.annotations } : {}),
    },
    spec: {
      ...(pod.serviceAccountName ? { serviceAccountName: pod.serviceAccountName } : {}),
      ...(pod.imagePullSecrets ? { imagePullSecrets: pod.imagePullSecrets } : {}),
      containers: [container],
    },
  };
}

interface DeploymentLike {
  metadata?: { generation?: number; annotations?: Record<string, string> };
  spec?: { replicas?: number; template?: { spec?: { containers?: { name?: string; image?: string }[] } } };
  status?: {
    observedGeneration?: number;
    replicas?: number;
    updatedReplicas?: number;
    availableReplicas?: number;
    readyReplicas?: number;
    conditions?: { type?: string; status?: string; message?: string }[];
  };
}

/** The longest refusal message carried into status: the API server's text, cut. */
const REFUSAL_MAX_CHARS = 512;

/**
 * A Deployment counts as available only when the controller-manager has seen its latest template and
 * every wanted pod of that template is available with no old pod left: the same test `kubectl rollout
 * status` makes. Anything less must not receive traffic, nor be promoted onto.
 */
export function observeDeployment(object: unknown): WorkloadObservation | null {
  if (!object) return null;
  const deployment = object as DeploymentLike;
  const replicas = deployment.spec?.replicas ?? 1;
  const status = deployment.status ?? {};
  const containers = deployment.spec?.template?.spec?.containers ?? [];
  const image = (containers.find((c) => c.name === APP_CONTAINER) ?? containers[0])?.image ?? "";
  const available =
    (status.observedGeneration ?? 0) >= (deployment.metadata?.generation ?? 1) &&
    (status.updatedReplicas ?? 0) >= replicas &&
    (status.availableReplicas ?? 0) >= replicas &&
    (status.replicas ?? 0) <= replicas;
  const revision = deployment.metadata?.annotations?.[REVISION_ANNOTATION];
  const caughtUp = (status.observedGeneration ?? 0) >= (deployment.metadata?.generation ?? 1);
  const oldPods = Math.max(0, (status.replicas ?? 0) - (status.updatedReplicas ?? 0));
  // The Deployment controller copies its ReplicaSet's ReplicaFailure here when a pod create is refused.
  const failure = status.conditions?.find((c) => c.type === "ReplicaFailure" && c.status === "True");
  const refused = failure === undefined ? undefined : (failure.message ?? "").slice(0, REFUSAL_MAX_CHARS);
  return {
    image,
    replicas,
    available,
    readyReplicas: status.readyReplicas ?? 0,
    ...(revision !== undefined ? { revision } : {}),
    ...(caughtUp ? { currentAvailable: Math.max(0, (status.availableReplicas ?? 0) - oldPods) } : {}),
    ...(refused !== undefined && !available ? { podsRefused: refused } : {}),
  };
}

/** Deployments as the workload: the first WorkloadTarget. */
export const deploymentTarget: WorkloadTarget = {
  apiVersion: "apps/v1",
  kind: "Deployment",
  appContainer: APP_CONTAINER,
  desired: buildDeployment,
  observe: observeDeployment,
};
