import type { CanaryApp } from "../api/types.js";
import { statefulSetTarget } from "./statefulset.js";
import type { AnyWorkloadTarget, WorkloadTarget } from "./workload.js";

/**
 * The workload target of one app, by its spec.workload.kind: a StatefulSet, or `deployments` (the
 * controller's Deployment target) for every other app.
 */
export function workloadTargetFor(app: CanaryApp, deployments: WorkloadTarget): AnyWorkloadTarget {
  return app.spec.workload?.kind === "StatefulSet" ? statefulSetTarget : deployments;
}
