import type { ResolvedSpec } from "../api/defaults.js";
import type { CanaryApp } from "../api/types.js";
import type { Plan } from "../rollout/types.js";
import type { RoutingObject, TrafficRouter } from "../router/router.js";
import type { DeploymentObject } from "./deployment.js";
import { buildDeployment } from "./deployment.js";
import { appRef, childNames } from "./meta.js";
import type { ServiceObject } from "./service.js";
import { buildService } from "./service.js";

export type ChildObject = DeploymentObject | ServiceObject | RoutingObject;

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
 * yet and never removes something that still gets traffic: the Service and the Deployments first, then
 * the routing objects with their weights, and only then the secondary's removal (the planner asks for
 * that only once the route already gives the secondary nothing).
 */
export function desiredChildren(
  app: CanaryApp,
  spec: ResolvedSpec,
  plan: Plan,
  router: TrafficRouter,
): DesiredChildren {
  const { name, namespace } = appRef(app);
  const apply: ChildObject[] = [buildService(app, spec), buildDeployment(app, spec, "primary", plan.primary)];
  if (plan.secondary) apply.push(buildDeployment(app, spec, "secondary", plan.secondary));
  apply.push(...router.desired(app, spec, plan.weights));
  const remove: ChildRef[] = plan.secondary
    ? []
    : [{ apiVersion: "apps/v1", kind: "Deployment", namespace, name: childNames(name).secondary }];
  return { apply, remove };
}
