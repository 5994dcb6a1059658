/**
 * `spec.mesh: istio` switched to `none`, on the real API server: the VirtualService does not stay at its last
 * split (which would send in-mesh callers to a track a batch release scales away: 503s), and is not deleted
 * first either. It is first made to route everything to the app's Service, which by then selects both
 * tracks; once that route has stood `drainSeconds`, it and the DestinationRule are deleted. Between `istio` and
 * `gateway-api` the same, both ways: the new router's route is written, the old one handed over, then deleted.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { CoreV1Api, Watch } from "@kubernetes/client-node";
import type { CanaryApp } from "../../src/api/types.js";
import { SEED_SPEC } from "../../src/resources/fixtures.test-helpers.js";
import { GATEWAY_API } from "../../src/router/gateway-api.js";
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

  test("istio → gateway-api → istio: each time the old route first sends everything to the app's Service, then goes; the new one is written", async () => {
    const name = "router-switch";
    const apps = canaryApps(kc, namespace);
    await apps.create({ metadata: { name }, spec: { ...SEED_SPEC, drainSeconds: 2 } });
    const istio = istioObjects(kc, namespace);
    await eventually("the VirtualService", () => istio.getVirtualService(name).catch(() => undefined));

    // Every version of both route objects from now on, as the API server tells it.
    const seen: { kind: string; type: string; handedOverAt?: string; at: number }[] = [];
    const follow = (kind: string, path: string) =>
      new Watch(kc).watch(
        path,
        { fieldSelector: `metadata.name=${name}` },
        (type, object: { metadata?: { annotations?: Record<string, string> } }) => {
          const handedOverAt = object.metadata?.annotations?.[HANDOVER_ANNOTATION];
          seen.push({ kind, type, ...(handedOverAt !== undefined ? { handedOverAt } : {}), at: Date.now() });
        },
        () => undefined,
      );
    const watches = await Promise.all([
      follow(
        "VirtualService",
        `/apis/${ISTIO_NETWORKING.group}/${ISTIO_NETWORKING.version}/namespaces/${namespace}/virtualservices`,
      ),
      follow("HTTPRoute", `/apis/${GATEWAY_API.group}/${GATEWAY_API.version}/namespaces/${namespace}/httproutes`),
    ]);
    const switched = async (from: string, to: string) => {
      const since = Date.now();
      const handover = await eventually(`the ${from} handed over`, () =>
        seen.find((s) => s.kind === from && s.at >= since && s.handedOverAt !== undefined),
      );
      const created = await eventually(`the ${to} written`, () =>
        seen.find((s) => s.kind === to && s.at >= since && s.type !== "DELETED" && s.handedOverAt === undefined),
      );
      const deleted = await eventually(
        `the ${from} deleted`,
        () => seen.find((s) => s.kind === from && s.at >= since && s.type === "DELETED"),
        { timeoutMs: 30_000 },
      );
      assert.ok(
        deleted.at - handover.at >= 2000 - 250,
        `${from} deleted ${deleted.at - handover.at} ms after its handover`,
      );
      console.log(
        `# ${from} → ${to}: ${to} written ${created.at - since} ms, ${from} handed over ${handover.at - since} ms, deleted ${deleted.at - since} ms after the switch`,
      );
    };
    try {
      await apps.patchSpec(name, { mesh: "gateway-api" });
      await switched("VirtualService", "HTTPRoute");
      await eventually("the DestinationRule deleted", async () =>
        (await istio.getDestinationRule(name).catch(() => undefined)) === undefined ? true : undefined,
      );
      await apps.patchSpec(name, { mesh: "istio" });
      await switched("HTTPRoute", "VirtualService");
      await eventually("the DestinationRule again", () => istio.getDestinationRule(name).catch(() => undefined));
    } finally {
      for (const w of watches) w.abort();
    }
  });
});
