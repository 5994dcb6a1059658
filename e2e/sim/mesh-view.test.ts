import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { inboundService, isPodReady, podImage, serviceOfHost, type ServiceRef } from "./cluster-model.js";
import type { ClusterSnapshot } from "./cluster-snapshot.js";
import {
  deploymentApp,
  destinationRule,
  gateway,
  gatewayApiApp,
  headerRule,
  pod,
  service,
  statefulSetPod,
  trackService,
  virtualService,
  virtualServiceByHost,
} from "./fixtures.test-helpers.js";
import { buildAppViews } from "./mesh-view.js";
import { meshWeights, type VirtualServiceLike } from "./virtual-service-routes.js";

describe("meshWeights", () => {
  test("reads the weights of the controller's route", () => {
    assert.deepEqual(meshWeights(virtualService("web", "shop", [80, 20])), { primary: 80, secondary: 20 });
  });

  test("reads what is there, even when it does not sum to 100", () => {
    assert.deepEqual(meshWeights(virtualService("web", "shop", [70, 20])), { primary: 70, secondary: 20 });
  });

  test("no gateways means mesh; gateways without mesh means no mesh route", () => {
    const vs = virtualService("web", "shop", [60, 40]);
    assert.deepEqual(meshWeights({ ...vs, spec: { ...vs.spec, gateways: [] } }), { primary: 60, secondary: 40 });
    assert.equal(meshWeights({ ...vs, spec: { ...vs.spec, gateways: ["istio-system/public"] } }), null);
  });

  test("skips routes whose matches apply only to a gateway", () => {
    const vs: VirtualServiceLike = {
      spec: {
        gateways: ["mesh", "public"],
        http: [
          { match: [{ gateways: ["public"] }], route: [{ destination: { subset: "secondary" } }] },
          {
            match: [{ gateways: ["mesh"] }],
            route: [
              { destination: { subset: "primary" }, weight: 90 },
              { destination: { subset: "secondary" }, weight: 10 },
            ],
          },
        ],
      },
    };
    assert.deepEqual(meshWeights(vs), { primary: 90, secondary: 10 });
  });

  test("a lone destination without weight takes everything; other subsets count for no track", () => {
    assert.deepEqual(meshWeights({ spec: { http: [{ route: [{ destination: { subset: "secondary" } }] }] } }), {
      primary: 0,
      secondary: 100,
    });
    assert.deepEqual(
      meshWeights({
        spec: {
          http: [
            {
              route: [
                { destination: { subset: "primary" }, weight: 50 },
                { destination: { subset: "canary" }, weight: 50 },
              ],
            },
          ],
        },
      }),
      { primary: 50, secondary: 0 },
    );
  });

  test("reads per-track Services as destinations (the controller's route since ADR 0010)", () => {
    assert.deepEqual(meshWeights(virtualServiceByHost("web", "shop", [70, 30])), { primary: 70, secondary: 30 });
    assert.deepEqual(meshWeights({ spec: { http: [{ route: [{ destination: { host: "web-secondary" } }] }] } }), {
      primary: 0,
      secondary: 100,
    });
  });

  test("no HTTP route, no mesh route", () => {
    assert.equal(meshWeights({ spec: { gateways: ["mesh"] } }), null);
  });
});

describe("pods", () => {
  test("Ready means condition Ready=True and not terminating", () => {
    assert.equal(isPodReady(pod("web", "shop", "primary", "a", "web:v1")), true);
    assert.equal(isPodReady(pod("web", "shop", "primary", "a", "web:v1", false)), false);
    assert.equal(isPodReady({ status: {} }), false);
    const terminating = pod("web", "shop", "primary", "a", "web:v1");
    terminating.metadata = { ...terminating.metadata, deletionTimestamp: "2025-01-01T00:00:00Z" };
    assert.equal(isPodReady(terminating), false);
  });

  test("the image is the app container's, else the first container's", () => {
    assert.equal(
      podImage({
        spec: {
          containers: [
            { name: "istio-proxy", image: "proxy" },
            { name: "app", image: "web:v2" },
          ],
        },
      }),
      "web:v2",
    );
    assert.equal(podImage({ spec: { containers: [{ name: "main", image: "web:v1" }] } }), "web:v1");
  });
});

