/**
 * The Kubernetes Gateway API as the traffic router (`spec.mesh: gateway-api`, ADR 0026): one HTTPRoute
 * (gateway.networking.k8s.io/v1) splits an app's traffic between the per-track Services. Its parents are the
 * app's Service, for callers in the mesh (GAMMA: a route whose parent is a Service applies to requests sent to
 * that Service), and the Gateways the app lists, for traffic entering through them. Built here, pure; the
 * split is read back only where the implementation says it carries it (`status.parents`).
 */
import type { ResolvedSpec } from "../api/defaults.js";
import type { ChildMeta } from "../api/meta.js";
import { appRef, childMeta, childNames, trackOfService, trackServiceName } from "../api/meta.js";
import type { CanaryApp, StringMatch, Track } from "../api/types.js";
import type { Weights } from "../rollout/types.js";
import { ownNamespaceHost } from "./host-policy.js";
import { HANDOVER_ANNOTATION, HANDOVER_ROUTE } from "./handover.js";
import { AB_ROUTE, headerConditions, ruleOfHeaders } from "./match.js";
import type { LeftoverRoute, RouteAcceptance, TrafficRouter } from "./router.js";

export const GATEWAY_API = { group: "gateway.networking.k8s.io", version: "v1" } as const;
const GATEWAY_API_VERSION = `${GATEWAY_API.group}/${GATEWAY_API.version}`;

/** The name of the one rule the controller owns in the HTTPRoute (a rule's `name`, standard since v1.4). */
export const CANARY_RULE = "primary-secondary";

/** A parent of the route: a Service (the mesh) or a Gateway. */
export interface ParentRef {
  group: string;
  kind: "Service" | "Gateway";
  namespace?: string;
  name: string;
  port?: number;
}

export interface BackendRef {
  group: "";
  kind: "Service";
  name: string;
  port: number;
  weight: number;
}

/** One header condition of an HTTPRoute match. */
export interface HeaderMatch {
  type: "Exact" | "RegularExpression";
  name: string;
  value: string;
}

/** The RequestMirror filter of the mirror phase: a copy of `percent` % of the rule's requests, answers dropped. */
export interface MirrorFilter {
  type: "RequestMirror";
  requestMirror: { backendRef: { group: ""; kind: "Service"; name: string; port: number }; percent: number };
}

export interface HTTPRouteRule {
  name: string;
  matches?: { path: { type: "PathPrefix"; value: "/" }; headers: HeaderMatch[] }[];
  filters?: MirrorFilter[];
  backendRefs: BackendRef[];
}

export interface HTTPRouteObject {
  apiVersion: typeof GATEWAY_API_VERSION;
  kind: "HTTPRoute";
  metadata: ChildMeta;
  spec: {
    parentRefs: ParentRef[];
    hostnames?: string[];
    rules: HTTPRouteRule[];
  };
}

/**
 * The route's parents. The app's Service always (in-mesh callers are split too, as the VirtualService binds
 * `mesh`), and each other Service of the app's namespace it answers for (`spec.service.hosts` naming one: a
 * VirtualService host of a Service is, for the Gateway API's mesh, a Service parent). Each of
 * `spec.service.gateways` but `mesh` is a Gateway (`namespace/name`, or `name` in the app's namespace); the
 * host and gateway policy (host-policy.ts) has checked both lists before anything is written.
 */
export function parentRefs(app: CanaryApp, spec: ResolvedSpec): ParentRef[] {
  const { name, namespace } = appRef(app);
  const services = [name];
  for (const host of spec.service.hosts) {
    if (!ownNamespaceHost(host, namespace)) continue;
    const service = host.toLowerCase().split(".")[0] ?? "";
    if (!services.includes(service)) services.push(service);
  }
  const serviceParents = services.map((service): ParentRef => ({
    group: "",
    kind: "Service",
    name: service,
    port: spec.service.port,
  }));
  const gateways: ParentRef[] = [];
  for (const gateway of spec.service.gateways) {
    if (gateway === "mesh") continue;
    const [ns, gatewayName] = gateway.includes("/") ? gateway.split("/", 2) : [namespace, gateway];
    const ref: ParentRef = {
      group: GATEWAY_API.group,
      kind: "Gateway",
      namespace: ns ?? namespace,
      name: gatewayName ?? "",
    };
    if (!gateways.some((g) => g.namespace === ref.namespace && g.name === ref.name)) gateways.push(ref);
  }
  return [...serviceParents, ...gateways];
}

