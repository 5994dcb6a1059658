import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { deployment, pod, service, virtualService, virtualServiceByHost } from "./fixtures.test-helpers.js";
import { buildAppViews, isPodReady, meshWeights, podImage, type VirtualServiceLike } from "./mesh-view.js";

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

  test("a lone destination without weight takes everything; other subsets are ignored", () => {
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

describe("buildAppViews", () => {
  test("groups the controller's children by app, with Ready pods per track", () => {
    const views = buildAppViews({
      virtualServices: [virtualService("web", "shop", [90, 10])],
      deployments: [deployment("web", "shop", "primary"), deployment("web", "shop", "secondary")],
      pods: [
        pod("web", "shop", "primary", "web-primary-1", "web:v1"),
        pod("web", "shop", "secondary", "web-secondary-1", "web:v2"),
        pod("web", "shop", "secondary", "web-secondary-2", "web:v2", false),
        pod("api", "other", "primary", "api-primary-1", "api:v1"),
      ],
    });
    assert.deepEqual(
      views.map((v) => ({
        app: `${v.namespace}/${v.name}`,
        weights: v.weights,
        primary: v.tracks.primary.readyPods.map((p) => `${p.name}@${p.image}`),
        secondary: v.tracks.secondary.readyPods.map((p) => p.name),
        workloads: [v.tracks.primary.workload, v.tracks.secondary.workload],
      })),
      [
        {
          app: "other/api",
          weights: null,
          primary: ["api-primary-1@api:v1"],
          secondary: [],
          workloads: ["api-primary", "api-secondary"],
        },
        {
          app: "shop/web",
          weights: { primary: 90, secondary: 10 },
          primary: ["web-primary-1@web:v1"],
          secondary: ["web-secondary-1"],
          workloads: ["web-primary", "web-secondary"],
        },
      ],
    );
  });

  test("the workload is the Deployment that selects the pod", () => {
    const d = {
      ...deployment("web", "shop", "secondary"),
      metadata: { name: "web-canary", namespace: "shop", labels: {} },
    };
    const [view] = buildAppViews({
      virtualServices: [],
      deployments: [d],
      pods: [pod("web", "shop", "secondary", "p", "web:v2")],
    });
    assert.equal(view?.tracks.secondary.workload, "web-canary");
  });

  test("the app's Service's Ready pods are where callers outside the mesh land", () => {
    const pods = [
      pod("web", "shop", "primary", "web-primary-1", "web:v1"),
      pod("web", "shop", "secondary", "web-secondary-1", "web:v2"),
      pod("web", "shop", "primary", "web-primary-2", "web:v1", false),
    ];
    const names = (track?: "primary") =>
      buildAppViews({
        virtualServices: [],
        deployments: [],
        pods,
        services: [service("web", "shop", track)],
      })[0]?.servicePods.map((p) => p.name);
    assert.deepEqual(names("primary"), ["web-primary-1"]);
    // The Service before ADR 0010 selected both tracks.
    assert.deepEqual(names(), ["web-primary-1", "web-secondary-1"]);
    // No Service read: nowhere to land.
    assert.deepEqual(buildAppViews({ virtualServices: [], deployments: [], pods })[0]?.servicePods, []);
  });

  test("ignores objects that are not the controller's children", () => {
    const foreign = pod("web", "shop", "primary", "p", "web:v1");
    foreign.metadata = { ...foreign.metadata, labels: { "canaryapp.io/app": "web", "canaryapp.io/track": "primary" } };
    assert.deepEqual(buildAppViews({ virtualServices: [], deployments: [], pods: [foreign] }), []);
  });
});
