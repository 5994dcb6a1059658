import assert from "node:assert/strict";
import { test } from "node:test";
import { DEFAULT_BEHAVIOURS } from "./behaviour.js";
import type { ClusterSnapshot } from "./cluster-snapshot.js";
import { gateway, gatewayApiApp, pod } from "./fixtures.test-helpers.js";
import { simulateGatewayRequests } from "./gateway-traffic.js";
import { buildAppViews } from "./mesh-view.js";
import { seededRandom } from "./prng.js";

const pods = [
  pod("web", "shop", "primary", "web-primary-1", "web:v1"),
  pod("web", "shop", "secondary", "web-secondary-1", "web:v2"),
];
const onPublic = { gateways: [{ namespace: "istio-system", name: "public" }] };

test("requests through the app's Gateway follow the route's weights", () => {
  const snapshot: ClusterSnapshot = {
    ...gatewayApiApp("web", "shop", [80, 20], pods, onPublic),
    gateways: [gateway("public", "istio-system")],
  };
  const [view] = buildAppViews(snapshot);
  assert.ok(view);
  const [sent] = simulateGatewayRequests(view, 4000, DEFAULT_BEHAVIOURS, seededRandom(6));
  assert.equal(sent?.ingress.gateway, "istio-system/public");
  const share = (sent?.requests.filter((r) => r.track === "secondary").length ?? 0) / 4000;
  assert.ok(Math.abs(share - 0.2) < 0.02, `secondary ${share}`);
});

test("a Host the gateway took no route for is answered 404 NR by the gateway; no Gateway, nothing sent", () => {
  const listener = {
    name: "http",
    port: 80,
    protocol: "HTTP",
    hostname: "*.example.org",
    allowedRoutes: { namespaces: { from: "All" } },
  };
  const snapshot: ClusterSnapshot = {
    ...gatewayApiApp("web", "shop", [80, 20], pods, onPublic),
    gateways: [gateway("public", "istio-system", [listener])],
  };
  const [view] = buildAppViews(snapshot);
  assert.ok(view);
  assert.equal(view.httpRoutes[0]?.parents.find((p) => !p.mesh)?.denied?.reason, "NoMatchingListenerHostname");
  const [sent] = simulateGatewayRequests(view, 3, DEFAULT_BEHAVIOURS, seededRandom(1));
  assert.deepEqual([...new Set(sent?.requests.map((r) => `${r.code} ${r.flags}`))], ["404 NR"]);
  const [alone] = buildAppViews({ ...snapshot, gateways: [] });
  assert.ok(alone);
  assert.deepEqual(simulateGatewayRequests(alone, 3, DEFAULT_BEHAVIOURS, seededRandom(1)), []);
});
