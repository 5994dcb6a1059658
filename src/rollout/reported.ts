/**
 * The status of the two outcomes a plan of the rollout cannot foresee: a spec that cannot be acted on at
 * all, and children the API server rejected. Pure, like the planner: the reconciler only writes them.
 */
import { stableJson } from "../api/json.js";
import type { CanaryApp, CanaryAppStatus } from "../api/types.js";
import { CONDITION } from "../api/types.js";
import { setCondition } from "./conditions.js";
import { timestamp } from "./time.js";
import type { PlannedEvent } from "./types.js";

/** Status equality by content (key order and undefined fields do not matter). */
export function statusEqual(a: CanaryAppStatus | undefined, b: CanaryAppStatus | undefined): boolean {
  return stableJson(a ?? {}) === stableJson(b ?? {});
}

/** What to record for a spec that cannot be acted on: no children are touched. */
export interface InvalidSpecPlan {
  status: CanaryAppStatus;
  /** One InvalidSpec Event, only when the status changes (a new message, or a new generation). */
  events: PlannedEvent[];
}

/** Shows the problem on the object (condition, phase, one Event per new message); the spec's next change reconciles again. */
export function invalidSpecPlan(app: CanaryApp, message: string, now: Date): InvalidSpecPlan {
  const previous = app.status ?? {};
  const generation = app.metadata.generation === undefined ? {} : { observedGeneration: app.metadata.generation };
  const condition = { type: CONDITION.InvalidSpec, status: "True" as const, reason: "InvalidSpec", message };
  const status: CanaryAppStatus = {
    ...previous,
    phase: "Invalid",
    message: `The spec cannot be acted on: ${message}`,
    conditions: setCondition(previous.conditions, { ...condition, ...generation }, timestamp(now)),
    ...generation,
  };
  if (statusEqual(previous, status)) return { status: previous, events: [] };
  return { status, events: [{ type: "Warning", reason: "InvalidSpec", message }] };
}

/** The condition a rejected child sets, and that clears once every child applies again. */
export const CHILDREN_APPLIED = "ChildrenApplied";

/**
 * Sets ChildrenApplied=False with the server's message on a rejection, and back to True once children
 * apply; an app that never had a rejection carries no such condition (and costs no extra status write).
 */
export function childrenApplied(status: CanaryAppStatus, rejection: string | undefined, now: Date): CanaryAppStatus {
  const present = status.conditions?.some((c) => c.type === CHILDREN_APPLIED) ?? false;
  if (rejection === undefined && !present) return status;
  const update =
    rejection === undefined
      ? { type: CHILDREN_APPLIED, status: "True" as const, reason: "Applied", message: "every child matches the spec" }
      : { type: CHILDREN_APPLIED, status: "False" as const, reason: "Rejected", message: rejection };
  return { ...status, conditions: setCondition(status.conditions, update, timestamp(now)) };
}
