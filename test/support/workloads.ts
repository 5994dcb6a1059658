import { AppsV1Api, CustomObjectsApi, type KubeConfig, type V1Deployment } from "@kubernetes/client-node";
import { destinationTrack, ISTIO_NETWORKING } from "../../src/router/istio.js";

/**
 * Plays the Deployment controller of kube-controller-manager, which the api profile does not run: marks a
 * Deployment's current template as fully rolled out and available (or not), through its status subresource.
 */
export async function setDeploymentAvailable(
  kc: KubeConfig,
  namespace: string,
  name: string,
  available = true,
  /** At most this many pods available (a scale-up under way); all of them when absent. */
  limit?: number,
): Promise<V1Deployment> {
  const apps = kc.makeApiClient(AppsV1Api);
  const deployment = await apps.readNamespacedDeployment({ namespace, name });
  const replicas = deployment.spec?.replicas ?? 1;
  const ready = available ? Math.min(replicas, limit ?? replicas) : 0;
  deployment.status = {
    observedGeneration: deployment.metadata?.generation ?? 1,
    replicas,
    updatedReplicas: replicas,
    readyReplicas: ready,
    availableReplicas: ready,
    ...(ready < replicas ? { unavailableReplicas: replicas - ready } : {}),
  };
  return apps.replaceNamespacedDeploymentStatus({ namespace, name, body: deployment });
}

export async function getDeployment(
  kc: KubeConfig,
  namespace: string,
  name: string,
): Promise<V1Deployment | undefined> {
  try {
    return await kc.makeApiClient(AppsV1Api).readNamespacedDeployment({ namespace, name });
  } catch {
    return undefined;
  }
}

export interface VirtualServiceLike {
  metadata: { name: string; resourceVersion?: string };
  spec: {
    hosts: string[];
    gateways: string[];
    http: { name: string; route: { destination: { host?: string; subset?: string }; weight: number }[] }[];
  };
}

export function istioObjects(kc: KubeConfig, namespace: string) {
  const api = kc.makeApiClient(CustomObjectsApi);
  const ref = (plural: string) => ({ ...ISTIO_NETWORKING, plural, namespace });
  return {
    getVirtualService: async (name: string) =>
      (await api.getNamespacedCustomObject({ ...ref("virtualservices"), name })) as VirtualServiceLike,
    getDestinationRule: async (name: string) =>
      (await api.getNamespacedCustomObject({ ...ref("destinationrules"), name })) as {
        spec: { host: string; subsets: { name: string; labels: Record<string, string> }[] };
      },
    /** A hand edit of the weights, as a user with kubectl would make it. */
    setWeights: async (name: string, primary: number, secondary: number) => {
      const vs = (await api.getNamespacedCustomObject({ ...ref("virtualservices"), name })) as VirtualServiceLike;
      for (const route of vs.spec.http) {
        for (const destination of route.route) {
          destination.weight = destinationTrack(destination.destination) === "primary" ? primary : secondary;
        }
      }
      await api.replaceNamespacedCustomObject({ ...ref("virtualservices"), name, body: vs });
    },
  };
}

/** The weights of the canary route, as [primary, secondary]. */
export function weightsOf(vs: VirtualServiceLike): [number, number] {
  const route = vs.spec.http[0]?.route ?? [];
  const weight = (track: string) => route.find((r) => destinationTrack(r.destination) === track)?.weight ?? 0;
  return [weight("primary"), weight("secondary")];
}
