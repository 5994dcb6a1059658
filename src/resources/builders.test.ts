import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { withDefaults } from "../api/defaults.js";
import { istioRouter, readIstioWeights } from "../router/istio.js";
import { noMeshRouter } from "../router/none.js";
import type { Plan } from "../rollout/types.js";
import { desiredChildren, withMetadataLabels } from "./children.js";
import { buildDeployment } from "../workload/deployment.js";
import { buildDestinationRule, buildVirtualService } from "../router/istio.js";
import { buildService, buildTrackService } from "./service.js";
import type { ServiceObject } from "./service.js";
import type { ChildObject } from "./children.js";
import { statefulSetTarget } from "../workload/statefulset.js";
import { seedApp } from "./fixtures.test-helpers.js";
import { withAppliedHash } from "./applied-hash.js";

const app = seedApp();
const spec = withDefaults(app.spec);
const owner = { apiVersion: "canaryapp.io/v1alpha1", kind: "CanaryApp", name: "canaryapp-sample", uid: "0b6c-uid" };

describe("buildDeployment", () => {
  test("primary carries image, replicas, port, owner and track labels", () => {
    const d = buildDeployment(app, spec, "primary", { image: "img:v1", replicas: 2 });
    assert.equal(d.metadata.name, "canaryapp-sample-primary");
    assert.equal(d.metadata.namespace, "demo");
    assert.deepEqual(d.metadata.ownerReferences, [{ ...owner, controller: true, blockOwnerDeletion: true }]);
    assert.equal(d.spec.replicas, 2);
    assert.deepEqual(d.spec.selector.matchLabels, {
      "canaryapp.io/app": "canaryapp-sample",
      "canaryapp.io/track": "primary",
    });
    const container = d.spec.template.spec.containers[0];
    assert.equal(container?.image, "img:v1");
    assert.deepEqual(container?.ports, [{ name: "http", containerPort: 8088, protocol: "TCP" }]);
    assert.equal(d.spec.template.metadata.labels.version, "primary");
    assert.equal(d.spec.template.metadata.labels.app, "canaryapp-sample");
  });

  test("user pod settings reach the pod, but never override the controller's labels", () => {
    const custom = withDefaults({
      ...app.spec,
      pod: {
        labels: { team: "payments", "canaryapp.io/track": "evil" },
        annotations: { "sidecar.istio.io/inject": "true" },
        env: [{ name: "MODE", value: "fast" }],
        resources: { requests: { cpu: "100m" } },
        readinessProbe: { httpGet: { path: "/healthz", port: 8088 } },
        serviceAccountName: "app",
      },
    });
    const d = buildDeployment(app, custom, "secondary", { image: "img:v2", replicas: 1 });
    const labels = d.spec.template.metadata.labels;
    assert.equal(labels.team, "payments");
    assert.equal(labels["canaryapp.io/track"], "secondary");
    assert.deepEqual(d.spec.template.metadata.annotations, { "sidecar.istio.io/inject": "true" });
    const container = d.spec.template.spec.containers[0];
    assert.deepEqual(container?.env, [{ name: "MODE", value: "fast" }]);
    assert.deepEqual(container?.resources, { requests: { cpu: "100m" } });
    assert.deepEqual(container?.readinessProbe, { httpGet: { path: "/healthz", port: 8088 } });
    assert.equal(d.spec.template.spec.serviceAccountName, "app");
  });
});

describe("buildDeployment with an autoscaler", () => {
  test("the primary carries no replicas (the autoscaler owns them); the secondary keeps testReplicas", () => {
    const app = seedApp({ autoscalerRef: { name: "web-hpa" } });
    const spec = withDefaults(app.spec);
    const primary = buildDeployment(app, spec, "primary", { image: "img:v1", replicas: 2 });
    assert.equal("replicas" in primary.spec, false);
    const secondary = buildDeployment(app, spec, "secondary", { image: "img:v2", replicas: 1 });
    assert.equal(secondary.spec.replicas, 1);
  });
});

