/**
 * No mesh (`spec.mesh: none`): no object carries a split. The app's Service selects the pods of both
 * tracks (resources/service.ts), so traffic follows the replica counts, and the split the planner sees is
 * the ready pods' share (ADR 0014). Only batch releases may use it: a weight cannot be set without a mesh.
 */
import { replicaShare } from "../rollout/batches.js";
import { httpRouteLeftover } from "./gateway-api.js";
import { istioLeftover } from "./istio.js";
import type { TrafficRouter } from "./router.js";

export const noMeshRouter: TrafficRouter = {
  kind: "Service",
  // The app's Service, whose selector makes the split: read from the pods (splitByPods), not from it.
  objectName: (app) => app.metadata.name ?? "",
  desired: () => [],
  routedWeights: () => null,
  splitByPods: (primary, secondary) => {
    const secondaryShare = replicaShare(secondary?.readyReplicas ?? 0, primary?.readyReplicas ?? 0);
    return { primary: 100 - secondaryShare, secondary: secondaryShare };
  },
  leftovers: [istioLeftover, httpRouteLeftover],
};
