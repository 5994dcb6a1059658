import type { Condition } from "../api/types.js";

/** The condition a rejected child sets, and that clears once every child applies again. */
export const CHILDREN_APPLIED = "ChildrenApplied";

/**
 * Whether the route's implementation carries the route as written (the Gateway API's route status): True with
 * reason Accepted, False with why (RouteNotAccepted, RouteRefsNotResolved, RouteNotReported). Only for routers
 * whose implementation reports (ADR 0026).
 */
export const ROUTE_ACCEPTED = "RouteAccepted";

/**
 * Whether the app's analysis templates resolve (ADR 0031): True with the templates, False with why not
 * (TemplateNotFound, TemplateInvalid, TemplatesNotServed); absent on an app that uses no template.
 */
export const ANALYSIS_READY = "AnalysisReady";

/** Ready's reason while a rejected child keeps the primary from running as specified. */
export const CHILD_REJECTED = "ChildRejected";

/** A condition as the planner wants it; lastTransitionTime is managed by setCondition. */
export type ConditionUpdate = Omit<Condition, "lastTransitionTime">;

/** The condition of a type, if present. */
export function findCondition(conditions: readonly Condition[] | undefined, type: string): Condition | undefined {
  return conditions?.find((condition) => condition.type === type);
}

/**
 * The conditions with `update` set. lastTransitionTime changes only when the status does (True/False/
 * Unknown), as Kubernetes conventions ask, so that a status that did not change compares equal. Other
 * conditions keep their place; a new one is appended.
 */
export function setCondition(
  conditions: readonly Condition[] | undefined,
  update: ConditionUpdate,
  now: string,
): Condition[] {
  const list = conditions ?? [];
  const existing = findCondition(list, update.type);
  const lastTransitionTime =
    existing !== undefined && existing.status === update.status ? existing.lastTransitionTime : now;
  const next: Condition = { ...update, lastTransitionTime };
  if (existing === undefined) return [...list, next];
  return list.map((condition) => (condition.type === update.type ? next : condition));
}
