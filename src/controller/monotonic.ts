import { performance } from "node:perf_hooks";
import { systemClock, type Clock } from "../time/clock.js";

/**
 * A reading in milliseconds to time how long something lasted on `clock`; only differences of readings mean
 * anything. For the system clock it is `performance.now()`, which an NTP step or a date set by hand does not move
 * (`Date.now()` jumps with them); an injected clock (a test's) is read as it is.
 */
export function monotonicNow(clock: Clock): () => number {
  return clock === systemClock ? () => performance.now() : () => clock.now();
}
