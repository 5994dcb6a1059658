/**
 * What marks a route handed over from one router to another (decisions.ts `routeHandoverDue`): the route
 * object of the router an app left, rewritten to send everything to the app's Service before it is removed.
 */

/** On the handover route object: when it began to route everything to the app's Service. */
export const HANDOVER_ANNOTATION = "canaryapp.io/mesh-handover-at";

/** The name of the handover route (a VirtualService's http route, an HTTPRoute's rule). */
export const HANDOVER_ROUTE = "handover";
