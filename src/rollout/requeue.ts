/** When does it look again? (decisions.ts lists the questions.) */
import type { ResolvedAnalysis } from "../api/defaults.js";
import type { CanaryState } from "../api/types.js";
import { stepClockStart } from "./test-facts.js";
import { secondsUntil } from "../time/timestamps.js";

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
  /** How long the secondary is kept after the route shows it drained. */
  drainSeconds: number;
  secondaryReady: boolean;
  /** The analysis cannot run (invalid spec), so no analysis is due. */
  invalid: boolean;
  /** The last apply of the children was refused (applyRefusal). */
  applyRefused?: boolean;
  /** The route's implementation does not carry the route as written (Observation.routeNotCarried). */
  routeNotCarried?: boolean;
  now: Date;
}

/** The wait when something is already due but was not acted on in this plan. */
const OVERDUE_SECONDS = 1;

/**
 * When does it look again? Seconds (to the millisecond, rounded up) until the next thing that time alone
 * makes due (the next analysis, a progress deadline); 1 when it is already due; undefined when nothing is:
 * at rest, and while waiting on a person or on a watched object (a Deployment's rollout, an annotation),
 * the controller is event-driven and does not poll. Not whole seconds: a reconcile that comes 0.2 s before
 * a step is due (another requeue, an event) must not put the step off by a whole second.
 */
export function requeueAfterSeconds(facts: RequeueFacts): number | undefined {
  const stage = requeueForStage(facts);
  const gate = gateRecheckSeconds(facts);
  if (gate === undefined) return stage;
  return stage === undefined ? gate : Math.min(stage, gate);
}

/** A test held at a gate asks it again one interval after it last did (never while paused). */
function gateRecheckSeconds({ canary, analysis, now }: RequeueFacts): number | undefined {
  const waiting = canary?.gates?.waiting;
  if (waiting === undefined || canary?.pausedAt !== undefined) return undefined;
  const left = secondsUntil(now, waiting.checkedAt, analysis.intervalSeconds);
  return left > 0 ? Math.ceil(left * 1000) / 1000 : OVERDUE_SECONDS;
}

function requeueForStage(facts: RequeueFacts): number | undefined {
  const { canary, analysis } = facts;
  if (canary === undefined) return undefined;
  const until = (seconds: number, since = canary.stepStartedAt): number => {
    const left = secondsUntil(facts.now, since, seconds);
    return left > 0 ? Math.ceil(left * 1000) / 1000 : OVERDUE_SECONDS;
  };
  const paused = canary.pausedAt !== undefined;
  switch (canary.stage) {
    case "WaitingForSecondary":
      // Held at confirm-rollout, no deadline runs: the gate's own recheck is the only thing due.
      return paused || canary.gates?.waiting !== undefined ? undefined : until(analysis.progressDeadlineSeconds);
    case "Stepping":
      // A batch waiting for approval waits for a person (an annotation, which triggers a reconcile).
      if (paused || canary.approval !== undefined) return undefined;
      if (!facts.secondaryReady) return until(analysis.progressDeadlineSeconds);
      if (facts.invalid) return undefined;
      // A step held by a refused route, or one its implementation does not carry (whose status changes are
      // watched): what time makes due is its deadline (RouteRefused), not the re-apply.
      if (canary.stepRoutedAt === undefined && (facts.applyRefused === true || facts.routeNotCarried === true)) {
        return until(analysis.progressDeadlineSeconds);
      }
      // A step not yet seen on the route is due one interval after it is, so never before one interval
      // after its decision; the route's update itself triggers the reconcile that records it, and a route
      // still not right by then is looked at again soon (OVERDUE_SECONDS) while the plan re-applies it.
      return until(analysis.intervalSeconds, stepClockStart(canary) ?? canary.stepStartedAt);
    case "AwaitingPromotion":
      return paused || facts.secondaryReady ? undefined : until(analysis.progressDeadlineSeconds);
    case "Promoting": {
      const left = secondsUntil(facts.now, canary.stepStartedAt, analysis.progressDeadlineSeconds);
      return left > 0 ? until(analysis.progressDeadlineSeconds) : undefined;
    }
    case "Finalising":
    case "RollingBack": {
      // The poll waits for the route's update, which cannot come while its apply is refused: each poll
      // would be one more refused write, so it looks again once an interval instead.
      if (canary.drainedAt === undefined && canary.step >= 0 && facts.applyRefused === true) {
        return analysis.intervalSeconds;
      }
      if (canary.drainedAt === undefined || canary.step < 0) return DRAIN_POLL_SECONDS;
      const left = secondsUntil(facts.now, canary.drainedAt, facts.drainSeconds);
      return left > 0 ? Math.ceil(left * 1000) / 1000 : OVERDUE_SECONDS;
    }
  }
}
