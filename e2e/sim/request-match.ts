/**
 * A simulated request's attributes that routes match on, and the match conditions of both routing APIs in
 * one form: a VirtualService's `http[].match[]` (istio.io/api networking/v1 HTTPMatchRequest) and an
 * HTTPRoute's `rules[].matches[]` (gateway.networking.k8s.io/v1 HTTPRouteMatch), as Istio turns both into
 * Envoy route matches (pilot/pkg/networking/core/route/route.go, translateRouteMatch;
 * pilot/pkg/config/kube/gateway/conversion.go, createURIMatch / createHeadersMatch). Pure.
 */

/** What a route can match a simulated request on. Every simulated request is `GET /`, no query string. */
export interface SimRequest {
  /** Header names in lower case (HTTP header names are case-insensitive; Envoy matches them so). */
  headers: Readonly<Record<string, string>>;
  path: string;
  method: string;
  /** The port the caller sent it to (the Service's); undefined when not known, which matches any port. */
  port?: number;
}

export const PLAIN_REQUEST: SimRequest = { headers: {}, path: "/", method: "GET" };

/** A request to `port` carrying `headers` (names lower-cased). */
export function simRequest(headers: Readonly<Record<string, string>> = {}, port?: number): SimRequest {
  const lower: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) lower[k.toLowerCase()] = v;
  return { headers: lower, path: "/", method: "GET", ...(port !== undefined ? { port } : {}) };
}

export type ValueMatch =
  | { type: "Exact"; value: string }
  | { type: "Prefix"; value: string }
  | { type: "RegularExpression"; value: string }
  /** The header is there, whatever its value (a VirtualService StringMatch with no field set). */
  | { type: "Present" };

export interface HeaderMatch {
  /** Lower case. */
  name: string;
  match: ValueMatch;
  /** True: the header must NOT match (a VirtualService's `withoutHeaders`). */
  absent?: boolean;
}

export type PathMatch =
  | { type: "Exact"; value: string }
  /** A VirtualService `uri.prefix`: a plain string prefix. */
  | { type: "Prefix"; value: string }
  /** The Gateway API's PathPrefix: whole path segments (`/foo` matches `/foo` and `/foo/bar`, not `/foobar`). */
  | { type: "PathPrefix"; value: string }
  | { type: "RegularExpression"; value: string };

/** One match: all of its conditions must hold. */
export interface RequestMatch {
  path?: PathMatch;
  headers: HeaderMatch[];
  method?: string;
  /** Query parameter matches: a simulated request has no query string, so any makes the match fail. */
  queryParams?: number;
  /**
   * The port the request must have been sent to (a route bound to a Service port: route_collections.go
   * augmentPortMatch).
   */
  port?: number;
}

/**
 * A regular expression as Envoy's safe_regex (RE2) applies it: to the whole value. JavaScript's dialect
 * stands in for RE2's; an expression it cannot compile matches nothing (Istio's validation refuses those).
 */
export function fullMatch(pattern: string, value: string): boolean {
  try {
    return new RegExp(`^(?:${pattern})$`, "u").test(value);
  } catch {
    return false;
  }
}

function valueMatches(match: ValueMatch, value: string | undefined): boolean {
  if (value === undefined) return false;
  switch (match.type) {
    case "Exact":
      return value === match.value;
    case "Prefix":
      return value.startsWith(match.value);
    case "RegularExpression":
      return fullMatch(match.value, value);
    case "Present":
      return true;
  }
}

function pathMatches(match: PathMatch, path: string): boolean {
  switch (match.type) {
    case "Exact":
      return path === match.value;
    case "Prefix":
      return path.startsWith(match.value);
    case "PathPrefix": {
      const prefix = match.value === "/" ? "/" : match.value.replace(/\/$/, "");
      return prefix === "/" || path === prefix || path.startsWith(`${prefix}/`);
    }
    case "RegularExpression":
      return fullMatch(match.value, path);
  }
}

/** Whether `request` satisfies every condition of `match`. */
export function matchesRequest(match: RequestMatch, request: SimRequest): boolean {
  if (match.path !== undefined && !pathMatches(match.path, request.path)) return false;
  if (match.method !== undefined && match.method !== request.method) return false;
  if ((match.queryParams ?? 0) > 0) return false;
  if (match.port !== undefined && request.port !== undefined && match.port !== request.port) return false;
  for (const h of match.headers) {
    const ok = valueMatches(h.match, request.headers[h.name]);
    if (ok === (h.absent === true)) return false;
  }
  return true;
}

/**
 * Whether a route whose matches are `matches` takes `request`: no match at all takes every request, else any
 * one must.
 */
export function anyMatches(matches: readonly RequestMatch[], request: SimRequest): boolean {
  return matches.length === 0 || matches.some((m) => matchesRequest(m, request));
}

/** Exact > prefix > regex > none, as Istio ranks a route's URI match (conversion.go, getURIRank). */
function uriRank(match: RequestMatch | undefined): number {
  switch (match?.path?.type) {
    case "Exact":
      return 3;
    case "Prefix":
    case "PathPrefix":
      return 2;
    case "RegularExpression":
      return 1;
    case undefined:
      return -1;
  }
}

const uriLength = (match: RequestMatch | undefined) => match?.path?.value.length ?? 0;

/**
 * Istio's order of a Gateway API route's rules, each split to at most one match (conversion.go,
 * sortHTTPRoutes, a stable sort): rules without a match last; then the Gateway API's precedence
 * (httproute_types.go, HTTPRouteRule.Matches): exact path over prefix over regex, the longer path first,
 * a method match first, more header matches first, more query parameter matches first. Ties keep their order.
 */
export function compareGatewayRules(a: readonly RequestMatch[], b: readonly RequestMatch[]): number {
  if (a.length === 0) return b.length === 0 ? 0 : 1;
  if (b.length === 0) return -1;
  const m1 = a[0];
  const m2 = b[0];
  const r1 = uriRank(m1);
  const r2 = uriRank(m2);
  if (r1 !== r2) return r2 - r1;
  const l1 = uriLength(m1);
  const l2 = uriLength(m2);
  if (l1 !== l2) return l2 - l1;
  const method1 = m1?.method !== undefined;
  const method2 = m2?.method !== undefined;
  if (method1 !== method2) return method1 ? -1 : 1;
  const h1 = m1?.headers.length ?? 0;
  const h2 = m2?.headers.length ?? 0;
  if (h1 !== h2) return h2 - h1;
  return (m2?.queryParams ?? 0) - (m1?.queryParams ?? 0);
}

/** A match as /state shows it, e.g. `x-canary=always`, `cookie~^(.*;)?canary=1(;.*)?$`, `path^/`. */
export function describeMatch(match: RequestMatch): string {
  const parts: string[] = [];
  if (match.path !== undefined) {
    const op = match.path.type === "Exact" ? "=" : match.path.type === "RegularExpression" ? "~" : "^";
    parts.push(`path${op}${match.path.value}`);
  }
  if (match.method !== undefined) parts.push(`method=${match.method}`);
  for (const h of match.headers) {
    const m = h.match;
    const op = m.type === "Exact" ? "=" : m.type === "Prefix" ? "^" : m.type === "RegularExpression" ? "~" : "?";
    parts.push(`${h.absent === true ? "!" : ""}${h.name}${op}${"value" in m ? m.value : ""}`);
  }
  if ((match.queryParams ?? 0) > 0) parts.push(`${match.queryParams} query param(s)`);
  if (match.port !== undefined) parts.push(`port=${match.port}`);
  return parts.join(" ");
}
