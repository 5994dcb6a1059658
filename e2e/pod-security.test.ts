/**
 * Pod Security admission still applies to the pods of an app: in a namespace that enforces `restricted`,
 * kube-controller-manager's ReplicaSet controller is refused every pod of the primary, and the app says so
 * on its Ready condition with the cluster's own words (reason PodsRefused), instead of "not available yet".
 * Runs under `make test-e2e`, where the real controller-manager creates the pods.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { CoreV1Api } from "@kubernetes/client-node";
import { SEED_SPEC } from "../src/resources/fixtures.test-helpers.js";
import { runController, type TestController } from "../test/support/controller.js";
import { canaryApps, createTestNamespace, eventually, MERGE_PATCH, testKubeConfig } from "../test/support/kube.js";

describe("Pod Security admission and an app's pods", () => {
  const kc = testKubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  let namespace = "";
  let controller: TestController;

  before(async () => {
    namespace = await createTestNamespace(kc, "restricted");
    await core.patchNamespace(
      {
        name: namespace,
        body: { metadata: { labels: { "pod-security.kubernetes.io/enforce": "restricted" } } },
      },
      MERGE_PATCH,
    );
    controller = runController(namespace);
  });
  after(async () => {
    await controller.stop();
    await core.deleteNamespace({ name: namespace }).catch(() => undefined);
  });

  test(
    "pods refused by Pod Security admission show on the app as Ready=False PodsRefused",
    { timeout: 90_000 },
    async () => {
      const apps = canaryApps(kc, namespace);
      await apps.create({ metadata: { name: "locked" }, spec: SEED_SPEC });
      const ready = await eventually(
        "Ready=False PodsRefused",
        async () => {
          const c = (await apps.get("locked")).status?.conditions?.find((x) => x.type === "Ready");
          return c?.reason === "PodsRefused" ? c : undefined;
        },
        { timeoutMs: 60_000 },
      );
      assert.equal(ready.status, "False");
      assert.match(ready.message, /the primary's pods cannot be created: .*violates PodSecurity "restricted/);
    },
  );
});
