import type { AdminClient } from "./admin-client.js";
import { waitFor, type WaitOptions } from "./wait.js";

/** Label carried by every simulated node; tests can select them with `type=kwok`. */
export const FAKE_NODE_LABEL = { key: "type", value: "kwok" } as const;

interface NodeStatusView {
  status?: { conditions?: { type?: string; status?: string }[] };
  spec?: { taints?: { key?: string; effect?: string }[] };
}

/** A Node that kwok plays the kubelet for: large enough that scheduling is never what a test measures. */
export function fakeNode(name: string): object {
  const resources = { cpu: "64", memory: "256Gi", pods: "250", "ephemeral-storage": "1Ti" };
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name,
      annotations: { "node.alpha.kubernetes.io/ttl": "0", "kwok.x-k8s.io/node": "fake" },
      labels: {
        [FAKE_NODE_LABEL.key]: FAKE_NODE_LABEL.value,
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux",
        "kubernetes.io/hostname": name,
        "kubernetes.io/role": "agent",
        "node-role.kubernetes.io/agent": "",
      },
    },
    spec: {},
    status: { allocatable: resources, capacity: resources },
  };
}

/**
 * Creates `count` fake nodes and waits until each is Ready and carries no NoSchedule/NoExecute taint
 * (the node lifecycle controller removes `not-ready` once kwok reports Ready), so pods can land at once.
 */
export async function createFakeNodes(client: AdminClient, count: number, wait: WaitOptions): Promise<string[]> {
  const names = Array.from({ length: count }, (_, i) => `kwok-node-${i}`);
  await Promise.all(
    names.map(async (name) => {
      try {
        await client.expect("POST", "/api/v1/nodes", fakeNode(name));
      } catch (cause) {
        throw new Error(`Node ${name}: create failed`, { cause });
      }
    }),
  );
  await Promise.all(
    names.map((name) =>
      waitFor(
        `Node ${name}: Ready and untainted`,
        async () => {
          const node = (await client.expect("GET", `/api/v1/nodes/${name}`)).body as NodeStatusView;
          const ready = node.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True");
          const tainted = node.spec?.taints?.some((t) => t.effect === "NoSchedule" || t.effect === "NoExecute");
          return ready && !tainted ? true : undefined;
        },
        wait,
      ),
    ),
  );
  return names;
}
