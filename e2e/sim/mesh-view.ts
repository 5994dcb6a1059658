/**
 * What the mesh's data plane would know about each CanaryApp, read from the objects in the API server:
 * the routes a caller's sidecar applies to the app's Service as they are (a VirtualService's, or Gateway
 * API HTTPRoutes' whose parent is the Service; never the controller's intent), the cluster each destination
 * names (a Service, or a DestinationRule subset of one) with that cluster's endpoints (the Ready pods the
 * Service selects), the routes of the Gateways the app's HTTPRoutes enter by, and what each pod's sidecar
 * reports about itself. Pods are told apart by Services and Istio's rules, never by the controller's labels.
 * Pure: the objects come in as plain data. docs/istio-telemetry.md lists the rules and where Istio has them.
 */
import { LABELS, MANAGED_BY_VALUE, type Track } from "../../src/api/types.js";
import { destinationTrack } from "../../src/router/istio.js";
import {
  createdAt,
  objectKey,
  type GatewayClassLike,
  type GatewayLike,
  type HTTPRouteLike,
  type NamespaceLike,
} from "./gateway-api-objects.js";
import { evaluateGatewayApi, ingressViews } from "./gateway-api-view.js";
import { workloadMeta, type PodMetaLike, type WorkloadMeta } from "./istio-workload.js";
import {
  chooseMeshCandidate,
  httpRouteMeshCandidates,
  type EvaluatedRoute,
  type MeshCandidate,
} from "./mesh-routing.js";
import { plainRule, trackWeights, type RoutingTable } from "./routing-table.js";
import { virtualServiceRules, type MeshRouteDestination, type VirtualServiceLike } from "./virtual-service-routes.js";

export type { MeshRouteDestination, VirtualServiceLike } from "./virtual-service-routes.js";
export { meshRoute, meshWeights } from "./virtual-service-routes.js";

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

