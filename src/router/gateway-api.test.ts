import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { withDefaults } from "../api/defaults.js";
import { desiredChildren } from "../resources/children.js";
import { seedApp } from "../resources/fixtures.test-helpers.js";
import type { Plan } from "../rollout/types.js";
import type { buildHandoverHTTPRoute } from "./gateway-api.js";
import {
  buildHTTPRoute,
  CANARY_RULE,
  gatewayApiRouter,
  httpRouteAcceptance,
  readHTTPRouteWeights,
} from "./gateway-api.js";
import { ROUTERS } from "./routers.js";
import { reportedOn, type ReportOptions } from "./route-status.test-helpers.js";

const app = seedApp({ mesh: "gateway-api" });
const spec = withDefaults(app.spec);

/** The route as the API server holds it once its implementation has reported on every parent. */
function accepted(route: ReturnType<typeof buildHTTPRoute>, generation = 3, verdict?: ReportOptions["verdict"]) {
  return reportedOn(route, { generation, ...(verdict !== undefined ? { verdict } : {}) });
}

describe("buildHTTPRoute", () => {
  test("the app's Service is the parent (the mesh), both tracks' Services the weighted backends", () => {
    const route = buildHTTPRoute(app, spec, { primary: 90, secondary: 10 });
    assert.equal(route.apiVersion, "gateway.networking.k8s.io/v1");
    assert.equal(route.kind, "HTTPRoute");
    assert.equal(route.metadata.name, "canaryapp-sample");
    assert.equal(route.metadata.namespace, "demo");
    assert.equal(route.metadata.labels["canaryapp.io/app"], "canaryapp-sample");
    assert.deepEqual(route.spec.parentRefs, [{ group: "", kind: "Service", name: "canaryapp-sample", port: 80 }]);
    assert.equal(route.spec.hostnames, undefined, "the mesh infers nothing from hostnames (GEP-1294)");
    assert.deepEqual(route.spec.rules, [
      {
        name: CANARY_RULE,
        backendRefs: [
          { group: "", kind: "Service", name: "canaryapp-sample-primary", port: 80, weight: 90 },
          { group: "", kind: "Service", name: "canaryapp-sample-secondary", port: 80, weight: 10 },
        ],
      },
    ]);
  });

  test("gateways are Gateway parents, hosts of the namespace's Services more Service parents, other hosts hostnames", () => {
    const withGateways = seedApp({
      mesh: "gateway-api",
      service: {
        port: 8080,
        hosts: ["web.example.com", "alias", "other.demo.svc.cluster.local", "WEB.example.com"],
        gateways: ["mesh", "istio-system/public", "internal", "istio-system/public"],
      },
    });
    const route = buildHTTPRoute(withGateways, withDefaults(withGateways.spec), { primary: 100, secondary: 0 });
    assert.deepEqual(route.spec.parentRefs, [
      { group: "", kind: "Service", name: "canaryapp-sample", port: 8080 },
      { group: "", kind: "Service", name: "alias", port: 8080 },
      { group: "", kind: "Service", name: "other", port: 8080 },
      { group: "gateway.networking.k8s.io", kind: "Gateway", namespace: "istio-system", name: "public" },
      { group: "gateway.networking.k8s.io", kind: "Gateway", namespace: "demo", name: "internal" },
    ]);
    assert.deepEqual(route.spec.hostnames, ["web.example.com"]);
  });

  test("the router builds exactly the route, named as the router reads it back", () => {
    const objects = gatewayApiRouter.desired(app, spec, { primary: 80, secondary: 20 });
    assert.equal(objects.length, 1);
    assert.equal(objects[0]?.metadata.name, gatewayApiRouter.objectName?.(app));
  });
});

describe("readHTTPRouteWeights: the split only where the implementation carries the route", () => {
  const route = buildHTTPRoute(app, spec, { primary: 70, secondary: 30 });

  test("accepted by every parent for the current generation: the rule's weights", () => {
    assert.deepEqual(readHTTPRouteWeights(accepted(route)), { primary: 70, secondary: 30 });
    assert.deepEqual(httpRouteAcceptance(accepted(route)), { carried: true });
  });

  test("no status yet, or status of an older generation: not routed, and said why", () => {
    assert.equal(readHTTPRouteWeights({ ...route, metadata: { ...route.metadata, generation: 1 } }), null);
    const stale = accepted(route, 3);
    const newer = { ...stale, metadata: { ...stale.metadata, generation: 4 } };
    assert.equal(readHTTPRouteWeights(newer), null);
    const why = httpRouteAcceptance(newer);
    assert.equal(why.carried, false);
    assert.equal(!why.carried && why.reason, "RouteNotReported");
    assert.match(!why.carried ? why.message : "", /parent Service canaryapp-sample for generation 4/);
  });

  test("a parent that does not accept it: not routed, with the implementation's reason and message", () => {
    const refused = accepted(route, 3, () => ({
      accepted: false,
      reason: "NotAllowedByListeners",
      message: "no listener allows routes from namespace demo",
    }));
    assert.equal(readHTTPRouteWeights(refused), null);
    assert.deepEqual(httpRouteAcceptance(refused), {
      carried: false,
      reason: "RouteNotAccepted",
      message:
        "HTTPRoute canaryapp-sample: parent Service canaryapp-sample: Accepted False (NotAllowedByListeners: no listener allows routes from namespace demo)",
    });
  });

  test("a backend not resolved: not routed (RouteRefsNotResolved)", () => {
    const unresolved = accepted(route, 3, () => ({
      accepted: true,
      unresolved: "BackendNotFound",
      message: "canaryapp-sample-secondary",
    }));
    const why = httpRouteAcceptance(unresolved);
    assert.equal(!why.carried && why.reason, "RouteRefsNotResolved");
  });

  test("a status entry matches its parentRef with the API's defaults filled in", () => {
    const gatewayApp = seedApp({ mesh: "gateway-api", service: { gateways: ["edge"] } });
    const gatewayRoute = buildHTTPRoute(gatewayApp, withDefaults(gatewayApp.spec), { primary: 50, secondary: 50 });
    const reported = accepted(gatewayRoute);
    // An implementation may report the Gateway parent without the defaulted group and namespace.
    const parents = (reported.status.parents as { parentRef: { kind: string } }[]).map((p) =>
      p.parentRef.kind === "Gateway" ? { ...p, parentRef: { kind: "Gateway", name: "edge" } } : p,
    );
    assert.deepEqual(readHTTPRouteWeights({ ...reported, status: { parents } }), { primary: 50, secondary: 50 });
  });

  test("a rule edited out of our shape reads as null, so it is re-applied", () => {
    const edited = accepted(route);
    const rules = [{ name: CANARY_RULE, backendRefs: [route.spec.rules[0]?.backendRefs[0]] }];
    assert.equal(readHTTPRouteWeights({ ...edited, spec: { ...edited.spec, rules } }), null);
    const renamed = [{ ...route.spec.rules[0], name: "mine" }];
    assert.equal(readHTTPRouteWeights({ ...edited, spec: { ...edited.spec, rules: renamed } }), null);
    assert.equal(readHTTPRouteWeights(undefined), null);
  });
});

