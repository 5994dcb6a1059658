import type { PlannedEvent } from "../rollout/types.js";

/** What one reconcile did to one child. */
export interface ChildChange {
  action: "Created" | "Updated" | "Deleted";
  kind: string;
  name: string;
}

const ACTIONS: readonly ChildChange["action"][] = ["Created", "Updated", "Deleted"];

/**
 * The Events a reconcile's changes to children are told by: at most one per action (Created, Updated,
 * Deleted) naming every child it touched, in the order they were changed — "Created Service web-primary,
 * Service web-secondary, DestinationRule web, ...". One Event per child would make a new app cost six Event
 * writes for what a reader takes in as one fact ("its objects were created"), and an API server serving a
 * thousand new apps spends a third of its writes on them.
 *
 * `tellUpdates`: the plan's `tellChildUpdates`. False when the reconcile recorded a transition, whose own Events
 * tell what its updates do ("StepAdvanced: shifted 20% of the traffic ..."); those updates are not told a second
 * time. Updates no transition explains (a child put back after someone changed it) and children created or
 * deleted are always told.
 */
export function childEvents(changes: readonly ChildChange[], tellUpdates = true): PlannedEvent[] {
  const events: PlannedEvent[] = [];
  for (const action of ACTIONS) {
    if (!tellUpdates && action === "Updated") continue;
    const touched = changes.filter((c) => c.action === action).map((c) => `${c.kind} ${c.name}`);
    if (touched.length > 0) events.push({ type: "Normal", reason: action, message: `${action} ${touched.join(", ")}` });
  }
  return events;
}
