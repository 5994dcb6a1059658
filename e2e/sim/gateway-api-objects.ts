/**
 * The Gateway API objects the simulated data plane reads (gateway.networking.k8s.io/v1: HTTPRoute, Gateway,
 * GatewayClass) and the Namespaces a listener's `allowedRoutes` may select, as plain data; with the few
 * conventions of Istio's implementation (istio.io/istio, pilot/pkg/config/kube/gateway/) that more than one
 * file here needs: the controller name it reports under, how it names a parentRef, which Gateways are its
 * own. Pure.
 */
import type { ObjectMetaLike } from "./cluster-model.js";

export const GATEWAY_API_GROUP = "gateway.networking.k8s.io";

/**
 * The controller name Istio writes into every `status.parents[]` entry it owns, for Gateway and Service
 * (mesh) parents alike: conditions.go, createRouteStatus, sets `features.ManagedGatewayController`
 * (pilot/pkg/features/pilot.go: PILOT_GATEWAY_API_CONTROLLER_NAME, default "istio.io/gateway-controller");
 * testdata/mesh.status.yaml.golden shows it on a `kind: Service` parent. `istio.io/mesh-controller`
 * (pkg/config/constants ManagedGatewayMeshController) is the waypoint GatewayClass's controller, not the
 * one of route status.
 */
export const ISTIO_GATEWAY_CONTROLLER = "istio.io/gateway-controller";

/**
 * Istio's built-in GatewayClass, handled without a GatewayClass object (pilot/pkg/features/pilot.go,
 * PILOT_GATEWAY_API_DEFAULT_GATEWAYCLASS_NAME).
 */
export const ISTIO_DEFAULT_GATEWAY_CLASS = "istio";

/** The annotation that names a managed Gateway's Deployment (istio.io/api annotation GatewayNameOverride). */
export const GATEWAY_NAME_OVERRIDE = "gateway.istio.io/name-override";

export interface ParentRefLike {
  group?: string;
  kind?: string;
  namespace?: string;
  name?: string;
  sectionName?: string;
  port?: number;
}

export interface ConditionLike {
  type?: string;
  status?: string;
  reason?: string;
  message?: string;
  observedGeneration?: number;
  lastTransitionTime?: string;
}

export interface RouteParentStatusLike {
  parentRef?: ParentRefLike;
  controllerName?: string;
  conditions?: ConditionLike[];
}

export interface HeaderMatchLike {
  type?: string;
  name?: string;
  value?: string;
}

export interface HTTPRouteMatchLike {
  path?: { type?: string; value?: string };
  headers?: HeaderMatchLike[];
  queryParams?: HeaderMatchLike[];
  method?: string;
}

export interface BackendRefLike {
  group?: string;
  kind?: string;
  namespace?: string;
  name?: string;
  port?: number;
  weight?: number;
}

export interface HTTPRouteFilterLike {
  type?: string;
  requestRedirect?: { statusCode?: number };
  requestMirror?: {
    backendRef?: BackendRefLike;
    percent?: number;
    fraction?: { numerator?: number; denominator?: number };
  };
}

export interface HTTPRouteRuleLike {
  name?: string;
  matches?: HTTPRouteMatchLike[];
  filters?: HTTPRouteFilterLike[];
  backendRefs?: (BackendRefLike & { filters?: HTTPRouteFilterLike[] })[];
}

export interface HTTPRouteLike {
  metadata?: ObjectMetaLike;
  spec?: { parentRefs?: ParentRefLike[]; hostnames?: string[]; rules?: HTTPRouteRuleLike[] };
  status?: { parents?: RouteParentStatusLike[] };
}

export interface LabelSelectorLike {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key?: string; operator?: string; values?: string[] }[];
}

export interface ListenerLike {
  name?: string;
  hostname?: string;
  port?: number;
  protocol?: string;
  allowedRoutes?: {
    namespaces?: { from?: string; selector?: LabelSelectorLike };
    kinds?: { group?: string; kind?: string }[];
  };
}

export interface GatewayLike {
  metadata?: ObjectMetaLike & { annotations?: Record<string, string> };
  spec?: { gatewayClassName?: string; listeners?: ListenerLike[] };
}

export interface GatewayClassLike {
  metadata?: { name?: string };
  spec?: { controllerName?: string };
}

export interface NamespaceLike {
  metadata?: { name?: string; labels?: Record<string, string> };
}

/** A parentRef's kind with the API's defaults (group gateway.networking.k8s.io, kind Gateway). */
export function parentKind(ref: ParentRefLike): "Service" | "Gateway" | "other" {
  const group = ref.group ?? GATEWAY_API_GROUP;
  const kind = ref.kind ?? "Gateway";
  if (group === "" && kind === "Service") return "Service";
  if (group === GATEWAY_API_GROUP && kind === "Gateway") return "Gateway";
  return "other";
}

/**
 * Istio's key of a parentRef, `group/kind/name/section/port.namespace` with the API's defaults and the
 * route's namespace filled in (conversion.go, parentRefString): status entries are matched to parentRefs,
 * and appended ones sorted, by it.
 */
export function parentRefString(ref: ParentRefLike, routeNamespace: string): string {
  return `${ref.group ?? GATEWAY_API_GROUP}/${ref.kind ?? "Gateway"}/${ref.name ?? ""}/${ref.sectionName ?? ""}/${
    ref.port ?? 0
  }.${ref.namespace ?? routeNamespace}`;
}

/** A creation timestamp in milliseconds; 0 when absent (Go's zero time sorts first). */
export function createdAt(meta: { creationTimestamp?: string | Date } | undefined): number {
  const t = meta?.creationTimestamp;
  if (t === undefined) return 0;
  const ms = t instanceof Date ? t.getTime() : Date.parse(t);
  return Number.isFinite(ms) ? ms : 0;
}

/**
 * The order Istio gives routes of one kind: oldest first, then by namespace, then by name
 * (conversion.go, sortRoutesByCreationTime; the Gateway API's tie-break, httproute_types.go HTTPRouteRule.Matches).
 */
export function byCreation(a: { metadata?: ObjectMetaLike }, b: { metadata?: ObjectMetaLike }): number {
  const t = createdAt(a.metadata) - createdAt(b.metadata);
  if (t !== 0) return t;
  const ns = compare(a.metadata?.namespace ?? "", b.metadata?.namespace ?? "");
  return ns !== 0 ? ns : compare(a.metadata?.name ?? "", b.metadata?.name ?? "");
}

/** Byte-wise string order, as Go's strings.Compare. */
export function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** `namespace/name` of an object. */
export function objectKey(meta: ObjectMetaLike | undefined): string {
  return `${meta?.namespace ?? ""}/${meta?.name ?? ""}`;
}

/**
 * A parentRef as people read it: `Service web:80`, `Gateway istio-system/public` (the namespace only when not
 * `namespace`).
 */
export function describeParent(ref: ParentRefLike, namespace: string): string {
  const kind = parentKind(ref) === "other" ? `${ref.group ?? GATEWAY_API_GROUP}/${ref.kind ?? ""}` : parentKind(ref);
  const ns = ref.namespace ?? namespace;
  const section = ref.sectionName !== undefined && ref.sectionName !== "" ? `/${ref.sectionName}` : "";
  const port = ref.port !== undefined && ref.port !== 0 ? `:${ref.port}` : "";
  return `${kind} ${ns === namespace ? "" : `${ns}/`}${ref.name ?? ""}${section}${port}`;
}
