import { AppsV1Api, type KubeConfig, type V1Deployment } from "@kubernetes/client-node";
import { repeat, type Repeating } from "./repeat.js";
import { setDeploymentAvailable } from "./workloads.js";

export interface AutoRolloutOptions {
  /** Whether a Deployment's pods become available (default: all do). Asked again on every pass. */
  available?: (deploymentName: string) => boolean;
  /** At most this many pods of a Deployment become available (a slow scale-up); all when undefined. */
  limit?: (deploymentName: string) => number | undefined;
  /** Time between two passes over the namespace's Deployments (default 100 ms). */
  intervalMs?: number;
}

/** A running stand-in for the Deployment controller. */
export interface AutoRollout extends Repeating {
  /** Status writes made so far, by Deployment name. */
  readonly marked: Map<string, number>;
}

/** The status says the current template is rolled out, and whether its pods are all available. */
function rolledOut(deployment: V1Deployment): { current: boolean; available: boolean; availablePods: number } {
  const replicas = deployment.spec?.replicas ?? 1;
  const status = deployment.status;
  const current = status !== undefined && (status.observedGeneration ?? 0) >= (deployment.metadata?.generation ?? 1);
  const available =
    current &&
    (status.updatedReplicas ?? 0) >= replicas &&
    (status.availableReplicas ?? 0) >= replicas &&
    (status.replicas ?? 0) <= replicas;
  return { current, available, availablePods: status?.availableReplicas ?? 0 };
}

/**
 * Plays kube-controller-manager's Deployment controller, which the api profile does not run: every
 * `intervalMs` it lists the namespace's Deployments, and any whose status has not caught up with its
 * generation (or whose availability differs from `available(name)`) gets its current template marked
 * rolled out and available, or rolled out but unavailable. Stop it in `after`.
 */
export function autoRollout(kc: KubeConfig, namespace: string, options: AutoRolloutOptions = {}): AutoRollout {
  const apps = kc.makeApiClient(AppsV1Api);
  const intervalMs = options.intervalMs ?? 100;
  const marked = new Map<string, number>();

  const pass = async (noteError: (error: unknown) => void): Promise<void> => {
    const list = await apps.listNamespacedDeployment({ namespace });
    for (const deployment of list.items) {
      const name = deployment.metadata?.name;
      if (name === undefined || deployment.metadata?.deletionTimestamp !== undefined) continue;
      const want = options.available?.(name) ?? true;
      const state = rolledOut(deployment);
      const limit = options.limit?.(name);
      const replicas = deployment.spec?.replicas ?? 1;
      const pods = want ? Math.min(replicas, limit ?? replicas) : 0;
      if (state.current && state.available === want && (limit === undefined || state.availablePods === pods)) continue;
      try {
        await setDeploymentAvailable(kc, namespace, name, want, limit);
        marked.set(name, (marked.get(name) ?? 0) + 1);
      } catch (e) {
        // Deleted or changed meanwhile: the next pass sees the new state.
        noteError(e);
      }
    }
  };
  return { marked, ...repeat(pass, intervalMs) };
}