describe("route destinations", () => {
  // pilot/pkg/model/config.go, ResolveShortnameToFQDN: a host without a dot is in the VirtualService's
  // namespace; a host with one is taken as written (a Kubernetes Service only as <svc>.<ns>.svc.cluster.local).
  test("a host names a Service: short in the route's namespace, or fully qualified", () => {
    assert.deepEqual(serviceOfHost("web-secondary", "shop"), { name: "web-secondary", namespace: "shop" });
    assert.deepEqual(serviceOfHost("web-secondary.other.svc.cluster.local", "shop"), {
      name: "web-secondary",
      namespace: "other",
    });
    assert.equal(serviceOfHost("web-secondary.shop", "shop"), undefined);
    assert.equal(serviceOfHost("example.com", "shop"), undefined);
  });

  // The route's destination is a cluster of the Service it names; its endpoints are the Ready,
  // non-terminating pods the Service's selector matches (pilot/pkg/serviceregistry/kube/controller/util.go,
  // getPodServices; pkg/config/labels/instance.go, Instance.Match).
  test("each destination is the Ready pods its Service selects", () => {
    const [view] = buildAppViews(
      deploymentApp(
        "web",
        "shop",
        [90, 10],
        [
          pod("web", "shop", "primary", "web-primary-1", "web:v1"),
          pod("web", "shop", "secondary", "web-secondary-1", "web:v2"),
          pod("web", "shop", "secondary", "web-secondary-2", "web:v2", false),
        ],
      ),
    );
    assert.deepEqual(
      view?.route?.map((d) => ({
        host: d.host,
        track: d.track,
        service: d.cluster?.service.name,
        endpoints: d.cluster?.endpoints.map((p) => p.name),
      })),
      [
        {
          host: "web-primary.shop.svc.cluster.local",
          track: "primary",
          service: "web-primary",
          endpoints: ["web-primary-1"],
        },
        {
          host: "web-secondary.shop.svc.cluster.local",
          track: "secondary",
          service: "web-secondary",
          endpoints: ["web-secondary-1"],
        },
      ],
    );
    assert.deepEqual(view?.weights, { primary: 90, secondary: 10 });
    assert.deepEqual(
      view?.tracks.secondary.readyPods.map((p) => p.workload.name),
      ["web-secondary"],
    );
  });

  // A StatefulSet app: the per-track Services select by revision, the pods have no track label; the
  // endpoints follow the selectors (getPodServices, Instance.Match) and the workload the owner
  // (pkg/kube/util.go, GetDeployMetaFromPod).
  test("a StatefulSet app's tracks are its Services' pods, by revision", () => {
    const selector = (revision: string) => ({ "canaryapp.io/app": "db", "canaryapp.io/revision": revision });
    const snapshot: ClusterSnapshot = {
      virtualServices: [virtualServiceByHost("db", "shop", [80, 20])],
      services: [
        { ...service("db", "shop"), spec: { selector: selector("6f7d8c") } },
        trackService("db", "shop", "primary", selector("6f7d8c")),
        trackService("db", "shop", "secondary", selector("9a1b2c")),
      ],
      pods: [
        statefulSetPod("db", "shop", 0, "6f7d8c", "db:v1"),
        statefulSetPod("db", "shop", 1, "6f7d8c", "db:v1"),
        statefulSetPod("db", "shop", 2, "9a1b2c", "db:v2"),
      ],
    };
    const [view] = buildAppViews(snapshot);
    const names = (track: "primary" | "secondary") => view?.tracks[track].readyPods.map((p) => p.name);
    assert.deepEqual([names("primary"), names("secondary")], [["db-0", "db-1"], ["db-2"]]);
    assert.deepEqual(
      view?.tracks.secondary.readyPods.map((p) => [p.workload.name, p.workload.canonicalRevision]),
      [["db", "9a1b2c"]],
    );
    assert.deepEqual(
      view?.service?.endpoints.map((p) => p.name),
      ["db-0", "db-1"],
    );
  });

  // A subset is the Service's endpoints narrowed to the DestinationRule subset's labels; without the
  // Service, or without a DestinationRule defining the subset, Envoy has no such cluster (503 NC).
  test("a subset of the app's host: its DestinationRule's labels over the Service's endpoints", () => {
    const pods = [
      pod("web", "shop", "primary", "web-primary-1", "web:v1"),
      pod("web", "shop", "secondary", "web-secondary-1", "web:v2"),
    ];
    const endpoints = (snapshot: ClusterSnapshot) =>
      buildAppViews(snapshot)[0]?.route?.map((d) => d.cluster?.endpoints.map((p) => p.name) ?? null);
    const vs = virtualService("web", "shop", [50, 50]);
    // The app's Service before ADR 0010 selected both tracks.
    const both = { virtualServices: [vs], pods, services: [service("web", "shop")] };
    assert.deepEqual(endpoints({ ...both, destinationRules: [destinationRule("web", "shop")] }), [
      ["web-primary-1"],
      ["web-secondary-1"],
    ]);
    // Since ADR 0010 it selects the primary only: the secondary subset has no endpoint.
    assert.deepEqual(
      endpoints({
        ...both,
        services: [service("web", "shop", "primary")],
        destinationRules: [destinationRule("web", "shop")],
      }),
      [["web-primary-1"], []],
    );
    assert.deepEqual(endpoints(both), [null, null], "no DestinationRule: no subset cluster");
    assert.deepEqual(endpoints({ ...both, services: [], destinationRules: [destinationRule("web", "shop")] }), [
      null,
      null,
    ]);
  });

  test("without a route, the app's Service is the cluster; with no Service, there is none", () => {
    const pods = [
      pod("web", "shop", "primary", "web-primary-1", "web:v1"),
      pod("web", "shop", "secondary", "web-secondary-1", "web:v2"),
      pod("web", "shop", "primary", "web-primary-2", "web:v1", false),
    ];
    const [view] = buildAppViews(deploymentApp("web", "shop", null, pods));
    assert.equal(view?.route, null);
    assert.deepEqual(view?.service?.service, { name: "web", namespace: "shop", host: "web.shop.svc.cluster.local" });
    assert.deepEqual(
      view?.service?.endpoints.map((p) => p.name),
      ["web-primary-1"],
    );
    assert.equal(buildAppViews({ virtualServices: [], pods })[0]?.service, null);
  });

  test("ignores objects that are not the controller's children", () => {
    const foreign = pod("web", "shop", "primary", "p", "web:v1");
    foreign.metadata = { ...foreign.metadata, labels: { "canaryapp.io/app": "web", "canaryapp.io/track": "primary" } };
    assert.deepEqual(buildAppViews({ virtualServices: [], pods: [foreign] }), []);
  });
});

