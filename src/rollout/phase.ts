import type { CanaryState, Phase } from "../api/types.js";

/** What the phase is derived from. */
export interface PhaseFacts {
  canary: CanaryState | undefined;
  /** spec.image differs from the primary image and is recorded as failed. */
  specImageFailed: boolean;
  /** The primary is observed available with the primary image. */
  primaryRunning: boolean;
  /** The spec's analysis cannot run (see checkProblems). */
  invalid: boolean;
}

/**
 * The phase shown to people, derived from the rollout state and never stored apart from it. An invalid
 * spec shows while it holds something up (no test can start, a running test cannot advance); a test that
 * is already promoting or rolling back finishes regardless and shows that instead.
 */
export function derivePhase(facts: PhaseFacts): Phase {
  const { canary } = facts;
  if (canary !== undefined) {
    switch (canary.stage) {
      case "WaitingForSecondary":
      case "Stepping":
      case "AwaitingPromotion":
        if (facts.invalid) return "Invalid";
        return canary.pausedAt !== undefined ? "Paused" : "Progressing";
      case "Promoting":
      case "Finalising":
        return "Promoting";
      case "RollingBack":
        // A superseded test did not fail: traffic returns to the primary on the way to the next test.
        return canary.outcome?.result === "Superseded" ? "Progressing" : "RollingBack";
    }
  }
  if (facts.invalid) return "Invalid";
  if (facts.specImageFailed) return "Failed";
  return facts.primaryRunning ? "Healthy" : "Initializing";
}