/**
 * The HTTPRoute that splits traffic. Its one rule always lists both tracks' Services, so a weight change is
 * a change of two numbers. `hostnames` are the hosts a Gateway matches requests by, given only with a
 * Gateway parent: the mesh infers nothing from them (GEP-1294), and a Service host is a parent instead.
 */
export function buildHTTPRoute(app: CanaryApp, spec: ResolvedSpec, weights: Weights): HTTPRouteObject {
  const { name, namespace } = appRef(app);
  const parents = parentRefs(app, spec);
  const hostnames = parents.some((p) => p.kind === "Gateway")
    ? [...new Set(spec.service.hosts.filter((h) => !ownNamespaceHost(h, namespace)).map((h) => h.toLowerCase()))]
    : [];
  const backend = (track: Track, weight: number): BackendRef => ({
    group: "",
    kind: "Service",
    name: trackServiceName(name, track),
    port: spec.service.port,
    weight,
  });
  // The A/B phase: a rule for the matching requests, to the secondary alone. A rule with header matches takes
  // precedence over one without (the Gateway API's match precedence), whatever their order.
  const abRule: HTTPRouteRule[] =
    weights.match === undefined
      ? []
      : [
          {
            name: AB_ROUTE,
            matches: weights.match.map((rule) => ({
              path: { type: "PathPrefix" as const, value: "/" as const },
              headers: headerConditions(rule).map(([header, m]): HeaderMatch =>
                m.exact !== undefined
                  ? { type: "Exact", name: header, value: m.exact }
                  : { type: "RegularExpression", name: header, value: m.regex ?? "" },
              ),
            })),
            backendRefs: [backend("secondary", 1)],
          },
        ];
  const mirror: MirrorFilter[] =
    weights.mirror === undefined
      ? []
      : [
          {
            type: "RequestMirror",
            requestMirror: {
              backendRef: {
                group: "",
                kind: "Service",
                name: trackServiceName(name, "secondary"),
                port: spec.service.port,
              },
              percent: weights.mirror,
            },
          },
        ];
  return {
    apiVersion: GATEWAY_API_VERSION,
    kind: "HTTPRoute",
    metadata: childMeta(app, childNames(name).httpRoute),
    spec: {
      parentRefs: parents,
      ...(hostnames.length > 0 ? { hostnames } : {}),
      rules: [
        ...abRule,
        {
          name: CANARY_RULE,
          ...(mirror.length > 0 ? { filters: mirror } : {}),
          backendRefs: [backend("primary", weights.primary), backend("secondary", weights.secondary)],
        },
      ],
    },
  };
}

interface ObservedCondition {
  type?: string;
  status?: string;
  reason?: string;
  message?: string;
  observedGeneration?: number;
}

interface ObservedParentRef {
  group?: string;
  kind?: string;
  namespace?: string;
  name?: string;
  port?: number;
  sectionName?: string;
}

interface ObservedBackend {
  group?: string;
  kind?: string;
  name?: string;
  weight?: number;
}

interface ObservedRule {
  name?: string;
  backendRefs?: ObservedBackend[];
  matches?: { headers?: { type?: string; name?: string; value?: string }[] }[];
  filters?: { type?: string; requestMirror?: { backendRef?: ObservedBackend; percent?: number; fraction?: unknown } }[];
}

interface ObservedRoute {
  metadata?: { name?: string; namespace?: string; generation?: number };
  spec?: {
    parentRefs?: ObservedParentRef[];
    rules?: ObservedRule[];
  };
  status?: { parents?: { parentRef?: ObservedParentRef; controllerName?: string; conditions?: ObservedCondition[] }[] };
}

