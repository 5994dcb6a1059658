import { appRef, childNames } from "../api/meta.js";
import type { CanaryApp } from "../api/types.js";
import type { TrafficRouter } from "../router/router.js";
import type { Observation } from "../rollout/types.js";
import type { WorkloadTarget } from "../workload/workload.js";
import type { Caches } from "./ports.js";
import { childCache } from "./ports.js";

/** What the world looks like for one app, read from the informer caches only, through the two ports. */
export function observe(
  app: CanaryApp,
  caches: Caches,
  router: TrafficRouter,
  workload: WorkloadTarget,
): Omit<Observation, "analysis"> {
  const { name, namespace } = appRef(app);
  const names = childNames(name);
  const workloads = childCache(caches, workload.kind);
  return {
    primary: workload.observe(workloads.get(namespace, names.primary)),
    secondary: workload.observe(workloads.get(namespace, names.secondary)),
    routedWeights: router.routedWeights(childCache(caches, router.kind).get(namespace, names.virtualService)),
  };
}