/** Everything the simulator reads from the cluster at one moment. */
export interface ClusterSnapshot {
  virtualServices: readonly VirtualServiceLike[];
  pods: readonly PodLike[];
  /** Every Service of the namespaces read; absent: none (then no destination has endpoints). */
  services?: readonly ServiceLike[];
  /** The controller's DestinationRules (subsets of a route's host); absent: none. */
  destinationRules?: readonly DestinationRuleLike[];
  /** The controller's HTTPRoutes; absent: none (or the API server does not serve them). */
  httpRoutes?: readonly HTTPRouteLike[];
  /** The Gateways of the namespaces read and of the Gateways' namespaces; absent: none. */
  gateways?: readonly GatewayLike[];
  gatewayClasses?: readonly GatewayClassLike[];
  /** Every Namespace, for listeners that admit routes by a namespace selector; absent: none. */
  namespaces?: readonly NamespaceLike[];
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

export interface TrackView {
  /** The Ready pods of the track's destination in the route, else of its Service `<app>-<track>`. */
  readyPods: PodView[];
}

/** Traffic entering through a Gateway an HTTPRoute of the app names as a parent. */
export interface GatewayIngressView {
  /** The Gateway, `namespace/name`. */
  gateway: string;
  /** What the gateway's pods report about themselves (istio-workload.ts, gatewayWorkload). */
  workload: WorkloadMeta;
  /**
   * One entry per Host a request may carry: the route's hostnames (the app's Service host when it has
   * none), the port it arrives on, and the routes the gateway applies to it (null: none, 404 NR).
   */
  hosts: { host: string; port: number | undefined; routing: RoutingTable | null }[];
}

export interface AppView {
  namespace: string;
  name: string;
  /**
   * The routes a caller's sidecar applies to a request for the app's Service: a VirtualService's or merged
   * HTTPRoutes' (mesh-routing.ts). null when neither has a route for mesh traffic: then, as in Istio, the
   * app's Service `<name>` takes the request.
   */
  mesh: RoutingTable | null;
  /** The port callers send to: the app's Service's first port; undefined when not known (any port). */
  port: number | undefined;
  /**
   * The destinations of the rule a request without any header takes (plainRule). null when there is no mesh
   * routing, or it has no rule for such a request.
   */
  route: RouteDestinationView[] | null;
  /** That rule's weights by track, for /state; null when there is none. */
  weights: Record<Track, number> | null;
  /** The app's own HTTPRoutes (labelled as its children) with what Istio made of them, for /state and status. */
  httpRoutes: EvaluatedRoute[];
  /** The Gateways its HTTPRoutes enter by, that exist and are Istio's. */
  ingress: GatewayIngressView[];
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
  ports: number[];
}

export interface ViewOptions {
  /** The namespace of the simulated callers in the mesh; absent: each app's own. */
  callerNamespace?: string;
}

/** One view per app that has any labelled child, sorted by namespace and name. */
export function buildAppViews(snapshot: ClusterSnapshot, opts: ViewOptions = {}): AppView[] {
  const services = sortByName(snapshot.services ?? [])
    .filter((s) => s.metadata?.name && s.metadata.namespace)
    .map((s): ServiceEntry => ({
      ref: serviceRef(s.metadata?.name ?? "", s.metadata?.namespace ?? ""),
      selector: s.spec?.selector,
      ports: (s.spec?.ports ?? []).map((p) => p.port ?? 0).filter((p) => p > 0),
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
  const virtualServices = new Map<string, MeshCandidate[]>();
  const viewOf = (ref: { namespace: string; name: string }): AppView => {
    const key = `${ref.namespace}/${ref.name}`;
    let view = apps.get(key);
    if (!view) {
      view = {
        ...ref,
        mesh: null,
        port: undefined,
        route: null,
        weights: null,
        httpRoutes: [],
        ingress: [],
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
    viewOf(ref);
    const rules = virtualServiceRules(vs);
    // A VirtualService with no route for the mesh makes no virtual host (route.go, BuildSidecarVirtualHostWrapper).
    if (rules === null || rules.length === 0) continue;
    const candidates = virtualServices.get(`${ref.namespace}/${ref.name}`) ?? [];
    candidates.push({
      kind: "VirtualService",
      objects: [objectKey(vs.metadata)],
      rules: rules.map((r) => ({
        name: r.name,
        matches: r.matches,
        destinations: r.destinations.map((d) => resolve(d, ref.namespace)),
        mirrors: r.mirrors.map((m) => ({
          destination: resolve({ ...m, weight: 0 }, ref.namespace),
          percent: m.percent,
        })),
      })),
      clusterNotFoundCode: 503,
      namespace: ref.namespace,
      name: vs.metadata?.name ?? "",
      created: createdAt(vs.metadata),
      gatewaySemantics: false,
    });
    virtualServices.set(`${ref.namespace}/${ref.name}`, candidates);
  }
  const gatewayApi = evaluateGatewayApi(snapshot, (ref) => cluster(ref));
  for (const evaluated of gatewayApi.routes) {
    const ref = appOf(evaluated.route.metadata);
    if (ref) viewOf(ref).httpRoutes.push(evaluated);
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
    view.port = serviceByKey.get(`${view.namespace}/${view.name}`)?.ports[0];
    const callerNamespace = opts.callerNamespace ?? view.namespace;
    const candidates = [
      ...(virtualServices.get(`${view.namespace}/${view.name}`) ?? []),
      ...httpRouteMeshCandidates(gatewayApi.routes, view, callerNamespace, view.port),
    ];
    view.mesh = chooseMeshCandidate(candidates, callerNamespace) ?? null;
    view.route = view.mesh === null ? null : (plainRule(view.mesh, view.port)?.destinations ?? null);
    view.weights = view.route === null ? null : trackWeights(view.route);
    view.ingress = ingressViews(view.httpRoutes, gatewayApi, `${view.name}.${view.namespace}.svc.${DOMAIN}`);
    const everyDestination = [...(view.route ?? []), ...(view.mesh?.rules.flatMap((r) => r.destinations) ?? [])];
    for (const track of TRACKS) {
      const inRoute = everyDestination.find((d) => d.track === track);
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
