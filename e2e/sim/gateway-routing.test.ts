/**
 * How an Istio gateway routes by Host: istio.io/istio pilot/pkg/config/kube/gateway/route_collections.go (a
 * VirtualService per route, listener and hostname) and Envoy's virtual host lookup (host-names.ts).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { HTTPRouteLike } from "./gateway-api-objects.js";
import { gateway, httpRoute } from "./fixtures.test-helpers.js";
import { arrivalPort, gatewayRoutingTable } from "./gateway-routing.js";
import { convertHTTPRoute } from "./http-route-rules.js";
import type { EvaluatedRoute } from "./mesh-routing.js";
import { istioGateways, routeParents } from "./route-parents.js";

const gws = istioGateways(
  [
    gateway("public", "istio-system", [
      {
        name: "http",
        port: 80,
        protocol: "HTTP",
        hostname: "*.example.com",
        allowedRoutes: { namespaces: { from: "All" } },
      },
      { name: "other", port: 8080, protocol: "HTTP", allowedRoutes: { namespaces: { from: "All" } } },
    ]),
  ],
  [],
  [],
);
const publicGw = gws.get("istio-system/public");
const evaluate = (route: HTTPRouteLike): EvaluatedRoute => ({
  route,
  parents: routeParents(route, gws, () => true),
  mesh: convertHTTPRoute(route, false, () => null),
  gateway: convertHTTPRoute(route, true, () => null),
});
const onPublic = { gateways: [{ namespace: "istio-system", name: "public" }] };

describe("gatewayRoutingTable", () => {
  test("a Host a route serves takes that route's rules; any other Host none (404)", () => {
    assert.ok(publicGw);
    const routes = [evaluate(httpRoute("web", "shop", [90, 10], { ...onPublic, hostnames: ["web.example.com"] }))];
    const table = gatewayRoutingTable(publicGw, routes, "web.example.com", 80);
    assert.deepEqual(
      [table?.objects, table?.rules.map((r) => r.name), table?.clusterNotFoundCode],
      [["shop/web"], ["primary-secondary"], 500],
    );
    assert.equal(gatewayRoutingTable(publicGw, routes, "api.example.com", 80), null);
  });

  test("an exact hostname wins over a wildcard one", () => {
    assert.ok(publicGw);
    const routes = [
      evaluate(httpRoute("web", "shop", [100, 0], { ...onPublic, hostnames: ["*.example.com"] })),
      evaluate(httpRoute("api", "shop", [0, 100], { ...onPublic, hostnames: ["api.example.com"] })),
    ];
    assert.deepEqual(gatewayRoutingTable(publicGw, routes, "api.example.com", 80)?.objects, ["shop/api"]);
    assert.deepEqual(gatewayRoutingTable(publicGw, routes, "web.example.com", 80)?.objects, ["shop/web"]);
  });

  test("a route the listener refused routes nothing through it", () => {
    assert.ok(publicGw);
    const refused = [evaluate(httpRoute("web", "shop", [90, 10], { ...onPublic, hostnames: ["web.example.org"] }))];
    assert.equal(
      refused[0]?.parents.find((p) => p.listener?.name === "http")?.denied?.reason,
      "NoMatchingListenerHostname",
    );
    assert.equal(gatewayRoutingTable(publicGw, refused, "web.example.org", 80), null);
    assert.deepEqual(
      gatewayRoutingTable(publicGw, refused, "web.example.org", 8080)?.objects,
      ["shop/web"],
      "the other listener took it",
    );
  });
});

test("arrivalPort: the parentRef's port, else the first HTTP listener whose hostname takes the Host", () => {
  assert.ok(publicGw);
  assert.equal(arrivalPort(publicGw, "web.example.com"), 80);
  assert.equal(arrivalPort(publicGw, "web.example.org"), 8080);
  assert.equal(arrivalPort(publicGw, "web.example.com", 8080), 8080);
});
