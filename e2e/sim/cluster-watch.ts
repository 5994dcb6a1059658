/**
 * Watches the controller's children (VirtualServices, Pods, Deployments) through client-node informers,
 * so every tick reads the cluster as it is now without asking the API server.
 */
import {
  KubernetesObjectApi,
  makeInformer,
  type Informer,
  type KubeConfig,
  type KubernetesObject,
} from "@kubernetes/client-node";
import type { Logger } from "pino";
import { LABELS, MANAGED_BY_VALUE } from "../../src/api/types.js";
import type { ClusterSnapshot } from "./mesh-view.js";

/** Anything that can say what the cluster looks like right now. */
export interface SnapshotSource {
  snapshot(): ClusterSnapshot;
}

export interface ClusterWatch extends SnapshotSource {
  stop(): Promise<void>;
}

/** Only the controller's children: `managed-by=canaryapp` and an app label. */
export const CHILD_SELECTOR = `${LABELS.managedBy}=${MANAGED_BY_VALUE},${LABELS.app}`;

interface Kind {
  apiVersion: string;
  kind: string;
  /** URL path prefix of the API group, and the resource's plural. */
  prefix: string;
  plural: string;
}

const KINDS = {
  virtualServices: {
    apiVersion: "networking.istio.io/v1",
    kind: "VirtualService",
    prefix: "/apis/networking.istio.io/v1",
    plural: "virtualservices",
  },
  pods: { apiVersion: "v1", kind: "Pod", prefix: "/api/v1", plural: "pods" },
  deployments: { apiVersion: "apps/v1", kind: "Deployment", prefix: "/apis/apps/v1", plural: "deployments" },
} as const satisfies Record<keyof ClusterSnapshot, Kind>;

const RESTART_MIN_MS = 500;
const RESTART_MAX_MS = 15_000;

type Cache = Informer<KubernetesObject> & { list(namespace?: string): readonly KubernetesObject[] };

/**
 * Starts one informer per kind and namespace (or one per kind for all namespaces when `namespaces` is
 * empty), and resolves once each has made its first list. An informer that fails (the API server is
 * restarting, Istio's CRDs are not installed yet) is restarted with backoff; until then it shows what it
 * had.
 */
export async function watchCluster(kc: KubeConfig, namespaces: readonly string[], log: Logger): Promise<ClusterWatch> {
  const objects = KubernetesObjectApi.makeApiClient(kc);
  let stopped = false;
  const timers = new Set<NodeJS.Timeout>();

  const start = (name: keyof ClusterSnapshot, namespace: string | undefined): Cache => {
    const kind: Kind = KINDS[name];
    const path = namespace ? `${kind.prefix}/namespaces/${namespace}/${kind.plural}` : `${kind.prefix}/${kind.plural}`;
    const list = () =>
      objects.list<KubernetesObject>(
        kind.apiVersion,
        kind.kind,
        namespace,
        undefined,
        undefined,
        undefined,
        undefined,
        CHILD_SELECTOR,
      );
    const informer = makeInformer(kc, path, list, CHILD_SELECTOR);
    let delay = RESTART_MIN_MS;
    informer.on("connect", () => (delay = RESTART_MIN_MS));
    informer.on("error", (err: unknown) => {
      if (stopped) return;
      log.warn({ kind: kind.kind, namespace: namespace ?? "*", err, retryInMs: delay }, "watch failed; restarting");
      const timer = setTimeout(() => {
        timers.delete(timer);
        if (!stopped)
          informer.start().catch((e: unknown) => log.warn({ kind: kind.kind, err: e }, "watch restart failed"));
      }, delay);
      timers.add(timer);
      delay = Math.min(delay * 2, RESTART_MAX_MS);
    });
    return informer;
  };

  const scopes = namespaces.length > 0 ? [...namespaces] : [undefined];
  const caches = {
    virtualServices: scopes.map((ns) => start("virtualServices", ns)),
    pods: scopes.map((ns) => start("pods", ns)),
    deployments: scopes.map((ns) => start("deployments", ns)),
  };
  const all = [...caches.virtualServices, ...caches.pods, ...caches.deployments];
  await Promise.all(all.map((informer) => informer.start()));

  return {
    snapshot: () => ({
      virtualServices: caches.virtualServices.flatMap((c) => c.list()),
      pods: caches.pods.flatMap((c) => c.list()),
      deployments: caches.deployments.flatMap((c) => c.list()),
    }),
    stop: async () => {
      stopped = true;
      for (const timer of timers) clearTimeout(timer);
      await Promise.all(all.map((informer) => informer.stop()));
    },
  };
}
