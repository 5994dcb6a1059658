/**
 * A proxy's routes for one host, whichever API they came from: rules tried in order, the first whose
 * matches take the request sends it to one of its destinations by weight, and mirrors a copy to its
 * mirrors. A VirtualService's `http[]` routes are tried in the order written; a Gateway API route's rules in
 * the Gateway API's precedence (request-match.ts, compareGatewayRules). No rule taking a request: Envoy
 * answers 404 with the NR flag. Pure.
 */
import type { Track } from "../../src/api/types.js";
import type { RouteDestinationView } from "./cluster-model.js";
import { anyMatches, describeMatch, PLAIN_REQUEST, type RequestMatch, type SimRequest } from "./request-match.js";

/** A copy of each request, a `percent` of them, sent to `destination`; its answer is discarded. */
export interface MirrorView {
  destination: RouteDestinationView;
  /** 0..100. */
  percent: number;
}

export interface RouteRule {
  /** The VirtualService route's or HTTPRoute rule's name (Istio's `<namespace>.<route>.<index>` when it has none). */
  name: string;
  /** Any one of them takes a request; none at all takes every request. */
  matches: RequestMatch[];
  destinations: RouteDestinationView[];
  mirrors: MirrorView[];
  /**
   * Answered by the proxy without a destination: 500 for a Gateway API rule whose backendRefs have no weight
   * (pilot/pkg/config/kube/gateway/conversion.go, convertHTTPRoute: "Per the Gateway API spec, when there
   * are no >0 weight backends return 500").
   */
  directResponse?: number;
}

export interface RoutingTable {
  kind: "VirtualService" | "HTTPRoute";
  /** `namespace/name` of the objects whose rules these are, in the order they were merged. */
  objects: string[];
  rules: RouteRule[];
  /**
   * What Envoy answers for a destination it has no cluster for (flag NC): 503, Envoy's default, for a
   * VirtualService; 500 for a Gateway API route, whose routes Istio builds with `cluster_not_found_response_code:
   * INTERNAL_SERVER_ERROR` (pilot/pkg/networking/core/route/route.go, applyHTTPRouteDestination; the Gateway
   * API asks 500 for an invalid backendRef: apis/v1/httproute_types.go, HTTPRouteRule.BackendRefs).
   */
  clusterNotFoundCode: number;
}

/** The first rule whose matches take `request`; undefined: no route (404 NR). */
export function ruleFor(table: RoutingTable, request: SimRequest): RouteRule | undefined {
  return table.rules.find((r) => anyMatches(r.matches, request));
}

/** The rule a request with no header at all takes: what /state shows as the app's weights. */
export function plainRule(table: RoutingTable, port?: number): RouteRule | undefined {
  return ruleFor(table, port === undefined ? PLAIN_REQUEST : { ...PLAIN_REQUEST, port });
}

/** A rule's weights by track: each destination counts for the track it stands for; others for none. */
export function trackWeights(destinations: readonly RouteDestinationView[]): Record<Track, number> {
  const weights: Record<Track, number> = { primary: 0, secondary: 0 };
  for (const d of destinations) if (d.track !== undefined) weights[d.track] += d.weight;
  return weights;
}

/** A routing table as /state shows it. */
export interface RoutingState {
  kind: RoutingTable["kind"];
  objects: string[];
  rules: {
    name: string;
    matches: string[];
    destinations: { host: string; subset?: string; track: Track | null; weight: number; exists: boolean }[];
    mirrors: { host: string; track: Track | null; percent: number; exists: boolean }[];
    directResponse?: number;
  }[];
}

export function routingState(table: RoutingTable): RoutingState {
  return {
    kind: table.kind,
    objects: [...table.objects],
    rules: table.rules.map((r) => ({
      name: r.name,
      matches: r.matches.map(describeMatch),
      destinations: r.destinations.map((d) => ({
        host: d.host,
        ...(d.subset !== undefined ? { subset: d.subset } : {}),
        track: d.track ?? null,
        weight: d.weight,
        exists: d.cluster !== null,
      })),
      mirrors: r.mirrors.map((m) => ({
        host: m.destination.host,
        track: m.destination.track ?? null,
        percent: m.percent,
        exists: m.destination.cluster !== null,
      })),
      ...(r.directResponse !== undefined ? { directResponse: r.directResponse } : {}),
    })),
  };
}
