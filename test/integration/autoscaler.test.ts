/**
 * HPA: with spec.autoscalerRef the controller leaves the primary's replicas to the autoscaler. An autoscaler
 * changes them through the scale subresource, as this test does (the api profile runs no HPA controller);
 * without the reference the controller puts its own size back, which is the fight this avoids.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { AppsV1Api } from "@kubernetes/client-node";
import { SEED_SPEC } from "../../src/resources/fixtures.test-helpers.js";
import { runController, type TestController } from "../support/controller.js";
import { canaryApps, createTestNamespace, eventually, testKubeConfig } from "../support/kube.js";
import { getDeployment } from "../support/workloads.js";

describe("HPA", () => {
  const kc = testKubeConfig();
  const appsApi = kc.makeApiClient(AppsV1Api);
  let namespace = "";
  let controller: TestController;

  before(async () => {
    namespace = await createTestNamespace(kc, "hpa");
    controller = runController(namespace);
  });
  after(async () => controller.stop());

  async function scaleTo(name: string, replicas: number): Promise<void> {
    await appsApi.replaceNamespacedDeploymentScale({
      namespace,
      name,
      body: { metadata: { name, namespace }, spec: { replicas } },
    });
  }

  test(
    "with autoscalerRef, a scale by the autoscaler stays; without, the controller puts its size back",
    { timeout: 60_000 },
    async () => {
      const apps = canaryApps(kc, namespace);
      await apps.create({
        metadata: { name: "scaled" },
        spec: { ...SEED_SPEC, autoscalerRef: { name: "scaled-hpa" } },
      });
      await apps.create({ metadata: { name: "fixed" }, spec: SEED_SPEC });
      await eventually("both primaries", async () =>
        (await getDeployment(kc, namespace, "scaled-primary")) && (await getDeployment(kc, namespace, "fixed-primary"))
          ? true
          : undefined,
      );
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const writesBefore = controller.observer.writes.length;
      await scaleTo("scaled-primary", 5);
      await scaleTo("fixed-primary", 5);

      await eventually("the fixed app's size restored", async () =>
        (await getDeployment(kc, namespace, "fixed-primary"))?.spec?.replicas === SEED_SPEC.replicas ? true : undefined,
      );
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      assert.equal(
        (await getDeployment(kc, namespace, "scaled-primary"))?.spec?.replicas,
        5,
        "the autoscaler's size stays",
      );
      const deploymentApplies = controller.observer.writes
        .slice(writesBefore)
        .filter((w) => w.kind === "Deployment" && w.verb === "apply");
      assert.equal(deploymentApplies.length, 1, "one apply: the fixed app's repair, none for the scaled one");
    },
  );
});