describe("the Service a pod's sidecar reports", () => {
  const ref = (name: string): ServiceRef => ({ name, namespace: "shop", host: `${name}.shop.svc.cluster.local` });

  // pilot/pkg/networking/core/cluster_builder.go, addTelemetryMetadata: the inbound cluster lists every
  // Service that selects the pod (pilot/pkg/serviceregistry/kube/controller/util.go, getPodServices, over
  // the informer's list, in no defined order); the sidecar reports the first (istio/proxy
  // source/extensions/filters/http/istio_stats/istio_stats.cc). Here: one of them by a hash of the pod's name.
  test("a pod selected by two Services reports one of them, the same one every time", () => {
    const p = pod("web", "shop", "primary", "web-primary-5d8f7c9b4-abcde", "web:v1");
    const [view] = buildAppViews(deploymentApp("web", "shop", [100, 0], [p]));
    const [reported] = view?.tracks.primary.readyPods ?? [];
    assert.ok(reported?.inboundService);
    assert.ok(["web", "web-primary"].includes(reported.inboundService.name), reported.inboundService.name);
    assert.deepEqual(
      buildAppViews(deploymentApp("web", "shop", [100, 0], [p]))[0]?.tracks.primary.readyPods[0],
      reported,
    );

    // The order the Services are listed in does not matter; which one a pod gets depends on its name only,
    // and across pods both occur.
    assert.deepEqual(
      inboundService("p", [ref("web-primary"), ref("web")]),
      inboundService("p", [ref("web"), ref("web-primary")]),
    );
    const chosen = new Set(
      Array.from({ length: 20 }, (_, i) => inboundService(`web-primary-${i}`, [ref("web"), ref("web-primary")])?.name),
    );
    assert.deepEqual([...chosen].sort(), ["web", "web-primary"]);
  });

  test("a pod only one Service selects reports that one; none, no Service", () => {
    const secondary = pod("web", "shop", "secondary", "web-secondary-1", "web:v2");
    const [view] = buildAppViews(deploymentApp("web", "shop", [0, 100], [secondary]));
    assert.equal(view?.tracks.secondary.readyPods[0]?.inboundService?.name, "web-secondary");
    assert.equal(inboundService("web-secondary-1", []), null);
  });
});

