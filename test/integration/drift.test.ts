/**
 * Drift repair that sees everything, on the real API server: a fault or a match added by hand to the canary
 * route, and `kubectl rollout pause` on the primary, are repaired, not counted as applied.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { AppsV1Api, CustomObjectsApi } from "@kubernetes/client-node";
import { ISTIO_NETWORKING } from "../../src/router/istio.js";
import { SEED_SPEC } from "../../src/resources/fixtures.test-helpers.js";
import { runController, type TestController } from "../support/controller.js";
import { canaryApps, createTestNamespace, eventually, MERGE_PATCH, testKubeConfig } from "../support/kube.js";
import { getDeployment, istioObjects } from "../support/workloads.js";

const NAME = "web";

describe("drift repair", () => {
  const kc = testKubeConfig();
  const custom = kc.makeApiClient(CustomObjectsApi);
  const appsApi = kc.makeApiClient(AppsV1Api);
  let namespace = "";
  let controller: TestController;

  before(async () => {
    namespace = await createTestNamespace(kc, "drift");
    controller = runController(namespace);
    await canaryApps(kc, namespace).create({ metadata: { name: NAME }, spec: SEED_SPEC });
    await eventually("the VirtualService", () => istioObjects(kc, namespace).getVirtualService(NAME));
  });
  after(async () => controller.stop());

  test("a fault and a match added by hand to the canary route are removed", async () => {
    const vs = await istioObjects(kc, namespace).getVirtualService(NAME);
    const http = structuredClone(vs.spec.http) as Record<string, unknown>[];
    const route = http[0] ?? {};
    route["fault"] = { abort: { httpStatus: 503, percentage: { value: 100 } } };
    route["match"] = [{ headers: { "x-team": { exact: "qa" } } }];
    await custom.patchNamespacedCustomObject(
      { ...ISTIO_NETWORKING, plural: "virtualservices", namespace, name: NAME, body: { spec: { http } } },
      MERGE_PATCH,
    );
    const repaired = await eventually("the route repaired", async () => {
      const now = (await istioObjects(kc, namespace).getVirtualService(NAME)).spec.http[0] as Record<string, unknown>;
      return now["fault"] === undefined && now["match"] === undefined ? now : undefined;
    });
    assert.ok(Array.isArray(repaired["route"]));
  });

  test("kubectl rollout pause on the primary is undone", async () => {
    await appsApi.patchNamespacedDeployment(
      { namespace, name: `${NAME}-primary`, body: { spec: { paused: true } } },
      MERGE_PATCH,
    );
    await eventually("the primary unpaused", async () =>
      (await getDeployment(kc, namespace, `${NAME}-primary`))?.spec?.paused !== true ? true : undefined,
    );
  });
});
