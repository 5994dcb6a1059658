/**
 * Watches what the simulated data plane reads through the project's informers: the controller's
 * VirtualServices, DestinationRules, HTTPRoutes and Pods (all of each pod's metadata: labels, owners,
 * generated name), and every Service of the namespaces watched (a Service of anyone's that selects a pod is
 * one of the pod's Services to Istio), so every tick reads the cluster as it is now without asking the API
 * server. Where the API server serves the Gateway API, also the Gateways of the namespaces watched and of
 * the gateway namespaces (a route's Gateway is often in another namespace, e.g. istio-system), the
 * GatewayClasses, and the Namespaces (a listener may admit routes by a namespace selector); where it does
 * not, none of these is asked for, and the cluster reads as before.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "pino";
import { LABELS, MANAGED_BY_VALUE } from "../../src/api/types.js";
import { createInformer } from "../../src/controller/create-informer.js";
import { handedEach, type ListedMeta, type ObjectList } from "../../src/kube/list-watch.js";
import type { Informer } from "../../src/controller/informer.js";
import { createClients, type PooledKubeConfig } from "../../src/kube/client.js";
import type { DestinationRuleLike, PodLike, ServiceLike } from "./cluster-model.js";
import type { ClusterSnapshot } from "./cluster-snapshot.js";
import type { GatewayClassLike, GatewayLike, HTTPRouteLike, NamespaceLike } from "./gateway-api-objects.js";
import { servedKinds } from "./served-kinds.js";
import type { VirtualServiceLike } from "./virtual-service-routes.js";

/** Anything that can say what the cluster looks like right now. */
export interface SnapshotSource {
  snapshot(): ClusterSnapshot;
}

export interface ClusterWatch extends SnapshotSource {
  /** Whether the API server serves HTTPRoutes (asked once, at start): only then is their status written. */
  readonly servesHTTPRoutes: boolean;
  stop(): Promise<void>;
}

/** Only the controller's children: `managed-by=canaryapp` and an app label. */
export const CHILD_SELECTOR = `${LABELS.managedBy}=${MANAGED_BY_VALUE},${LABELS.app}`;

const VIRTUAL_SERVICES = { group: "networking.istio.io", version: "v1", plural: "virtualservices" } as const;
const DESTINATION_RULES = { group: "networking.istio.io", version: "v1", plural: "destinationrules" } as const;
const HTTP_ROUTES = { group: "gateway.networking.k8s.io", version: "v1", plural: "httproutes" } as const;
const GATEWAYS = { group: "gateway.networking.k8s.io", version: "v1", plural: "gateways" } as const;
const GATEWAY_CLASSES = { group: "gateway.networking.k8s.io", version: "v1", plural: "gatewayclasses" } as const;

/** Where Gateways are read besides the namespaces watched, unless told: where Istio's own live. */
export const DEFAULT_GATEWAY_NAMESPACES: readonly string[] = ["istio-system"];

export interface WatchOptions {
  /** Namespaces to watch; all when empty. */
  namespaces: readonly string[];
  /**
   * Namespaces whose Gateways are read besides `namespaces` (default DEFAULT_GATEWAY_NAMESPACES); unused when
   * `namespaces` is empty (all are read).
   */
  gatewayNamespaces?: readonly string[];
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
  const gatewayApi = await watchGatewayApi({ core, customObjects, watch }, opts);
  const informers: Informer<unknown>[] = [pods, virtualServices, destinationRules, services, ...gatewayApi.informers];
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
    servesHTTPRoutes: gatewayApi.httpRoutes !== undefined,
    snapshot: () => ({
      virtualServices: virtualServices.list(),
      pods: pods.list(),
      services: services.list(),
      destinationRules: destinationRules.list(),
      ...(gatewayApi.httpRoutes ? { httpRoutes: gatewayApi.httpRoutes.list() } : {}),
      ...(gatewayApi.gateways ? { gateways: gatewayApi.gateways.list() } : {}),
      ...(gatewayApi.gatewayClasses ? { gatewayClasses: gatewayApi.gatewayClasses.list() } : {}),
      ...(gatewayApi.namespaces ? { namespaces: gatewayApi.namespaces.list() } : {}),
    }),
    stop: async () => {
      await Promise.all(informers.map((i) => i.stop()));
    },
  };
}

/**
 * The Gateway API's informers, each only when the API server serves its kind: the controller's HTTPRoutes
 * (its child selector), the Gateways of the namespaces watched and of `gatewayNamespaces`, every
 * GatewayClass, and every Namespace (with Gateways only).
 */
async function watchGatewayApi(
  clients: Pick<ReturnType<typeof createClients>, "core" | "customObjects" | "watch">,
  opts: WatchOptions,
): Promise<{
  informers: Informer<unknown>[];
  httpRoutes?: Informer<HTTPRouteLike>;
  gateways?: Informer<GatewayLike>;
  gatewayClasses?: Informer<GatewayClassLike>;
  namespaces?: Informer<NamespaceLike>;
}> {
  const { core, customObjects, watch } = clients;
  const base = { namespaces: opts.namespaces, watcher: watch, log: opts.log };
  const served = await servedKinds(
    (type, namespace) =>
      namespace === undefined
        ? customObjects.listClusterCustomObject({ ...type, limit: 1 })
        : customObjects.listNamespacedCustomObject({ ...type, namespace, limit: 1 }),
    [HTTP_ROUTES, GATEWAYS, GATEWAY_CLASSES],
    opts.namespaces[0],
    opts.log,
  );
  const custom = <T>(type: { group: string; version: string; plural: string }) =>
    listedBy<T>(
      (q) => customObjects.listClusterCustomObject({ ...type, ...q }) as Promise<ObjectList<T>>,
      (q) => customObjects.listNamespacedCustomObject({ ...type, ...q }) as Promise<ObjectList<T>>,
    );
  const httpRoutes = served.has(HTTP_ROUTES.plural)
    ? createInformer<HTTPRouteLike>({
        ...base,
        labelSelector: CHILD_SELECTOR,
        type: HTTP_ROUTES,
        list: custom(HTTP_ROUTES),
      })
    : undefined;
  const watched =
    opts.namespaces.length === 0
      ? []
      : [...new Set([...opts.namespaces, ...(opts.gatewayNamespaces ?? DEFAULT_GATEWAY_NAMESPACES)])];
  const gateways = served.has(GATEWAYS.plural)
    ? createInformer<GatewayLike>({ ...base, namespaces: watched, type: GATEWAYS, list: custom(GATEWAYS) })
    : undefined;
  const gatewayClasses = served.has(GATEWAY_CLASSES.plural)
    ? createInformer<GatewayClassLike>({
        ...base,
        namespaces: [],
        type: GATEWAY_CLASSES,
        list: custom(GATEWAY_CLASSES),
      })
    : undefined;
  const namespaces =
    gateways !== undefined
      ? createInformer<NamespaceLike>({
          ...base,
          namespaces: [],
          type: { group: "", version: "v1", plural: "namespaces" },
          list: ({ labelSelector, each }) =>
            handedEach(core.listNamespace(labelSelector === undefined ? {} : { labelSelector }), each),
        })
      : undefined;
  if (served.size > 0) opts.log.info({ served: [...served] }, "the API server serves the Gateway API: watching it");
  return {
    informers: [httpRoutes, gateways, gatewayClasses, namespaces].filter((i) => i !== undefined),
    ...(httpRoutes ? { httpRoutes } : {}),
    ...(gateways ? { gateways } : {}),
    ...(gatewayClasses ? { gatewayClasses } : {}),
    ...(namespaces ? { namespaces } : {}),
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
