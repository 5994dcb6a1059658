/**
 * An HTTPRoute's `status.parents` as Istio writes it (istio.io/istio pilot/pkg/config/kube/gateway/conditions.go,
 * createRouteStatus; gatewaycommon/conversion.go, SetListenerConditions; pilot/pkg/model/kstatus/helper.go,
 * UpdateConditionIfChanged): one entry per parentRef it handles, under its controller name, with `Accepted`
 * and `ResolvedRefs`; the entries of other controllers kept as they are. Pure: the time is given.
 */
import {
  ISTIO_GATEWAY_CONTROLLER,
  parentRefString,
  type ConditionLike,
  type ParentRefLike,
  type RouteParentStatusLike,
} from "./gateway-api-objects.js";
import type { ConfigError } from "./http-route-rules.js";
import type { ParentResult } from "./route-parents.js";

/** A parent result with the error its route's rules had for that kind of parent (mesh or Gateway). */
export interface ParentOutcome {
  ref: ParentRefLike;
  denied?: { reason: string; message: string };
  routeError?: ConfigError;
}

/** Each parent result with the mesh's or the Gateway's conversion error (route_collections.go, computeRoute). */
export function parentOutcomes(
  results: readonly ParentResult[],
  errors: { mesh?: ConfigError | undefined; gateway?: ConfigError | undefined },
): ParentOutcome[] {
  return results.map((r) => {
    const routeError = r.mesh ? errors.mesh : errors.gateway;
    return {
      ref: r.ref,
      ...(r.denied !== undefined ? { denied: r.denied } : {}),
      ...(routeError !== undefined ? { routeError } : {}),
    };
  });
}

/**
 * How severe a refusal is when several listeners of one parent disagree: lower wins (createRouteStatus,
 * rankParentError).
 */
function rank(outcome: ParentOutcome): number {
  switch (outcome.denied?.reason) {
    case undefined:
      return 0;
    case "NotAllowedByListeners":
      return 1;
    case "NoMatchingListenerHostname":
      return 2;
    case "ParentRefConflict":
      return 3;
    case "NoMatchingParent":
      return 4;
    default:
      return 0;
  }
}

/** `metav1.Now()` as the API server stores it: RFC 3339, whole seconds. */
export function rfc3339(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, "Z");
}

/**
 * kstatus.UpdateConditionIfChanged: a condition of a new type is appended; one whose status, message and
 * observedGeneration are unchanged is left alone (even if its reason changed, as Istio does); otherwise it is
 * replaced, keeping its lastTransitionTime when its status did not change.
 */
export function updateCondition(conditions: readonly ConditionLike[], condition: ConditionLike): ConditionLike[] {
  const index = conditions.findIndex((c) => c.type === condition.type);
  if (index === -1) return [...conditions, condition];
  const existing = conditions[index] as ConditionLike;
  let next = condition;
  if (existing.status === condition.status) {
    if (existing.message === condition.message && existing.observedGeneration === condition.observedGeneration) {
      return [...conditions];
    }
    next = {
      ...condition,
      ...(existing.lastTransitionTime !== undefined ? { lastTransitionTime: existing.lastTransitionTime } : {}),
    };
  }
  return conditions.map((c, i) => (i === index ? next : c));
}

/**
 * The route's `status.parents` after Istio's pass over `outcomes` (one per parent and listener):
 *
 * - Outcomes of one parentRef collapse into one entry: the least severe wins (a parent one listener takes is
 *   Accepted), the messages of equally severe refusals joined by "; "; `Route was valid, bound to N parents`
 *   when N listeners take it.
 * - Accepted: True/Accepted/"Route was valid", else False with the refusal's reason and message.
 *   ResolvedRefs: True/ResolvedRefs/"All references resolved", else False with the rules' error.
 *   Both carry `observedGeneration` = the route's generation, and are updated in place as
 *   UpdateConditionIfChanged does.
 * - An entry of ours (controller `istio.io/gateway-controller`) for a parentRef still there is replaced in
 *   place; new ones are appended sorted by Istio's parentRef key, descending; ours for a parentRef no longer
 *   handled are removed; other controllers' entries are kept untouched.
 */
export function routeParentStatuses(
  outcomes: readonly ParentOutcome[],
  routeNamespace: string,
  generation: number | undefined,
  current: readonly RouteParentStatusLike[],
  now: Date,
): RouteParentStatusLike[] {
  const parents = current.map((p) => p);
  const ours = new Map<string, number>();
  current.forEach((p, i) => {
    if (p.controllerName !== ISTIO_GATEWAY_CONTROLLER) return;
    const key = parentRefString(p.parentRef ?? {}, routeNamespace);
    if (!ours.has(key)) ours.set(key, i);
  });

  const seen = new Map<string, { ref: ParentRefLike; outcomes: ParentOutcome[]; accepted: number }>();
  for (const o of outcomes) {
    const key = parentRefString(o.ref, routeNamespace);
    const entry = seen.get(key) ?? { ref: o.ref, outcomes: [], accepted: 0 };
    entry.outcomes.push(o);
    if (o.denied === undefined) entry.accepted++;
    seen.set(key, entry);
  }

  const appended: RouteParentStatusLike[] = [];
  const time = rfc3339(now);
  for (const [key, entry] of seen) {
    const [first, ...rest] = entry.outcomes;
    if (first === undefined) continue;
    let report: ParentOutcome = { ...first, ...(first.denied ? { denied: { ...first.denied } } : {}) };
    for (const o of rest) {
      if (rank(o) < rank(report)) report = { ...o, ...(o.denied ? { denied: { ...o.denied } } : {}) };
      else if (rank(o) === rank(report)) {
        if (report.denied === undefined) {
          if (o.denied !== undefined) report = { ...report, denied: { ...o.denied } };
        } else if (o.denied !== undefined) {
          report.denied = { ...report.denied, message: `${report.denied.message}; ${o.denied.message}` };
        }
      }
    }
    const accepted: ConditionLike =
      report.denied === undefined
        ? {
            type: "Accepted",
            status: "True",
            reason: "Accepted",
            message: entry.accepted > 1 ? `Route was valid, bound to ${entry.accepted} parents` : "Route was valid",
          }
        : { type: "Accepted", status: "False", reason: report.denied.reason, message: report.denied.message };
    const resolved: ConditionLike =
      report.routeError === undefined
        ? { type: "ResolvedRefs", status: "True", reason: "ResolvedRefs", message: "All references resolved" }
        : {
            type: "ResolvedRefs",
            status: "False",
            reason: report.routeError.reason,
            message: report.routeError.message,
          };
    const index = ours.get(key);
    let conditions = index === undefined ? [] : (current[index]?.conditions ?? []);
    for (const c of [accepted, resolved]) {
      conditions = updateCondition(conditions, {
        type: c.type,
        status: c.status,
        ...(generation !== undefined ? { observedGeneration: generation } : {}),
        lastTransitionTime: time,
        reason: c.reason,
        message: c.message,
      });
    }
    const status: RouteParentStatusLike = {
      parentRef: entry.ref,
      controllerName: ISTIO_GATEWAY_CONTROLLER,
      conditions,
    };
    if (index !== undefined) {
      parents[index] = status;
      ours.delete(key);
    } else appended.push(status);
  }
  const keyOf = (p: RouteParentStatusLike) => parentRefString(p.parentRef ?? {}, routeNamespace);
  appended.sort((a, b) => (keyOf(a) > keyOf(b) ? -1 : keyOf(a) < keyOf(b) ? 1 : 0));
  const stale = new Set(ours.values());
  return [...parents, ...appended].filter((_, i) => !stale.has(i));
}
