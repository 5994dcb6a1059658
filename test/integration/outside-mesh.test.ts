/**
 * Clients outside the mesh, on the real API server: the app's Service `<name>` selects the primary only,
 * the per-track Services `<name>-primary` / `<name>-secondary` are the route's destinations, and an app
 * converged by a version that selected both tracks with its Service and split by subsets is moved over in
 * an order that never leaves a caller without a destination (ADR 0010).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { CoreV1Api, CustomObjectsApi, Watch } from "@kubernetes/client-node";
import { SEED_SPEC } from "../../src/resources/fixtures.test-helpers.js";
import { ISTIO_NETWORKING } from "../../src/router/istio.js";
import { runController, type TestController } from "../support/controller.js";
import { canaryApps, createTestNamespace, eventually, testKubeConfig } from "../support/kube.js";
import { istioObjects, weightsOf } from "../support/workloads.js";

const labels = (app: string) => ({ "app.kubernetes.io/managed-by": "canaryapp", "canaryapp.io/app": app });
const APP = { "canaryapp.io/app": "" };

describe("clients outside the mesh", () => {
  const kc = testKubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);
  let namespace = "";
  let controller: TestController | undefined;

  before(async () => {
    namespace = await createTestNamespace(kc, "outside-mesh");
  });
  after(async () => controller?.stop());

  test("clients outside the mesh: the app's Service selects the primary only; the route sends to per-track Services", async () => {
    controller ??= runController(namespace);
    const name = "fresh";
    const uid = (await canaryApps(kc, namespace).create({ metadata: { name }, spec: SEED_SPEC })).metadata.uid;
    const selector = async (service: string) =>
      (await core.readNamespacedService({ namespace, name: service }).catch(() => undefined))?.spec?.selector;
    const apex = await eventually("the app's Service", () => selector(name));
    assert.deepEqual(apex, { "canaryapp.io/app": name, "canaryapp.io/track": "primary" });
    for (const track of ["primary", "secondary"]) {
      const service = await core.readNamespacedService({ namespace, name: `${name}-${track}` });
      assert.deepEqual(service.spec?.selector, { "canaryapp.io/app": name, "canaryapp.io/track": track });
      assert.equal(service.metadata?.ownerReferences?.[0]?.uid, uid);
      assert.equal(service.spec?.ports?.[0]?.targetPort, SEED_SPEC.imageListenPort);
    }
    const vs = await eventually("VirtualService", () => istioObjects(kc, namespace).getVirtualService(name));
    assert.deepEqual(
      vs.spec.http[0]?.route.map((r) => [r.destination.host, r.weight]),
      [
        [`${name}-primary.${namespace}.svc.cluster.local`, 100],
        [`${name}-secondary.${namespace}.svc.cluster.local`, 0],
      ],
    );
  });

  test("clients outside the mesh, migration: the Service narrows only once the route sends to the per-track Services", async () => {
    await controller?.stop();
    controller = undefined;
    const name = "legacy";
    const app = await canaryApps(kc, namespace).create({ metadata: { name }, spec: SEED_SPEC });
    const owner = {
      apiVersion: "canaryapp.io/v1alpha1",
      kind: "CanaryApp",
      name,
      uid: app.metadata.uid ?? "",
      controller: true,
      blockOwnerDeletion: true,
    };
    const meta = { name, namespace, labels: labels(name), ownerReferences: [owner] };
    const host = `${name}.${namespace}.svc.cluster.local`;
    // The children as the version before ADR 0010 made them: one Service over both tracks, subsets.
    await core.createNamespacedService({
      namespace,
      body: {
        metadata: meta,
        spec: {
          selector: { ...APP, "canaryapp.io/app": name },
          ports: [{ name: "http", port: 80, targetPort: SEED_SPEC.imageListenPort, protocol: "TCP" }],
        },
      },
    });
    await custom.createNamespacedCustomObject({
      ...ISTIO_NETWORKING,
      plural: "virtualservices",
      namespace,
      body: {
        apiVersion: "networking.istio.io/v1",
        kind: "VirtualService",
        metadata: meta,
        spec: {
          hosts: [name, host],
          gateways: ["mesh"],
          http: [
            {
              name: "primary-secondary",
              route: [
                { destination: { host, subset: "primary", port: { number: 80 } }, weight: 100 },
                { destination: { host, subset: "secondary", port: { number: 80 } }, weight: 0 },
              ],
            },
          ],
        },
      },
    });

    // Every change to the app's Services and route, in the order the API server made them.
    const seen: string[] = [];
    const watch = new Watch(kc);
    const record = (kind: string) => (type: string, object: unknown) => {
      const o = object as {
        metadata?: { name?: string };
        spec?: { selector?: Record<string, string>; http?: { route?: { destination?: { subset?: string } }[] }[] };
      };
      const what =
        kind === "Service"
          ? JSON.stringify(o.spec?.selector)
          : o.spec?.http?.[0]?.route?.[0]?.destination?.subset !== undefined
            ? "subsets"
            : "hosts";
      seen.push(`${type} ${kind}/${o.metadata?.name ?? "?"} ${what}`);
    };
    const ignore = () => undefined;
    const watches = [
      await watch.watch(`/api/v1/namespaces/${namespace}/services`, {}, record("Service"), ignore),
      await watch.watch(
        `/apis/networking.istio.io/v1/namespaces/${namespace}/virtualservices`,
        {},
        record("VirtualService"),
        ignore,
      ),
    ];
    try {
      controller = runController(namespace);
      const narrowed = JSON.stringify({ "canaryapp.io/app": name, "canaryapp.io/track": "primary" });
      await eventually("the app's Service narrowed", () =>
        seen.some((s) => s === `MODIFIED Service/${name} ${narrowed}`) ? true : undefined,
      );
      const index = (prefix: string) => seen.findIndex((s) => s.startsWith(prefix));
      const primaryService = index(`ADDED Service/${name}-primary `);
      const routeMoved = index(`MODIFIED VirtualService/${name} hosts`);
      const apexNarrowed = index(`MODIFIED Service/${name} ${narrowed}`);
      assert.ok(primaryService >= 0 && routeMoved >= 0, seen.join("\n"));
      assert.ok(primaryService < routeMoved && routeMoved < apexNarrowed, seen.join("\n"));
      assert.deepEqual(weightsOf(await istioObjects(kc, namespace).getVirtualService(name)), [100, 0]);
    } finally {
      for (const w of watches) w.abort();
    }
  });
});
