import type { CanaryApp } from "../api/types.js";
import { APP_CONTAINER } from "../resources/deployment.js";
import { appRef, childNames } from "../resources/meta.js";
import type { TrafficRouter } from "../router/router.js";
import type { DeploymentObservation, Observation } from "../rollout/types.js";
import type { Caches } from "./ports.js";
import { childCache } from "./ports.js";

interface DeploymentLike {
  metadata?: { generation?: number };
  spec?: { replicas?: number; template?: { spec?: { containers?: { name?: string; image?: string }[] } } };
  status?: {
    observedGeneration?: number;
    replicas?: number;
    updatedReplicas?: number;
    availableReplicas?: number;
    readyReplicas?: number;
  };
}

/**
 * A Deployment counts as available only when the controller-manager has seen its latest template and
 * every wanted pod of that template is available with no old pod left: the same test `kubectl rollout
 * status` makes. Anything less must not receive traffic, nor be promoted onto.
 */
export function observeDeployment(object: unknown): DeploymentObservation | null {
  if (!object) return null;
  const deployment = object as DeploymentLike;
  const replicas = deployment.spec?.replicas ?? 1;
  const status = deployment.status ?? {};
  const containers = deployment.spec?.template?.spec?.containers ?? [];
  const image = (containers.find((c) => c.name === APP_CONTAINER) ?? containers[0])?.image ?? "";
  const available =
    (status.observedGeneration ?? 0) >= (deployment.metadata?.generation ?? 1) &&
    (status.updatedReplicas ?? 0) >= replicas &&
    (status.availableReplicas ?? 0) >= replicas &&
    (status.replicas ?? 0) <= replicas;
  return { image, replicas, available, readyReplicas: status.readyReplicas ?? 0 };
}

/** What the world looks like for one app, read from the informer caches only. */
export function observe(app: CanaryApp, caches: Caches, router: TrafficRouter): Observation {
  const { name, namespace } = appRef(app);
  const names = childNames(name);
  return {
    primary: observeDeployment(childCache(caches, "Deployment").get(namespace, names.primary)),
    secondary: observeDeployment(childCache(caches, "Deployment").get(namespace, names.secondary)),
    routedWeights: router.routedWeights(childCache(caches, "VirtualService").get(namespace, names.virtualService)),
  };
}