describe("Service, DestinationRule, VirtualService", () => {
  test("the app's Service targets the listen port and selects the primary only (callers outside the mesh)", () => {
    const s = buildService(app, spec);
    assert.equal(s.metadata.name, "canaryapp-sample");
    assert.deepEqual(s.spec.selector, { "canaryapp.io/app": "canaryapp-sample", "canaryapp.io/track": "primary" });
    assert.equal(s.spec.ports[0]?.port, 80);
    assert.equal(s.spec.ports[0]?.targetPort, 8088);
  });

  test("the DestinationRule has the primary's subset only: a secondary subset of the app's host could select no pod", () => {
    const dr = buildDestinationRule(app);
    assert.equal(dr.spec.host, "canaryapp-sample.demo.svc.cluster.local");
    // The app's Service selects the primary only (ADR 0010): a subset picks among its endpoints.
    assert.deepEqual(
      dr.spec.subsets.map((s) => [s.name, s.labels["canaryapp.io/track"]]),
      [["primary", "primary"]],
    );
  });

  test("the VirtualService names each host once as Istio resolves it (a short name is <name>.<namespace>.svc.cluster.local)", () => {
    const withHosts = seedApp({
      service: {
        port: 80,
        hosts: ["canaryapp-sample", "shop.example.com", "canaryapp-sample.demo.svc.cluster.local", "other"],
        gateways: [],
      },
    });
    const vs = buildVirtualService(withHosts, withDefaults(withHosts.spec), { primary: 100, secondary: 0 });
    assert.deepEqual(vs.spec.hosts, ["canaryapp-sample.demo.svc.cluster.local", "shop.example.com", "other"]);
  });

  test("the VirtualService is bound to the mesh, answers the app's host (short names resolve to it), and splits by weight", () => {
    const vs = buildVirtualService(app, spec, { primary: 70, secondary: 30 });
    assert.deepEqual(vs.spec.hosts, ["canaryapp-sample.demo.svc.cluster.local"]);
    assert.deepEqual(vs.spec.gateways, ["mesh"]);
    assert.deepEqual(readIstioWeights(vs), { primary: 70, secondary: 30 });
  });

  test("the route's destinations are the per-track Services, which select one track each", () => {
    const vs = buildVirtualService(app, spec, { primary: 70, secondary: 30 });
    assert.deepEqual(
      vs.spec.http[0]?.route.map((r) => [r.destination.host, r.weight]),
      [
        ["canaryapp-sample-primary.demo.svc.cluster.local", 70],
        ["canaryapp-sample-secondary.demo.svc.cluster.local", 30],
      ],
    );
    for (const track of ["primary", "secondary"] as const) {
      const s = buildTrackService(app, spec, track);
      assert.equal(s.metadata.name, `canaryapp-sample-${track}`);
      assert.deepEqual(s.spec.selector, { "canaryapp.io/app": "canaryapp-sample", "canaryapp.io/track": track });
      assert.equal(s.spec.ports[0]?.targetPort, 8088);
    }
  });

  test("extra gateways and hosts are added once", () => {
    const withGateway = withDefaults({
      ...app.spec,
      service: { hosts: ["app.example.com", "canaryapp-sample"], gateways: ["istio-system/public", "mesh"] },
    });
    const vs = buildVirtualService(app, withGateway, { primary: 100, secondary: 0 });
    assert.deepEqual(vs.spec.hosts, ["canaryapp-sample.demo.svc.cluster.local", "app.example.com"]);
    assert.deepEqual(vs.spec.gateways, ["mesh", "istio-system/public"]);
  });
});

describe("readIstioWeights", () => {
  const route = (weights: [string, number | undefined][]) => ({
    spec: {
      http: [
        {
          name: "primary-secondary",
          route: weights.map(([subset, weight]) => ({
            destination: { subset },
            ...(weight === undefined ? {} : { weight }),
          })),
        },
      ],
    },
  });
  const cases: [string, unknown, unknown][] = [
    ["missing object", undefined, null],
    ["no http routes", { spec: {} }, null],
    ["one destination", route([["primary", 100]]), null],
    [
      "weights not summing to 100",
      route([
        ["primary", 90],
        ["secondary", 20],
      ]),
      null,
    ],
    [
      "missing weight counts as 0",
      route([
        ["primary", 100],
        ["secondary", undefined],
      ]),
      { primary: 100, secondary: 0 },
    ],
    [
      "hand edited split",
      route([
        ["primary", 40],
        ["secondary", 60],
      ]),
      { primary: 40, secondary: 60 },
    ],
  ];
  for (const [name, input, expected] of cases) {
    test(name, () => assert.deepEqual(readIstioWeights(input), expected));
  }
});

