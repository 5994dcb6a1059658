/**
 * StatefulSet canaries (issue 15, ADR 0015) on the cluster profile: kube-controller-manager's StatefulSet and
 * PersistentVolume controllers, the scheduler, kwok pods, a real Prometheus. Each app runs three replicas on
 * pre-created PersistentVolumes; a test of one pod runs the new image on the highest ordinal, on that
 * ordinal's own claim. Before, during and after every test each pod `<app>-N` mounts `data-<app>-N`, bound
 * to the volume made for it, and no claim is ever deleted or replaced.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { AppsV1Api, type CoreV1Api } from "@kubernetes/client-node";
import type { CanaryAppSpec, CanaryAppStatus } from "../src/api/types.js";
import { pinImage } from "../src/rollout/image-ref.js";
import { fakeDigest } from "./cluster/fake-nodes.js";
import { appSpec, changeImage, image, startRolloutEnv, type RolloutEnv } from "../test/support/rollout-env.js";
import { TEST_METRICS } from "../test/support/exporter.js";
import { eventually } from "../test/support/kube.js";

const REPLICAS = 3;
const ORDINALS = [0, 1, 2];
const CANARY_ORDINAL = 2;

interface PodView {
  image: string;
  ready: boolean;
  claim: string | undefined;
  revision: string | undefined;
}

interface ClaimView {
  uid: string;
  volume: string;
  phase: string;
}

/** What the pods and claims of one app are, by name. */
interface Snapshot {
  pods: Map<string, PodView>;
  claims: Map<string, ClaimView>;
}

