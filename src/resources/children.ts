import type { ResolvedSpec } from "../api/defaults.js";
import { appRef, childNames } from "../api/meta.js";
import type { CanaryApp } from "../api/types.js";
import { LABELS } from "../api/types.js";
import type { Plan } from "../rollout/types.js";
import type { RoutingObject, TrafficRouter } from "../router/router.js";
import { deploymentTarget } from "../workload/deployment.js";
import type { AnyWorkloadTarget, SharedWorkloadTarget, TrackWants, WorkloadObject } from "../workload/workload.js";
import { isShared } from "../workload/workload.js";
import type { ServiceObject } from "./service.js";
import { buildService, buildTrackService } from "./service.js";

export type ChildObject = WorkloadObject | ServiceObject | RoutingObject;

/**
 * The child with `labels` added to its object metadata (not to a pod template: a new pod label would roll
 * every pod). No labels: the very same object, so its applied hash does not change.
 */
export function withMetadataLabels<T extends ChildObject>(child: T, labels: Readonly<Record<string, string>>): T {
  if (Object.keys(labels).length === 0) return child;
  const metadata: ChildObject["metadata"] & { labels?: Record<string, string> } = child.metadata;
  return { ...child, metadata: { ...metadata, labels: { ...metadata.labels, ...labels } } };
}

/** A child the plan says must not exist. */
export interface ChildRef {
  apiVersion: string;
  kind: string;
  namespace: string;
  name: string;
}

export interface DesiredChildren {
  /** In the order they must be applied. */
  apply: ChildObject[];
  /** Removed after every apply has gone through. */
  remove: ChildRef[];
}

/**
 * The children a plan asks for, in an order that never routes traffic to something that does not exist
 * yet and never removes something that still gets traffic: the per-track Services first, then the routing
 * objects with their weights (the planner gives the secondary weight only once it is observed ready, so
 * the route never sends to pods that are not there), then the app's Service, then the workloads, and only
 * then the secondary's removal (the planner asks for that only once the route already gives the secondary
 * nothing).
 *
 * The app's Service comes after the route: an app converged by a version before ADR 0010 has a Service
 * selecting both tracks that the route uses as its destination; its selector narrows to the primary only
 * once the route sends to `<name>-primary` and `<name>-secondary`, which exist by then. It comes before the
 * workloads, so that on a first deploy callers outside the mesh have it before the first pod is ready.
 */
export function desiredChildren(
  app: CanaryApp,
  spec: ResolvedSpec,
  plan: Plan,
  router: TrafficRouter,
  workload: AnyWorkloadTarget = deploymentTarget,
): DesiredChildren {
  if (isShared(workload)) return sharedChildren(app, spec, plan, router, workload);
  const { name, namespace } = appRef(app);
  const templates = plan.templates;
  const primaryPort = templates?.primary.imageListenPort ?? spec.imageListenPort;
  const portsDiffer =
    plan.secondary !== null && templates !== undefined && templates.secondary.imageListenPort !== primaryPort;
  // The pods' port: by name ("http") while the two tracks listen on different ports (a revision under test).
  const targetPort = portsDiffer ? "http" : primaryPort;
  // A rollback whose route write is refused: the share the stuck route still sends goes to the primary's pods.
  const secondaryTrackSelector =
    plan.secondaryServiceSelects === "primary" ? { [LABELS.app]: name, [LABELS.track]: "primary" } : undefined;
  const apply: ChildObject[] = [
    buildTrackService(app, spec, "primary", targetPort),
    buildTrackService(app, spec, "secondary", targetPort, secondaryTrackSelector),
    ...router.desired(app, spec, plan.weights),
    buildService(app, spec, targetPort),
    ...handoverRoute(app, spec, plan, router),
    workload.desired(app, spec, "primary", { ...plan.primary, ...(templates ? { template: templates.primary } : {}) }),
  ];
  if (plan.secondary) {
    const want = { ...plan.secondary, ...(templates ? { template: templates.secondary } : {}) };
    apply.push(workload.desired(app, spec, "secondary", want));
  }
  const remove: ChildRef[] = plan.secondary
    ? []
    : [{ apiVersion: workload.apiVersion, kind: workload.kind, namespace, name: childNames(name).secondary }];
  return { apply, remove: [...remove, ...handedOverRemoved(app, plan, router)] };
}

/**
 * Routing objects another router left (a VirtualService kept from `mesh: istio`) are first made to send
 * everything to the app's Service, applied after it so that it already selects where this router sends
 * traffic, and before anything is scaled (`routeHandoverDue`).
 */
function handoverRoute(app: CanaryApp, spec: ResolvedSpec, plan: Plan, router: TrafficRouter): ChildObject[] {
  const handover = plan.routeHandover;
  if (handover?.kind !== "handOver") return [];
  return router.leftovers?.find((l) => l.kind === handover.of)?.handover(app, spec, handover.at) ?? [];
}

/** Once the handover has stood its time, the old router's objects go. */
function handedOverRemoved(app: CanaryApp, plan: Plan, router: TrafficRouter): ChildRef[] {
  const handover = plan.routeHandover;
  if (handover?.kind !== "remove") return [];
  const { namespace } = appRef(app);
  const leftover = router.leftovers?.find((l) => l.kind === handover.of);
  return (leftover?.objects(app) ?? []).map((o) => ({ ...o, namespace }));
}

/**
 * The children when both tracks are one workload (a StatefulSet): the same order, the per-track Services
 * selecting each track's pods as the workload tells them apart, and nothing ever removed (the tested
 * ordinals return to the primary's revision in place).
 */
function sharedChildren(
  app: CanaryApp,
  spec: ResolvedSpec,
  plan: Plan,
  router: TrafficRouter,
  workload: SharedWorkloadTarget,
): DesiredChildren {
  const templates = plan.templates;
  const stage = plan.status.canary?.stage;
  const wants: TrackWants = {
    primary: { ...plan.primary, ...(templates ? { template: templates.primary } : {}) },
    secondary: plan.secondary ? { ...plan.secondary, ...(templates ? { template: templates.secondary } : {}) } : null,
    promoting: stage === "Promoting" || stage === "Finalising",
  };
  const primaryPort = templates?.primary.imageListenPort ?? spec.imageListenPort;
  const portsDiffer =
    plan.secondary !== null && templates !== undefined && templates.secondary.imageListenPort !== primaryPort;
  const targetPort = portsDiffer ? "http" : primaryPort;
  const selectors = {
    primary: workload.podSelector(app, spec, "primary", wants),
    secondary: workload.podSelector(app, spec, "secondary", wants),
  };
  return {
    apply: [
      buildTrackService(app, spec, "primary", targetPort, selectors.primary),
      buildTrackService(
        app,
        spec,
        "secondary",
        targetPort,
        plan.secondaryServiceSelects === "primary" ? selectors.primary : selectors.secondary,
      ),
      ...router.desired(app, spec, plan.weights, selectors),
      buildService(app, spec, targetPort, selectors.primary),
      ...handoverRoute(app, spec, plan, router),
      workload.desired(app, spec, wants),
    ],
    remove: handedOverRemoved(app, plan, router),
  };
}
