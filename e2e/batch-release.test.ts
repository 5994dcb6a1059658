/**
 * Batch releases (ADR 0014) on the cluster profile: kube-controller-manager rolls the Deployments out, kwok's
 * pods report ready, Prometheus judges each batch. 4 replicas in 2 batches, pause first: 3 old / 1 new, paused,
 * approved with the README's annotation, 0 / 4, the old version's pods gone and the secondary deleted; a failing
 * analysis at batch 1 rolls back to 4 / 0 with the image recorded. The exact replica sequence is asserted, with
 * Istio, with the Gateway API (an HTTPRoute, accepted by a stand-in implementation) and without a mesh
 * (`mesh: none`: no VirtualService or DestinationRule ever exists). At the end, Istio's
 * analyzers (`istioctl analyze`) find no error in the namespace, and no warning that is not explained here.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { CoreV1Api, CustomObjectsApi } from "@kubernetes/client-node";
import { childNames } from "../src/api/meta.js";
import type { CanaryAppStatus, Mesh } from "../src/api/types.js";
import { GATEWAY_API, readHTTPRouteWeights } from "../src/router/gateway-api.js";
import { ISTIO_NETWORKING } from "../src/router/istio.js";
import { fakeDigest } from "./cluster/fake-nodes.js";
import { assertAnalyzeClean, istioAnalyze, printAnalyzeReport } from "./istioctl.js";
import { TEST_METRICS } from "../test/support/exporter.js";
import { eventually, testKubeConfigPath } from "../test/support/kube.js";
import { Kubectl } from "../test/support/kubectl.js";
import {
  appSpec,
  changeImage,
  deployApp,
  image,
  startRolloutEnv,
  type RolloutEnv,
} from "../test/support/rollout-env.js";
import { RolloutRecorder } from "../test/support/rollout-recorder.js";
import { startRouteImplementation, type RouteImplementation } from "../test/support/route-implementation.js";

/** The warnings `istioctl analyze` gives on this file's namespace, and why each is expected on this cluster. */
const ANALYZE_EXPLAINED: Record<string, string> = {};

/** [old, new] pods asked for over both Deployments, one pair per change since `since`. */
function replicaSequence(
  recorder: RolloutRecorder,
  isNew: (image: string) => boolean,
  since: number,
): [number, number][] {
  const inForce = recorder.workloads.filter((w) => w.at <= since).at(-1);
  const later = recorder.workloads.filter((w) => w.at > since);
  const out: [number, number][] = [];
  for (const { value } of [...(inForce !== undefined ? [inForce] : []), ...later]) {
    let [old, fresh] = [0, 0];
    for (const w of [value.primary, value.secondary]) {
      if (w === null) continue;
      if (isNew(w.image)) fresh += w.replicas;
      else old += w.replicas;
    }
    const last = out.at(-1);
    if (last?.[0] !== old || last[1] !== fresh) out.push([old, fresh]);
  }
  return out;
}

/**
 * The replica sequence of 4 replicas in 2 batches with Istio or without, exactly as the arithmetic makes it
 * whatever the order in which kube-controller-manager's pods become available:
 * - batch 1: [4,0] → [4,1] → [3,1], where it waits for approval;
 * - batch 2: [3,4], then the old version shrinks by what the new one has available: [k,4] with k going down
 *   to 0, one or more pods at a time;
 * - the hand-over: only new pods, 4 at least and at most 4 + one batch's size (2), ending at [0,4].
 */
function assertForward(sequence: [number, number][]): void {
  const shown = JSON.stringify(sequence);
  assert.deepEqual(
    sequence.slice(0, 4),
    [
      [4, 0],
      [4, 1],
      [3, 1],
      [3, 4],
    ],
    shown,
  );
  let i = 4;
  let old = 3;
  for (; i < sequence.length && sequence[i]![1] === 4 && sequence[i]![0] < old; i++) old = sequence[i]![0];
  assert.equal(old, 0, `the old version shrinks to 0 beside 4 new: ${shown}`);
  const handover = sequence.slice(i);
  assert.ok(
    handover.every(([o, n]) => o === 0 && n >= 4 && n <= 6),
    `the hand-over runs only new pods, 4 to 6 of them: ${shown}`,
  );
  assert.deepEqual(sequence.at(-1), [0, 4], shown);
}

