/**
 * Which parents take a route, as istio.io/istio pilot/pkg/config/kube/gateway/ decides it
 * (conversion.go: extractParentReferenceInfo, referenceAllowed, namespacesFromSelector;
 * gateway_collection.go; gatewaycommon/gatewayclass_collection.go FetchGatewayClass;
 * gatewaycommon/gateway_utils.go GetDefaultName), with messages as in testdata/*.status.yaml.golden.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { GatewayLike, HTTPRouteLike, ListenerLike, ParentRefLike } from "./gateway-api-objects.js";
import { gateway, httpRoute } from "./fixtures.test-helpers.js";
import { istioGateways, routeParents, type ParentResult } from "./route-parents.js";

const anyService = () => true;
const noService = () => false;

function results(route: HTTPRouteLike, gateways: GatewayLike[], serviceExists = anyService, namespaces = []) {
  return routeParents(route, istioGateways(gateways, [], namespaces), serviceExists);
}
const summary = (r: ParentResult[]) =>
  r.map((p) => [
    p.mesh ? "mesh" : `${p.gateway?.name}/${p.listener?.name}`,
    p.denied?.reason ?? "ok",
    p.denied?.message ?? "",
  ]);

function routeTo(parentRefs: ParentRefLike[], hostnames?: string[], namespace = "shop"): HTTPRouteLike {
  return {
    metadata: { name: "web", namespace },
    spec: { parentRefs, ...(hostnames ? { hostnames } : {}), rules: [{ backendRefs: [{ name: "web", port: 80 }] }] },
  };
}
const listener = (extra: Partial<ListenerLike>): ListenerLike => ({
  name: "http",
  port: 80,
  protocol: "HTTP",
  ...extra,
});

describe("a Service parent (the mesh)", () => {
  test("taken when the Service exists; its port is not checked", () => {
    assert.deepEqual(summary(results(httpRoute("web", "shop", [90, 10]), [])), [["mesh", "ok", ""]]);
  });

  // testdata/valid-invalid-parent-ref.status.yaml.golden: 'parent service: "random" not found'.
  test("refused, NoMatchingParent, when the Service does not exist", () => {
    assert.deepEqual(summary(results(httpRoute("web", "shop", [90, 10]), [], noService)), [
      ["mesh", "NoMatchingParent", 'parent service: "web" not found'],
    ]);
  });
});

describe("a Gateway parent", () => {
  const gw = { group: "gateway.networking.k8s.io", kind: "Gateway", namespace: "istio-system", name: "public" };

  // extractParentReferenceInfo appends a result per listener of the parent found; a Gateway not found (or
  // another implementation's) has none, so no status entry is written for it.
  test("a Gateway that does not exist, or is not Istio's, gives no result at all", () => {
    assert.deepEqual(results(routeTo([gw], ["web.example.com"]), []), []);
    const other: GatewayLike = {
      ...gateway("public", "istio-system"),
      spec: { gatewayClassName: "other", listeners: [listener({})] },
    };
    assert.deepEqual(results(routeTo([gw], ["web.example.com"]), [other]), []);
  });

  test("a Gateway of a GatewayClass whose controller is Istio's; the built-in `istio` unless a GatewayClass says otherwise", () => {
    const custom: GatewayLike = {
      ...gateway("public", "istio-system"),
      spec: { gatewayClassName: "mine", listeners: [listener({})] },
    };
    const classes = [{ metadata: { name: "mine" }, spec: { controllerName: "istio.io/gateway-controller" } }];
    assert.equal(istioGateways([custom], classes, []).size, 1);
    const notIstio = [{ metadata: { name: "istio" }, spec: { controllerName: "example.com/gateway" } }];
    assert.equal(istioGateways([gateway("public", "istio-system")], notIstio, []).size, 0);
  });

  // GetDefaultName: `<name>-<class>`; gateway.istio.io/name-override wins.
  test("the Deployment it runs as: `<name>-<class>`, or the name-override annotation", () => {
    assert.equal(
      istioGateways([gateway("public", "istio-system")], [], []).get("istio-system/public")?.deploymentName,
      "public-istio",
    );
    const named = gateway("public", "istio-system");
    named.metadata = { ...named.metadata, annotations: { "gateway.istio.io/name-override": "edge" } };
    assert.equal(istioGateways([named], [], []).get("istio-system/public")?.deploymentName, "edge");
  });

  test("a listener admitting all namespaces takes a route whose hostname it covers", () => {
    const gws = [
      gateway("public", "istio-system", [
        listener({ hostname: "*.example.com", allowedRoutes: { namespaces: { from: "All" } } }),
      ]),
    ];
    assert.deepEqual(summary(results(routeTo([gw], ["web.example.com"]), gws)), [["public/http", "ok", ""]]);
    assert.deepEqual(
      summary(results(routeTo([gw]), gws)),
      [["public/http", "ok", ""]],
      "a route without hostnames is `*`",
    );
  });

  // namespacesFromSelector: Same unless told.
  test("allowedRoutes Same (the default) refuses a route of another namespace: NotAllowedByListeners", () => {
    const gws = [gateway("public", "istio-system", [listener({})])];
    assert.deepEqual(summary(results(routeTo([gw], ["web.example.com"]), gws)), [
      [
        "public/http",
        "NotAllowedByListeners",
        'hostnames matched parent hostname "", but namespace "shop" is not allowed by the parent',
      ],
    ]);
    assert.deepEqual(summary(results(routeTo([gw], ["web.example.com"], "istio-system"), gws)), [
      ["public/http", "ok", ""],
    ]);
  });

  // namespacesFromSelector runs the selector over the Namespaces, each with its kubernetes.io/metadata.name.
  test("allowedRoutes Selector admits the namespaces it selects", () => {
    const byLabel = [
      gateway("public", "istio-system", [
        listener({
          allowedRoutes: { namespaces: { from: "Selector", selector: { matchLabels: { gateway: "public" } } } },
        }),
      ]),
    ];
    const namespaces = [{ metadata: { name: "shop", labels: { gateway: "public" } } }, { metadata: { name: "blog" } }];
    const gws = istioGateways(byLabel, [], namespaces);
    assert.deepEqual(summary(routeParents(routeTo([gw]), gws, anyService)), [["public/http", "ok", ""]]);
    assert.equal(
      routeParents(routeTo([gw], undefined, "blog"), gws, anyService)[0]?.denied?.reason,
      "NotAllowedByListeners",
    );
    const byName = [
      gateway("public", "istio-system", [
        listener({
          allowedRoutes: {
            namespaces: { from: "Selector", selector: { matchLabels: { "kubernetes.io/metadata.name": "blog" } } },
          },
        }),
      ]),
    ];
    assert.equal(
      routeParents(routeTo([gw], undefined, "blog"), istioGateways(byName, [], namespaces), anyService)[0]?.denied,
      undefined,
    );
  });

  test("no hostname in common: NoMatchingListenerHostname", () => {
    const gws = [
      gateway("public", "istio-system", [
        listener({ hostname: "*.example.org", allowedRoutes: { namespaces: { from: "All" } } }),
      ]),
    ];
    assert.deepEqual(summary(results(routeTo([gw], ["web.example.com"]), gws)), [
      ["public/http", "NoMatchingListenerHostname", 'no hostnames matched parent hostname "*.example.org"'],
    ]);
  });

  // testdata/valid-invalid-parent-ref.status.yaml.golden: "port 1234 not found"; invalid.status.yaml.golden:
  // 'sectionName "fake" not found'.
  test("a parentRef's port or sectionName that is not the listener's: NoMatchingParent", () => {
    const gws = [gateway("public", "istio-system")];
    assert.deepEqual(summary(results(routeTo([{ ...gw, port: 1234 }]), gws)), [
      ["public/http", "NoMatchingParent", "port 1234 not found"],
    ]);
    assert.deepEqual(summary(results(routeTo([{ ...gw, sectionName: "fake" }]), gws)), [
      ["public/http", "NoMatchingParent", 'sectionName "fake" not found'],
    ]);
  });

  // GenerateGatewaySupportedKinds: HTTPRoute only on HTTP and HTTPS listeners, narrowed by allowedRoutes.kinds.
  test("a listener that does not admit HTTPRoutes: NotAllowedByListeners", () => {
    const tcp = [
      gateway("public", "istio-system", [
        listener({ protocol: "TCP", allowedRoutes: { namespaces: { from: "All" } } }),
      ]),
    ];
    assert.deepEqual(summary(results(routeTo([gw]), tcp))[0]?.slice(1), [
      "NotAllowedByListeners",
      "kind gateway.networking.k8s.io/v1/HTTPRoute is not allowed",
    ]);
    const grpcOnly = [
      gateway("public", "istio-system", [
        listener({ allowedRoutes: { namespaces: { from: "All" }, kinds: [{ kind: "GRPCRoute" }] } }),
      ]),
    ];
    assert.equal(results(routeTo([gw]), grpcOnly)[0]?.denied?.reason, "NotAllowedByListeners");
  });

  test("one result per listener; results sorted by Istio's parentRef key", () => {
    const two = [
      gateway("public", "istio-system", [
        listener({ allowedRoutes: { namespaces: { from: "All" } } }),
        listener({ name: "alt", port: 8080, allowedRoutes: { namespaces: { from: "All" } } }),
      ]),
    ];
    const r = results(
      httpRoute("web", "shop", [90, 10], { gateways: [{ namespace: "istio-system", name: "public" }] }),
      two,
    );
    assert.deepEqual(summary(r), [
      ["mesh", "ok", ""],
      ["public/http", "ok", ""],
      ["public/alt", "ok", ""],
    ]);
  });
});
