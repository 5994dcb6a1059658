import type { CanaryApp } from "../api/types.js";
import { noMeshRouter } from "../router/none.js";
import type { TrafficRouter } from "../router/router.js";
import { statefulSetTarget } from "../workload/statefulset.js";
import type { AnyWorkloadTarget, WorkloadTarget } from "../workload/workload.js";

/** The ports one app is observed and changed through. */
export interface AppPorts {
  router: TrafficRouter;
  workload: AnyWorkloadTarget;
}

/**
 * The ports of one app, chosen by its spec: no traffic router with `spec.mesh: none` (ADR 0014), the
 * StatefulSet target with `spec.workload.kind: StatefulSet` (ADR 0015), else the controller's own.
 */
export function appPorts(app: CanaryApp, controller: { router: TrafficRouter; workload: WorkloadTarget }): AppPorts {
  return {
    router: app.spec.mesh === "none" ? noMeshRouter : controller.router,
    workload: app.spec.workload?.kind === "StatefulSet" ? statefulSetTarget : controller.workload,
  };
}
