/**
 * Which parents take an HTTPRoute, as Istio decides it (istio.io/istio pilot/pkg/config/kube/gateway/;
 * paths below are there): the Gateways Istio owns and their listeners (gateway_collection.go), and for each
 * parentRef of a route the listeners (or, for a Service, the mesh) it is checked against and why one refuses
 * it (conversion.go, extractParentReferenceInfo and referenceAllowed). Pure.
 */
import {
  GATEWAY_API_GROUP,
  GATEWAY_NAME_OVERRIDE,
  ISTIO_DEFAULT_GATEWAY_CLASS,
  ISTIO_GATEWAY_CONTROLLER,
  objectKey,
  parentKind,
  parentRefString,
  type GatewayClassLike,
  type GatewayLike,
  type HTTPRouteLike,
  type ListenerLike,
  type NamespaceLike,
  type ParentRefLike,
} from "./gateway-api-objects.js";
import { hostsOverlap } from "./host-names.js";
import { selectorMatches } from "./label-selector.js";

export interface ListenerView {
  name: string;
  port: number;
  protocol: string;
  /** The listener's hostname as written; "" when it has none (any host). */
  hostname: string;
  /** The route kinds it admits, as `group/Kind`. */
  allowedKinds: string[];
  /** The namespaces whose routes it admits: `*` for all; none at all for a selector that selects none. */
  namespaces: string[];
}

export interface IstioGatewayView {
  namespace: string;
  name: string;
  className: string;
  /**
   * The Deployment Istio runs it as: the `gateway.istio.io/name-override` annotation, else `<name>-<class>`
   * (gatewaycommon/gateway_utils.go, GetDefaultName; gatewaycommon/deploymentcontroller.go). Its pods report
   * that name as their workload (kube-gateway.yaml: ISTIO_META_WORKLOAD_NAME and the canonical-name label).
   */
  deploymentName: string;
  listeners: ListenerView[];
}

/** The result of one parentRef against one parent: the mesh for a Service, a listener for a Gateway. */
export interface ParentResult {
  /** The parentRef as the route spells it. */
  ref: ParentRefLike;
  mesh: boolean;
  /** For a Service parent: the Service. */
  service?: { namespace: string; name: string };
  /** For a Gateway parent: its Gateway and the listener. */
  gateway?: IstioGatewayView;
  listener?: ListenerView;
  /** Why this parent does not take the route (conditions.go, ParentError); undefined: it does. */
  denied?: { reason: string; message: string };
}

const HTTP_ROUTE_KIND = `${GATEWAY_API_GROUP}/HTTPRoute`;
const GRPC_ROUTE_KIND = `${GATEWAY_API_GROUP}/GRPCRoute`;

/**
 * The route kinds a listener admits (gatewaycommon/conversion.go, GenerateGatewaySupportedKinds): HTTPRoute
 * and GRPCRoute on HTTP and HTTPS listeners, narrowed to `allowedRoutes.kinds` when given (group
 * gateway.networking.k8s.io unless told).
 */
function allowedKinds(listener: ListenerLike): string[] {
  const protocol = listener.protocol ?? "";
  const supported = protocol === "HTTP" || protocol === "HTTPS" ? [HTTP_ROUTE_KIND, GRPC_ROUTE_KIND] : [];
  const kinds = listener.allowedRoutes?.kinds ?? [];
  if (kinds.length === 0) return supported;
  const wanted = new Set(kinds.map((k) => `${k.group ?? GATEWAY_API_GROUP}/${k.kind ?? ""}`));
  return supported.filter((k) => wanted.has(k));
}

/**
 * The namespaces a listener admits routes from (conversion.go, namespacesFromSelector): the Gateway's own
 * unless told (`from: Same`), all (`All`), or those whose labels the selector selects, each namespace
 * carrying its `kubernetes.io/metadata.name` label (toNamespaceSet).
 */
function admittedNamespaces(
  listener: ListenerLike,
  gatewayNamespace: string,
  namespaces: readonly NamespaceLike[],
): string[] {
  const from = listener.allowedRoutes?.namespaces?.from;
  if (from === undefined || from === "Same") return [gatewayNamespace];
  if (from === "All") return ["*"];
  const selector = listener.allowedRoutes?.namespaces?.selector;
  if (selector === undefined) return ["*"];
  return namespaces
    .filter((ns) => {
      const name = ns.metadata?.name ?? "";
      return selectorMatches(selector, { ...ns.metadata?.labels, "kubernetes.io/metadata.name": name });
    })
    .map((ns) => ns.metadata?.name ?? "")
    .filter((n) => n !== "")
    .sort();
}

/**
 * The Gateways Istio programs, by `namespace/name`: those of a GatewayClass whose controller is Istio's, or
 * of Istio's built-in class `istio` when no GatewayClass object of that name says otherwise
 * (gatewaycommon/gatewayclass_collection.go, FetchGatewayClass). Every listener is taken as valid.
 */