describe("StatefulSet canaries keep every pod on its own volume", () => {
  let env: RolloutEnv;
  let core: CoreV1Api;
  let apps: AppsV1Api;
  const volumes: string[] = [];
  /** Each claim's uid when first bound, by claim name: a claim deleted and made again would have another. */
  const firstClaims = new Map<string, string>();

  before(async () => {
    env = await startRolloutEnv("sts", { deploymentStandIn: false });
    core = env.core;
    apps = env.kc.makeApiClient(AppsV1Api);
  });
  after(async () => {
    await env.stop();
    for (const volume of volumes) await core.deletePersistentVolume({ name: volume }).catch(() => undefined);
  });

  const volumeName = (app: string, ordinal: number) => `${env.namespace}-${app}-${ordinal}`;
  const claimName = (app: string, ordinal: number) => `data-${app}-${ordinal}`;

  /** One hostPath volume per ordinal, reserved for that ordinal's claim (claimRef), so the binding is known. */
  async function createVolumes(app: string): Promise<void> {
    for (const ordinal of ORDINALS) {
      const name = volumeName(app, ordinal);
      volumes.push(name);
      await core.createPersistentVolume({
        body: {
          metadata: { name },
          spec: {
            capacity: { storage: "1Gi" },
            accessModes: ["ReadWriteOnce"],
            storageClassName: "manual",
            persistentVolumeReclaimPolicy: "Retain",
            hostPath: { path: `/tmp/${name}` },
            claimRef: { namespace: env.namespace, name: claimName(app, ordinal) },
          },
        },
      });
    }
  }

  function statefulSpec(app: string, analysis: CanaryAppSpec["analysis"] = {}): CanaryAppSpec {
    return appSpec(
      env,
      app,
      { stepWeights: [10, 20, 30, 40, 50], ...analysis },
      {
        replicas: REPLICAS,
        testReplicas: 1,
        workload: {
          kind: "StatefulSet",
          volumeClaimTemplates: [{ name: "data", mountPath: "/data", storage: "1Gi", storageClassName: "manual" }],
        },
      },
    );
  }

  async function snapshot(app: string): Promise<Snapshot> {
    const pods = await core.listNamespacedPod({ namespace: env.namespace, labelSelector: `canaryapp.io/app=${app}` });
    const claims = await core.listNamespacedPersistentVolumeClaim({ namespace: env.namespace });
    return {
      pods: new Map(
        pods.items
          .filter((p) => p.metadata?.deletionTimestamp === undefined)
          .map((p) => [
            p.metadata?.name ?? "",
            {
              image: p.spec?.containers.find((c) => c.name === "app")?.image ?? "",
              ready: (p.status?.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True"),
              claim: p.spec?.volumes?.find((v) => v.name === "data")?.persistentVolumeClaim?.claimName,
              revision: p.metadata?.labels?.["canaryapp.io/revision"],
            },
          ]),
      ),
      claims: new Map(
        claims.items
          .filter((c) => (c.metadata?.name ?? "").startsWith(`data-${app}-`))
          .map((c) => [
            c.metadata?.name ?? "",
            { uid: c.metadata?.uid ?? "", volume: c.spec?.volumeName ?? "", phase: c.status?.phase ?? "" },
          ]),
      ),
    };
  }

  /**
   * Waits until pod `<app>-N` runs `images[N]`, ready, for every ordinal, and returns the snapshot after
   * asserting the binding: `<app>-N` mounts `data-<app>-N`, bound to the volume made for N, with the uid
   * the claim had when first seen.
   */
  async function untilPods(app: string, images: string[], what: string): Promise<Snapshot> {
    const seen = await eventually(
      `${app}: ${what}`,
      async () => {
        const s = await snapshot(app);
        const all = ORDINALS.every((n) => {
          const pod = s.pods.get(`${app}-${n}`);
          return pod !== undefined && pod.ready && pod.image === images[n];
        });
        return all && s.pods.size === REPLICAS ? s : undefined;
      },
      { timeoutMs: 90_000, intervalMs: 200 },
    );
    assertBindings(app, seen, what);
    return seen;
  }

  function assertBindings(app: string, s: Snapshot, when: string): void {
    for (const n of ORDINALS) {
      const claim = claimName(app, n);
      assert.equal(s.pods.get(`${app}-${n}`)?.claim, claim, `${when}: ${app}-${n} mounts ${claim}`);
      const view = s.claims.get(claim);
      assert.equal(view?.phase, "Bound", `${when}: ${claim} is bound`);
      assert.equal(view?.volume, volumeName(app, n), `${when}: ${claim} is bound to the volume made for ordinal ${n}`);
      const first = firstClaims.get(claim);
      if (first === undefined) firstClaims.set(claim, view?.uid ?? "");
      else
        assert.equal(view?.uid, first, `${when}: ${claim} is the claim first bound (never deleted, never made again)`);
    }
    assert.equal(
      [...s.claims.keys()].filter((c) => c.startsWith(`data-${app}-`)).length,
      REPLICAS,
      `${when}: three claims`,
    );
  }

  function status(app: string): Promise<CanaryAppStatus> {
    return env.apps.get(app).then((a) => a.status ?? {});
  }

  async function untilStatus(
    app: string,
    what: string,
    check: (s: CanaryAppStatus, generation: number) => boolean,
    timeoutMs = 90_000,
  ): Promise<CanaryAppStatus> {
    return eventually(
      `${app}: ${what}`,
      async () => {
        const a = await env.apps.get(app);
        const s = a.status ?? {};
        return (s.observedGeneration ?? 0) >= (a.metadata.generation ?? 0) && check(s, a.metadata.generation ?? 0)
          ? s
          : undefined;
      },
      { timeoutMs, intervalMs: 200 },
    );
  }

  async function deploy(app: string, spec: CanaryAppSpec): Promise<void> {
    env.exporter.set(TEST_METRICS.errors, app, 0);
    env.exporter.set(TEST_METRICS.latency, app, 120);
    env.exporter.set(TEST_METRICS.requests, app, 1000);
    await createVolumes(app);
    await env.apps.create({ metadata: { name: app }, spec });
    const v1 = image(app, "v1");
    await untilStatus(app, "Healthy on v1", (s) => s.phase === "Healthy" && s.primaryImage === v1);
    await untilPods(app, [v1, v1, v1], "before any test: all three on v1");
  }

  /** The image every pod runs once `tag` is promoted: the reference pinned to the digest its pods ran. */
  const promoted = (app: string, tag: string): string => pinImage(image(app, tag), fakeDigest(image(app, tag)));

  async function assertTestRunning(app: string, stable: string, canary: string): Promise<void> {
    const during = await untilPods(
      app,
      [stable, stable, canary],
      `during the test: ${app}-${CANARY_ORDINAL} on the new image`,
    );
    const revisions = new Set(ORDINALS.map((n) => during.pods.get(`${app}-${n}`)?.revision));
    assert.equal(revisions.size, 2, "two revisions run: the stable one on ordinals 0 and 1, the tested one on 2");
    const s = await status(app);
    assert.equal(s.workload?.kind, "StatefulSet");
    assert.equal(s.workload?.stableReplicas, 2);
    assert.equal(s.workload?.canaryReplicas, 1);
    assert.ok(s.workload?.stableRevision !== undefined && s.workload.canaryRevision !== undefined);
    assert.notEqual(s.workload.stableRevision, s.workload.canaryRevision);
    const sts = await apps.readNamespacedStatefulSet({ namespace: env.namespace, name: app });
    assert.equal(sts.spec?.updateStrategy?.rollingUpdate?.partition, REPLICAS - 1);
  }

  test(
    "automatic promotion, then a failing analysis rolled back, on the same claims",
    { timeout: 300_000 },
    async () => {
      const app = "ledger";
      await deploy(app, statefulSpec(app));
      const v1 = image(app, "v1");
      const v2 = image(app, "v2");

      const patched = await changeImage(env, app, v2);
      await untilStatus(
        app,
        "testing v2 with traffic",
        (s) => s.canary?.image === v2 && (s.weights?.secondary ?? 0) > 0,
      );
      const firstWeight = Date.now() - patched.at;
      await assertTestRunning(app, v1, v2);

      const healthy = await untilStatus(
        app,
        "v2 promoted",
        (s, g) => g >= patched.generation && s.phase === "Healthy" && s.primaryImage === v2 && s.canary === undefined,
      );
      assert.equal(healthy.lastPromotion?.image, v2);
      const all = promoted(app, "v2");
      await untilPods(app, [all, all, all], "after the promotion: all three on v2");
      const done = await untilStatus(app, "one revision", (s) => s.workload?.canaryReplicas === 0);
      assert.equal(done.workload?.stableReplicas, REPLICAS);
      console.log(
        `# ${app}: image patch → first weight on ${app}-${CANARY_ORDINAL} ${firstWeight} ms; → all three on the promoted build ${Date.now() - patched.at} ms (5 steps of 2 s)`,
      );

      env.exporter.set(TEST_METRICS.errors, app, 5);
      const v3 = image(app, "v3");
      await changeImage(env, app, v3);
      // The tested ordinal runs v3 on its own claim until the route is drained (drainSeconds), then gets v2 back.
      await untilPods(app, [all, all, v3], `during the failing test: ${app}-${CANARY_ORDINAL} on v3`);
      const failed = await untilStatus(app, "v3 rolled back", (s) => s.phase === "Failed" && s.canary === undefined);
      assert.equal(failed.failedImages?.[0]?.image, v3);
      assert.equal(failed.primaryImage, v2);
      await untilPods(app, [all, all, all], "after the rollback: all three on v2 again");
      const sts = await apps.readNamespacedStatefulSet({ namespace: env.namespace, name: app });
      assert.equal(sts.spec?.updateStrategy?.rollingUpdate?.partition, 0);
    },
  );

  test("manual promotion, then a failing analysis rolled back, on the same claims", { timeout: 300_000 }, async () => {
    const app = "journal";
    await deploy(app, statefulSpec(app, { manualPromotion: true }));
    const v1 = image(app, "v1");
    const v2 = image(app, "v2");

    await changeImage(env, app, v2);
    await untilStatus(app, "v2 waiting for promotion", (s) => s.canary?.stage === "AwaitingPromotion");
    await assertTestRunning(app, v1, v2);

    await env.apps.annotate(app, { "canaryapp.io/promote": "now" });
    await untilStatus(
      app,
      "v2 promoted",
      (s) => s.phase === "Healthy" && s.primaryImage === v2 && s.canary === undefined,
    );
    const all = promoted(app, "v2");
    await untilPods(app, [all, all, all], "after the promotion: all three on v2");

    env.exporter.set(TEST_METRICS.errors, app, 5);
    const v3 = image(app, "v3");
    await changeImage(env, app, v3);
    // The tested ordinal runs v3 on its own claim until the route is drained (drainSeconds), then gets v2 back.
    await untilPods(app, [all, all, v3], `during the failing test: ${app}-${CANARY_ORDINAL} on v3`);
    const failed = await untilStatus(app, "v3 rolled back", (s) => s.phase === "Failed" && s.canary === undefined);
    assert.equal(failed.failedImages?.[0]?.image, v3);
    await untilPods(app, [all, all, all], "after the rollback: all three on v2 again");
  });
});
