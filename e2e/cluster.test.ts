/**
 * Proves the cluster profile runs workloads: a Deployment's pods are scheduled onto the kwok nodes, become Ready,
 * and the Deployment becomes Available. Runs under `make test-e2e` (KUBECONFIG set).
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { AppsV1Api, CoreV1Api, type V1Deployment } from "@kubernetes/client-node";
import { FAKE_NODE_LABEL } from "./cluster/index.js";
import { waitFor } from "./cluster/wait.js";
import { testKubeConfig } from "../test/support/kube.js";

const kc = testKubeConfig();
const core = kc.makeApiClient(CoreV1Api);
const apps = kc.makeApiClient(AppsV1Api);

const namespace = `cluster-${randomBytes(3).toString("hex")}`;
const selector = `${FAKE_NODE_LABEL.key}=${FAKE_NODE_LABEL.value}`;

function deployment(name: string, replicas: number): V1Deployment {
  const labels = { app: name };
  return {
    metadata: { name, namespace },
    spec: {
      replicas,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          nodeSelector: { [FAKE_NODE_LABEL.key]: FAKE_NODE_LABEL.value },
          containers: [{ name: "app", image: "example.invalid/shop:1.0.0", ports: [{ containerPort: 8080 }] }],
        },
      },
    },
  };
}

describe("local control plane, cluster profile", () => {
  before(async () => {
    await core.createNamespace({ body: { metadata: { name: namespace } } });
  });
  after(async () => {
    await core.deleteNamespace({ name: namespace });
  });

  test("has at least two Ready kwok nodes", async () => {
    const nodes = (await core.listNode({ labelSelector: selector })).items;
    assert.ok(nodes.length >= 2, `expected >= 2 kwok nodes, found ${nodes.length}`);
    for (const n of nodes) {
      assert.equal(n.metadata?.annotations?.["kwok.x-k8s.io/node"], "fake");
      const ready = n.status?.conditions?.find((c) => c.type === "Ready");
      assert.equal(ready?.status, "True", `node ${n.metadata?.name} is not Ready`);
    }
  });

  test("a Deployment of 2 replicas becomes Available with Ready pods on kwok nodes", async () => {
    const started = Date.now();
    await apps.createNamespacedDeployment({ namespace, body: deployment("shop", 2) });
    const available = await waitFor(
      `Deployment ${namespace}/shop: Available`,
      async () => {
        const d = await apps.readNamespacedDeployment({ name: "shop", namespace });
        const cond = d.status?.conditions?.find((c) => c.type === "Available");
        return cond?.status === "True" && d.status?.availableReplicas === 2 ? d : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 200 },
    );
    assert.equal(available.status?.readyReplicas, 2);
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    console.log(`# Deployment available after ${seconds}s`);

    const kwokNodes = new Set(
      (await core.listNode({ labelSelector: selector })).items.map((n) => n.metadata?.name ?? ""),
    );
    const pods = (await core.listNamespacedPod({ namespace, labelSelector: "app=shop" })).items;
    assert.equal(pods.length, 2);
    for (const pod of pods) {
      const name = pod.metadata?.name ?? "";
      assert.ok(kwokNodes.has(pod.spec?.nodeName ?? ""), `pod ${name} is on ${pod.spec?.nodeName}, not a kwok node`);
      assert.equal(pod.status?.phase, "Running", `pod ${name} phase`);
      assert.equal(pod.status?.conditions?.find((c) => c.type === "Ready")?.status, "True", `pod ${name} Ready`);
      assert.ok(pod.status?.podIP, `pod ${name} has an IP`);
      assert.equal(pod.spec?.serviceAccountName, "default");
    }
  });
});
