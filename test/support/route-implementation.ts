/**
 * A stand-in for a Gateway API implementation in integration tests (api profile, no data plane): it watches the
 * HTTPRoutes of a namespace and writes, for each parent of each route, the `Accepted` and `ResolvedRefs`
 * conditions of the route's current generation, as an implementation does (the shape of `status.parents` in
 * gateway.networking.k8s.io/v1). What it answers is the test's `decide`; the rules a real implementation
 * follows (which Gateway admits which route, which backend resolves) are the traffic simulator's (e2e/sim).
 */
import { CustomObjectsApi, Watch, type KubeConfig } from "@kubernetes/client-node";
import { GATEWAY_API } from "../../src/router/gateway-api.js";
import { parentStatuses, type ParentVerdict } from "../../src/router/route-status.test-helpers.js";

export interface RouteLike {
  metadata: { name: string; namespace: string; generation?: number; resourceVersion?: string };
  spec?: {
    parentRefs?: Record<string, unknown>[];
    rules?: { name?: string; backendRefs?: { name?: string; weight?: number }[] }[];
  };
  status?: unknown;
}

/** What the implementation says of a route for its parents: accepted, or not with a reason and message. */
export type Verdict = ParentVerdict;

export interface RouteImplementation {
  /** Every route generation it reported on, with the canary rule's secondary weight and its verdict. */
  readonly reported: { route: string; generation: number; secondary: number | undefined; verdict: Verdict }[];
  stop(): void;
}

const RESOURCE = { group: GATEWAY_API.group, version: GATEWAY_API.version, plural: "httproutes" } as const;
export const STAND_IN_CONTROLLER = "example.net/gateway-stand-in";

export async function startRouteImplementation(
  kc: KubeConfig,
  namespace: string,
  decide: (route: RouteLike) => Verdict,
): Promise<RouteImplementation> {
  const api = kc.makeApiClient(CustomObjectsApi);
  const reported: RouteImplementation["reported"] = [];
  const done = new Set<string>();
  let queue = Promise.resolve();
  const report = async (route: RouteLike): Promise<void> => {
    const generation = route.metadata.generation ?? 0;
    const key = `${route.metadata.name}@${generation}`;
    if (done.has(key)) return;
    const verdict = decide(route);
    const parents = parentStatuses(route.spec?.parentRefs ?? [], {
      generation,
      verdict: () => verdict,
      controllerName: STAND_IN_CONTROLLER,
      at: new Date().toISOString(),
    });
    try {
      await api.replaceNamespacedCustomObjectStatus({
        ...RESOURCE,
        namespace,
        name: route.metadata.name,
        body: { ...route, status: { parents } },
      });
      done.add(key);
      const canary = route.spec?.rules?.find((r) => r.name === "primary-secondary");
      const secondary = canary?.backendRefs?.find((b) => b.name?.endsWith("-secondary"))?.weight;
      reported.push({ route: route.metadata.name, generation, secondary, verdict });
    } catch {
      // A conflict: a newer version is on its way, and its event reports it.
    }
  };
  const watch = await new Watch(kc).watch(
    `/apis/${RESOURCE.group}/${RESOURCE.version}/namespaces/${namespace}/${RESOURCE.plural}`,
    {},
    (type, object: RouteLike) => {
      // One write at a time, in the order the watch delivers: a report is of the newest generation seen.
      if (type === "ADDED" || type === "MODIFIED") queue = queue.then(() => report(object));
    },
    () => undefined,
  );
  return { reported, stop: () => watch.abort() };
}
