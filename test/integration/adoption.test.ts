/**
 * Adoption safety on the real API server: a user's Service named like a CanaryApp's child is never changed
 * (its selector kept, no owner reference added); the app says so with a condition and an Event that give the
 * one line that hands the object over; other apps are unaffected; after that line, the app takes it over.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { after, before, describe, test } from "node:test";
import { CoreV1Api } from "@kubernetes/client-node";
import { resolveToolchain } from "../../e2e/cluster/toolchain.js";
import { SEED_SPEC } from "../../src/resources/fixtures.test-helpers.js";
import { runController, type TestController } from "../support/controller.js";
import { canaryApps, createTestNamespace, eventually, testKubeConfig, testKubeConfigPath } from "../support/kube.js";
import { getDeployment } from "../support/workloads.js";

const run = promisify(execFile);

describe("adoption safety", () => {
  const kc = testKubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  let namespace = "";
  let controller: TestController;

  before(async () => {
    namespace = await createTestNamespace(kc, "adoption");
    await core.createNamespacedService({
      namespace,
      body: {
        metadata: { name: "shop", labels: { team: "shop" } },
        spec: { selector: { app: "shop-legacy" }, ports: [{ port: 80, targetPort: 8080 }] },
      },
    });
    controller = runController(namespace);
  });
  after(async () => controller.stop());

  test(
    "a user's Service named like the child is left unchanged; the app says how to hand it over",
    { timeout: 60_000 },
    async () => {
      const apps = canaryApps(kc, namespace);
      await apps.create({ metadata: { name: "shop" }, spec: SEED_SPEC });
      await apps.create({ metadata: { name: "other" }, spec: SEED_SPEC });

      const condition = await eventually("ChildrenApplied=False on shop", async () => {
        const found = (await apps.get("shop")).status?.conditions?.find((c) => c.type === "ChildrenApplied");
        return found?.status === "False" ? found : undefined;
      });
      assert.match(condition.message, /Service .*\/shop already exists and it is not ours, so it is left unchanged/);
      const handOver = /kubectl -n \S+ annotate service shop canaryapp\.io\/adopt=shop/.exec(condition.message)?.[0];
      assert.ok(handOver, condition.message);
      // The Warning follows the condition's status write.
      await eventually("a ChildNotOwned Warning about shop", async () => {
        const events = await core.listNamespacedEvent({ namespace, fieldSelector: "involvedObject.name=shop" });
        return events.items.some((e) => e.reason === "ChildNotOwned" && e.type === "Warning") ? true : undefined;
      });

      const service = await core.readNamespacedService({ namespace, name: "shop" });
      assert.deepEqual(service.spec?.selector, { app: "shop-legacy" }, "the user's selector is kept");
      assert.equal(
        service.metadata?.ownerReferences,
        undefined,
        "no owner reference: not garbage-collected with the app",
      );

      await eventually("the other app's children", () => getDeployment(kc, namespace, "other-primary"));
      assert.ok(await core.readNamespacedService({ namespace, name: "other" }));

      // The line the condition gives, run as a user would.
      const kubectl = resolveToolchain().kubectl;
      const [command = "", ...args] = handOver.split(" ");
      assert.equal(command, "kubectl");
      await run(kubectl, args, { env: { ...process.env, KUBECONFIG: testKubeConfigPath() } });
      const taken = await eventually(
        "the Service handed over",
        async () => {
          const s = await core.readNamespacedService({ namespace, name: "shop" });
          return s.metadata?.ownerReferences?.some((r) => r.kind === "CanaryApp" && r.name === "shop") ? s : undefined;
        },
        { timeoutMs: 30_000 },
      );
      // The app's Service selects the primary only (ADR 0010).
      assert.deepEqual(taken.spec?.selector, { "canaryapp.io/app": "shop", "canaryapp.io/track": "primary" });
      await eventually("ChildrenApplied=True", async () =>
        (await apps.get("shop")).status?.conditions?.find((c) => c.type === "ChildrenApplied")?.status === "True"
          ? true
          : undefined,
      );
    },
  );
});
