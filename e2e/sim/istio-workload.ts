/**
 * What a pod's sidecar says about the pod in Istio's telemetry, derived from the pod's metadata by Istio's
 * own rules (istio.io/istio; paths below are in that repository): its workload name, canonical service and
 * revision, app and version. Nothing here reads the controller's labels: a pod is described by whatever
 * labels and owners it has. Pure.
 */

/** The fields of a pod's metadata that Istio reads to name its workload. */
export interface PodMetaLike {
  name?: string;
  namespace?: string;
  generateName?: string;
  labels?: Record<string, string>;
  ownerReferences?: { apiVersion?: string; kind?: string; name?: string; controller?: boolean }[];
}

/** Istio's labels (istio.io/api label package) read here. */
export const ISTIO_POD_LABELS = {
  workloadName: "service.istio.io/workload-name",
  canonicalName: "service.istio.io/canonical-name",
  canonicalRevision: "service.istio.io/canonical-revision",
} as const;

/** The labels Istio reads for the canonical name, in order (pkg/kube/labels/labels.go, nameLabels). */
const CANONICAL_NAME_LABELS = [ISTIO_POD_LABELS.canonicalName, "app.kubernetes.io/name", "app"] as const;
/** ...and for the canonical revision (revisionLabels). */
const CANONICAL_REVISION_LABELS = [ISTIO_POD_LABELS.canonicalRevision, "app.kubernetes.io/version", "version"] as const;

/** A Job's name as a CronJob makes it: `<cronjob>-<8 to 10 digits>` (pkg/kube/util.go, cronJobNameRegexp). */
const CRON_JOB_NAME = /^(.+)-\d{8,10}$/;

/** What a sidecar knows of its own pod: the values its telemetry reports for it. */
export interface WorkloadMeta {
  /** destination_workload (source_workload when it calls). */
  name: string;
  namespace: string;
  /** destination_canonical_service. */
  canonicalService: string;
  /** destination_canonical_revision. */
  canonicalRevision: string;
  /** The pod's `app` label as it is, "" when absent (destination_app as its own sidecar reports it). */
  app: string;
  /** The pod's `version` label as it is, "" when absent. */
  version: string;
}

/**
 * The name of the object that runs the pod, as Istio guesses it (pkg/kube/util.go, GetDeployMetaFromPod):
 * a pod with a generated name and a controller owner takes the owner's name; a ReplicaSet owner whose name
 * ends with the pod's `pod-template-hash` label loses `-<hash>` (its Deployment's name); likewise an Argo
 * Rollout's ReplicaSet with `rollouts-pod-template-hash`; a ReplicationController with a `deploymentconfig`
 * label gives that label; a Job named as a CronJob names it gives the CronJob's name. Anything else: the
 * pod's own name. A StatefulSet's pods (generated name `<set>-`, owner the StatefulSet) take its name.
 */
export function deployMetaName(meta: PodMetaLike): string {
  const podName = meta.name ?? "";
  if (!meta.generateName) return podName;
  const controller = (meta.ownerReferences ?? []).find((ref) => ref.controller === true);
  if (!controller) return podName;
  const labels = meta.labels ?? {};
  const owner = controller.name ?? "";
  const hash = labels["pod-template-hash"] ?? "";
  const rolloutsHash = labels["rollouts-pod-template-hash"] ?? "";
  let name = owner;
  if (controller.kind === "ReplicaSet" && hash !== "" && owner.endsWith(hash)) {
    name = trimSuffix(owner, `-${hash}`);
  } else if (controller.kind === "ReplicaSet" && rolloutsHash !== "" && owner.endsWith(rolloutsHash)) {
    name = trimSuffix(owner, `-${rolloutsHash}`);
  } else if (controller.kind === "ReplicationController" && (labels["deploymentconfig"] ?? "") !== "") {
    name = labels["deploymentconfig"] ?? "";
  } else if (controller.kind === "Job") {
    name = CRON_JOB_NAME.exec(owner)?.[1] ?? owner;
  }
  return name === "" ? podName : name;
}

