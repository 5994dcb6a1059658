import type { CanaryApp } from "../api/types.js";
import { ROUTERS } from "../router/routers.js";
import type { TrafficRouter } from "../router/router.js";
import { statefulSetTarget } from "../workload/statefulset.js";
import type { AnyWorkloadTarget, WorkloadTarget } from "../workload/workload.js";
import type { Caches } from "./ports.js";

/** The ports one app is observed and changed through. */
export interface AppPorts {
  router: TrafficRouter;
  workload: AnyWorkloadTarget;
}

/**
 * The ports of one app, chosen by its spec: its `spec.mesh`'s router (none: ADR 0014; gateway-api: ADR 0026;
 * istio, the default: the controller's own), the
 * StatefulSet target with `spec.workload.kind: StatefulSet` (ADR 0015), else the controller's own.
 */
export function appPorts(app: CanaryApp, controller: { router: TrafficRouter; workload: WorkloadTarget }): AppPorts {
  return {
    router: app.spec.mesh === undefined || app.spec.mesh === "istio" ? controller.router : ROUTERS[app.spec.mesh],
    workload: app.spec.workload?.kind === "StatefulSet" ? statefulSetTarget : controller.workload,
  };
}

/**
 * Why the app's router cannot be used in this cluster: the API server does not serve the kind it routes with
 * (`mesh: gateway-api` without the Gateway API's CRDs). Nothing of the app is written meanwhile; the
 * controller learns which kinds are served when it starts.
 */
export function routerMissing(
  app: CanaryApp,
  router: TrafficRouter,
  caches: Pick<Caches, "children">,
): { reason: string; message: string } | undefined {
  if (router.splitByPods !== undefined || caches.children.get(router.kind)?.served?.() !== false) return undefined;
  return {
    reason: "RouterUnavailable",
    message:
      `spec.mesh: ${app.spec.mesh ?? "istio"} routes with ${router.kind}s, which this cluster's API server does ` +
      `not serve; install their CRDs (the Gateway API's standard channel) and restart the controller, or choose ` +
      `another spec.mesh`,
  };
}
