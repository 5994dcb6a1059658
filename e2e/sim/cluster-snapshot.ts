/**
 * The simulator's input, as plain data: cluster-watch.ts fills a snapshot from its informers; mesh-view.ts
 * and gateway-api-view.ts evaluate one.
 */
import type { DestinationRuleLike, PodLike, ServiceLike } from "./cluster-model.js";
import type { GatewayClassLike, GatewayLike, HTTPRouteLike, NamespaceLike } from "./gateway-api-objects.js";
import type { VirtualServiceLike } from "./virtual-service-routes.js";

/** Everything the simulator reads from the cluster at one moment. */
export interface ClusterSnapshot {
  virtualServices: readonly VirtualServiceLike[];
  pods: readonly PodLike[];
  /** Every Service of the namespaces read; absent: none (then no destination has endpoints). */
  services?: readonly ServiceLike[];
  /** The controller's DestinationRules (subsets of a route's host); absent: none. */
  destinationRules?: readonly DestinationRuleLike[];
  /** The controller's HTTPRoutes; absent: none (or the API server does not serve them). */
  httpRoutes?: readonly HTTPRouteLike[];
  /** The Gateways of the namespaces read and of the Gateways' namespaces; absent: none. */
  gateways?: readonly GatewayLike[];
  gatewayClasses?: readonly GatewayClassLike[];
  /** Every Namespace, for listeners that admit routes by a namespace selector; absent: none. */
  namespaces?: readonly NamespaceLike[];
}
