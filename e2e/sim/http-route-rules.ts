/**
 * An HTTPRoute's rules as Istio translates them (istio.io/istio pilot/pkg/config/kube/gateway/conversion.go,
 * convertHTTPRoute, buildHTTPDestination, buildDestination, createMirrorFilter; route_collections.go,
 * HTTPRouteCollection): each rule split into one route per match, the backendRefs' weights, mirrors, and the
 * error the route's `ResolvedRefs` condition reports. Pure: Services are looked up through `resolve`.
 */
import type { ClusterView, RouteDestinationView } from "./cluster-model.js";
import type { BackendRefLike, HTTPRouteLike, HTTPRouteMatchLike, HTTPRouteRuleLike } from "./gateway-api-objects.js";
import type { HeaderMatch, PathMatch, RequestMatch } from "./request-match.js";
import type { MirrorView, RouteRule } from "./routing-table.js";
import { destinationTrack } from "../../src/router/istio.js";

/** A condition's reason and message (conditions.go, ConfigError). */
export interface ConfigError {
  reason: string;
  message: string;
}

export interface RouteConversion {
  /** Split per match, in the route's order; empty after a hard error. */
  rules: RouteRule[];
  /** What `ResolvedRefs` reports False with; undefined: all references resolved. */
  error?: ConfigError;
}

/** Looks up a Service; null when it does not exist. */
export type ServiceResolver = (ref: { namespace: string; name: string }) => ClusterView | null;

const DOMAIN = "cluster.local";

/** Filters Istio translates (conversion.go, convertHTTPRoute); any other type fails the whole route. */
const KNOWN_FILTERS = new Set([
  "RequestHeaderModifier",
  "ResponseHeaderModifier",
  "RequestRedirect",
  "RequestMirror",
  "URLRewrite",
  "CORS",
]);
/** Filters a backendRef may carry (conversion.go, buildHTTPDestination). */
const BACKEND_FILTERS = new Set(["RequestHeaderModifier", "ResponseHeaderModifier"]);

class HardError extends Error {
  constructor(readonly config: ConfigError) {
    super(config.message);
  }
}

/** createURIMatch: PathPrefix `/` unless told; a PathPrefix loses a trailing `/`. */
function pathMatch(match: HTTPRouteMatchLike): PathMatch {
  const type = match.path?.type ?? "PathPrefix";
  let value = match.path?.value ?? "/";
  if (type === "Exact") return { type: "Exact", value };
  if (type === "RegularExpression") return { type: "RegularExpression", value };
  if (value !== "/") value = value.replace(/\/$/, "");
  return { type: "PathPrefix", value };
}

/** createHeadersMatch: Exact unless told; for one name the last entry wins (a map keyed by name). */
function headerMatches(match: HTTPRouteMatchLike): HeaderMatch[] {
  const byName = new Map<string, HeaderMatch>();
  for (const h of match.headers ?? []) {
    const name = (h.name ?? "").toLowerCase();
    const value = h.value ?? "";
    byName.set(name, {
      name,
      match: h.type === "RegularExpression" ? { type: "RegularExpression", value } : { type: "Exact", value },
    });
  }
  return [...byName.values()];
}

function requestMatch(match: HTTPRouteMatchLike): RequestMatch {
  const query = match.queryParams?.length ?? 0;
  return {
    path: pathMatch(match),
    headers: headerMatches(match),
    ...(match.method !== undefined ? { method: match.method } : {}),
    ...(query > 0 ? { queryParams: query } : {}),
  };
}

interface Destination {
  view: RouteDestinationView;
  /** An invalid backend: its share of requests is answered 500 (isInvalidBackend). */
  invalid?: ConfigError;
}

/**
 * buildDestination for a backendRef: a Service (group "", kind Service unless told) of the route's namespace
 * unless told; from a Gateway (`enforceRefGrant`), one of another namespace is refused, ReferenceGrants not
 * being read. A name with a dot, or no port, fails the whole route; a missing Service or another kind is an
 * invalid backend, which gets no cluster.
 */
