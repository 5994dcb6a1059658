/**
 * The one table of the kinds the controller lists, watches and writes: their API coordinates and how to
 * list them. The informers, the caches the reconciler reads children from, and the writes all follow it.
 */
import type { KubernetesObject } from "@kubernetes/client-node";
import type { CanaryAnalysisTemplate, CanaryApp } from "../api/types.js";
import { GROUP, KIND, PLURAL, TEMPLATE_KINDS, VERSION } from "../api/types.js";
import { GATEWAY_API } from "../router/gateway-api.js";
import { ISTIO_NETWORKING } from "../router/istio.js";
import type { ListedMeta } from "./list-watch.js";
import type { KubeRest } from "./rest.js";
import { trimChild, trimDeployment, trimPod, trimStatefulSet } from "./trim.js";

export type { ListOf } from "./rest.js";

/** Where to list: one namespace or (undefined) all, and which labels; `each` is handed every item as it arrives. */
export interface ListArgs<T> {
  namespace?: string;
  labelSelector?: string;
  each: (item: T) => void;
}

/** One kind the controller works with. */
export interface KindInfo<T> {
  kind: string;
  group: string;
  version: string;
  plural: string;
  list(api: Pick<KubeRest, "listEach">, args: ListArgs<T>): Promise<ListedMeta>;
  /** Cuts a copy about to be cached down to what the controller reads (src/kube/trim.ts); absent: all kept. */
  trim?: (obj: T) => T;
}

/** A kind of `group`/`version` listed at /…/plural (with /namespaces/NS/ when listed in one namespace). */
function kind<T>(kind: string, group: string, version: string, plural: string, trim?: (obj: T) => T): KindInfo<T> {
  return {
    kind,
    group,
    version,
    plural,
    ...(trim !== undefined ? { trim } : {}),
    // The API server has validated custom resources against their schema; built-in kinds are what they say.
    // The caches drop managedFields: it is not parsed where the list's layout allows (ADR 0019).
    list: (api, { namespace, labelSelector, each }) =>
      api.listEach<T>(
        { group, version, plural, namespace },
        labelSelector === undefined ? {} : { labelSelector },
        each,
        { withoutManagedFields: true },
      ),
  };
}

/** Pods, watched (never written) for the digest the secondary's pods run. */
export const PODS: KindInfo<KubernetesObject> = kind("Pod", "", "v1", "pods", trimPod);

/** The CanaryApps themselves. */
export const CANARY_APPS: KindInfo<CanaryApp> = kind<CanaryApp>(KIND, GROUP, VERSION, PLURAL);

/** The analysis templates of the apps' namespaces, read (never written) for their metrics (ADR 0031). */
export const ANALYSIS_TEMPLATES: KindInfo<CanaryAnalysisTemplate> = kind<CanaryAnalysisTemplate>(
  TEMPLATE_KINDS.namespaced.kind,
  GROUP,
  VERSION,
  TEMPLATE_KINDS.namespaced.plural,
);

/** The analysis templates every app may use: cluster-scoped (ADR 0031). */
export const CLUSTER_ANALYSIS_TEMPLATES: KindInfo<CanaryAnalysisTemplate> = kind<CanaryAnalysisTemplate>(
  TEMPLATE_KINDS.cluster.kind,
  GROUP,
  VERSION,
  TEMPLATE_KINDS.cluster.plural,
);

/** The kinds of the children, which informers watch by the controller's label and the reconciler applies. */
export const CHILD_KINDS: readonly KindInfo<KubernetesObject>[] = [
  kind("Deployment", "apps", "v1", "deployments", trimDeployment),
  kind("Service", "", "v1", "services", trimChild),
  kind("StatefulSet", "apps", "v1", "statefulsets", trimStatefulSet),
  kind("DestinationRule", ISTIO_NETWORKING.group, ISTIO_NETWORKING.version, "destinationrules", trimChild),
  kind("VirtualService", ISTIO_NETWORKING.group, ISTIO_NETWORKING.version, "virtualservices", trimChild),
];

/**
 * The Gateway API's HTTPRoute (`spec.mesh: gateway-api`): a child too, but of an optional API. Its cache is
 * made only where the API server serves it (wiring/caches.ts).
 */
export const HTTP_ROUTES: KindInfo<KubernetesObject> = kind(
  "HTTPRoute",
  GATEWAY_API.group,
  GATEWAY_API.version,
  "httproutes",
  trimChild,
);

/**
 * The resource (group, version, plural) of a kind the controller writes, from an object's apiVersion and
 * kind; an error for any other kind.
 */
export function resourceOf(apiVersion: string, kindName: string): { group: string; version: string; plural: string } {
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/", 2) : ["", apiVersion];
  const found = [...CHILD_KINDS, HTTP_ROUTES, CANARY_APPS].find(
    (k) => k.kind === kindName && k.group === group && k.version === version,
  );
  if (found === undefined) throw new Error(`${apiVersion} ${kindName}: not a kind this controller writes`);
  return { group: found.group, version: found.version, plural: found.plural };
}
