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
  inboundService,
  isPodReady,
  podImage,
  selects,
  serviceOfHost,
  serviceRef,
  TRACKS,
  type ClusterView,
  type ObjectMetaLike,
  type PodLike,
  type PodView,
  type RouteDestinationView,
  type ServiceRef,
} from "./cluster-model.js";
import type { ClusterSnapshot } from "./cluster-snapshot.js";
import { createdAt, objectKey } from "./gateway-api-objects.js";
import { evaluateGatewayApi, ingressViews, type GatewayIngressView } from "./gateway-api-view.js";
import { workloadMeta } from "./istio-workload.js";
import {
  chooseMeshCandidate,
  httpRouteMeshCandidates,
  type EvaluatedRoute,
  type MeshCandidate,
} from "./mesh-routing.js";
import { plainRule, trackWeights, type RoutingTable } from "./routing-table.js";
import { virtualServiceRules, type MeshRouteDestination } from "./virtual-service-routes.js";

export interface TrackView {
  /** The Ready pods of the track's destination in the route, else of its Service `<app>-<track>`. */
  readyPods: PodView[];
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
    view.ingress = ingressViews(view.httpRoutes, gatewayApi, serviceRef(view.name, view.namespace).host);
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