/** A parentRef with the API's defaults filled in (group gateway.networking.k8s.io, kind Gateway, the route's namespace). */
function normalParent(ref: ObservedParentRef, namespace: string): string {
  return JSON.stringify([
    ref.group ?? GATEWAY_API.group,
    ref.kind ?? "Gateway",
    ref.namespace ?? namespace,
    ref.name ?? "",
    ref.port ?? null,
    ref.sectionName ?? null,
  ]);
}

function describeParent(ref: ObservedParentRef, namespace: string): string {
  const kind = ref.kind ?? "Gateway";
  const ns = ref.namespace ?? namespace;
  return `${kind} ${ns === namespace && kind === "Service" ? "" : `${ns}/`}${ref.name ?? ""}`;
}

/**
 * Whether the implementation carries the route as it now is: for every parent it names, an entry in
 * `status.parents` whose `Accepted` and `ResolvedRefs` conditions are True for the route's current
 * generation. Otherwise why not, naming the first parent at fault with the implementation's reason and
 * message (a parent never reported on is waited for: the implementation may not have seen this generation).
 */
export function httpRouteAcceptance(route: unknown): RouteAcceptance {
  const r = route as ObservedRoute | undefined;
  const namespace = r?.metadata?.namespace ?? "";
  const generation = r?.metadata?.generation;
  const routeName = `HTTPRoute ${r?.metadata?.name ?? ""}`;
  for (const ref of r?.spec?.parentRefs ?? []) {
    const key = normalParent(ref, namespace);
    const entry = r?.status?.parents?.find(
      (p) => p.parentRef !== undefined && normalParent(p.parentRef, namespace) === key,
    );
    const parent = describeParent(ref, namespace);
    const current = (c: ObservedCondition | undefined) =>
      c !== undefined &&
      (generation === undefined || c.observedGeneration === undefined || c.observedGeneration >= generation);
    const accepted = entry?.conditions?.find((c) => c.type === "Accepted");
    const resolved = entry?.conditions?.find((c) => c.type === "ResolvedRefs");
    if (!current(accepted) || !current(resolved)) {
      return {
        carried: false,
        reason: "RouteNotReported",
        message: `${routeName}: no implementation has reported on parent ${parent} for generation ${generation ?? "?"} yet (is a Gateway API implementation installed for it?)`,
      };
    }
    for (const c of [accepted, resolved]) {
      if (c?.status === "True") continue;
      return {
        carried: false,
        reason: c?.type === "Accepted" ? "RouteNotAccepted" : "RouteRefsNotResolved",
        message: `${routeName}: parent ${parent}: ${c?.type} ${c?.status ?? "Unknown"} (${c?.reason ?? "no reason"}${c?.message ? `: ${c.message}` : ""})`,
      };
    }
  }
  return { carried: true };
}

/** The track a backendRef sends to: the per-track Service it names (`<name>-primary`, `<name>-secondary`). */
function backendTrack(ref: { group?: string; kind?: string; name?: string }): Track | undefined {
  if ((ref.group ?? "") !== "" || (ref.kind ?? "Service") !== "Service") return undefined;
  return trackOfService(ref.name);
}

/**
 * Reads the split from the canary rule. A rule edited into a shape we do not own (missing, extra backends,
 * weights not summing to 100) reads as null, so the reconciler re-applies; so does a route its implementation
 * does not carry (yet): a weight the data plane does not have is not routed.
 */
export function readHTTPRouteWeights(route: unknown): Weights | null {
  const r = route as ObservedRoute | undefined;
  const backends = r?.spec?.rules?.find((rule) => rule.name === CANARY_RULE)?.backendRefs;
  if (!backends || backends.length !== 2) return null;
  const tracks = backends.map(backendTrack);
  if (!tracks.includes("primary") || !tracks.includes("secondary")) return null;
  // A backendRef's weight defaults to 1 (the CRD's default, so the API server has filled it in).
  const weightOf = (track: Track) => backends.find((b) => backendTrack(b) === track)?.weight ?? 1;
  const weights = { primary: weightOf("primary"), secondary: weightOf("secondary") };
  if (weights.primary + weights.secondary !== 100) return null;
  const phase = readPhase(r?.spec?.rules ?? []);
  if (phase === null) return null;
  return httpRouteAcceptance(route).carried ? { ...weights, ...phase } : null;
}

