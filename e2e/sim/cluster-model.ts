/**
 * The cluster as the simulated data plane models it, beneath every route evaluator: the fields read from
 * pods, Services and DestinationRules; the tracks; an Envoy cluster (a Service as Istio names it) with its
 * endpoints (pods as their sidecars describe them); a route's destination with the cluster it sends to.
 * And Istio's small rules over them: when a pod is an endpoint, which image it runs, which Service a route
 * host names, which Services select a pod and which of them its sidecar reports. Pure; it knows no routes
 * (mesh-view.ts builds each app's view from these).
 */
import type { Track } from "../../src/api/types.js";
import type { PodMetaLike, WorkloadMeta } from "./istio-workload.js";

/** The fields of any object that are read here (a pod's owners and generated name name its workload). */
export interface ObjectMetaLike extends PodMetaLike {
  deletionTimestamp?: string | Date;
  creationTimestamp?: string | Date;
  generation?: number;
  resourceVersion?: string;
}

export interface DestinationRuleLike {
  metadata?: ObjectMetaLike;
  spec?: { host?: string; subsets?: { name?: string; labels?: Record<string, string> }[] };
}

export interface PodLike {
  metadata?: ObjectMetaLike;
  spec?: { containers?: { name?: string; image?: string }[] };
  status?: { conditions?: { type?: string; status?: string }[] };
}

export interface ServiceLike {
  metadata?: ObjectMetaLike;
  spec?: { selector?: Record<string, string>; ports?: { name?: string; port?: number }[] };
}

export const TRACKS: readonly Track[] = ["primary", "secondary"];

/** The container whose image a pod runs: the one the controller names `app`, else the first. */
const APP_CONTAINER = "app";
/** Kubernetes' cluster domain, which Istio appends to a short host (pilot/pkg/model/config.go). */
const DOMAIN = "cluster.local";

/** A Kubernetes Service as Istio names it in cluster metadata (`istio.services`: host, name, namespace). */
export interface ServiceRef {
  name: string;
  namespace: string;
  /** `<name>.<namespace>.svc.cluster.local`. */
  host: string;
}

export interface PodView {
  name: string;
  namespace: string;
  image: string;
  /** What the pod's sidecar reports about the pod (istio-workload.ts). */
  workload: WorkloadMeta;
  /**
   * The Service its inbound cluster reports as destination_service (reporter="destination"): one of the
   * Services that select it, which one not defined by Istio (see inboundService); null when none does.
   */
  inboundService: ServiceRef | null;
  /**
   * The track whose Service `<app>-<track>` has the pod as an endpoint (the primary's when both do, as
   * a StatefulSet's Services do while no test runs); undefined when neither. Used only to tell, for
   * /state, which track a request reached without a route (the Service round robin, callers outside the
   * mesh).
   */
  serviceTrack: Track | undefined;
}

/** An Envoy cluster of the outbound side: the Service it is built for and its healthy endpoints. */
export interface ClusterView {
  service: ServiceRef;
  endpoints: PodView[];
}

/** One destination of a route. */
export interface RouteDestinationView {
  host: string;
  subset?: string;
  weight: number;
  /** The track the destination stands for (its subset, or its per-track Service host); undefined if none. */
  track: Track | undefined;
  /**
   * The cluster it sends to; null when Envoy has no cluster by that name (no such Service, or no such
   * subset in a DestinationRule of its host): a request to it is answered 503 NC (500 NC from a Gateway API
   * route: routing-table.ts, clusterNotFoundCode).
   */
  cluster: ClusterView | null;
}

/** Ready=True and not terminating: what makes an endpoint receive traffic. */
export function isPodReady(pod: PodLike): boolean {
  if (pod.metadata?.deletionTimestamp) return false;
  return (pod.status?.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True");
}

export function podImage(pod: PodLike): string {
  const containers = pod.spec?.containers ?? [];
  return (containers.find((c) => c.name === APP_CONTAINER) ?? containers[0])?.image ?? "";
}

/**
 * The Service a route host names, as Istio resolves it (pilot/pkg/model/config.go, ResolveShortnameToFQDN):
 * a name without a dot is `<name>.<namespace of the VirtualService>.svc.cluster.local`; a name with a dot is
 * taken as written, and names a Kubernetes Service only as `<name>.<namespace>.svc.cluster.local`.
 */
export function serviceOfHost(host: string, namespace: string): { name: string; namespace: string } | undefined {
  if (host === "") return undefined;
  if (!host.includes(".")) return { name: host, namespace };
  const parts = host.split(".");
  if (parts.length !== 5 || `${parts[2]}.${parts[3]}.${parts[4]}` !== `svc.${DOMAIN}`) return undefined;
  const [name = "", ns = ""] = parts;
  return name !== "" && ns !== "" ? { name, namespace: ns } : undefined;
}

/** The Service `name` of `namespace` as Istio names it. */
export const serviceRef = (name: string, namespace: string): ServiceRef => ({
  name,
  namespace,
  host: `${name}.${namespace}.svc.${DOMAIN}`,
});

/**
 * A Service selects a pod when its selector is not empty and the pod carries every label of it
 * (pkg/config/labels/instance.go, Instance.Match: an empty selector matches nothing).
 */
export function selects(selector: Record<string, string> | undefined, labels: Record<string, string>): boolean {
  if (!selector || Object.keys(selector).length === 0) return false;
  return Object.entries(selector).every(([k, v]) => labels[k] === v);
}

/** FNV-1a, 32 bits: a hash that is the same in every run. */
export function stableHash(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

/**
 * The Service a pod's inbound cluster puts first in its `istio.services` metadata, which the sidecar
 * reports as destination_service and destination_service_name (reporter="destination"). Istio lists every
 * Service in the pod's namespace whose selector matches the pod (pilot/pkg/serviceregistry/kube/controller/util.go,
 * getPodServices, over the informer's list) and adds those on the cluster's port in that order
 * (pilot/pkg/networking/core/cluster_builder.go, addTelemetryMetadata); the sidecar takes the first
 * (istio/proxy source/extensions/filters/http/istio_stats/istio_stats.cc). The informer's order is not
 * defined, so here one of them (sorted by name) is taken by a stable hash of the pod's name: no query may
 * rely on which. null when no Service selects the pod. Ports are not modelled: every Service is taken to
 * serve the pod's one port.
 */
export function inboundService(podName: string, selecting: readonly ServiceRef[]): ServiceRef | null {
  if (selecting.length === 0) return null;
  const sorted = [...selecting].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return sorted[stableHash(podName) % sorted.length] ?? null;
}