describe("switching router: the HTTPRoute and the VirtualService handed over, then removed", () => {
  const basePlan: Plan = {
    primary: { image: "img:v1", replicas: 2 },
    secondary: null,
    weights: { primary: 100, secondary: 0 },
    status: {},
    events: [],
    tellChildUpdates: true,
    removeAnnotations: [],
  };
  const at = "2026-11-27T12:00:00.000Z";
  const kinds = (objects: readonly { kind: string; metadata: { name: string } }[]) =>
    objects.map((o) => `${o.kind}/${o.metadata.name}`);

  test("gateway-api: the HTTPRoute is applied in the VirtualService's place", () => {
    const { apply } = desiredChildren(app, spec, basePlan, ROUTERS["gateway-api"]);
    assert.deepEqual(kinds(apply), [
      "Service/canaryapp-sample-primary",
      "Service/canaryapp-sample-secondary",
      "HTTPRoute/canaryapp-sample",
      "Service/canaryapp-sample",
      "Deployment/canaryapp-sample-primary",
    ]);
  });

  test("gateway-api → istio: the HTTPRoute first sends everything to the app's Service, then goes", () => {
    const istioApp = seedApp({ mesh: "istio" });
    const istioSpec = withDefaults(istioApp.spec);
    const handing = desiredChildren(
      istioApp,
      istioSpec,
      { ...basePlan, routeHandover: { kind: "handOver", of: "HTTPRoute", at } },
      ROUTERS.istio,
    );
    const route = handing.apply.find((o) => o.kind === "HTTPRoute") as ReturnType<typeof buildHandoverHTTPRoute>;
    assert.deepEqual(route.spec.rules, [
      {
        name: "handover",
        backendRefs: [{ group: "", kind: "Service", name: "canaryapp-sample", port: 80, weight: 100 }],
      },
    ]);
    assert.deepEqual(route.spec.parentRefs, [{ group: "", kind: "Service", name: "canaryapp-sample", port: 80 }]);
    const left = ROUTERS.istio.leftovers?.find((l) => l.kind === "HTTPRoute");
    assert.deepEqual(left?.read(route), { handedOverAt: at });
    assert.deepEqual(
      left?.read(buildHTTPRoute(app, spec, { primary: 90, secondary: 10 })),
      {},
      "a split is not a handover",
    );
    assert.ok(
      handing.apply.some((o) => o.kind === "VirtualService"),
      "the VirtualService is applied meanwhile",
    );

    const removing = desiredChildren(
      istioApp,
      istioSpec,
      { ...basePlan, routeHandover: { kind: "remove", of: "HTTPRoute" } },
      ROUTERS.istio,
    );
    assert.ok(!removing.apply.some((o) => o.kind === "HTTPRoute"));
    assert.deepEqual(
      removing.remove.filter((r) => r.kind !== "Deployment").map((r) => `${r.apiVersion} ${r.kind}/${r.name}`),
      ["gateway.networking.k8s.io/v1 HTTPRoute/canaryapp-sample"],
    );
  });

  test("istio → gateway-api: the VirtualService is handed over, then it and the DestinationRule go", () => {
    const handing = desiredChildren(
      app,
      spec,
      { ...basePlan, routeHandover: { kind: "handOver", of: "VirtualService", at } },
      ROUTERS["gateway-api"],
    );
    assert.ok(
      handing.apply.some(
        (o) =>
          o.kind === "VirtualService" &&
          (o as unknown as { spec: { http: { name: string }[] } }).spec.http[0]?.name === "handover",
      ),
    );
    const removing = desiredChildren(
      app,
      spec,
      { ...basePlan, routeHandover: { kind: "remove", of: "VirtualService" } },
      ROUTERS["gateway-api"],
    );
    assert.deepEqual(
      removing.remove.filter((r) => r.kind !== "Deployment").map((r) => `${r.kind}/${r.name}`),
      ["VirtualService/canaryapp-sample", "DestinationRule/canaryapp-sample"],
    );
  });

  test("none takes over from either router", () => {
    assert.deepEqual(
      ROUTERS.none.leftovers?.map((l) => l.kind),
      ["VirtualService", "HTTPRoute"],
    );
  });
});