function untilRest(
  recorder: RolloutRecorder,
  phase: "Healthy" | "Failed",
  generation: number,
): Promise<CanaryAppStatus> {
  return recorder.until(
    `${recorder.name} at rest in ${phase}`,
    (r) => {
      const status = r.app?.status;
      return status !== undefined &&
        (status.observedGeneration ?? 0) >= generation &&
        status.phase === phase &&
        status.canary === undefined &&
        r.currentSecondary() === null
        ? status
        : undefined;
    },
    150_000,
  );
}

describe("batch release on the cluster profile", () => {
  let env: RolloutEnv;
  let kubectl: Kubectl;

  before(async () => {
    env = await startRolloutEnv("batches", { deploymentStandIn: false });
    kubectl = new Kubectl("");
  });
  after(async () => {
    await env.stop();
  });

  // gateway-api: the HTTPRoute's status is written by a stand-in implementation that accepts every generation
  // (the traffic simulator plays Istio's in e2e/routers.test.ts); without one no batch's weight would be routed.
  let implementation: RouteImplementation | undefined;
  after(() => implementation?.stop());

  for (const mesh of ["istio", "gateway-api", "none"] as Mesh[]) {
    const name = `batch-${mesh}`;
    const [v1, v2, v3] = [image(name, "v1"), image(name, "v2"), image(name, "v3")];
    const is = (v: string) => (img: string) => img === v || img.endsWith(`@${fakeDigest(v)}`);
    let recorder: RolloutRecorder;

    /** The app's pods and their images, as the cluster runs them (not being deleted). */
    const podImages = async (): Promise<string[]> => {
      const pods = await env.core.listNamespacedPod({
        namespace: env.namespace,
        labelSelector: `canaryapp.io/app=${name}`,
      });
      return pods.items
        .filter((p) => p.metadata?.deletionTimestamp === undefined)
        .map((p) => p.spec?.containers[0]?.image ?? "");
    };

    /** The names of the app's Istio objects that exist. */
    const istioObjects = async (): Promise<string[]> => {
      const api = env.kc.makeApiClient(CustomObjectsApi);
      const names: string[] = [];
      for (const plural of ["virtualservices", "destinationrules"]) {
        const list = (await api.listNamespacedCustomObject({
          ...ISTIO_NETWORKING,
          plural,
          namespace: env.namespace,
        })) as { items: { metadata: { name: string } }[] };
        names.push(...list.items.filter((o) => o.metadata.name === name).map((o) => `${plural}/${o.metadata.name}`));
      }
      return names;
    };

    test(`${mesh}: deployed with 4 replicas in 2 batches, pause first`, { timeout: 150_000 }, async () => {
      const spec = appSpec(
        env,
        name,
        {},
        { replicas: 4, mesh, strategy: { type: "batches", batches: { count: 2, pause: "first" } } },
      );
      if (mesh === "gateway-api") {
        implementation ??= await startRouteImplementation(env.kc, env.namespace, () => ({ accepted: true }));
      }
      if (mesh === "istio") recorder = await deployApp(env, name, spec);
      else {
        // No route to wait for: Healthy with v1 on the primary is the rest.
        env.exporter.set(TEST_METRICS.errors, name, 0);
        env.exporter.set(TEST_METRICS.latency, name, 120);
        env.exporter.set(TEST_METRICS.requests, name, 1000);
        recorder = await RolloutRecorder.start(env.kc, env.namespace, name);
        env.recorders.push(recorder);
        await env.apps.create({ metadata: { name }, spec });
        await recorder.until(
          `${name} Healthy on v1`,
          (r) => (r.app?.status?.phase === "Healthy" && r.currentPrimary() === v1 ? true : undefined),
          120_000,
        );
      }
      if (mesh === "istio") assert.equal((await istioObjects()).length, 2);
      else assert.deepEqual(await istioObjects(), [], "no VirtualService or DestinationRule");
      if (mesh === "gateway-api") {
        const route: unknown = await env.kc
          .makeApiClient(CustomObjectsApi)
          .getNamespacedCustomObject({ ...GATEWAY_API, plural: "httproutes", namespace: env.namespace, name });
        assert.deepEqual(readHTTPRouteWeights(route), { primary: 100, secondary: 0 }, "the HTTPRoute, accepted");
      }
    });

    test(`${mesh}: 3 old / 1 new, paused; approved; 0 / 4; the old pods gone`, { timeout: 240_000 }, async () => {
      const patched = await changeImage(env, name, v2);
      const since = patched.at - 1;
      const paused = await recorder.until(
        "batch 1 waiting for approval",
        (r) => (r.app?.status?.canary?.approval?.batch === 1 ? structuredClone(r.app.status) : undefined),
        150_000,
      );
      assert.equal(paused.conditions?.find((c) => c.type === "Ready")?.reason, "WaitingForApproval");
      assert.deepEqual(replicaSequence(recorder, is(v2), since).at(-1), [3, 1]);
      await eventually(
        "3 old pods and 1 new one",
        async () => {
          const images = await podImages();
          return images.filter(is(v2)).length === 1 && images.filter((i) => i === v1).length === 3 ? true : undefined;
        },
        { timeoutMs: 60_000 },
      );

      const approved = await kubectl.run([
        ...["-n", env.namespace],
        ...["annotate", "canaryapp", name, "canaryapp.io/approve=now", "--overwrite"],
      ]);
      assert.equal(approved.code, 0, approved.stderr);
      const status = await untilRest(recorder, "Healthy", patched.generation);
      const sequence = replicaSequence(recorder, is(v2), since);
      console.log(`# ${name}: replica sequence ${JSON.stringify(sequence)}`);
      assertForward(sequence);
      assert.equal(status.primaryImage, v2);
      assert.equal(status.batch?.summary, "2/2 finished");
      assert.equal(recorder.currentSecondary(), null, "the secondary Deployment is deleted");
      await eventually(
        "only the new version's 4 pods",
        async () => {
          const images = await podImages();
          return images.length === 4 && images.every(is(v2)) ? true : undefined;
        },
        { timeoutMs: 90_000 },
      );
      if (mesh !== "istio") assert.deepEqual(await istioObjects(), []);
      const service = await env.kc.makeApiClient(CoreV1Api).readNamespacedService({
        name: childNames(name).service,
        namespace: env.namespace,
      });
      const selector = service.spec?.selector ?? {};
      assert.equal(selector["canaryapp.io/track"], mesh === "none" ? undefined : "primary");
    });

    test(
      `${mesh}: a failing analysis at batch 1 rolls back to 4 / 0 and records the image`,
      { timeout: 240_000 },
      async () => {
        env.exporter.set(TEST_METRICS.errors, name, 3);
        const patched = await changeImage(env, name, v3);
        const since = patched.at - 1;
        const status = await untilRest(recorder, "Failed", patched.generation);
        env.exporter.set(TEST_METRICS.errors, name, 0);
        assert.deepEqual(replicaSequence(recorder, is(v3), since), [
          [4, 0],
          [4, 1],
          [3, 1],
          [4, 1],
          [4, 0],
        ]);
        assert.equal(status.failedImages?.[0]?.image, v3);
        assert.equal(status.failedImages?.[0]?.reason, "AnalysisFailed");
        assert.equal(status.primaryImage, v2);
        assert.equal(status.batch?.rollback?.state, "finished");
        await eventually(
          "4 pods of the old version, none of the new",
          async () => {
            const images = await podImages();
            return images.length === 4 && images.every(is(v2)) ? true : undefined;
          },
          { timeoutMs: 90_000 },
        );
        if (mesh !== "istio") assert.deepEqual(await istioObjects(), []);
      },
    );
  }

  // Both apps at rest after their rollback: Istio's analyzers judge what the API server holds, as istiod would.
  test("istioctl analyze on the namespace at the end: no errors, every warning explained", async () => {
    const report = await istioAnalyze(testKubeConfigPath(), env.namespace);
    printAnalyzeReport(report, ANALYZE_EXPLAINED);
    assertAnalyzeClean(report, ANALYZE_EXPLAINED);
  });
});
