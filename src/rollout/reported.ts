/**
 * The status of the two outcomes a plan of the rollout cannot foresee: a spec that cannot be acted on at
 * all, and children the API server rejected. Pure, like the planner: the reconciler only writes them.
 */
import { jsonEqual } from "../api/json.js";
import type { CanaryApp, CanaryAppStatus, Condition } from "../api/types.js";
import { CONDITION } from "../api/types.js";
import { CHILD_REJECTED, CHILDREN_APPLIED, setCondition } from "./conditions.js";
import { readyCondition, rejectedReady } from "./status-conditions.js";
import { timestamp } from "../time/timestamps.js";
import type { PlannedEvent, WorkloadObservation } from "./types.js";

/** Status equality by content (key order and undefined fields do not matter). */
export function statusEqual(a: CanaryAppStatus | undefined, b: CanaryAppStatus | undefined): boolean {
  return jsonEqual(a ?? {}, b ?? {});
}

/** What to record for a spec that cannot be acted on: no children are touched. */
export interface InvalidSpecPlan {
  status: CanaryAppStatus;
  /** One InvalidSpec Event, only when the status changes (a new message, or a new generation). */
  events: PlannedEvent[];
}

/** Shows the problem on the object (condition, phase, one Event per new message); the spec's next change reconciles again. */
export function invalidSpecPlan(app: CanaryApp, message: string, now: Date, reason = "InvalidSpec"): InvalidSpecPlan {
  const previous = app.status ?? {};
  const generation = app.metadata.generation === undefined ? {} : { observedGeneration: app.metadata.generation };
  const condition = { type: CONDITION.InvalidSpec, status: "True" as const, reason, message };
  const status: CanaryAppStatus = {
    ...previous,
    phase: "Invalid",
    message: `The spec cannot be acted on: ${message}`,
    conditions: setCondition(previous.conditions, { ...condition, ...generation }, timestamp(now)),
    ...generation,
  };
  if (statusEqual(previous, status)) return { status: previous, events: [] };
  return { status, events: [{ type: "Warning", reason, message }] };
}

/**
 * The API server's message while the last apply of the children was refused (ChildrenApplied=False, as
 * `childrenApplied` records it after each reconcile's apply), or undefined. The planner's only view of a
 * refusal: the route is applied after the per-track Services and before the app's Service and the
 * workloads (resources/children.ts), so a step that the route does not carry while an apply is refused
 * is held by the refusal, whichever of those children it names.
 */
export function applyRefusal(conditions: readonly Condition[] | undefined): string | undefined {
  const applied = conditions?.find((c) => c.type === CHILDREN_APPLIED);
  return applied?.status === "False" ? applied.message : undefined;
}

/** The status message while a child is rejected (see `rejectedReady`), or undefined. */
export function rejectedMessage(conditions: readonly Condition[] | undefined): string | undefined {
  const ready = conditions?.find((c) => c.type === CONDITION.Ready);
  if (ready?.reason !== CHILD_REJECTED) return undefined;
  return `A child could not be applied; nothing changes until the spec or the object in the way does: ${
    conditions?.find((c) => c.type === CHILDREN_APPLIED)?.message ?? ""
  }`;
}

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
  let conditions = setCondition(status.conditions, update, timestamp(now));
  const ready = conditions.find((c) => c.type === CONDITION.Ready);
  const rejected = ready?.status === "True" ? undefined : rejectedReady(conditions);
  if (rejected === undefined) return { ...status, conditions };
  conditions = setCondition(conditions, { ...rejected, ...generationOf(ready) }, timestamp(now));
  return { ...status, conditions, message: rejectedMessage(conditions) ?? status.message ?? "" };
}

function generationOf(condition: Condition | undefined): { observedGeneration?: number } {
  return condition?.observedGeneration === undefined ? {} : { observedGeneration: condition.observedGeneration };
}

/**
 * The status after this reconcile created the primary: Ready says what the next plan will observe — the
 * primary exists and is not available yet — instead of "does not exist yet". Written with the status write
 * that follows the applies, it spares the next reconcile (woken by the new Deployment's watch event) a
 * status write of its own for every new app. Unchanged unless Ready still says PrimaryMissing.
 */
export function primaryCreated(
  status: CanaryAppStatus,
  primary: WorkloadObservation | null,
  generation: number | undefined,
  now: Date,
): CanaryAppStatus {
  const ready = status.conditions?.find((c) => c.type === CONDITION.Ready);
  if (primary === null || ready?.reason !== "PrimaryMissing") return status;
  return {
    ...status,
    conditions: setCondition(status.conditions, readyCondition(primary, generation), timestamp(now)),
  };
}