export function istioGateways(
  gateways: readonly GatewayLike[],
  classes: readonly GatewayClassLike[],
  namespaces: readonly NamespaceLike[],
): Map<string, IstioGatewayView> {
  const controllerOf = new Map(classes.map((c) => [c.metadata?.name ?? "", c.spec?.controllerName ?? ""]));
  const out = new Map<string, IstioGatewayView>();
  for (const gw of gateways) {
    const className = gw.spec?.gatewayClassName ?? "";
    const controller =
      controllerOf.get(className) ?? (className === ISTIO_DEFAULT_GATEWAY_CLASS ? ISTIO_GATEWAY_CONTROLLER : "");
    if (controller !== ISTIO_GATEWAY_CONTROLLER) continue;
    const namespace = gw.metadata?.namespace ?? "";
    const name = gw.metadata?.name ?? "";
    const override = gw.metadata?.annotations?.[GATEWAY_NAME_OVERRIDE];
    out.set(objectKey(gw.metadata), {
      namespace,
      name,
      className,
      deploymentName: override !== undefined && override !== "" ? override : `${name}-${className}`,
      listeners: (gw.spec?.listeners ?? []).map((l) => ({
        name: l.name ?? "",
        port: l.port ?? 0,
        protocol: l.protocol ?? "",
        hostname: l.hostname ?? "",
        allowedKinds: allowedKinds(l),
        namespaces: admittedNamespaces(l, namespace, namespaces),
      })),
    });
  }
  return out;
}

/**
 * referenceAllowed for a listener: the parentRef's port and sectionName must be the listener's (else
 * NoMatchingParent); one of the route's hostnames (none: `*`) must overlap the listener's (none: `*`) and the
 * route's namespace be admitted (a hostname overlapping from a namespace not admitted: NotAllowedByListeners;
 * no overlap: NoMatchingListenerHostname); the listener must admit HTTPRoutes (NotAllowedByListeners).
 */
function listenerDenial(
  ref: ParentRefLike,
  listener: ListenerView,
  hostnames: readonly string[],
  routeNamespace: string,
): ParentResult["denied"] {
  if (ref.port !== undefined && ref.port !== 0 && ref.port !== listener.port) {
    return { reason: "NoMatchingParent", message: `port ${ref.port} not found` };
  }
  if (ref.sectionName !== undefined && ref.sectionName !== "" && ref.sectionName !== listener.name) {
    return { reason: "NoMatchingParent", message: `sectionName "${ref.sectionName}" not found` };
  }
  const routeHosts = hostnames.length === 0 ? ["*"] : hostnames;
  const listenerHost = listener.hostname === "" ? "*" : listener.hostname;
  // No namespace admitted is Istio's `~/<host>`: the host may overlap, the namespace never does.
  const allowed = listener.namespaces;
  let hostMatched = false;
  let matched = false;
  for (const h of routeHosts) {
    const overlap = hostsOverlap(listenerHost, h);
    hostMatched ||= overlap;
    if (overlap && (allowed.includes("*") || allowed.includes(routeNamespace))) matched = true;
  }
  if (!matched) {
    return hostMatched
      ? {
          reason: "NotAllowedByListeners",
          message: `hostnames matched parent hostname "${listener.hostname}", but namespace "${routeNamespace}" is not allowed by the parent`,
        }
      : {
          reason: "NoMatchingListenerHostname",
          message: `no hostnames matched parent hostname "${listener.hostname}"`,
        };
  }
  if (!listener.allowedKinds.includes(HTTP_ROUTE_KIND)) {
    return { reason: "NotAllowedByListeners", message: `kind ${GATEWAY_API_GROUP}/v1/HTTPRoute is not allowed` };
  }
  return undefined;
}

/**
 * The results of each parentRef of `route` (extractParentReferenceInfo), sorted by Istio's key of the
 * parentRef. A Service parent is the mesh: refused only when the Service does not exist (NoMatchingParent,
 * `parent service: "<name>" not found`); its port is not checked here, it narrows the routes instead. A
 * Gateway parent gives one result per listener of the Gateway; a Gateway that does not exist or is not
 * Istio's gives none (it may be another implementation's), and so does a parent of any other kind.
 */
export function routeParents(
  route: HTTPRouteLike,
  gateways: ReadonlyMap<string, IstioGatewayView>,
  serviceExists: (ref: { namespace: string; name: string }) => boolean,
): ParentResult[] {
  const routeNamespace = route.metadata?.namespace ?? "";
  const hostnames = route.spec?.hostnames ?? [];
  const results: ParentResult[] = [];
  for (const ref of route.spec?.parentRefs ?? []) {
    const namespace = ref.namespace ?? routeNamespace;
    const name = ref.name ?? "";
    const kind = parentKind(ref);
    if (kind === "Service") {
      const service = { namespace, name };
      results.push({
        ref,
        mesh: true,
        service,
        ...(serviceExists(service)
          ? {}
          : { denied: { reason: "NoMatchingParent", message: `parent service: "${name}" not found` } }),
      });
    } else if (kind === "Gateway") {
      const gateway = gateways.get(`${namespace}/${name}`);
      for (const listener of gateway?.listeners ?? []) {
        const denied = listenerDenial(ref, listener, hostnames, routeNamespace);
        results.push({
          ref,
          mesh: false,
          gateway: gateway,
          listener,
          ...(denied ? { denied } : {}),
        });
      }
    }
  }
  const key = (r: ParentResult) => parentRefString(r.ref, routeNamespace);
  return results.sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
}
