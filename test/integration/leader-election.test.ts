/**
 * Two controller processes behind leader election on a Lease: only the leader writes; when it is killed the
 * standby takes over within a lease duration; a graceful stop hands the lease over at once.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { AppsV1Api, CoordinationV1Api } from "@kubernetes/client-node";
import { canaryApps, createTestNamespace, eventually, testKubeConfig } from "../support/kube.js";
import { spawnController, type ControllerProcess } from "../support/process.js";
import { getDeployment } from "../support/workloads.js";

const LEASE = "canaryapp-controller";

describe("leader election", () => {
  const kc = testKubeConfig();
  const coordination = kc.makeApiClient(CoordinationV1Api);
  const appsApi = kc.makeApiClient(AppsV1Api);
  let namespace: string;
  const processes: ControllerProcess[] = [];
  const start = (identity: string) => {
    const p = spawnController(
      [`--kubeconfig=${process.env["KUBECONFIG"]}`, `--namespaces=${namespace}`, `--lease-namespace=${namespace}`],
      identity,
    );
    processes.push(p);
    return p;
  };
  const holder = async () =>
    (await coordination.readNamespacedLease({ namespace, name: LEASE }).catch(() => undefined))?.spec?.holderIdentity;
  const byIdentity = (identity: string | undefined) => processes.find((p) => p.identity === identity);

  before(async () => {
    namespace = await createTestNamespace(kc, "leader");
  });
  after(async () => {
    await Promise.all(processes.map((p) => p.kill("SIGKILL")));
  });

  test("only the leader acts; a killed leader is replaced within a lease duration", { timeout: 90_000 }, async () => {
    start("replica-a");
    start("replica-b");
    const first = await eventually("a leader", async () => byIdentity(await holder()));
    const standby = processes.find((p) => p !== first);
    assert.ok(standby);

    await canaryApps(kc, namespace).create({
      metadata: { name: "shop" },
      spec: { image: "example/shop:v1", imageListenPort: 8080, replicas: 1 },
    });
    await eventually("children created", () => getDeployment(kc, namespace, "shop-primary"));
    assert.ok((await first.metric("canaryapp_api_writes_total")) > 0, "the leader wrote the children");
    assert.equal(await standby.metric("canaryapp_api_writes_total"), 0, "the standby wrote nothing");
    assert.equal(await first.metric("canaryapp_leader"), 1);
    assert.equal(await standby.metric("canaryapp_leader"), 0);
    // Both answer /readyz: the standby is healthy and ready to take over, once its caches are synced (the
    // leader may have created the children before the standby, started at the same moment, has listed).
    for (const p of [first, standby]) {
      const port = await p.port();
      await eventually("ready", async () =>
        (await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200 ? true : undefined,
      );
    }

    const killedAt = Date.now();
    await first.kill("SIGKILL");
    await eventually(
      "the standby holds the lease",
      async () => ((await holder()) === standby.identity ? true : undefined),
      {
        timeoutMs: 40_000,
      },
    );
    const tookOver = Date.now() - killedAt;
    // The new leader repairs what the old one no longer can.
    await appsApi.deleteNamespacedDeployment({ namespace, name: "shop-primary" });
    await eventually("primary recreated by the new leader", async () => {
      const d = await getDeployment(kc, namespace, "shop-primary");
      return d && !d.metadata?.deletionTimestamp ? true : undefined;
    });
    console.log(`# standby took over ${tookOver} ms after the leader was killed (lease duration 15 s)`);
    assert.ok((await standby.metric("canaryapp_api_writes_total")) > 0);
  });

  test("a gracefully stopped leader releases the lease at once", { timeout: 60_000 }, async () => {
    const leader = byIdentity(await holder());
    assert.ok(leader);
    const successor = start("replica-c");
    await successor.port();
    const stoppedAt = Date.now();
    const code = await leader.kill("SIGTERM");
    assert.equal(code, 0, "a graceful stop exits 0");
    await eventually(
      "the successor holds the lease",
      async () => ((await holder()) === "replica-c" ? true : undefined),
      {
        timeoutMs: 30_000,
      },
    );
    console.log(`# successor took over ${Date.now() - stoppedAt} ms after SIGTERM to the leader`);
  });
});