describe("desiredChildren", () => {
  const basePlan: Plan = {
    primary: { image: "img:v1", replicas: 2 },
    secondary: { image: "img:v2", replicas: 1 },
    weights: { primary: 90, secondary: 10 },
    status: {},
    events: [],
    tellChildUpdates: true,
    removeAnnotations: [],
  };

  test("mesh none: no VirtualService or DestinationRule; the app's Service selects both tracks", () => {
    const none = { ...app, spec: { ...app.spec, mesh: "none" as const } };
    const { apply } = desiredChildren(none, withDefaults(none.spec), basePlan, noMeshRouter);
    assert.deepEqual(
      apply.map((o) => `${o.kind}/${o.metadata.name}`),
      [
        "Service/canaryapp-sample-primary",
        "Service/canaryapp-sample-secondary",
        "Service/canaryapp-sample",
        "Deployment/canaryapp-sample-primary",
        "Deployment/canaryapp-sample-secondary",
      ],
    );
    const service = apply.find((o) => o.metadata.name === "canaryapp-sample") as ReturnType<typeof buildService>;
    assert.deepEqual(service.spec.selector, { "canaryapp.io/app": "canaryapp-sample" });
    const split = noMeshRouter.splitByPods?.(
      { image: "a", replicas: 3, available: true, readyReplicas: 3 },
      { image: "b", replicas: 1, available: true, readyReplicas: 1 },
    );
    assert.deepEqual(split, { primary: 75, secondary: 25 }, "the split is the ready pods' share");
  });

  test("mesh switched from istio to none: the VirtualService first routes everything to the app's Service, after it selects both tracks; then it and the DestinationRule go", () => {
    const none = { ...app, spec: { ...app.spec, mesh: "none" as const } };
    const at = "2026-11-27T12:00:00.000Z";
    const handing = desiredChildren(
      none,
      withDefaults(none.spec),
      { ...basePlan, routeHandover: { kind: "handOver", of: "VirtualService", at } },
      noMeshRouter,
    );
    assert.deepEqual(
      handing.apply.map((o) => `${o.kind}/${o.metadata.name}`),
      [
        "Service/canaryapp-sample-primary",
        "Service/canaryapp-sample-secondary",
        "Service/canaryapp-sample",
        "VirtualService/canaryapp-sample",
        "Deployment/canaryapp-sample-primary",
        "Deployment/canaryapp-sample-secondary",
      ],
    );
    const vs = handing.apply.find((o) => o.kind === "VirtualService") as ReturnType<typeof buildVirtualService>;
    assert.deepEqual(vs.spec.http, [
      {
        name: "handover",
        route: [
          { destination: { host: "canaryapp-sample.demo.svc.cluster.local", port: { number: 80 } }, weight: 100 },
        ],
      },
    ]);
    const istioLeft = noMeshRouter.leftovers?.find((l) => l.kind === "VirtualService");
    assert.deepEqual(istioLeft?.read(vs), { handedOverAt: at });
    assert.deepEqual(handing.remove, []);
    assert.deepEqual(
      istioLeft?.read(buildVirtualService(app, spec, { primary: 90, secondary: 10 })),
      {},
      "a split is not a handover",
    );

    const removing = desiredChildren(
      none,
      withDefaults(none.spec),
      { ...basePlan, routeHandover: { kind: "remove", of: "VirtualService" } },
      noMeshRouter,
    );
    assert.ok(!removing.apply.some((o) => o.kind === "VirtualService"));
    assert.deepEqual(
      removing.remove.filter((r) => r.apiVersion.startsWith("networking.istio.io")).map((r) => `${r.kind}/${r.name}`),
      ["VirtualService/canaryapp-sample", "DestinationRule/canaryapp-sample"],
    );
  });

  test("applies the per-track Services before the routes, the app's Service after them, then the Deployments, and removes nothing while a secondary is wanted", () => {
    const { apply, remove } = desiredChildren(app, spec, basePlan, istioRouter);
    assert.deepEqual(
      apply.map((o) => `${o.kind}/${o.metadata.name}`),
      [
        "Service/canaryapp-sample-primary",
        "Service/canaryapp-sample-secondary",
        "DestinationRule/canaryapp-sample",
        "VirtualService/canaryapp-sample",
        // Narrowed to the primary only once the route sends to the per-track Services (ADR 0010), and
        // there before the first pod, for callers outside the mesh.
        "Service/canaryapp-sample",
        "Deployment/canaryapp-sample-primary",
        "Deployment/canaryapp-sample-secondary",
      ],
    );
    assert.deepEqual(remove, []);
  });

  test("a rollback whose route write is refused: the secondary's Service selects the primary's pods", () => {
    const plan: Plan = { ...basePlan, secondaryServiceSelects: "primary" };
    const selectorOf = (apply: ChildObject[], name: string) =>
      (apply.find((o) => o.kind === "Service" && o.metadata.name === name) as ServiceObject).spec.selector;
    const { apply } = desiredChildren(app, spec, plan, istioRouter);
    assert.deepEqual(selectorOf(apply, "canaryapp-sample-secondary"), selectorOf(apply, "canaryapp-sample-primary"));
    const stateful = seedApp({ replicas: 3, workload: { kind: "StatefulSet" } });
    const shared = desiredChildren(stateful, withDefaults(stateful.spec), plan, istioRouter, statefulSetTarget).apply;
    assert.deepEqual(selectorOf(shared, "canaryapp-sample-secondary"), selectorOf(shared, "canaryapp-sample-primary"));
    const usual = desiredChildren(app, spec, basePlan, istioRouter).apply;
    assert.notDeepEqual(selectorOf(usual, "canaryapp-sample-secondary"), selectorOf(usual, "canaryapp-sample-primary"));
  });

  describe("with a StatefulSet", () => {
    const stateful = seedApp({ replicas: 3, workload: { kind: "StatefulSet" } });
    const statefulSpec = withDefaults(stateful.spec);
    const selectors = (apply: ChildObject[]) =>
      Object.fromEntries(
        apply.flatMap((o) =>
          o.kind === "Service" ? [[o.metadata.name, Object.keys((o as ServiceObject).spec.selector).sort()]] : [],
        ),
      );
    const cases: [string, Plan, string[] | null][] = [
      ["a test: each Service selects its track's revision", basePlan, ["canaryapp.io/app", "canaryapp.io/revision"]],
      [
        "no test",
        { ...basePlan, secondary: null, weights: { primary: 100, secondary: 0 } },
        ["canaryapp.io/app", "canaryapp.io/revision"],
      ],
      [
        "a promotion: every pod of the app",
        {
          ...basePlan,
          status: {
            canary: { image: "img:v2", stage: "Promoting", step: 0, startedAt: "", stepStartedAt: "", failedChecks: 0 },
          },
        },
        ["canaryapp.io/app"],
      ],
    ];
    for (const [name, plan, selector] of cases) {
      test(`the same order with one StatefulSet, nothing removed: ${name}`, () => {
        const { apply, remove } = desiredChildren(stateful, statefulSpec, plan, istioRouter, statefulSetTarget);
        assert.deepEqual(
          apply.map((o) => `${o.kind}/${o.metadata.name}`),
          [
            "Service/canaryapp-sample-primary",
            "Service/canaryapp-sample-secondary",
            "DestinationRule/canaryapp-sample",
            "VirtualService/canaryapp-sample",
            "Service/canaryapp-sample",
            "StatefulSet/canaryapp-sample",
          ],
        );
        assert.deepEqual(remove, []);
        for (const keys of Object.values(selectors(apply))) assert.deepEqual(keys, selector);
      });
    }
  });

  test("without a secondary, the route is applied and then the secondary removed", () => {
    const { apply, remove } = desiredChildren(
      app,
      spec,
      { ...basePlan, secondary: null, weights: { primary: 100, secondary: 0 } },
      istioRouter,
    );
    assert.ok(!apply.some((o) => o.kind === "Deployment" && o.metadata.name === "canaryapp-sample-secondary"));
    assert.deepEqual(remove, [
      { apiVersion: "apps/v1", kind: "Deployment", namespace: "demo", name: "canaryapp-sample-secondary" },
    ]);
  });
});

