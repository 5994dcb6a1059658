import type { Observation, WorkloadObservation } from "./types.js";

/**
 * Whether a workload shows `revision`: one that carries no revision (applied before revisions were
 * recorded, or observed without them) is judged by its image alone.
 */
export function showsRevision(workload: WorkloadObservation, revision: string | undefined): boolean {
  return revision === undefined || workload.revision === undefined || workload.revision === revision;
}

/**
 * The secondary may take traffic: it exists, its rollout is complete and available, and it runs the image
 * (and pod-template revision) under test (a Deployment still showing the previous test's is not ready for this one).
 */
export function secondaryReady(observed: Pick<Observation, "secondary">, image: string, revision?: string): boolean {
  const secondary = observed.secondary;
  return secondary !== null && secondary.available && secondary.image === image && showsRevision(secondary, revision);
}

/** The primary has finished rolling out this image (and pod-template revision) and all its pods are available. */
export function primaryRunning(observed: Pick<Observation, "primary">, image: string, revision?: string): boolean {
  const primary = observed.primary;
  return primary !== null && primary.available && primary.image === image && showsRevision(primary, revision);
}

/**
 * The route is observed sending nothing to the secondary, so the secondary can go: no weight, no matched
 * requests, no mirrored copies. A missing route proves nothing (the reconciler recreates it), so only an
 * explicit 0 counts.
 */
export function trafficDrained(observed: Pick<Observation, "routedWeights">): boolean {
  const routed = observed.routedWeights;
  return routed !== null && routed.secondary === 0 && routed.mirror === undefined && routed.match === undefined;
}
