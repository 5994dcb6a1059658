import type { Observation } from "./types.js";

/**
 * The secondary may take traffic: it exists, its rollout is complete and available, and it runs the image
 * under test (a Deployment still showing the previous test's image is not ready for this one).
 */
export function secondaryReady(observed: Pick<Observation, "secondary">, image: string): boolean {
  const secondary = observed.secondary;
  return secondary !== null && secondary.available && secondary.image === image;
}

/** The primary has finished rolling out this image and all its pods are available. */
export function primaryRunning(observed: Pick<Observation, "primary">, image: string): boolean {
  const primary = observed.primary;
  return primary !== null && primary.available && primary.image === image;
}

/**
 * The route is observed sending nothing to the secondary, so the secondary can go. A missing route proves
 * nothing (the reconciler recreates it), so only an explicit 0 counts.
 */
export function trafficDrained(observed: Pick<Observation, "routedWeights">): boolean {
  return observed.routedWeights !== null && observed.routedWeights.secondary === 0;
}
