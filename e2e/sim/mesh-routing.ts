/**
 * Which routes a caller's sidecar applies to a request for a Service, when VirtualServices and Gateway API
 * routes (GAMMA: an HTTPRoute whose parent is the Service) both name it. Istio turns each mesh HTTPRoute into
 * a VirtualService of the Service's host (pilot/pkg/config/kube/gateway/route_collections.go,
 * HTTPRouteCollection and mergeHTTPRoutes); a sidecar then takes one VirtualService per host, the first in
 * its list (pilot/pkg/networking/core/httproute.go: a later virtual host for the same domain is dropped as a
 * duplicate). Pure.
 */
import {
  byCreation,
  compare,
  createdAt,
  objectKey,
  type HTTPRouteLike,
  type ParentRefLike,
} from "./gateway-api-objects.js";
import type { RouteConversion } from "./http-route-rules.js";
import { compareGatewayRules, type RequestMatch } from "./request-match.js";
import type { ParentResult } from "./route-parents.js";
import type { RouteRule, RoutingTable } from "./routing-table.js";

/** A VirtualService as a sidecar orders it: the objects it came from, and Istio's name and time for it. */
export interface MeshCandidate extends RoutingTable {
  namespace: string;
  /** The VirtualService's name; for merged HTTPRoutes Istio's `<namespace>~[<port>~]<host>`. */
  name: string;
  /** Creation time in ms (the oldest merged HTTPRoute's). */
  created: number;
  /** Made from Gateway API routes (Istio's `internal.istio.io/route-semantics: gateway`). */
  gatewaySemantics: boolean;
}

/** An HTTPRoute with what Istio computed for it: its parents, and its rules for the mesh and for Gateways. */
export interface EvaluatedRoute {
  route: HTTPRouteLike;
  parents: ParentResult[];
  mesh: RouteConversion;
  gateway: RouteConversion;
}

/**
 * The sidecar's order of the VirtualServices for a host (pilot/pkg/model/virtualservice.go,
 * SelectVirtualServices with PILOT_UNIFIED_SIDECAR_SCOPE, on by default: Gateway API routes of the caller's
 * own namespace first, "to give the consumer override preference"; then every one in the order
 * MergedVirtualServices() gives, pilot/pkg/model/virtualservice_controller.go and config.go
 * configCompareByCreationTime: oldest first, then by name, then by namespace). The first wins.
 */
export function chooseMeshCandidate(
  candidates: readonly MeshCandidate[],
  callerNamespace: string,
): MeshCandidate | undefined {
  const own = (c: MeshCandidate) => c.gatewaySemantics && c.namespace === callerNamespace;
  return [...candidates].sort((a, b) => {
    if (own(a) !== own(b)) return own(a) ? -1 : 1;
    if (a.created !== b.created) return a.created - b.created;
    const n = compare(a.name, b.name);
    return n !== 0 ? n : compare(a.namespace, b.namespace);
  })[0];
}

/**
 * The route's rules bound to a Service port (route_collections.go, augmentPortMatch): each match must be on
 * that port; a rule without a match gets one that is only that.
 */
function onPort(rules: readonly RouteRule[], port: number): RouteRule[] {
  return rules.map((r) => ({
    ...r,
    matches: r.matches.length === 0 ? [{ headers: [], port }] : r.matches.map((m): RequestMatch => ({ ...m, port })),
  }));
}

const isServiceParent = (ref: ParentRefLike, routeNamespace: string, service: { namespace: string; name: string }) =>
  (ref.group ?? "gateway.networking.k8s.io") === "" &&
  ref.kind === "Service" &&
  (ref.name ?? "") === service.name &&
  (ref.namespace ?? routeNamespace) === service.namespace;

/**
 * The VirtualServices Istio makes of the mesh routes of `service`, as sidecars in `callerNamespace` see them:
 * one per route namespace and parentRef port, merging their routes (mergeHTTPRoutes: oldest route first,
 * then Istio's sort, request-match.ts compareGatewayRules). A parentRef counts when it names the Service (its
 * namespace the route's unless told) and the route is accepted by it; one with a port counts only for
 * requests to that port (a request to another port finds no route of it: `requestPort`). A route in
 * another namespace than the Service's (a consumer route, GEP-1294) applies only to callers of its own
 * namespace (pilot/pkg/networking/core/route/route.go: "Gateway allows only routes from the namespace of the
 * proxy, or namespace of the destination"). Hostnames play no part (GEP-1294: GAMMA implementations SHOULD
 * NOT infer any functionality from `hostnames`; route_collections.go uses the Service's host instead).
 */
export function httpRouteMeshCandidates(
  routes: readonly EvaluatedRoute[],
  service: { namespace: string; name: string },
  callerNamespace: string,
  requestPort: number | undefined,
): MeshCandidate[] {
  const host = `${service.name}.${service.namespace}.svc.cluster.local`;
  const groups = new Map<string, { namespace: string; port: number | undefined; routes: EvaluatedRoute[] }>();
  for (const evaluated of routes) {
    const routeNamespace = evaluated.route.metadata?.namespace ?? "";
    if (routeNamespace !== service.namespace && routeNamespace !== callerNamespace) continue;
    for (const parent of evaluated.parents) {
      if (!parent.mesh || parent.denied !== undefined) continue;
      if (!isServiceParent(parent.ref, routeNamespace, service)) continue;
      const port = parent.ref.port;
      if (port !== undefined && requestPort !== undefined && port !== requestPort) continue;
      const key = `${routeNamespace}/${port ?? ""}`;
      const group = groups.get(key) ?? { namespace: routeNamespace, port, routes: [] };
      if (!group.routes.includes(evaluated)) group.routes.push(evaluated);
      groups.set(key, group);
    }
  }
  const candidates: MeshCandidate[] = [];
  for (const group of groups.values()) {
    const ordered = [...group.routes].sort((a, b) => byCreation(a.route, b.route));
    const rules = ordered
      .flatMap((r) => (group.port === undefined ? r.mesh.rules : onPort(r.mesh.rules, group.port)))
      .map((rule, index) => ({ rule, index }))
      .sort((a, b) => compareGatewayRules(a.rule.matches, b.rule.matches) || a.index - b.index)
      .map((x) => x.rule);
    if (rules.length === 0) continue;
    candidates.push({
      kind: "HTTPRoute",
      objects: ordered.map((r) => objectKey(r.route.metadata)),
      rules,
      clusterNotFoundCode: 500,
      namespace: group.namespace,
      name: [group.namespace, ...(group.port !== undefined ? [String(group.port)] : []), host].join("~"),
      created: createdAt(ordered[0]?.route.metadata),
      gatewaySemantics: true,
    });
  }
  return candidates;
}
