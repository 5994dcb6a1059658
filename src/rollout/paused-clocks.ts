import type { CanaryState } from "../api/types.js";
import { movedPast } from "../time/timestamps.js";

/**
 * How does a pause count toward a deadline? It does not: every clock a test keeps counts only the time the
 * test was not paused (ADR 0022). The status keeps no record of past pauses, only the current one
 * (`pausedAt`), so the rule is applied when a pause ends: a clock's start moves forward by the part of the
 * pause that came after it. A clock started before the pause moves by the whole pause; one started during
 * it (the secondary's readiness changed while paused) moves to the moment of the resume.
 */
export function clockAfterPause(since: string, pausedAt: string, resumedAt: string): string {
  return movedPast(since, pausedAt, resumedAt);
}

/**
 * The clocks of a paused test once it resumes at `resumedAt`, each moved by {@link clockAfterPause}:
 * - `stepStartedAt`: the progress deadline (for a secondary not available, or not ready, and for a step
 *   that waits for a route the API server refuses) and, with `stepRoutedAt`, the step's analysis interval,
 *   which goes on where it stopped;
 * - `inconclusive.since`: the deadline for a verdict;
 * - `gates.waiting.checkedAt`: when a held gate is asked again.
 * What only says when something began (`startedAt`, `stepBeganAt`, the waits' `since`) is no clock and
 * keeps its time: `stepBeganAt` starts the step's evidence window, and the step's weight carried traffic
 * while paused. The test is otherwise unchanged; `pausedAt` is gone.
 */
export function resumedClocks(canary: Readonly<CanaryState>, resumedAt: string): CanaryState {
  const { pausedAt, ...state } = canary;
  if (pausedAt === undefined) return { ...state };
  const move = (since: string): string => clockAfterPause(since, pausedAt, resumedAt);
  const { stepRoutedAt, inconclusive, gates } = canary;
  const waiting = gates?.waiting;
  return {
    ...state,
    stepStartedAt: move(canary.stepStartedAt),
    ...(stepRoutedAt !== undefined ? { stepRoutedAt: move(stepRoutedAt) } : {}),
    ...(inconclusive !== undefined ? { inconclusive: { ...inconclusive, since: move(inconclusive.since) } } : {}),
    ...(waiting !== undefined
      ? { gates: { ...gates, waiting: { ...waiting, checkedAt: move(waiting.checkedAt) } } }
      : {}),
  };
}