describe("withMetadataLabels (the share label of a sharded replica)", () => {
  const share = { "canaryapp.io/share": "3-of-32" };

  test("labels the object's metadata of every child, never a pod template", () => {
    const plan: Plan = {
      primary: { image: "img:v1", replicas: 2 },
      secondary: { image: "img:v2", replicas: 1 },
      weights: { primary: 90, secondary: 10 },
      status: {},
      events: [],
      tellChildUpdates: true,
      removeAnnotations: [],
    };
    for (const child of desiredChildren(app, spec, plan, istioRouter).apply) {
      const labelled = withMetadataLabels(child, share);
      const labels = (labelled.metadata as { labels?: Record<string, string> }).labels ?? {};
      assert.equal(labels["canaryapp.io/share"], "3-of-32", `${child.kind} ${child.metadata.name}`);
      assert.equal(labels["canaryapp.io/app"], "canaryapp-sample", `${child.kind}: the builder's labels stay`);
      const template = (labelled as { spec?: { template?: { metadata?: { labels?: Record<string, string> } } } }).spec
        ?.template;
      assert.equal(template?.metadata?.labels?.["canaryapp.io/share"], undefined, `${child.kind}: not in the template`);
      assert.equal(
        (child.metadata as { labels?: Record<string, string> }).labels?.["canaryapp.io/share"],
        undefined,
        "the planned child is not changed",
      );
    }
  });

  test("no labels: the same child, so the applied hash of an unsharded controller does not change", () => {
    const d = buildDeployment(app, spec, "primary", { image: "img:v1", replicas: 2 });
    assert.equal(withMetadataLabels(d, {}), d);
    assert.notEqual(
      withAppliedHash(withMetadataLabels(d, share)).metadata.annotations?.["canaryapp.io/applied-hash"],
      withAppliedHash(d).metadata.annotations?.["canaryapp.io/applied-hash"],
      "a label added changes the hash: the child is applied once more, with it",
    );
  });
});