/**
 * The mirror and A/B phase's part of the route, read back: the canary rule's RequestMirror filter to the
 * secondary (100 % when it gives no percent; a `fraction` is not ours) and the A/B rule's header matches. A
 * phase rule edited into a shape we do not own reads as null, so the reconciler re-applies.
 */
function readPhase(rules: ObservedRule[]): Pick<Weights, "mirror" | "match"> | null {
  const out: Pick<Weights, "mirror" | "match"> = {};
  const canary = rules.find((rule) => rule.name === CANARY_RULE);
  const mirrors = (canary?.filters ?? []).filter((f) => f.type === "RequestMirror");
  if (mirrors.length > 1) return null;
  const mirror = mirrors[0]?.requestMirror;
  if (mirror !== undefined) {
    if (mirror.backendRef === undefined || backendTrack(mirror.backendRef) !== "secondary") return null;
    if (mirror.fraction !== undefined) return null;
    out.mirror = mirror.percent ?? 100;
  }
  const ab = rules.find((rule) => rule.name === AB_ROUTE);
  if (ab !== undefined) {
    const only = ab.backendRefs?.length === 1 ? ab.backendRefs[0] : undefined;
    if (only === undefined || backendTrack(only) !== "secondary" || (ab.matches ?? []).length === 0) return null;
    const conditions = (ab.matches ?? []).map((m) =>
      (m.headers ?? []).map((h): [string, StringMatch] => [
        h.name ?? "",
        h.type === "RegularExpression" ? { regex: h.value ?? "" } : { exact: h.value ?? "" },
      ]),
    );
    if (conditions.some((c) => c.length === 0)) return null;
    out.match = conditions.map(ruleOfHeaders);
  }
  return out;
}

/**
 * The HTTPRoute of an app that routes otherwise now (`mesh: istio`), until it is removed: the same parents,
 * one rule sending everything to the app's Service, whose endpoints are the primary's. A proxy that still has
 * the old split, or this rule, never sends to a track scaled away.
 */
export function buildHandoverHTTPRoute(app: CanaryApp, spec: ResolvedSpec, at: string): HTTPRouteObject {
  const { name } = appRef(app);
  const base = buildHTTPRoute(app, spec, { primary: 100, secondary: 0 });
  return {
    ...base,
    metadata: { ...base.metadata, annotations: { ...base.metadata.annotations, [HANDOVER_ANNOTATION]: at } },
    spec: {
      ...base.spec,
      rules: [
        {
          name: HANDOVER_ROUTE,
          backendRefs: [{ group: "", kind: "Service", name, port: spec.service.port, weight: 100 }],
        },
      ],
    },
  };
}

/** An app's HTTPRoute read back once it routes otherwise: when it was handed over, or nothing (still its split). */
export function httpRouteHandedOverAt(route: unknown): { handedOverAt?: string } {
  const r = route as { metadata?: { annotations?: Record<string, string> }; spec?: { rules?: { name?: string }[] } };
  const at = r.metadata?.annotations?.[HANDOVER_ANNOTATION];
  const routed = r.spec?.rules?.length === 1 && r.spec.rules[0]?.name === HANDOVER_ROUTE;
  return at !== undefined && routed ? { handedOverAt: at } : {};
}

/** The HTTPRoute an app kept from `mesh: gateway-api`: handed over to the app's Service, then removed. */
export const httpRouteLeftover: LeftoverRoute = {
  kind: "HTTPRoute",
  name: (app) => childNames(appRef(app).name).httpRoute,
  read: httpRouteHandedOverAt,
  handover: (app, spec, at) => [buildHandoverHTTPRoute(app, spec, at)],
  objects: (app) => [
    { apiVersion: GATEWAY_API_VERSION, kind: "HTTPRoute", name: childNames(appRef(app).name).httpRoute },
  ],
};

export const gatewayApiRouter: TrafficRouter = {
  kind: "HTTPRoute",
  objectName: (app) => childNames(appRef(app).name).httpRoute,
  desired: (app, spec, weights) => [buildHTTPRoute(app, spec, weights)],
  routedWeights: readHTTPRouteWeights,
  acceptance: httpRouteAcceptance,
};
