/**
 * Watches what the simulated data plane reads through the project's informers: the controller's
 * VirtualServices, DestinationRules and Pods (all of each pod's metadata: labels, owners, generated name),
 * and every Service of the namespaces watched (a Service of anyone's that selects a pod is one of the
 * pod's Services to Istio), so every tick reads the cluster as it is now without asking the API server.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "pino";
import { LABELS, MANAGED_BY_VALUE } from "../../src/api/types.js";
import { createInformer } from "../../src/controller/create-informer.js";
import { handedEach, type ListedMeta, type ObjectList } from "../../src/kube/list-watch.js";
import type { Informer } from "../../src/controller/informer.js";
import { createClients, type PooledKubeConfig } from "../../src/kube/client.js";
import type { ClusterSnapshot, DestinationRuleLike, PodLike, ServiceLike, VirtualServiceLike } from "./mesh-view.js";

/** Anything that can say what the cluster looks like right now. */
export interface SnapshotSource {
  snapshot(): ClusterSnapshot;
}

export interface ClusterWatch extends SnapshotSource {
  stop(): Promise<void>;
}

/** Only the controller's children: `managed-by=canaryapp` and an app label. */
export const CHILD_SELECTOR = `${LABELS.managedBy}=${MANAGED_BY_VALUE},${LABELS.app}`;

const VIRTUAL_SERVICES = { group: "networking.istio.io", version: "v1", plural: "virtualservices" } as const;
const DESTINATION_RULES = { group: "networking.istio.io", version: "v1", plural: "destinationrules" } as const;

export interface WatchOptions {
  /** Namespaces to watch; all when empty. */
  namespaces: readonly string[];
  log: Logger;
  /** How long to wait for the first lists before going on with what there is (default 30 s). */
  syncTimeoutMs?: number;
}

/**
 * Starts the informers and resolves once each has listed once, or after `syncTimeoutMs` with a
 * warning (e.g. Istio's CRDs are not installed yet): the informers keep retrying with backoff, and until
 * they succeed the simulator sees no children of that kind.
 */
export async function watchCluster(kc: PooledKubeConfig, opts: WatchOptions): Promise<ClusterWatch> {
  const { core, customObjects, watch } = createClients(kc);
  const anyLabels = { namespaces: opts.namespaces, watcher: watch, log: opts.log };
  const common = { ...anyLabels, labelSelector: CHILD_SELECTOR };
  const pods = createInformer<PodLike>({
    ...common,
    type: { group: "", version: "v1", plural: "pods" },
    list: listedBy(
      (q) => core.listPodForAllNamespaces(q),
      (q) => core.listNamespacedPod(q),
    ),
  });
  const virtualServices = createInformer<VirtualServiceLike>({
    ...common,
    type: VIRTUAL_SERVICES,
    list: listedBy(
      (q) =>
        customObjects.listClusterCustomObject({ ...VIRTUAL_SERVICES, ...q }) as Promise<ObjectList<VirtualServiceLike>>,
      (q) =>
        customObjects.listNamespacedCustomObject({ ...VIRTUAL_SERVICES, ...q }) as Promise<
          ObjectList<VirtualServiceLike>
        >,
    ),
  });
  const destinationRules = createInformer<DestinationRuleLike>({
    ...common,
    type: DESTINATION_RULES,
    list: listedBy(
      (q) =>
        customObjects.listClusterCustomObject({ ...DESTINATION_RULES, ...q }) as Promise<
          ObjectList<DestinationRuleLike>
        >,
      (q) =>
        customObjects.listNamespacedCustomObject({ ...DESTINATION_RULES, ...q }) as Promise<
          ObjectList<DestinationRuleLike>
        >,
    ),
  });
  // Every Service, not only the controller's: Istio lists each one whose selector matches a pod.
  const services = createInformer<ServiceLike>({
    ...anyLabels,
    type: { group: "", version: "v1", plural: "services" },
    list: listedBy(
      (q) => core.listServiceForAllNamespaces(q),
      (q) => core.listNamespacedService(q),
    ),
  });
  const informers: Informer<unknown>[] = [pods, virtualServices, destinationRules, services];
  for (const informer of informers) informer.start();

  const deadline = Date.now() + (opts.syncTimeoutMs ?? 30_000);
  while (!informers.every((i) => i.hasSynced()) && Date.now() < deadline) await sleep(50);
  if (!informers.every((i) => i.hasSynced())) {
    opts.log.warn(
      {
        pods: pods.hasSynced(),
        virtualServices: virtualServices.hasSynced(),
        destinationRules: destinationRules.hasSynced(),
        services: services.hasSynced(),
      },
      "cluster watch not synced yet; going on with what is listed",
    );
  }

  return {
    snapshot: () => ({
      virtualServices: virtualServices.list(),
      pods: pods.list(),
      services: services.list(),
      destinationRules: destinationRules.list(),
    }),
    stop: async () => {
      await Promise.all(informers.map((i) => i.stop()));
    },
  };
}

/** An informer's list from client-node's two calls for a kind: across all namespaces, and in one. */
function listedBy<T>(
  all: (query: { labelSelector?: string }) => Promise<ObjectList<T>>,
  inNamespace: (query: { namespace: string; labelSelector?: string }) => Promise<ObjectList<T>>,
): (args: { namespace?: string; labelSelector?: string; each: (item: T) => void }) => Promise<ListedMeta> {
  return ({ namespace, labelSelector, each }) =>
    handedEach(
      namespace === undefined
        ? all(labelSelector === undefined ? {} : { labelSelector })
        : inNamespace(labelSelector === undefined ? { namespace } : { namespace, labelSelector }),
      each,
    );
}
