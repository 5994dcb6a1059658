/**
 * A VirtualService's routes for mesh traffic (istio.io/api networking/v1 VirtualService), before their hosts
 * are resolved to clusters: which `http[]` routes apply to callers in the mesh, what each matches, where it
 * sends and mirrors. Pure; mesh-view.ts resolves the hosts.
 */
import type { Track } from "../../src/api/types.js";
import { destinationTrack } from "../../src/router/istio.js";
import type { ObjectMetaLike } from "./cluster-model.js";
import {
  anyMatches,
  PLAIN_REQUEST,
  type HeaderMatch,
  type PathMatch,
  type RequestMatch,
  type ValueMatch,
} from "./request-match.js";

/** istio.io/api StringMatch: one of exact, prefix, regex; none set matches any value that is there. */
export interface StringMatchLike {
  exact?: string;
  prefix?: string;
  regex?: string;
}

export interface DestinationLike {
  host?: string;
  subset?: string;
  port?: { number?: number };
}

export interface HTTPMatchRequestLike {
  gateways?: string[];
  headers?: Record<string, StringMatchLike>;
  withoutHeaders?: Record<string, StringMatchLike>;
  uri?: StringMatchLike;
  method?: StringMatchLike;
  queryParams?: Record<string, StringMatchLike>;
  port?: number;
}

export interface HTTPRouteLikeVS {
  name?: string;
  match?: HTTPMatchRequestLike[];
  route?: { destination?: DestinationLike; weight?: number }[];
  mirror?: DestinationLike;
  /** Percent of requests mirrored, 0..100 (a double). */
  mirrorPercentage?: { value?: number };
  /** Deprecated integer form of mirrorPercentage. */
  mirrorPercent?: number;
  mirrors?: { destination?: DestinationLike; percentage?: { value?: number } }[];
}

export interface VirtualServiceLike {
  metadata?: ObjectMetaLike;
  spec?: { hosts?: string[]; gateways?: string[]; http?: HTTPRouteLikeVS[] };
}

/** A route destination as written, before its host is resolved. */
export interface MeshRouteDestination {
  host: string;
  subset?: string;
  weight: number;
}

/** An `http[]` route for mesh traffic, its hosts unresolved. */
export interface VirtualServiceRule {
  name: string;
  matches: RequestMatch[];
  destinations: MeshRouteDestination[];
  mirrors: { host: string; subset?: string; percent: number }[];
}

const MESH = "mesh";

function valueMatch(m: StringMatchLike): ValueMatch {
  if (m.exact !== undefined) return { type: "Exact", value: m.exact };
  if (m.prefix !== undefined) return { type: "Prefix", value: m.prefix };
  if (m.regex !== undefined) return { type: "RegularExpression", value: m.regex };
  return { type: "Present" };
}

function uriMatch(m: StringMatchLike): PathMatch | undefined {
  if (m.exact !== undefined) return { type: "Exact", value: m.exact };
  if (m.prefix !== undefined) return { type: "Prefix", value: m.prefix };
  if (m.regex !== undefined) return { type: "RegularExpression", value: m.regex };
  return undefined;
}

/**
 * One HTTPMatchRequest as a request match. Header names are matched without regard to case; `withoutHeaders`
 * must not match. Conditions a simulated request cannot carry (sourceLabels, sourceNamespace, authority,
 * scheme) are not evaluated: they match.
 */
function requestMatch(m: HTTPMatchRequestLike): RequestMatch {
  const headers: HeaderMatch[] = [
    ...Object.entries(m.headers ?? {}).map(([name, v]) => ({ name: name.toLowerCase(), match: valueMatch(v) })),
    ...Object.entries(m.withoutHeaders ?? {}).map(([name, v]) => ({
      name: name.toLowerCase(),
      match: valueMatch(v),
      absent: true,
    })),
  ];
  const path = m.uri !== undefined ? uriMatch(m.uri) : undefined;
  const queryParams = Object.keys(m.queryParams ?? {}).length;
  return {
    headers,
    ...(path !== undefined ? { path } : {}),
    ...(m.method?.exact !== undefined ? { method: m.method.exact } : {}),
    ...(queryParams > 0 ? { queryParams } : {}),
    ...(m.port !== undefined && m.port > 0 ? { port: m.port } : {}),
  };
}

