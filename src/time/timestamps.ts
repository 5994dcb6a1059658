/**
 * Time arithmetic on status timestamps. Status keeps ISO strings; the planner's clock is `input.now`.
 * An unreadable timestamp counts as the epoch, so whatever waits on it is due at once rather than never:
 * a controller that stalls forever on a damaged status is worse than one that moves on.
 */

/** The form every timestamp in status takes. */
export function timestamp(now: Date): string {
  return now.toISOString();
}

function millis(time: string): number {
  const parsed = Date.parse(time);
  return Number.isNaN(parsed) ? 0 : parsed;
}

/** The later of two timestamps (the first when they are the same moment). */
export function later(a: string, b: string): string {
  return millis(b) > millis(a) ? b : a;
}

/** True once `seconds` have passed since `since`. */
export function hasElapsed(now: Date, since: string, seconds: number): boolean {
  return now.getTime() >= millis(since) + seconds * 1000;
}

/** Seconds from now until `seconds` after `since` (negative when already past). */
export function secondsUntil(now: Date, since: string, seconds: number): number {
  return (millis(since) + seconds * 1000 - now.getTime()) / 1000;
}

/**
 * `since` moved forward by the part of the interval `from`–`to` that came after it: by the whole interval
 * when `since` is before it, to `to` when `since` is within it, not at all when it is after it.
 */
export function movedPast(since: string, from: string, to: string): string {
  const start = millis(since);
  const overlap = Math.max(0, millis(to) - Math.max(start, millis(from)));
  return new Date(start + overlap).toISOString();
}
