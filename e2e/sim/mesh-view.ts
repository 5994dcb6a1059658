/**
 * What the mesh's data plane would know about each CanaryApp, read from the objects in the API server:
 * the VirtualService's mesh route as it is (never the controller's intent), the cluster each of its
 * destinations names (a Service, or a DestinationRule subset of one) with that cluster's endpoints (the
 * Ready pods the Service selects), and what each pod's sidecar reports about itself. Pods are told apart
 * by Services and Istio's rules, never by the controller's labels. Pure: the objects come in as plain data.
 * docs/istio-telemetry.md lists the rules and where Istio has them.
 */
import { LABELS, MANAGED_BY_VALUE, type Track } from "../../src/api/types.js";
import { destinationTrack } from "../../src/router/istio.js";
import { workloadMeta, type PodMetaLike, type WorkloadMeta } from "./istio-workload.js";

/** The fields of any object that are read here (a pod's owners and generated name name its workload). */
export interface ObjectMetaLike extends PodMetaLike {
  deletionTimestamp?: string | Date;
}

export interface VirtualServiceLike {
  metadata?: ObjectMetaLike;
  spec?: {
    gateways?: string[];
    http?: {
      name?: string;
      match?: { gateways?: string[] }[];
      route?: { destination?: { host?: string; subset?: string }; weight?: number }[];
    }[];
  };
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
  spec?: { selector?: Record<string, string> };
}

/** Everything the simulator reads from the cluster at one moment. */
export interface ClusterSnapshot {
  virtualServices: readonly VirtualServiceLike[];
  pods: readonly PodLike[];
  /** Every Service of the namespaces read; absent: none (then no destination has endpoints). */
  services?: readonly ServiceLike[];
  /** The controller's DestinationRules (subsets of a route's host); absent: none. */
  destinationRules?: readonly DestinationRuleLike[];
}

export const TRACKS: readonly Track[] = ["primary", "secondary"];

/** The container whose image a pod runs: the one the controller names `app`, else the first. */
const APP_CONTAINER = "app";
const MESH = "mesh";
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

/** One destination of the mesh route. */
export interface RouteDestinationView {
  host: string;
  subset?: string;
  weight: number;
  /** The track the destination stands for (its subset, or its per-track Service host); undefined if none. */
  track: Track | undefined;
  /**
   * The cluster it sends to; null when Envoy has no cluster by that name (no such Service, or no such
   * subset in a DestinationRule of its host): a request to it is answered 503 NC.
   */
  cluster: ClusterView | null;
}

export interface TrackView {
  /** The Ready pods of the track's destination in the route, else of its Service `<app>-<track>`. */
  readyPods: PodView[];
}

export interface AppView {
  namespace: string;
  name: string;
  /**
   * The destinations of the VirtualService's mesh route. null when there is no VirtualService or it has no
   * route for mesh traffic: then, as in Istio, the app's Service `<name>` takes the request.
   */
  route: RouteDestinationView[] | null;
  /** The route's weights by track, for /state; null when there is no mesh route. */
  weights: Record<Track, number> | null;
  /**
   * The app's Service `<name>` as a cluster: where a request goes without a route, and whose endpoints a
   * caller without a sidecar reaches (kube-proxy; no VirtualService applies to it). null when there is none.
   */
  service: ClusterView | null;
  tracks: Record<Track, TrackView>;
}