function destination(
  ref: BackendRefLike,
  routeNamespace: string,
  enforceRefGrant: boolean,
  resolve: ServiceResolver,
): Destination {
  const weight = ref.weight ?? 1;
  const none = (invalid: ConfigError): Destination => ({
    view: { host: "", weight, track: undefined, cluster: null },
    invalid,
  });
  const namespace = ref.namespace ?? routeNamespace;
  const name = ref.name ?? "";
  if (enforceRefGrant && ref.namespace !== undefined && ref.namespace !== routeNamespace) {
    return none({
      reason: "RefNotPermitted",
      message: `backendRef ${name}/${ref.namespace} not accessible to a HTTPRoute in namespace "${routeNamespace}" (missing a ReferenceGrant?)`,
    });
  }
  if ((ref.group ?? "") !== "" || (ref.kind ?? "Service") !== "Service") {
    return none({
      reason: "InvalidKind",
      message: `referencing unsupported backendRef: group "${ref.group ?? ""}" kind "${ref.kind ?? ""}"`,
    });
  }
  if (name.includes(".")) {
    throw new HardError({
      reason: "InvalidDestination",
      message: "service name invalid; the name of the Service must be used, not the hostname.",
    });
  }
  if (ref.port === undefined)
    throw new HardError({ reason: "InvalidDestination", message: "port is required in backendRef" });
  const host = `${name}.${namespace}.svc.${DOMAIN}`;
  const cluster = resolve({ namespace, name });
  const view: RouteDestinationView = { host, weight, track: destinationTrack({ host }), cluster };
  return cluster === null
    ? { view, invalid: { reason: "BackendNotFound", message: `backend(${host}) not found` } }
    : { view };
}

/** createMirrorFilter's percentage: a fraction (denominator 100 unless told), else a percent, else 100. */
function mirrorPercent(
  mirror: NonNullable<NonNullable<HTTPRouteRuleLike["filters"]>[number]["requestMirror"]>,
): number {
  if (mirror.fraction !== undefined)
    return (100 * (mirror.fraction.numerator ?? 0)) / (mirror.fraction.denominator ?? 100);
  if (mirror.percent !== undefined) return mirror.percent;
  return 100;
}

function joinErrors(a: ConfigError | undefined, b: ConfigError | undefined): ConfigError | undefined {
  if (b === undefined) return a;
  if (a === undefined) return b;
  return { reason: a.reason, message: `${a.message}; ${b.message}` };
}

