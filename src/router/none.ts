/**
 * No mesh (`spec.mesh: none`): no object carries a split. The app's Service selects the pods of both
 * tracks (resources/service.ts), so traffic follows the replica counts, and the split the planner sees is
 * the ready pods' share (ADR 0014). Only batch releases may use it: a weight cannot be set without a mesh.
 */
import { appRef, childNames } from "../api/meta.js";
import { replicaShare } from "../rollout/batches.js";
import { ISTIO_NETWORKING, buildHandoverVirtualService, handedOverAt } from "./istio.js";
import type { LeftoverRoute, TrafficRouter } from "./router.js";

const ISTIO_API_VERSION = `${ISTIO_NETWORKING.group}/${ISTIO_NETWORKING.version}`;

/**
 * The VirtualService and DestinationRule an app kept from `mesh: istio`: the VirtualService first routes
 * everything to the app's Service (which selects both tracks without a mesh), then both go.
 */
const istioLeftover: LeftoverRoute = {
  kind: "VirtualService",
  name: (app) => childNames(appRef(app).name).virtualService,
  read: handedOverAt,
  handover: (app, spec, at) => [buildHandoverVirtualService(app, spec, at)],
  objects: (app) => {
    const names = childNames(appRef(app).name);
    return [
      { apiVersion: ISTIO_API_VERSION, kind: "VirtualService", name: names.virtualService },
      { apiVersion: ISTIO_API_VERSION, kind: "DestinationRule", name: names.destinationRule },
    ];
  },
};

export const noMeshRouter: TrafficRouter = {
  kind: "Service",
  desired: () => [],
  routedWeights: () => null,
  splitByPods: (primary, secondary) => {
    const secondaryShare = replicaShare(secondary?.readyReplicas ?? 0, primary?.readyReplicas ?? 0);
    return { primary: 100 - secondaryShare, secondary: secondaryShare };
  },
  leftover: istioLeftover,
};