/** The app a child belongs to, when it is one of the controller's children. */
function appOf(meta: ObjectMetaLike | undefined): { namespace: string; name: string } | undefined {
  const labels = meta?.labels ?? {};
  const name = labels[LABELS.app];
  if (!name || labels[LABELS.managedBy] !== MANAGED_BY_VALUE || !meta?.namespace) return undefined;
  return { namespace: meta.namespace, name };
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

/** The mesh route's destinations as written, before their hosts are resolved. */
export interface MeshRouteDestination {
  host: string;
  subset?: string;
  weight: number;
}

/**
 * The destinations of the first HTTP route that carries mesh traffic: the VirtualService must be bound to
 * `mesh` (explicitly, or by listing no gateways), and the route must have no match or a match that
 * applies to `mesh` (match conditions other than gateways are not evaluated: simulated requests match
 * them all). A lone destination without a weight takes everything, as in Istio; among several, a missing
 * weight is 0. null when no route applies.
 */
export function meshRoute(vs: VirtualServiceLike): MeshRouteDestination[] | null {
  const gateways = vs.spec?.gateways ?? [];
  if (gateways.length > 0 && !gateways.includes(MESH)) return null;
  for (const route of vs.spec?.http ?? []) {
    const matches = route.match ?? [];
    const forMesh =
      matches.length === 0 || matches.some((m) => !m.gateways || m.gateways.length === 0 || m.gateways.includes(MESH));
    if (!forMesh) continue;
    const destinations = route.route ?? [];
    return destinations.map((d) => ({
      host: d.destination?.host ?? "",
      ...(d.destination?.subset !== undefined ? { subset: d.destination.subset } : {}),
      weight: d.weight ?? (destinations.length === 1 ? 100 : 0),
    }));
  }
  return null;
}

/**
 * The weights of the mesh route by track: a destination is a track by its subset or by its host
 * (`<name>-primary`...: destinationTrack); other destinations count for neither. null when no route applies.
 */
export function meshWeights(vs: VirtualServiceLike): Record<Track, number> | null {
  const route = meshRoute(vs);
  return route === null ? null : weightsOf(route);
}

function weightsOf(route: readonly { host: string; subset?: string; weight: number }[]): Record<Track, number> {
  const weights: Record<Track, number> = { primary: 0, secondary: 0 };
  for (const d of route) {
    const track = destinationTrack(d);
    if (track !== undefined) weights[track] += d.weight;
  }
  return weights;
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

const serviceRef = (name: string, namespace: string): ServiceRef => ({
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

interface ServiceEntry {
  ref: ServiceRef;
  selector: Record<string, string> | undefined;
}

/** One view per app that has any labelled child, sorted by namespace and name. */
export function buildAppViews(snapshot: ClusterSnapshot): AppView[] {
  const services = sortByName(snapshot.services ?? [])
    .filter((s) => s.metadata?.name && s.metadata.namespace)
    .map((s): ServiceEntry => ({
      ref: serviceRef(s.metadata?.name ?? "", s.metadata?.namespace ?? ""),
      selector: s.spec?.selector,
    }));
  const serviceByKey = new Map(services.map((s) => [`${s.ref.namespace}/${s.ref.name}`, s]));

  // Every pod the watch reads, as the data plane knows it; only Ready ones are endpoints.
  const allPods = sortByName(snapshot.pods).filter((p) => p.metadata?.name);
  const views = new Map<PodLike, PodView>();
  for (const pod of allPods) {
    const meta = pod.metadata ?? {};
    const labels = meta.labels ?? {};
    const selecting = services.filter((s) => s.ref.namespace === meta.namespace && selects(s.selector, labels));
    const app = appOf(meta)?.name;
    const selectedBy = (track: Track) => app !== undefined && selecting.some((s) => s.ref.name === `${app}-${track}`);
    views.set(pod, {
      name: meta.name ?? "",
      namespace: meta.namespace ?? "",
      image: podImage(pod),
      workload: workloadMeta(meta),
      inboundService: inboundService(
        meta.name ?? "",
        selecting.map((s) => s.ref),
      ),
      serviceTrack: selectedBy("primary") ? "primary" : selectedBy("secondary") ? "secondary" : undefined,
    });
  }
  const readyPods = allPods.filter(isPodReady);

  /** The healthy endpoints of a Service, narrowed to a subset's labels when one is given. */
  const cluster = (ref: { name: string; namespace: string }, subsetLabels?: Record<string, string>) => {
    const svc = serviceByKey.get(`${ref.namespace}/${ref.name}`);
    if (!svc) return null;
    const endpoints = readyPods
      .filter((p) => p.metadata?.namespace === ref.namespace)
      .filter((p) => selects(svc.selector, p.metadata?.labels ?? {}))
      .filter(
        (p) =>
          subsetLabels === undefined || Object.entries(subsetLabels).every(([k, v]) => p.metadata?.labels?.[k] === v),
      )
      .map((p) => views.get(p))
      .filter((p): p is PodView => p !== undefined);
    return { service: svc.ref, endpoints };
  };

  const destinationRules = sortByName(snapshot.destinationRules ?? []);
  /** A subset's labels from a DestinationRule of the Service's host; undefined when none defines it. */
  const subsetLabels = (ref: { name: string; namespace: string }, subset: string) => {
    for (const dr of destinationRules) {
      const drNamespace = dr.metadata?.namespace ?? "";
      const target = serviceOfHost(dr.spec?.host ?? "", drNamespace);
      if (target?.name !== ref.name || target.namespace !== ref.namespace) continue;
      const found = (dr.spec?.subsets ?? []).find((s) => s.name === subset);
      if (found) return found.labels ?? {};
    }
    return undefined;
  };

  const resolve = (d: MeshRouteDestination, namespace: string): RouteDestinationView => {
    const ref = serviceOfHost(d.host, namespace);
    let resolved: ClusterView | null = null;
    if (ref !== undefined) {
      if (d.subset === undefined) resolved = cluster(ref);
      else {
        const labels = subsetLabels(ref, d.subset);
        resolved = labels === undefined ? null : cluster(ref, labels);
      }
    }
    return { ...d, track: destinationTrack(d), cluster: resolved };
  };

  const apps = new Map<string, AppView>();
  const viewOf = (ref: { namespace: string; name: string }): AppView => {
    const key = `${ref.namespace}/${ref.name}`;
    let view = apps.get(key);
    if (!view) {
      view = {
        ...ref,
        route: null,
        weights: null,
        service: null,
        tracks: { primary: { readyPods: [] }, secondary: { readyPods: [] } },
      };
      apps.set(key, view);
    }
    return view;
  };

  for (const vs of sortByName(snapshot.virtualServices)) {
    const ref = appOf(vs.metadata);
    if (!ref) continue;
    const view = viewOf(ref);
    // With several labelled VirtualServices (there should be one), the first by name is used.
    if (view.route !== null) continue;
    const route = meshRoute(vs);
    if (route === null) continue;
    view.route = route.map((d) => resolve(d, ref.namespace));
    view.weights = weightsOf(route);
  }
  for (const svc of snapshot.services ?? []) {
    const ref = appOf(svc.metadata);
    if (ref) viewOf(ref);
  }
  for (const pod of allPods) {
    const ref = appOf(pod.metadata);
    if (ref) viewOf(ref);
  }
  for (const view of apps.values()) {
    view.service = cluster(view);
    for (const track of TRACKS) {
      const inRoute = view.route?.find((d) => d.track === track);
      const source =
        inRoute !== undefined ? inRoute.cluster : cluster({ namespace: view.namespace, name: `${view.name}-${track}` });
      view.tracks[track].readyPods = source?.endpoints ?? [];
    }
  }
  return [...apps.values()].sort((a, b) =>
    a.namespace === b.namespace ? a.name.localeCompare(b.name) : a.namespace.localeCompare(b.namespace),
  );
}

/** The pods that exist and are not terminating, as `namespace/name`: a request to any other pod is reset. */
export function livePods(snapshot: ClusterSnapshot): Set<string> {
  return new Set(
    snapshot.pods
      .filter((p) => !p.metadata?.deletionTimestamp)
      .map((p) => `${p.metadata?.namespace ?? ""}/${p.metadata?.name ?? ""}`),
  );
}

function sortByName<T extends { metadata?: ObjectMetaLike }>(items: readonly T[]): T[] {
  const key = (x: T) => `${x.metadata?.namespace ?? ""}/${x.metadata?.name ?? ""}`;
  return [...items].sort((a, b) => key(a).localeCompare(key(b)));
}
