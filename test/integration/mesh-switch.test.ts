/**
 * `spec.mesh: istio` switched to `none`, on the real API server: the VirtualService does not stay at its last
 * split (which would send in-mesh callers to a track a batch release scales away: 503s), and is not deleted
 * first either. It is first made to route everything to the app's Service, which by then selects both
 * tracks; once that route has stood `drainSeconds`, it and the DestinationRule are deleted.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { CoreV1Api, Watch } from "@kubernetes/client-node";
import type { CanaryApp } from "../../src/api/types.js";
import { SEED_SPEC } from "../../src/resources/fixtures.test-helpers.js";
import { HANDOVER_ANNOTATION, ISTIO_NETWORKING } from "../../src/router/istio.js";
import { runController, type TestController } from "../support/controller.js";
import { canaryApps, createTestNamespace, eventually, testKubeConfig } from "../support/kube.js";
import { istioObjects } from "../support/workloads.js";

interface SeenRoute {
  type: string;
  hosts: string[];
  handedOverAt?: string;
  at: number;
}

describe("a mesh switched off", () => {
  const kc = testKubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  let namespace = "";
  let controller: TestController | undefined;

  before(async () => {
    namespace = await createTestNamespace(kc, "mesh-switch");
    controller = runController(namespace);
  });
  after(async () => controller?.stop());

  test("istio → none: the route first sends everything to the app's Service, which selects both tracks; then it and the DestinationRule go", async () => {
    const name = "switched";
    const apps = canaryApps(kc, namespace);
    const spec: CanaryApp["spec"] = {
      ...SEED_SPEC,
      replicas: 4,
      drainSeconds: 2,
      strategy: { type: "batches", batches: { count: 2 } },
    };
    await apps.create({ metadata: { name }, spec });
    const istio = istioObjects(kc, namespace);
    await eventually("the VirtualService", () => istio.getVirtualService(name).catch(() => undefined));
    await eventually("the DestinationRule", () => istio.getDestinationRule(name).catch(() => undefined));

    // Every version of the VirtualService from now on, as the API server tells it.
    const seen: SeenRoute[] = [];
    const watch = await new Watch(kc).watch(
      `/apis/${ISTIO_NETWORKING.group}/${ISTIO_NETWORKING.version}/namespaces/${namespace}/virtualservices`,
      { fieldSelector: `metadata.name=${name}` },
      (
        type,
        object: {
          metadata?: { annotations?: Record<string, string> };
          spec?: { http?: { route?: { destination?: { host?: string } }[] }[] };
        },
      ) => {
        const hosts = (object.spec?.http?.[0]?.route ?? []).map((r) => r.destination?.host ?? "");
        const handedOverAt = object.metadata?.annotations?.[HANDOVER_ANNOTATION];
        seen.push({ type, hosts, ...(handedOverAt !== undefined ? { handedOverAt } : {}), at: Date.now() });
      },
      () => undefined,
    );
    try {
      await apps.patchSpec(name, { mesh: "none", analysis: { requireTraffic: false } });
      const handover = await eventually("the handover route", () => seen.find((s) => s.handedOverAt !== undefined));
      assert.deepEqual(handover.hosts, [`${name}.${namespace}.svc.cluster.local`], "everything to the app's Service");
      const service = await core.readNamespacedService({ namespace, name });
      assert.deepEqual(
        service.spec?.selector,
        { "canaryapp.io/app": name },
        "the app's Service selects both tracks when the route sends everything to it",
      );
      const deleted = await eventually("the VirtualService deleted", () => seen.find((s) => s.type === "DELETED"), {
        timeoutMs: 30_000,
      });
      assert.ok(
        deleted.at - handover.at >= 2000 - 250,
        `deleted ${deleted.at - handover.at} ms after the handover, not before drainSeconds (2 s)`,
      );
      const versions = seen.filter((s) => s.type !== "DELETED");
      assert.ok(
        versions.every(
          (s, i) => s.handedOverAt === undefined || versions.slice(i).every((t) => t.handedOverAt !== undefined),
        ),
        "never back to a split once handed over",
      );
      await eventually("the DestinationRule deleted", async () =>
        (await istio.getDestinationRule(name).catch(() => undefined)) === undefined ? true : undefined,
      );
      console.log(
        `# mesh none: handover route ${handover.at - (seen[0]?.at ?? handover.at)} ms after the first event seen; VirtualService deleted ${deleted.at - handover.at} ms after it`,
      );
    } finally {
      watch.abort();
    }
  });
});