/**
 * Percent of requests a route mirrors (pilot/pkg/networking/core/route/route.go, MirrorPercent and
 * MirrorPercentByPolicy): `mirrorPercentage.value`, else the deprecated `mirrorPercent`, else 100; an
 * explicit 0 mirrors nothing.
 */
function mirrorPercent(route: HTTPRouteLikeVS): number {
  if (route.mirrorPercentage !== undefined) return Math.max(0, route.mirrorPercentage.value ?? 0);
  if (route.mirrorPercent !== undefined) return Math.max(0, route.mirrorPercent);
  return 100;
}

/**
 * The routes that carry mesh traffic, in the order written. The VirtualService must be bound to `mesh`
 * (explicitly, or by listing no gateways); a route applies when it has no match, or a match that names no
 * gateway or names `mesh` (matches for other gateways are dropped). A lone destination without a weight
 * takes everything, as in Istio; among several, a missing weight is 0. null when the VirtualService is not
 * bound to `mesh`.
 */
export function virtualServiceRules(vs: VirtualServiceLike): VirtualServiceRule[] | null {
  const gateways = vs.spec?.gateways ?? [];
  if (gateways.length > 0 && !gateways.includes(MESH)) return null;
  const rules: VirtualServiceRule[] = [];
  for (const [index, route] of (vs.spec?.http ?? []).entries()) {
    const written = route.match ?? [];
    const forMesh = written.filter((m) => !m.gateways || m.gateways.length === 0 || m.gateways.includes(MESH));
    if (written.length > 0 && forMesh.length === 0) continue;
    const destinations = route.route ?? [];
    const percent = mirrorPercent(route);
    const mirrors = [
      ...(route.mirror !== undefined && percent > 0
        ? [{ host: route.mirror.host ?? "", ...subsetOf(route.mirror), percent }]
        : []),
      ...(route.mirrors ?? [])
        .map((m) => ({
          host: m.destination?.host ?? "",
          ...subsetOf(m.destination),
          percent: m.percentage === undefined ? 100 : Math.max(0, m.percentage.value ?? 0),
        }))
        .filter((m) => m.percent > 0),
    ];
    rules.push({
      name: route.name ?? `${vs.metadata?.name ?? ""}.${index}`,
      matches: forMesh.map(requestMatch),
      destinations: destinations.map((d) => ({
        host: d.destination?.host ?? "",
        ...subsetOf(d.destination),
        weight: d.weight ?? (destinations.length === 1 ? 100 : 0),
      })),
      mirrors,
    });
  }
  return rules;
}

const subsetOf = (d: DestinationLike | undefined) => (d?.subset !== undefined ? { subset: d.subset } : {});

/**
 * The destinations of the route a request without any header takes (the first mesh route whose matches
 * take `GET /`); null when the VirtualService is not bound to `mesh` or no route takes such a request.
 */
export function meshRoute(vs: VirtualServiceLike): MeshRouteDestination[] | null {
  return virtualServiceRules(vs)?.find((r) => anyMatches(r.matches, PLAIN_REQUEST))?.destinations ?? null;
}

/**
 * The weights of that route by track: a destination is a track by its subset or by its host
 * (`<name>-primary`...: destinationTrack); other destinations count for neither. null when no route applies.
 */
export function meshWeights(vs: VirtualServiceLike): Record<Track, number> | null {
  const route = meshRoute(vs);
  if (route === null) return null;
  const weights: Record<Track, number> = { primary: 0, secondary: 0 };
  for (const d of route) {
    const track = destinationTrack(d);
    if (track !== undefined) weights[track] += d.weight;
  }
  return weights;
}
