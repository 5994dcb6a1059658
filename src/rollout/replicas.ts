/** How many pods does the secondary run? (decisions.ts lists the questions.) */
import type { CanaryStage, Scaling } from "../api/types.js";

/**
 * The pods a secondary needs to take `weight` percent of an app of `replicas` pods, as the primary would
 * serve it: `ceil(replicas × weight / 100)`, never fewer than `testReplicas`.
 */
export function replicasForWeight(replicas: number, testReplicas: number, weight: number): number {
  return Math.max(testReplicas, Math.ceil((replicas * Math.max(0, weight)) / 100));
}

/** What the secondary's size is decided from. */
export interface ScalingFacts {
  scaling: Scaling;
  replicas: number;
  testReplicas: number;
  stage: CanaryStage;
  /** The current step (-1 before the first). */
  step: number;
  weights: readonly number[];
}

/**
 * How many pods does the secondary run? With `fixed`, `testReplicas`. With `weighted`, the pods for the
 * weight it is to take next, so that they are Available before the weight moves: the first step's while it
 * starts, the next step's while a step runs (the last step's on the last step and after it). A test that
 * ends keeps its size until the secondary goes: its pods serve until the route has left them.
 */
export function secondaryReplicas(f: ScalingFacts): number {
  if (f.scaling === "fixed") return f.testReplicas;
  const last = f.weights.length - 1;
  const ahead = f.stage === "WaitingForSecondary" ? 0 : f.stage === "Stepping" ? f.step + 1 : f.step;
  const weight = f.weights[Math.max(0, Math.min(ahead, last))] ?? 0;
  return replicasForWeight(f.replicas, f.testReplicas, weight);
}
