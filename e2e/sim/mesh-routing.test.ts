/**
 * Which routes a sidecar applies to a Service named by both a VirtualService and HTTPRoutes, and how mesh
 * HTTPRoutes merge: istio.io/istio pilot/pkg/model/virtualservice.go (SelectVirtualServices),
 * pilot/pkg/model/config.go (configCompareByCreationTime), pilot/pkg/networking/core/httproute.go (a
 * second virtual host for a domain is dropped), pilot/pkg/config/kube/gateway/route_collections.go
 * (HTTPRouteCollection, mergeHTTPRoutes, augmentPortMatch); GEP-1294 (producer and consumer routes).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { ClusterView } from "./cluster-model.js";
import type { HTTPRouteLike } from "./gateway-api-objects.js";
import { headerRule, httpRoute } from "./fixtures.test-helpers.js";
import { convertHTTPRoute } from "./http-route-rules.js";
import {
  chooseMeshCandidate,
  httpRouteMeshCandidates,
  type EvaluatedRoute,
  type MeshCandidate,
} from "./mesh-routing.js";
import { routeParents } from "./route-parents.js";

const resolve = (ref: { namespace: string; name: string }): ClusterView => ({
  service: { ...ref, host: `${ref.name}.${ref.namespace}.svc.cluster.local` },
  endpoints: [],
});
const evaluate = (route: HTTPRouteLike): EvaluatedRoute => ({
  route,
  parents: routeParents(route, new Map(), () => true),
  mesh: convertHTTPRoute(route, false, resolve),
  gateway: convertHTTPRoute(route, true, resolve),
});
const web = { namespace: "shop", name: "web" };

const virtualService = (created: string, name = "web", namespace = "shop"): MeshCandidate => ({
  kind: "VirtualService",
  objects: [`${namespace}/${name}`],
  rules: [{ name: "primary-secondary", matches: [], destinations: [], mirrors: [] }],
  clusterNotFoundCode: 503,
  namespace,
  name,
  created: Date.parse(created),
  gatewaySemantics: false,
});

describe("chooseMeshCandidate", () => {
  const route = (created: string) =>
    httpRouteMeshCandidates(
      [evaluate(httpRoute("web", "shop", [90, 10], { creationTimestamp: created }))],
      web,
      "shop",
      80,
    );

  // SelectVirtualServices (PILOT_UNIFIED_SIDECAR_SCOPE, default on): Gateway API routes of the proxy's own
  // namespace first, "to give the consumer override preference".
  test("for callers in the route's namespace the HTTPRoute wins, even over an older VirtualService", () => {
    const chosen = chooseMeshCandidate(
      [virtualService("2026-01-01T00:00:00Z"), ...route("2026-06-01T00:00:00Z")],
      "shop",
    );
    assert.equal(chosen?.kind, "HTTPRoute");
  });

  // Otherwise the order of MergedVirtualServices(): oldest first (configCompareByCreationTime), then name.
  test("for callers of another namespace the older one wins; a tie goes by name", () => {
    const older = chooseMeshCandidate(
      [virtualService("2026-01-01T00:00:00Z"), ...route("2026-06-01T00:00:00Z")],
      "loadgen",
    );
    assert.equal(older?.kind, "VirtualService");
    const newer = chooseMeshCandidate(
      [virtualService("2026-06-01T00:00:00Z"), ...route("2026-01-01T00:00:00Z")],
      "loadgen",
    );
    assert.equal(newer?.kind, "HTTPRoute");
    // Istio names the merged VirtualService `<namespace>~<port>~<host>`: "shop~80~..." sorts before "web".
    const tie = chooseMeshCandidate(
      [virtualService("2026-01-01T00:00:00Z"), ...route("2026-01-01T00:00:00Z")],
      "loadgen",
    );
    assert.deepEqual([tie?.kind, tie?.name], ["HTTPRoute", "shop~80~web.shop.svc.cluster.local"]);
  });
});

describe("httpRouteMeshCandidates", () => {
  test("the route's rules in Istio's order, bound to the parentRef's port, answering 500 for a missing cluster", () => {
    const [candidate] = httpRouteMeshCandidates(
      [evaluate(httpRoute("web", "shop", [90, 10], { rules: [headerRule("web", "x-canary", "always")] }))],
      web,
      "shop",
      80,
    );
    assert.deepEqual(
      candidate?.rules.map((r) => [r.name, r.matches.map((m) => m.port)]),
      [
        ["canary-by-header", [80]],
        ["primary-secondary", [80]],
      ],
    );
    assert.deepEqual([candidate?.clusterNotFoundCode, candidate?.objects], [500, ["shop/web"]]);
  });

  test("a parentRef on another port than the request's makes no route for it", () => {
    assert.deepEqual(httpRouteMeshCandidates([evaluate(httpRoute("web", "shop", [90, 10]))], web, "shop", 8080), []);
  });

  // mergeHTTPRoutes: routes with the same key (namespace, port, host) merge, the oldest route's rules first.
  test("two routes for one Service and port merge, the older first at equal precedence", () => {
    const a = httpRoute("web", "shop", [100, 0], { creationTimestamp: "2026-02-01T00:00:00Z" });
    const b = {
      ...httpRoute("web", "shop", [0, 100], { creationTimestamp: "2026-01-01T00:00:00Z" }),
      metadata: { name: "web-b", namespace: "shop", creationTimestamp: "2026-01-01T00:00:00Z" },
    };
    const [merged] = httpRouteMeshCandidates([evaluate(a), evaluate(b)], web, "shop", 80);
    assert.deepEqual(merged?.objects, ["shop/web-b", "shop/web"]);
    assert.deepEqual(
      merged?.rules[0]?.destinations.map((d) => d.weight),
      [0, 100],
    );
  });

  // GEP-1294: a route in another namespace than its Service's is a consumer route, for callers of its own
  // namespace only (route.go: "Gateway allows only routes from the namespace of the proxy, or namespace of
  // the destination").
  test("a consumer route applies only to callers of its namespace", () => {
    const consumer: HTTPRouteLike = {
      ...httpRoute("web", "loadgen", [0, 100]),
      spec: {
        ...httpRoute("web", "loadgen", [0, 100]).spec,
        parentRefs: [{ group: "", kind: "Service", namespace: "shop", name: "web" }],
      },
    };
    assert.equal(httpRouteMeshCandidates([evaluate(consumer)], web, "loadgen", 80).length, 1);
    assert.equal(httpRouteMeshCandidates([evaluate(consumer)], web, "other", 80).length, 0);
  });

  test("a route refused by the Service (it does not exist) makes none", () => {
    const route = httpRoute("web", "shop", [90, 10]);
    const refused: EvaluatedRoute = { ...evaluate(route), parents: routeParents(route, new Map(), () => false) };
    assert.deepEqual(httpRouteMeshCandidates([refused], web, "shop", 80), []);
  });
});
