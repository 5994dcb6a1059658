/**
 * The router of each `spec.mesh`, each with the route objects another router left that it hands over and
 * removes when an app switches (decisions.ts `routeHandoverDue`): the VirtualService of `istio` when an app
 * moves to `gateway-api` or `none`, the HTTPRoute of `gateway-api` when it moves to `istio` or `none`.
 */
import type { Mesh } from "../api/types.js";
import { gatewayApiRouter, httpRouteLeftover } from "./gateway-api.js";
import { istioLeftover, istioRouter } from "./istio.js";
import { noMeshRouter } from "./none.js";
import type { TrafficRouter } from "./router.js";

export const ROUTERS: Readonly<Record<Mesh, TrafficRouter>> = {
  istio: { ...istioRouter, leftovers: [httpRouteLeftover] },
  "gateway-api": { ...gatewayApiRouter, leftovers: [istioLeftover] },
  none: noMeshRouter,
};
