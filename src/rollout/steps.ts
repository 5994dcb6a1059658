import type { PhaseStep } from "../api/defaults.js";
import type { CanaryState } from "../api/types.js";
import type { Weights } from "./types.js";

/** The secondary's weight at a step: the step's entry in the sequence, 0 before the first step. */
export function stepWeight(weights: readonly number[], step: number): number {
  if (step < 0 || weights.length === 0) return 0;
  // A spec edited mid-test may have fewer steps than the test has passed: hold the highest weight.
  return weights[Math.min(step, weights.length - 1)] ?? 0;
}

/**
 * The weight the secondary gets in a state. Traffic goes to the secondary only while it is observed ready
 * with the image under test, and only in the stages that test it or hand over to the primary; every
 * other state routes everything to the primary.
 */
export function secondaryWeight(canary: CanaryState | undefined, weights: readonly number[], ready: boolean): number {
  if (canary === undefined || !ready) return 0;
  switch (canary.stage) {
    case "Stepping":
      // No verdict can be had (Prometheus is not answering): no traffic to an image nobody can judge.
      return canary.trafficWithheld === true ? 0 : stepWeight(weights, canary.step);
    case "AwaitingPromotion":
    case "Promoting":
      return stepWeight(weights, canary.step);
    case "WaitingForSecondary":
    case "Finalising":
    case "RollingBack":
      return 0;
  }
}

/**
 * What the secondary gets besides its weight in a state: at a step of the mirror phase the share of live
 * traffic copied to it, at a step of the A/B phase the requests matching the rules (ADR 0027). In the same
 * states as its weight (`secondaryWeight`): never while it is not ready, never once the test is ending.
 */
export function phaseRoute(
  canary: CanaryState | undefined,
  phases: readonly PhaseStep[],
  ready: boolean,
): Pick<Weights, "mirror" | "match"> {
  if (canary === undefined || !ready || canary.step < 0) return {};
  const phase = phases[canary.step];
  if (phase === undefined) return {};
  const routed =
    (canary.stage === "Stepping" && canary.trafficWithheld !== true) ||
    canary.stage === "AwaitingPromotion" ||
    canary.stage === "Promoting";
  if (!routed) return {};
  return phase.kind === "mirror" ? { mirror: phase.percent } : { match: structuredClone(phase.rules) };
}

/** What the secondary gets, in words: its weight, or the mirror's share, or the A/B phase's requests. */
export function describeShare(weights: Weights): string {
  if (weights.mirror !== undefined) {
    return `${weights.mirror}% of traffic mirrored to the secondary (its answers discarded: users get the primary's)`;
  }
  if (weights.match !== undefined) {
    return "the requests matching spec.analysis.match on the secondary (A/B), the rest on the primary";
  }
  return `${weights.secondary}% of traffic on the secondary`;
}

/** A split that always sums to 100: the secondary's share clamped to a whole 0..100, the rest to the primary. */
export function splitWeights(secondary: number): Weights {
  const share = Number.isFinite(secondary) ? Math.min(100, Math.max(0, Math.round(secondary))) : 0;
  return { primary: 100 - share, secondary: share };
}
