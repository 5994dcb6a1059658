/**
 * The harness can stop kube-apiserver and start it again on the same port, etcd and certificates: what was
 * stored survives, the same kubeconfig reaches it, and the observer API server answers throughout.
 * It runs its own control plane (api profile), so stopping the API server disturbs no other test file.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { CoreV1Api } from "@kubernetes/client-node";
import { startControlPlane, type ControlPlane } from "../../e2e/cluster/index.js";
import { loadKubeConfig } from "../../src/kube/client.js";

describe("control plane: kube-apiserver stopped and started again", () => {
  let cp: ControlPlane;

  before(async () => {
    cp = await startControlPlane({ profile: "api", observer: true, handleSignals: false });
  });
  after(async () => {
    await cp.stop();
  });

  test("the stored objects, the port and the kubeconfig survive a restart", { timeout: 120_000 }, async () => {
    const core = loadKubeConfig(cp.kubeconfigPath).makeApiClient(CoreV1Api);
    assert.ok(cp.observerKubeconfigPath, "the observer's kubeconfig is written");
    const observer = loadKubeConfig(cp.observerKubeconfigPath).makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: "kept" } } });

    await cp.stopApiServer();
    await assert.rejects(fetch(`${cp.server}/readyz`), "the API server's port refuses connections");
    // Written through the observer while the first server is down: the same etcd.
    await observer.createNamespace({ body: { metadata: { name: "during-outage" } } });

    const started = Date.now();
    await cp.startApiServer();
    console.log(`# kube-apiserver ready again ${Date.now() - started} ms after the start`);
    const names = (await core.listNamespace()).items.map((n) => n.metadata?.name);
    assert.ok(names.includes("kept"), "created before the stop");
    assert.ok(names.includes("during-outage"), "created through the observer during the stop");
    await assert.rejects(cp.startApiServer(), /already running/);
  });
});
