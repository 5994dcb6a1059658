/**
 * The one table of the kinds the controller lists, watches and writes: their API coordinates and how to
 * list them. The informers, the caches the reconciler reads children from, and the writes all follow it.
 */
import type { KubernetesObject } from "@kubernetes/client-node";
import type { CanaryApp } from "../api/types.js";
import { GROUP, KIND, PLURAL, VERSION } from "../api/types.js";
import { ISTIO_NETWORKING } from "../router/istio.js";
import type { KubeClients } from "./client.js";
import { trimChild, trimDeployment, trimPod, trimStatefulSet } from "./trim.js";

/** A list response, as an informer loads it. */
export interface ListOf<T> {
  metadata?: { resourceVersion?: string };
  items: T[];
}

/** Where to list: one namespace or (undefined) all, and which labels. */
export interface ListArgs {
  namespace?: string;
  labelSelector?: string;
}

/** One kind the controller works with. */
export interface KindInfo<T> {
  kind: string;
  group: string;
  version: string;
  plural: string;
  list(clients: KubeClients, args: ListArgs): Promise<ListOf<T>>;
  /** Cuts a copy about to be cached down to what the controller reads (src/kube/trim.ts); absent: all kept. */
  trim?: (obj: T) => T;
}

function selector(labelSelector: string | undefined): { labelSelector?: string } {
  return labelSelector === undefined ? {} : { labelSelector };
}

/** A custom resource, listed through the custom-objects API. */
function custom<T>(kind: string, group: string, version: string, plural: string, trim?: (obj: T) => T): KindInfo<T> {
  return {
    kind,
    group,
    version,
    plural,
    ...(trim !== undefined ? { trim } : {}),
    async list(clients, { namespace, labelSelector }) {
      const ref = { group, version, plural, ...selector(labelSelector) };
      const list: unknown =
        namespace === undefined
          ? await clients.customObjects.listClusterCustomObject(ref)
          : await clients.customObjects.listNamespacedCustomObject({ ...ref, namespace });
      // The custom-objects API is untyped; the API server has validated these against their schema.
      return list as ListOf<T>;
    },
  };
}

const deployments: KindInfo<KubernetesObject> = {
  kind: "Deployment",
  group: "apps",
  version: "v1",
  plural: "deployments",
  trim: trimDeployment,
  list: (clients, { namespace, labelSelector }) =>
    namespace === undefined
      ? clients.apps.listDeploymentForAllNamespaces(selector(labelSelector))
      : clients.apps.listNamespacedDeployment({ namespace, ...selector(labelSelector) }),
};

const statefulSets: KindInfo<KubernetesObject> = {
  kind: "StatefulSet",
  group: "apps",
  version: "v1",
  plural: "statefulsets",
  trim: trimStatefulSet,
  list: (clients, { namespace, labelSelector }) =>
    namespace === undefined
      ? clients.apps.listStatefulSetForAllNamespaces(selector(labelSelector))
      : clients.apps.listNamespacedStatefulSet({ namespace, ...selector(labelSelector) }),
};

const services: KindInfo<KubernetesObject> = {
  kind: "Service",
  group: "",
  version: "v1",
  plural: "services",
  trim: trimChild,
  list: (clients, { namespace, labelSelector }) =>
    namespace === undefined
      ? clients.core.listServiceForAllNamespaces(selector(labelSelector))
      : clients.core.listNamespacedService({ namespace, ...selector(labelSelector) }),
};

/** Pods, watched (never written) for the digest the secondary's pods run. */
export const PODS: KindInfo<KubernetesObject> = {
  kind: "Pod",
  group: "",
  version: "v1",
  plural: "pods",
  trim: trimPod,
  list: (clients, { namespace, labelSelector }) =>
    namespace === undefined
      ? clients.core.listPodForAllNamespaces(selector(labelSelector))
      : clients.core.listNamespacedPod({ namespace, ...selector(labelSelector) }),
};

/** The CanaryApps themselves. */
export const CANARY_APPS: KindInfo<CanaryApp> = custom<CanaryApp>(KIND, GROUP, VERSION, PLURAL);

/** The kinds of the children, which informers watch by the controller's label and the reconciler applies. */
export const CHILD_KINDS: readonly KindInfo<KubernetesObject>[] = [
  deployments,
  services,
  statefulSets,
  custom("DestinationRule", ISTIO_NETWORKING.group, ISTIO_NETWORKING.version, "destinationrules", trimChild),
  custom("VirtualService", ISTIO_NETWORKING.group, ISTIO_NETWORKING.version, "virtualservices", trimChild),
];
