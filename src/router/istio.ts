import { buildDestinationRule, buildVirtualService, CANARY_ROUTE } from "../resources/istio.js";
import type { Weights } from "../rollout/types.js";
import type { TrafficRouter } from "./router.js";

interface ObservedRoute {
  name?: string;
  route?: { destination?: { subset?: string }; weight?: number }[];
}

/**
 * Reads the split from the VirtualService's canary route. A route edited into a shape we do not own
 * (missing, extra destinations, weights not summing to 100) reads as null, so the reconciler re-applies.
 */
export function readIstioWeights(virtualService: unknown): Weights | null {
  const spec = (virtualService as { spec?: { http?: ObservedRoute[] } } | undefined)?.spec;
  const route = spec?.http?.find((r) => r.name === CANARY_ROUTE)?.route;
  if (!route || route.length !== 2) return null;
  // Istio treats a missing weight as 0 when several destinations are listed.
  const weightOf = (subset: string) => route.find((d) => d.destination?.subset === subset)?.weight ?? 0;
  const weights = { primary: weightOf("primary"), secondary: weightOf("secondary") };
  return weights.primary + weights.secondary === 100 ? weights : null;
}

export const istioRouter: TrafficRouter = {
  desired: (app, spec, weights) => [buildDestinationRule(app), buildVirtualService(app, spec, weights)],
  routedWeights: readIstioWeights,
};
