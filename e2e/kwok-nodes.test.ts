/**
 * The cluster profile's fake nodes, and the pods on them, stay Ready for as long as the cluster runs: past
 * kube-controller-manager's node monitor grace period (50 s by default), after which a node whose heartbeat
 * is late is marked NotReady and its pods not Ready — which kwok never undoes. Waits until the nodes are a
 * minute old (no wait at all when earlier test files took that long). Runs under `make test-e2e`.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { AppsV1Api, CoreV1Api } from "@kubernetes/client-node";
import { FAKE_NODE_LABEL } from "./cluster/index.js";
import { waitFor } from "./cluster/wait.js";
import { testKubeConfig } from "../test/support/kube.js";

const kc = testKubeConfig();
const core = kc.makeApiClient(CoreV1Api);
const apps = kc.makeApiClient(AppsV1Api);
const namespace = `nodes-${randomBytes(3).toString("hex")}`;
const selector = `${FAKE_NODE_LABEL.key}=${FAKE_NODE_LABEL.value}`;
/** Beyond the default grace period of 50 s, with a heartbeat interval of slack. */
const NODE_AGE_MS = 75_000;

describe("kwok nodes over time", () => {
  before(async () => {
    await core.createNamespace({ body: { metadata: { name: namespace } } });
    const labels = { app: "steady" };
    await apps.createNamespacedDeployment({
      namespace,
      body: {
        metadata: { name: "steady", namespace },
        spec: {
          replicas: 2,
          selector: { matchLabels: labels },
          template: {
            metadata: { labels },
            spec: {
              nodeSelector: { [FAKE_NODE_LABEL.key]: FAKE_NODE_LABEL.value },
              containers: [{ name: "app", image: "example.invalid/steady:1" }],
            },
          },
        },
      },
    });
  });
  after(async () => {
    await core.deleteNamespace({ name: namespace });
  });

  test("nodes and their pods are still Ready once the nodes are over a minute old", { timeout: 180_000 }, async () => {
    const nodes = (await core.listNode({ labelSelector: selector })).items;
    assert.ok(nodes.length >= 2);
    const created = Math.max(...nodes.map((n) => new Date(n.metadata?.creationTimestamp ?? 0).getTime()));
    const wait = created + NODE_AGE_MS - Date.now();
    console.log(
      `# nodes are ${((Date.now() - created) / 1000).toFixed(0)}s old; waiting ${Math.max(0, wait / 1000).toFixed(0)}s`,
    );
    await sleep(Math.max(0, wait));

    for (const node of (await core.listNode({ labelSelector: selector })).items) {
      const ready = node.status?.conditions?.find((c) => c.type === "Ready");
      assert.equal(ready?.status, "True", `node ${node.metadata?.name}: ${ready?.reason} ${ready?.message}`);
      assert.deepEqual(node.spec?.taints ?? [], [], `node ${node.metadata?.name} has no taints`);
    }
    const deployment = await waitFor(
      "Deployment steady: 2 available",
      async () => {
        const d = await apps.readNamespacedDeployment({ namespace, name: "steady" });
        return d.status?.availableReplicas === 2 ? d : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    assert.equal(deployment.status?.readyReplicas, 2);
    const pods = (await core.listNamespacedPod({ namespace, labelSelector: "app=steady" })).items;
    for (const pod of pods) {
      const ready = pod.status?.conditions?.find((c) => c.type === "Ready");
      assert.equal(ready?.status, "True", `pod ${pod.metadata?.name}: ${ready?.reason ?? ""}`);
    }
    const notReady = (await core.listEventForAllNamespaces({ fieldSelector: "reason=NodeNotReady" })).items;
    assert.deepEqual(
      notReady.map((e) => e.message),
      [],
      "no node was ever reported NotReady",
    );
  });
});
