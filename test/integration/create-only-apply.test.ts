/**
 * The create-only apply (ADR 0018) against a real kube-apiserver: it creates an object whose name is free with
 * its fields under the controller's Apply manager (so a later apply prunes what it stops setting), and leaves an
 * object that has the name unchanged, whoever made it — for a built-in kind and a custom resource. And the
 * controller's path through it: a new app's children cost no read (a name taken by an object that is not ours
 * is refused and left as it was: test/integration/adoption.test.ts).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { AppsV1Api, type KubernetesObject, type V1Deployment } from "@kubernetes/client-node";
import { FIELD_MANAGER } from "../../src/api/types.js";
import { serverSideApply, serverSideCreate } from "../../src/kube/apply.js";
import { KubeRest } from "../../src/kube/rest.js";
import { SEED_SPEC } from "../../src/resources/fixtures.test-helpers.js";
import { ControllerMetrics } from "../../src/server/metrics.js";
import { runController, type TestController } from "../support/controller.js";
import { canaryApps, createTestNamespace, eventually, testKubeConfig, testKubeConfigPath } from "../support/kube.js";
import { getDeployment, istioObjects } from "../support/workloads.js";

function deployment(namespace: string, name: string, env: Record<string, string>): V1Deployment {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, namespace },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          containers: [
            { name: "app", image: "example/app:1", env: Object.entries(env).map(([k, v]) => ({ name: k, value: v })) },
          ],
        },
      },
    },
  };
}

function managers(object: KubernetesObject): string[] {
  return (object.metadata?.managedFields ?? []).map((m) => `${m.manager ?? ""}/${m.operation ?? ""}`);
}

describe("create-only apply", () => {
  const kc = testKubeConfig();
  const appsApi = kc.makeApiClient(AppsV1Api);
  const api = KubeRest.connect(testKubeConfigPath());
  let namespace: string;

  before(async () => {
    namespace = await createTestNamespace(kc, "create-only");
  });

  test("creates a free name under the Apply manager, so a later apply prunes what it stops setting", async () => {
    const created = await serverSideCreate(api, deployment(namespace, "fresh", { A: "1", B: "2" }));
    assert.ok(created, "created");
    assert.deepEqual(managers(created), [`${FIELD_MANAGER}/Apply`]);
    await serverSideApply(api, deployment(namespace, "fresh", { A: "1" }));
    const stored = await appsApi.readNamespacedDeployment({ namespace, name: "fresh" });
    assert.deepEqual(
      stored.spec?.template.spec?.containers[0]?.env?.map((e) => e.name),
      ["A"],
      "B, no longer applied, is pruned",
    );
  });

  test("leaves a Deployment that has the name unchanged, and says so", async () => {
    await appsApi.createNamespacedDeployment({
      namespace,
      body: deployment(namespace, "theirs", { OWNER: "someone" }),
      fieldManager: "someone",
    });
    const before = await appsApi.readNamespacedDeployment({ namespace, name: "theirs" });
    assert.equal(await serverSideCreate(api, deployment(namespace, "theirs", { OWNER: "canaryapp" })), undefined);
    const after = await appsApi.readNamespacedDeployment({ namespace, name: "theirs" });
    assert.equal(after.metadata?.resourceVersion, before.metadata?.resourceVersion, "not written");
    assert.deepEqual(managers(after), ["someone/Update"]);
  });

  test("the same for a custom resource (VirtualService): created when free, refused when taken", async () => {
    const vs = (name: string, host: string) => ({
      apiVersion: "networking.istio.io/v1",
      kind: "VirtualService",
      metadata: { name, namespace },
      spec: { hosts: [host], http: [{ route: [{ destination: { host } }] }] },
    });
    const first = await serverSideCreate(api, vs("route", "a"));
    assert.ok(first);
    assert.deepEqual(managers(first), [`${FIELD_MANAGER}/Apply`]);
    assert.equal(await serverSideCreate(api, vs("route", "b")), undefined);
    const stored = await istioObjects(kc, namespace).getVirtualService("route");
    assert.deepEqual(stored.spec.hosts, ["a"]);
  });

  describe("the controller", () => {
    let controller: TestController;
    after(async () => controller.stop());

    test("gives a new app its children without reading any of them", async () => {
      const metrics = new ControllerMetrics({ processMetrics: false });
      controller = runController(namespace, [], {}, { metrics });
      await canaryApps(kc, namespace).create({ metadata: { name: "new" }, spec: SEED_SPEC });
      await eventually("the new app's primary", () => getDeployment(kc, namespace, "new-primary"));
      await eventually("the new app's VirtualService", () => istioObjects(kc, namespace).getVirtualService("new"));
      // `…_count{kind="Deployment",verb="apply",result="ok"} 3`: the requests made, by kind and verb.
      const text = await metrics.registry.getSingleMetricAsString("canaryapp_api_request_duration_seconds");
      const requests = [...text.matchAll(/_count\{kind="([^"]+)",verb="([^"]+)",result="[^"]+"\} (\d+)/g)]
        .filter((m) => Number(m[3]) > 0)
        .map((m) => `${m[2] ?? ""} ${m[1] ?? ""}`);
      assert.ok(requests.includes("apply Deployment"), `the children were applied: ${String(requests)}`);
      assert.deepEqual(
        requests.filter((r) => r.startsWith("read ")),
        [],
        "no child is read (ADR 0005's check is made by the create itself)",
      );
    });
  });
});