/** One rule with at most one match, as convertHTTPRoute builds it; its error for ResolvedRefs. */
function convertRule(
  rule: HTTPRouteRuleLike,
  match: HTTPRouteMatchLike | undefined,
  name: string,
  routeNamespace: string,
  enforceRefGrant: boolean,
  resolve: ServiceResolver,
): { rule: RouteRule; error?: ConfigError } {
  const matches = match === undefined ? [] : [requestMatch(match)];
  const mirrors: MirrorView[] = [];
  let mirrorError: ConfigError | undefined;
  for (const filter of rule.filters ?? []) {
    if (!KNOWN_FILTERS.has(filter.type ?? "")) {
      throw new HardError({ reason: "InvalidFilter", message: `unsupported filter type "${filter.type ?? ""}"` });
    }
    if (filter.type !== "RequestMirror" || filter.requestMirror === undefined) continue;
    // Any error of the mirror's backend, even one that would fail a backendRef, only drops the mirror.
    let target: Destination;
    try {
      target = destination({ ...filter.requestMirror.backendRef, weight: 1 }, routeNamespace, enforceRefGrant, resolve);
    } catch (err) {
      if (!(err instanceof HardError)) throw err;
      mirrorError = err.config;
      continue;
    }
    if (target.invalid !== undefined) {
      mirrorError = target.invalid;
      continue;
    }
    const percent = mirrorPercent(filter.requestMirror);
    // An explicit 0 mirrors nothing (route.go, MirrorPercentByPolicy).
    if (percent > 0) mirrors.push({ destination: target.view, percent });
  }
  const backendRefs = rule.backendRefs ?? [];
  const redirect = rule.filters?.find((f) => f.type === "RequestRedirect");
  if (redirect !== undefined && backendRefs.length === 0) {
    // createRedirectFilter and route.go: the proxy answers the redirect itself, 301 when the filter names no
    // code (the API server's default, 302, is in every stored object).
    return {
      rule: { name, matches, destinations: [], mirrors, directResponse: redirect.requestRedirect?.statusCode ?? 301 },
      ...errorOf(mirrorError),
    };
  }
  if (backendRefs.reduce((sum, b) => sum + (b.weight ?? 1), 0) === 0) {
    // "Per the Gateway API spec, when there are no >0 weight backends return 500."
    return { rule: { name, matches, destinations: [], mirrors, directResponse: 500 }, ...errorOf(mirrorError) };
  }
  const destinations: RouteDestinationView[] = [];
  let backendError: ConfigError | undefined;
  for (const ref of backendRefs) {
    for (const f of ref.filters ?? []) {
      if (!BACKEND_FILTERS.has(f.type ?? "")) {
        throw new HardError({ reason: "InvalidFilter", message: `unsupported filter type "${f.type ?? ""}"` });
      }
    }
    if ((ref.weight ?? 1) === 0) {
      // Dropped by Istio before it is resolved; kept here, never chosen, so /state shows its weight.
      destinations.push(zeroWeight(ref, routeNamespace, resolve));
      continue;
    }
    const d = destination(ref, routeNamespace, enforceRefGrant, resolve);
    if (d.invalid !== undefined) backendError = d.invalid;
    destinations.push(d.view);
  }
  return { rule: { name, matches, destinations, mirrors }, ...errorOf(joinErrors(backendError, mirrorError)) };
}

const errorOf = (error: ConfigError | undefined) => (error !== undefined ? { error } : {});

function zeroWeight(ref: BackendRefLike, routeNamespace: string, resolve: ServiceResolver): RouteDestinationView {
  const namespace = ref.namespace ?? routeNamespace;
  const name = ref.name ?? "";
  const isService = (ref.group ?? "") === "" && (ref.kind ?? "Service") === "Service" && !name.includes(".");
  const host = isService ? `${name}.${namespace}.svc.${DOMAIN}` : "";
  return {
    host,
    weight: 0,
    track: destinationTrack({ host }),
    cluster: isService ? resolve({ namespace, name }) : null,
  };
}

/**
 * The route's rules for the mesh (`forGateway` false) or for a Gateway (true: cross-namespace backends need a
 * ReferenceGrant), split so that each has at most one match (a rule without matches stays one route with
 * none; the API server defaults `matches` to a PathPrefix `/`). A hard error (an unsupported filter, a
 * backendRef without a port or with a host name) leaves no rule at all; otherwise the last error of any
 * rule is the route's.
 */
export function convertHTTPRoute(route: HTTPRouteLike, forGateway: boolean, resolve: ServiceResolver): RouteConversion {
  const namespace = route.metadata?.namespace ?? "";
  const rules: RouteRule[] = [];
  let error: ConfigError | undefined;
  try {
    for (const [n, rule] of (route.spec?.rules ?? []).entries()) {
      const name = rule.name ?? `${namespace}.${route.metadata?.name ?? ""}.${n}`;
      const matches: (HTTPRouteMatchLike | undefined)[] = rule.matches?.length ? rule.matches : [undefined];
      for (const match of matches) {
        const converted = convertRule(rule, match, name, namespace, forGateway, resolve);
        if (converted.error !== undefined) error = converted.error;
        rules.push(converted.rule);
      }
    }
  } catch (err) {
    if (err instanceof HardError) return { rules: [], error: err.config };
    throw err;
  }
  return { rules, ...errorOf(error) };
}