/**
 * The workload name a pod's sidecar reports: the `service.istio.io/workload-name` label when set, else
 * deployMetaName (the injector's ISTIO_META_WORKLOAD_NAME:
 * manifests/charts/istio-control/istio-discovery/files/injection-template.yaml; the same override in
 * pkg/kube/util.go, GetWorkloadMetaFromPod, which names the pod's endpoints).
 */
export function workloadName(meta: PodMetaLike): string {
  const override = meta.labels?.[ISTIO_POD_LABELS.workloadName] ?? "";
  return override !== "" ? override : deployMetaName(meta);
}

/**
 * The canonical service and revision of a pod (pkg/kube/labels/labels.go, CanonicalService): the name from
 * `service.istio.io/canonical-name`, `app.kubernetes.io/name` or `app`, in that order, else the name of the
 * pod's deployment (deployMetaName); the revision from `service.istio.io/canonical-revision`,
 * `app.kubernetes.io/version` or `version`, else `latest`. The injector writes both onto the pod this way
 * (injection-template.yaml: an empty label counts as absent there; the name is cut to 63 characters and
 * trimmed of `-`, `_` and `.`), and the sidecar reports those labels.
 */
export function canonicalService(meta: PodMetaLike): { service: string; revision: string } {
  const labels = meta.labels ?? {};
  const first = (keys: readonly string[]) => keys.map((k) => labels[k] ?? "").find((v) => v !== "");
  const service = trimAll((first(CANONICAL_NAME_LABELS) ?? deployMetaName(meta)).slice(0, 63), "-_.");
  return { service, revision: first(CANONICAL_REVISION_LABELS) ?? "latest" };
}

/**
 * Everything a pod's own sidecar reports about it. `app` and `version` are the pod's labels as they are
 * (istio/proxy source/extensions/filters/http/istio_stats/istio_stats.cc reads them from the node
 * metadata's LABELS; testdata/server_node_metadata.json.tmpl and testdata/metric/server_request_total.yaml.tmpl:
 * `app: ratings`, `version: v1` become destination_app="ratings", destination_version="v1").
 */
export function workloadMeta(meta: PodMetaLike): WorkloadMeta {
  const canonical = canonicalService(meta);
  return {
    name: workloadName(meta),
    namespace: meta.namespace ?? "",
    canonicalService: canonical.service,
    canonicalRevision: canonical.revision,
    app: meta.labels?.["app"] ?? "",
    version: meta.labels?.["version"] ?? "",
  };
}

function trimSuffix(s: string, suffix: string): string {
  return s.endsWith(suffix) ? s.slice(0, s.length - suffix.length) : s;
}

/** Sprig's trimAll: `cutset`'s characters removed from both ends. */
function trimAll(s: string, cutset: string): string {
  let start = 0;
  let end = s.length;
  while (start < end && cutset.includes(s.charAt(start))) start++;
  while (end > start && cutset.includes(s.charAt(end - 1))) end--;
  return s.slice(start, end);
}

/**
 * What the pods of a Gateway Istio deploys report about themselves (manifests/charts/istio-control/
 * istio-discovery/files/kube-gateway.yaml): the workload name is the Deployment's
 * (ISTIO_META_WORKLOAD_NAME, `<gateway>-<class>` unless `gateway.istio.io/name-override` names it:
 * route-parents.ts), so is the canonical service (label `service.istio.io/canonical-name`), the canonical
 * revision is `latest`; the pods carry no `app` or `version` label.
 */
export function gatewayWorkload(gateway: { namespace: string; deploymentName: string }): WorkloadMeta {
  return {
    name: gateway.deploymentName,
    namespace: gateway.namespace,
    canonicalService: gateway.deploymentName,
    canonicalRevision: "latest",
    app: "",
    version: "",
  };
}
