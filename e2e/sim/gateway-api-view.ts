/**
 * What Istio makes of the cluster's Gateway API objects at one moment: the Gateways it programs, and for
 * each HTTPRoute its parents' results and its rules for the mesh and for Gateways (the inputs of routing
 * and of `status.parents`); and, for an app, the Gateways its routes enter by. Pure.
 */
import type { ClusterSnapshot } from "./cluster-snapshot.js";
import { parentKind, type HTTPRouteLike } from "./gateway-api-objects.js";
import { arrivalPort, gatewayRoutingTable } from "./gateway-routing.js";
import { convertHTTPRoute, type ServiceResolver } from "./http-route-rules.js";
import { gatewayWorkload, type WorkloadMeta } from "./istio-workload.js";
import type { EvaluatedRoute } from "./mesh-routing.js";
import { istioGateways, routeParents, type IstioGatewayView } from "./route-parents.js";
import type { RoutingTable } from "./routing-table.js";

export interface GatewayApiView {
  /** Istio's Gateways by `namespace/name`. */
  gateways: Map<string, IstioGatewayView>;
  routes: EvaluatedRoute[];
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

/**
 * Every HTTPRoute of the snapshot evaluated against it. A route's rules are converted for the mesh and for
 * Gateways alike (the two differ only in cross-namespace backendRefs; route_collections.go computeRoute
 * converts each only when a parent of that kind exists, which changes nothing here).
 */
export function evaluateGatewayApi(snapshot: ClusterSnapshot, resolve: ServiceResolver): GatewayApiView {
  const gateways = istioGateways(snapshot.gateways ?? [], snapshot.gatewayClasses ?? [], snapshot.namespaces ?? []);
  const exists = (ref: { namespace: string; name: string }) =>
    (snapshot.services ?? []).some((s) => s.metadata?.namespace === ref.namespace && s.metadata.name === ref.name);
  const routes = (snapshot.httpRoutes ?? []).map((route: HTTPRouteLike): EvaluatedRoute => ({
    route,
    parents: routeParents(route, gateways, exists),
    mesh: convertHTTPRoute(route, false, resolve),
    gateway: convertHTTPRoute(route, true, resolve),
  }));
  return { gateways, routes };
}

/**
 * The Gateways an app's own routes name as parents, that exist and are Istio's (a request to a Gateway
 * that is not there reaches nothing to report it), each with the Hosts a request may carry: the route's
 * hostnames, or `defaultHost` (the app's Service host) for a route without any. Each Host is routed by
 * every route the Gateway took, not only the app's (gateway-routing.ts).
 */
export function ingressViews(
  own: readonly EvaluatedRoute[],
  all: GatewayApiView,
  defaultHost: string,
): GatewayIngressView[] {
  const out = new Map<string, GatewayIngressView>();
  for (const evaluated of own) {
    const routeNamespace = evaluated.route.metadata?.namespace ?? "";
    const hostnames = evaluated.route.spec?.hostnames?.length ? evaluated.route.spec.hostnames : [defaultHost];
    for (const ref of evaluated.route.spec?.parentRefs ?? []) {
      if (parentKind(ref) !== "Gateway") continue;
      const key = `${ref.namespace ?? routeNamespace}/${ref.name ?? ""}`;
      const gateway = all.gateways.get(key);
      if (gateway === undefined) continue;
      const view = out.get(key) ?? { gateway: key, workload: gatewayWorkload(gateway), hosts: [] };
      for (const host of hostnames) {
        if (view.hosts.some((h) => h.host === host)) continue;
        const port = arrivalPort(gateway, host, ref.port);
        view.hosts.push({
          host,
          port,
          routing: port === undefined ? null : gatewayRoutingTable(gateway, all.routes, host, port),
        });
      }
      out.set(key, view);
    }
  }
  return [...out.values()].sort((a, b) => (a.gateway < b.gateway ? -1 : a.gateway > b.gateway ? 1 : 0));
}
