/**
 * Requests entering the mesh through a Gateway: clients outside send them to the gateway with one of the
 * Hosts an app's HTTPRoute serves, and the gateway routes them by the routes its listeners took
 * (gateway-routing.ts). Pure, given the random source.
 */
import type { BehaviourTable } from "./behaviour.js";
import type { GatewayIngressView } from "./gateway-api-view.js";
import type { AppView } from "./mesh-view.js";
import { pick, type Random } from "./prng.js";
import { drawHeaders, type HeaderSpec } from "./request-headers.js";
import { answeredByProxy, routeRequest, type SimulatedRequest } from "./traffic.js";

/** The requests one gateway sent. */
export interface GatewayRequests {
  ingress: GatewayIngressView;
  requests: SimulatedRequest[];
}

/**
 * `count` requests for `app` through its Gateways, each to one of them and with one of its Hosts, both at
 * random, carrying the headers `headers` draws. A Host no route of the gateway serves is answered 404 NR by
 * the gateway. Nothing is sent when the app's routes name no Gateway that is there.
 */
export function simulateGatewayRequests(
  app: AppView,
  count: number,
  behaviours: BehaviourTable,
  random: Random,
  live?: ReadonlySet<string>,
  headers: readonly HeaderSpec[] = [],
): GatewayRequests[] {
  const out = new Map<GatewayIngressView, SimulatedRequest[]>();
  for (let i = 0; i < count; i++) {
    const ingress = pick(app.ingress, random);
    const target = ingress === undefined ? undefined : pick(ingress.hosts, random);
    if (ingress === undefined || target === undefined) continue;
    const drawn = headers.length > 0 ? drawHeaders(headers, random) : {};
    const request =
      target.routing === null
        ? answeredByProxy(404, "NR")
        : routeRequest(target.routing, drawn, undefined, behaviours, random, live);
    if (request === undefined) continue;
    const list = out.get(ingress) ?? [];
    list.push(request);
    out.set(ingress, list);
  }
  return [...out].map(([ingress, requests]) => ({ ingress, requests }));
}
