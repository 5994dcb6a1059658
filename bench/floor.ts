/**
 * The floor of the scale bench: a plain script doing the work the controller does for new apps, with no
 * controller at all. It creates the same CanaryApps, builds each app's children with the controller's own
 * planner and builders, applies them server-side in the planner's order and writes the planned status once,
 * with 20 requests in flight (each of 20 lanes takes the next app when it is done with one). No cache, no
 * reads, no Events: what is left is what the API server must do, at a client's ordinary concurrency.
 */
import type { CanaryApp, CanaryAppStatus } from "../src/api/types.js";
import { clusterWriter } from "../src/kube/cluster.js";
import type { PooledKubeConfig } from "../src/kube/client.js";
import { CHILD_KINDS } from "../src/kube/kinds.js";
import { KubeRest } from "../src/kube/rest.js";
import { desiredChildren, type ChildObject } from "../src/resources/children.js";
import { withAppliedHash } from "../src/resources/applied-hash.js";
import { startPlan } from "../src/rollout/planner.js";
import { istioRouter } from "../src/router/istio.js";
import { deploymentTarget } from "../src/workload/deployment.js";
import { observe } from "../src/canary/observe.js";
import { canaryApps } from "../test/support/kube.js";
import { benchApp, IN_FLIGHT } from "./apps.js";

/**
 * What the controller's first reconcile of a new app writes, by its own planner and builders: the children as
 * applied (with their applied hash, in the planner's order) and the status. The planner sees empty caches.
 */
export function firstReconcile(app: CanaryApp): { children: ChildObject[]; status: CanaryAppStatus } {
  const none = { get: () => undefined };
  const caches = { canaryApps: { get: () => app }, children: new Map(CHILD_KINDS.map((kind) => [kind.kind, none])) };
  const planning = startPlan({ app, observed: observe(app, caches, istioRouter, deploymentTarget), now: new Date() });
  if (planning.kind !== "ready") throw new Error(`${app.metadata.name ?? ""}: planned ${planning.kind}`);
  const desired = desiredChildren(app, planning.spec, planning.plan, istioRouter, deploymentTarget);
  return { children: desired.apply.map(withAppliedHash), status: planning.plan.status };
}

export interface FloorResult {
  /** From the first create to the last app's children applied and status written. */
  secondsToAllChildren: number;
  /** Writes per app beyond its create: the children's applies and one status write. */
  writesPerApp: number;
  /** Requests per app beyond its create (every one a write: the floor reads nothing). */
  requestsPerApp: number;
  /** The script's CPU per app (milliseconds), its creates included. */
  cpuMsPerApp: number;
}

/**
 * Creates `apps` apps in `namespace` (watched by no controller) and converges them by hand, writing through
 * the controller's own client (the kubeconfig at `kubeconfigPath`).
 */
export async function benchFloor(
  kc: PooledKubeConfig,
  kubeconfigPath: string,
  namespace: string,
  apps: number,
): Promise<FloorResult> {
  let requests = 0;
  const api = KubeRest.connect(kubeconfigPath, undefined, { onRequest: () => requests++ });
  let writes = 0;
  const writer = clusterWriter(api, () => writes++);
  const client = canaryApps(kc, namespace);
  const converge = async (i: number): Promise<void> => {
    const app: CanaryApp = await client.create(benchApp(i));
    const { children, status } = firstReconcile(app);
    for (const child of children) await writer.apply(child);
    await writer.replaceStatus(app, status);
  };

  const started = Date.now();
  const cpuAtStart = process.cpuUsage();
  let next = 0;
  const lane = async (): Promise<void> => {
    for (let i = next++; i < apps; i = next++) await converge(i);
  };
  try {
    await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
  } finally {
    await api.close();
  }
  const secondsToAllChildren = (Date.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuAtStart);
  // The creates go through the test client, not `api`: every request counted is the floor's own work.
  return {
    secondsToAllChildren,
    writesPerApp: writes / apps,
    requestsPerApp: requests / apps,
    cpuMsPerApp: Math.round((cpu.user + cpu.system) / 100 / apps) / 10,
  };
}
