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

/** The wait when something is already due but was not acted on in this plan. */
const OVERDUE_SECONDS = 1;

/**
 * Seconds (to the millisecond, rounded up) until the next thing that time alone makes due (the next
 * analysis, a progress deadline); 1 when it is already due; undefined when nothing is: at rest, and while
 * waiting on a person or on a watched object (a Deployment's rollout, an annotation), the controller is
 * event-driven and does not poll. Not whole seconds: a reconcile that comes 0.2 s before a step is due
 * (another requeue, an event) must not put the step off by a whole second.
 */
export function requeueAfterSeconds(facts: RequeueFacts): number | undefined {
  const { canary, analysis } = facts;
  if (canary === undefined) return undefined;
  const until = (seconds: number): number => {
    const left = secondsUntil(facts.now, canary.stepStartedAt, seconds);
    return left > 0 ? Math.ceil(left * 1000) / 1000 : OVERDUE_SECONDS;
  };
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
      return left > 0 ? until(analysis.progressDeadlineSeconds) : undefined;
    }
    case "Finalising":
    case "RollingBack":
      return DRAIN_POLL_SECONDS;
  }
}
