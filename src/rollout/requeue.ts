import type { CanaryState } from "../api/types.js";
import type { ResolvedAnalysis } from "../api/defaults.js";
import { secondsUntil } from "./time.js";

/**
 * How long to wait for the route to show the secondary drained before looking again. The reconciler has
 * just applied the weights, so the next observation should show them; this bounds the wait should the
 * route's update not trigger a reconcile by itself.
 */
export const DRAIN_POLL_SECONDS = 2;

/** What the requeue is computed from. */
export interface RequeueFacts {
  canary: CanaryState | undefined;
  analysis: ResolvedAnalysis;
  secondaryReady: boolean;
  /** The analysis cannot run (invalid spec), so no analysis is due. */
  invalid: boolean;
  now: Date;
}

/**
 * Seconds until the next thing that time alone makes due (the next analysis, a progress deadline), at
 * least 1; undefined when nothing is: at rest, and while waiting on a person or on a watched object
 * (a Deployment's rollout, an annotation), the controller is event-driven and does not poll.
 */
export function requeueAfterSeconds(facts: RequeueFacts): number | undefined {
  const { canary, analysis } = facts;
  if (canary === undefined) return undefined;
  const until = (seconds: number): number =>
    Math.max(1, Math.ceil(secondsUntil(facts.now, canary.stepStartedAt, seconds)));
  const paused = canary.pausedAt !== undefined;
  switch (canary.stage) {
    case "WaitingForSecondary":
      return paused ? undefined : until(analysis.progressDeadlineSeconds);
    case "Stepping":
      if (paused) return undefined;
      if (!facts.secondaryReady) return until(analysis.progressDeadlineSeconds);
      return facts.invalid ? undefined : until(analysis.intervalSeconds);
    case "AwaitingPromotion":
      return paused || facts.secondaryReady ? undefined : until(analysis.progressDeadlineSeconds);
    case "Promoting": {
      const left = secondsUntil(facts.now, canary.stepStartedAt, analysis.progressDeadlineSeconds);
      return left > 0 ? Math.max(1, Math.ceil(left)) : undefined;
    }
    case "Finalising":
    case "RollingBack":
      return DRAIN_POLL_SECONDS;
  }
}
