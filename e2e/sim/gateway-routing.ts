/**
 * Where an Istio gateway sends a request that arrives with a Host header, by the HTTPRoutes its listeners
 * took (istio.io/istio pilot/pkg/config/kube/gateway/route_collections.go: one VirtualService per route,
 * listener and hostname, merged per hostname). Envoy picks the virtual host whose domain fits the Host best
 * (host-names.ts), then the first matching rule of the routes merged there. Pure.
 */
import { byCreation, objectKey } from "./gateway-api-objects.js";
import { domainFit, hostsOverlap, narrowerHost } from "./host-names.js";
import type { EvaluatedRoute } from "./mesh-routing.js";
import { compareGatewayRules } from "./request-match.js";
import type { IstioGatewayView, ListenerView } from "./route-parents.js";
import type { RoutingTable } from "./routing-table.js";

/**
 * The port a request for `host` arrives on at `gateway`: `port` when the route's parentRef names one, else
 * that of the first HTTP or HTTPS listener (in the Gateway's order) whose hostname takes the host, else of
 * the first HTTP or HTTPS listener. undefined when the Gateway has no such listener.
 */
export function arrivalPort(gateway: IstioGatewayView, host: string, port?: number): number | undefined {
  if (port !== undefined && port !== 0) return port;
  const http = gateway.listeners.filter((l) => l.protocol === "HTTP" || l.protocol === "HTTPS");
  return (http.find((l) => l.hostname === "" || hostsOverlap(l.hostname, host)) ?? http[0])?.port;
}

/**
 * The routes `gateway` applies to a request for `host` on `port`: those of every route a listener on that
 * port accepted, grouped by virtual host domain (a route hostname narrowed to the listener's; `*` for a route
 * without hostnames on a listener without one); the domain that fits `host` best wins, and its routes are
 * merged oldest route first, in Istio's rule order (request-match.ts compareGatewayRules). null when no
 * domain fits: Envoy answers 404 NR.
 */
export function gatewayRoutingTable(
  gateway: IstioGatewayView,
  routes: readonly EvaluatedRoute[],
  host: string,
  port: number,
): RoutingTable | null {
  const byDomain = new Map<string, EvaluatedRoute[]>();
  const add = (domain: string, route: EvaluatedRoute) => {
    const list = byDomain.get(domain) ?? [];
    if (!list.includes(route)) list.push(route);
    byDomain.set(domain, list);
  };
  for (const evaluated of routes) {
    for (const parent of evaluated.parents) {
      const listener: ListenerView | undefined = parent.listener;
      if (parent.mesh || parent.denied !== undefined || listener === undefined || listener.port !== port) continue;
      if (parent.gateway?.namespace !== gateway.namespace || parent.gateway.name !== gateway.name) continue;
      const listenerHost = listener.hostname === "" ? "*" : listener.hostname;
      const routeHosts = evaluated.route.spec?.hostnames?.length ? evaluated.route.spec.hostnames : ["*"];
      for (const h of routeHosts) if (hostsOverlap(listenerHost, h)) add(narrowerHost(listenerHost, h), evaluated);
    }
  }
  let best: { domain: string; fit: number } | undefined;
  for (const domain of byDomain.keys()) {
    const fit = domainFit(domain, host);
    if (fit !== undefined && (best === undefined || fit > best.fit)) best = { domain, fit };
  }
  if (best === undefined) return null;
  const merged = [...(byDomain.get(best.domain) ?? [])].sort((a, b) => byCreation(a.route, b.route));
  const rules = merged
    .flatMap((r) => r.gateway.rules)
    .map((rule, index) => ({ rule, index }))
    .sort((a, b) => compareGatewayRules(a.rule.matches, b.rule.matches) || a.index - b.index)
    .map((x) => x.rule);
  return {
    kind: "HTTPRoute",
    objects: merged.map((r) => objectKey(r.route.metadata)),
    rules,
    clusterNotFoundCode: 500,
  };
}
