/**
 * What the informer caches keep of each kind: only the fields the controller reads, so that memory
 * follows the number of apps, not the size of the objects the API server returns. Each function edits a
 * fresh copy in place (the informer's own, before it is frozen) and returns it.
 *
 * Readers, and what they need:
 * - children (Deployment, StatefulSet, Service, DestinationRule, VirtualService): drift repair (`alreadyApplied` in
 *   src/resources/applied-hash.ts) compares what the controller applies — metadata name, namespace, labels,
 *   annotations (with the applied hash), ownerReferences, and the whole spec — so spec is kept whole;
 *   the work queue keys them by label; `observeDeployment` reads metadata.generation, the revision
 *   annotation and five status counters; the router reads the VirtualService's spec.
 * - secondary Pods: `observePods` reads labels, deletionTimestamp, the containers' name and image, the
 *   containerStatuses' name and imageID, and the conditions' type and status.
 */

/** Metadata fields any cached child keeps. */
const CHILD_METADATA = [
  "name",
  "namespace",
  "resourceVersion",
  "generation",
  "labels",
  "annotations",
  "ownerReferences",
  "deletionTimestamp",
  "finalizers",
] as const;

/** The Deployment status counters `observeDeployment` reads. */
const DEPLOYMENT_STATUS = [
  "observedGeneration",
  "replicas",
  "updatedReplicas",
  "readyReplicas",
  "availableReplicas",
] as const;

/** The StatefulSet status fields `observeStatefulSet` reads. */
const STATEFULSET_STATUS = [
  "observedGeneration",
  "replicas",
  "readyReplicas",
  "availableReplicas",
  "currentReplicas",
  "updatedReplicas",
  "currentRevision",
  "updateRevision",
] as const;

type Json = Record<string, unknown>;

function isRecord(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** `record` with only `keys` (those present). */
function pick(record: unknown, keys: readonly string[]): Json | undefined {
  if (!isRecord(record)) return undefined;
  const out: Json = {};
  for (const key of keys) if (record[key] !== undefined) out[key] = record[key];
  return out;
}

function trimMetadata(obj: Json): void {
  const metadata = pick(obj["metadata"], CHILD_METADATA);
  if (metadata !== undefined) obj["metadata"] = metadata;
}

/** A child the controller applies: its metadata cut to what ownership, keys and drift repair read. */
export function trimChild<T>(obj: T): T {
  if (isRecord(obj)) trimMetadata(obj);
  return obj;
}

/**
 * A Deployment: as any child, and its status cut to the counters the controller reads and, when its pods
 * cannot be created, the ReplicaFailure condition's type, status and message (`podsRefused`).
 */
export function trimDeployment<T>(obj: T): T {
  if (!isRecord(obj)) return obj;
  const o: Json = obj;
  trimMetadata(o);
  const whole = o["status"];
  const status = pick(whole, DEPLOYMENT_STATUS);
  if (status !== undefined) {
    const conditions: unknown[] = isRecord(whole) && Array.isArray(whole["conditions"]) ? whole["conditions"] : [];
    const failure = conditions.find((c) => isRecord(c) && c["type"] === "ReplicaFailure");
    if (failure !== undefined) status["conditions"] = [pick(failure, ["type", "status", "message"])];
    o["status"] = status;
  }
  return obj;
}

/** A StatefulSet: as any child, and its status cut to the counters and revisions the controller reads. */
export function trimStatefulSet<T>(obj: T): T {
  if (!isRecord(obj)) return obj;
  const o: Json = obj;
  trimMetadata(o);
  const status = pick(o["status"], STATEFULSET_STATUS);
  if (status !== undefined) o["status"] = status;
  return obj;
}

/** A secondary Pod: labels, deletion, the containers' images and digests, and its conditions' state. */
export function trimPod<T>(obj: T): T {
  if (!isRecord(obj)) return obj;
  const o: Json = obj;
  trimMetadata(o);
  const spec = o["spec"];
  o["spec"] = isRecord(spec)
    ? {
        containers: Array.isArray(spec["containers"])
          ? spec["containers"].map((c) => pick(c, ["name", "image"]) ?? {})
          : [],
      }
    : {};
  const status = o["status"];
  o["status"] = isRecord(status)
    ? {
        ...(Array.isArray(status["conditions"])
          ? { conditions: status["conditions"].map((c) => pick(c, ["type", "status"]) ?? {}) }
          : {}),
        ...(Array.isArray(status["containerStatuses"])
          ? { containerStatuses: status["containerStatuses"].map((c) => pick(c, ["name", "imageID"]) ?? {}) }
          : {}),
      }
    : {};
  return obj;
}