describe("an app routed by an HTTPRoute (GAMMA)", () => {
  const pods = [
    pod("web", "shop", "primary", "web-primary-1", "web:v1"),
    pod("web", "shop", "secondary", "web-secondary-1", "web:v2"),
  ];

  // route_collections.go, HTTPRouteCollection: a route whose parent is the Service `web` routes requests
  // for `web.shop.svc.cluster.local`; its backendRefs are the per-track Services.
  test("the route's weights, destinations and tracks; the caller uses the Service's port", () => {
    const [view] = buildAppViews(gatewayApiApp("web", "shop", [90, 10], pods));
    assert.deepEqual([view?.mesh?.kind, view?.mesh?.objects, view?.port], ["HTTPRoute", ["shop/web"], 80]);
    assert.deepEqual(view?.weights, { primary: 90, secondary: 10 });
    assert.deepEqual(
      view?.route?.map((d) => [d.host, d.track, d.cluster?.endpoints.map((p) => p.name)]),
      [
        ["web-primary.shop.svc.cluster.local", "primary", ["web-primary-1"]],
        ["web-secondary.shop.svc.cluster.local", "secondary", ["web-secondary-1"]],
      ],
    );
    assert.deepEqual(
      view?.tracks.secondary.readyPods.map((p) => p.name),
      ["web-secondary-1"],
    );
    assert.deepEqual(
      view?.httpRoutes.map((r) => r.parents.map((p) => p.denied?.reason ?? "ok")),
      [["ok"]],
    );
  });

  test("the weights are those of the rule a request without headers takes, not the header rule's", () => {
    const [view] = buildAppViews(
      gatewayApiApp("web", "shop", [100, 0], pods, { rules: [headerRule("web", "x-canary", "always")] }),
    );
    assert.deepEqual(view?.weights, { primary: 100, secondary: 0 });
    assert.deepEqual(
      view?.mesh?.rules.map((r) => r.name),
      ["canary-by-header", "primary-secondary"],
    );
  });

  // GEP-1294: GAMMA implementations SHOULD NOT infer any functionality from `hostnames`; Istio routes the
  // Service's host whatever the route's hostnames (route_collections.go).
  test("hostnames play no part in the mesh", () => {
    const snapshot = gatewayApiApp("web", "shop", [90, 10], pods);
    const route = snapshot.httpRoutes?.[0];
    assert.ok(route?.spec);
    route.spec.hostnames = ["somewhere.else.example"];
    assert.deepEqual(buildAppViews(snapshot)[0]?.weights, { primary: 90, secondary: 10 });
  });

  // VirtualService and HTTPRoute for one host: the sidecar keeps one (mesh-routing.ts chooseMeshCandidate).
  test("with a VirtualService too: the HTTPRoute for callers of its namespace, the older for others", () => {
    const vs = virtualServiceByHost("web", "shop", [50, 50]);
    vs.metadata = { ...vs.metadata, creationTimestamp: "2026-01-01T00:00:00Z" };
    const snapshot: ClusterSnapshot = {
      ...gatewayApiApp("web", "shop", [90, 10], pods, { creationTimestamp: "2026-02-01T00:00:00Z" }),
      virtualServices: [vs],
    };
    assert.deepEqual(buildAppViews(snapshot)[0]?.weights, { primary: 90, secondary: 10 });
    assert.deepEqual(buildAppViews(snapshot, { callerNamespace: "loadgen" })[0]?.weights, {
      primary: 50,
      secondary: 50,
    });
  });

  test("a Gateway parent: the app's ingress, with the route's hostnames and the gateway's workload", () => {
    const snapshot: ClusterSnapshot = {
      ...gatewayApiApp("web", "shop", [90, 10], pods, { gateways: [{ namespace: "istio-system", name: "public" }] }),
      gateways: [gateway("public", "istio-system")],
    };
    const [view] = buildAppViews(snapshot);
    assert.deepEqual(
      view?.ingress.map((i) => [
        i.gateway,
        i.workload.name,
        i.workload.namespace,
        i.hosts.map((h) => [h.host, h.port, h.routing?.objects]),
      ]),
      [["istio-system/public", "public-istio", "istio-system", [["web.example.com", 80, ["shop/web"]]]]],
    );
    assert.deepEqual(buildAppViews({ ...snapshot, gateways: [] })[0]?.ingress, [], "no Gateway, no ingress");
  });
});
