/**
 * Istio as the traffic router: the DestinationRule and VirtualService that split an app's traffic between
 * its primary and secondary (built here, pure), and the split read back from the VirtualService.
 */
import type { ResolvedSpec } from "../api/defaults.js";
import type { ChildMeta } from "../api/meta.js";
import { appRef, childMeta, childNames, serviceFqdn, trackOfService, trackServiceName } from "../api/meta.js";
import type { CanaryApp, StringMatch, Track } from "../api/types.js";
import { LABELS } from "../api/types.js";
import type { Weights } from "../rollout/types.js";
import { HANDOVER_ANNOTATION, HANDOVER_ROUTE } from "./handover.js";
import { AB_ROUTE, headerConditions, ruleOfHeaders } from "./match.js";
import type { LeftoverRoute, TrackSelectors, TrafficRouter } from "./router.js";

export { HANDOVER_ANNOTATION, HANDOVER_ROUTE };

export const ISTIO_NETWORKING = { group: "networking.istio.io", version: "v1" } as const;
const ISTIO_API_VERSION = `${ISTIO_NETWORKING.group}/${ISTIO_NETWORKING.version}`;

/** The name of the one HTTP route the controller owns in the VirtualService. */
export const CANARY_ROUTE = "primary-secondary";

export interface RouteDestination {
  destination: { host: string; port: { number: number } };
  weight: number;
}

export interface DestinationRuleObject {
  apiVersion: typeof ISTIO_API_VERSION;
  kind: "DestinationRule";
  metadata: ChildMeta;
  spec: { host: string; subsets: { name: Track; labels: Record<string, string> }[] };
}

/** One header condition of an Istio HTTP match (StringMatch: exact or regex, RE2). */
type IstioStringMatch = { exact: string } | { regex: string };

export interface IstioHttpRoute {
  name: string;
  match?: { headers: Record<string, IstioStringMatch> }[];
  route: RouteDestination[];
  mirror?: { host: string; port: { number: number } };
  mirrorPercentage?: { value: number };
}

export interface VirtualServiceObject {
  apiVersion: typeof ISTIO_API_VERSION;
  kind: "VirtualService";
  metadata: ChildMeta;
  spec: { hosts: string[]; gateways: string[]; http: IstioHttpRoute[] };
}

/**
 * Subsets select pods by the controller's track label, which users cannot set (the CRD forbids it), or by
 * `selectors` where the workload tells its tracks apart otherwise (a StatefulSet's pods carry their
 * revision, not a track: ADR 0015) — the labels the per-track Services select by. The canary route no
 * longer uses them (it routes to the per-track Services, ADR 0010); the `primary` subset stays for routes of
 * the user's own that name `subset: primary` on the app's host. There is no `secondary` subset: a subset picks
 * among the endpoints of its host's Service, `<name>`, which selects the primary only, so it could never
 * select a pod (istioctl analyze: IST0173, and a 503 for any route to it). The secondary is reached through
 * `<name>-secondary`.
 */
export function buildDestinationRule(app: CanaryApp, selectors?: TrackSelectors): DestinationRuleObject {
  const { name, namespace } = appRef(app);
  const subset = (track: Track) => ({ name: track, labels: selectors?.[track] ?? { [LABELS.track]: track } });
  return {
    apiVersion: ISTIO_API_VERSION,
    kind: "DestinationRule",
    metadata: childMeta(app, childNames(name).destinationRule),
    spec: { host: serviceFqdn(name, namespace), subsets: [subset("primary")] },
  };
}

/**
 * The VirtualService that splits traffic. It is bound to `mesh` so that in-mesh callers are split too
 * (a route bound only to a gateway would leave pod-to-pod traffic on the Service's round robin), and it
 * always lists both tracks so that a weight change is a change of two numbers, nothing else. Its
 * destinations are the per-track Services (`<name>-primary`, `<name>-secondary`), not subsets of the app's
 * host: the app's Service selects the primary only, so that callers outside the mesh never reach the
 * secondary (ADR 0010).
 */
export function buildVirtualService(app: CanaryApp, spec: ResolvedSpec, weights: Weights): VirtualServiceObject {
  const { name, namespace } = appRef(app);
  const host = serviceFqdn(name, namespace);
  const port = { number: spec.service.port };
  const trackHost = (track: Track) => serviceFqdn(trackServiceName(name, track), namespace);
  const destination = (track: Track, weight: number): RouteDestination => ({
    destination: { host: trackHost(track), port },
    weight,
  });
  // The A/B phase: the matching requests go to the secondary; Istio takes the first route that matches.
  const abRoute: IstioHttpRoute[] =
    weights.match === undefined
      ? []
      : [
          {
            name: AB_ROUTE,
            match: weights.match.map((rule) => ({
              headers: Object.fromEntries(
                headerConditions(rule).map(([header, m]) => [
                  header,
                  m.exact !== undefined ? { exact: m.exact } : { regex: m.regex ?? "" },
                ]),
              ),
            })),
            route: [destination("secondary", 100)],
          },
        ];
  // The mirror phase: a copy of `mirror` % of the canary route's requests goes to the secondary, its answer dropped.
  const mirror =
    weights.mirror === undefined
      ? {}
      : { mirror: { host: trackHost("secondary"), port }, mirrorPercentage: { value: weights.mirror } };
  return {
    apiVersion: ISTIO_API_VERSION,
    kind: "VirtualService",
    metadata: childMeta(app, childNames(name).virtualService),
    spec: {
      hosts: uniqueHosts(namespace, [host, ...spec.service.hosts]),
      gateways: unique(["mesh", ...spec.service.gateways]),
      http: [
        ...abRoute,
        {
          name: CANARY_ROUTE,
          route: [destination("primary", weights.primary), destination("secondary", weights.secondary)],
          ...mirror,
        },
      ],
    },
  };
}

/**
 * The VirtualService of an app whose mesh was switched off (`mesh: none`), until it is removed: the same
 * hosts and gateways, one route sending everything to the app's Service, which then selects both tracks'
 * ready pods. A proxy that still has the old split, or this route, never sends to a track scaled away.
 */
export function buildHandoverVirtualService(app: CanaryApp, spec: ResolvedSpec, at: string): VirtualServiceObject {
  const { name, namespace } = appRef(app);
  const base = buildVirtualService(app, spec, { primary: 100, secondary: 0 });
  return {
    ...base,
    metadata: { ...base.metadata, annotations: { ...base.metadata.annotations, [HANDOVER_ANNOTATION]: at } },
    spec: {
      ...base.spec,
      http: [
        {
          name: HANDOVER_ROUTE,
          route: [
            { destination: { host: serviceFqdn(name, namespace), port: { number: spec.service.port } }, weight: 100 },
          ],
        },
      ],
    },
  };
}

/**
 * An app's VirtualService read back when it has no mesh: when it was handed over (its handover route and
 * annotation), or nothing (still the split it had).
 */
export function handedOverAt(virtualService: unknown): { handedOverAt?: string } {
  const vs = virtualService as {
    metadata?: { annotations?: Record<string, string> };
    spec?: { http?: ObservedRoute[] };
  };
  const at = vs.metadata?.annotations?.[HANDOVER_ANNOTATION];
  const routed = vs.spec?.http?.length === 1 && vs.spec.http[0]?.name === HANDOVER_ROUTE;
  return at !== undefined && routed ? { handedOverAt: at } : {};
}

function unique(values: string[]): string[] {
  return [...new Set(values)];
}

/**
 * The hosts without two that name the same: Istio reads a host without a dot as `<host>.<namespace>.svc.
 * <domain>` (ResolveShortnameToFQDN in istio.io/istio pilot/pkg/model/config.go), and one VirtualService
 * listing both forms defines that host twice (istioctl analyze: IST0109). The first form listed is kept.
 */
export function uniqueHosts(namespace: string, hosts: string[]): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const host of hosts) {
    const resolved = host.includes(".") || host === "*" ? host : serviceFqdn(host, namespace);
    if (seen.has(resolved)) continue;
    seen.add(resolved);
    out.push(host);
  }
  return out;
}

interface ObservedRoute {
  name?: string;
  route?: { destination?: { host?: string; subset?: string }; weight?: number }[];
  match?: { headers?: Record<string, { exact?: string; regex?: string; prefix?: string }> }[];
  mirror?: { host?: string; subset?: string };
  mirrorPercentage?: { value?: number };
}

/**
 * The track a route destination sends to: its subset (routes written before ADR 0010, or by hand), else
 * the per-track Service its host names (`<name>-primary`, `<name>-primary.<ns>.svc.cluster.local`).
 */
export function destinationTrack(destination: { host?: string; subset?: string } | undefined): Track | undefined {
  const subset = destination?.subset;
  if (subset === "primary" || subset === "secondary") return subset;
  if (subset !== undefined) return undefined;
  return trackOfService(destination?.host?.split(".")[0]);
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
  const tracks = route.map((d) => destinationTrack(d.destination));
  if (!tracks.includes("primary") || !tracks.includes("secondary")) return null;
  const weightOf = (track: Track) => route.find((d) => destinationTrack(d.destination) === track)?.weight ?? 0;
  const weights = { primary: weightOf("primary"), secondary: weightOf("secondary") };
  if (weights.primary + weights.secondary !== 100) return null;
  const canary = spec?.http?.find((r) => r.name === CANARY_ROUTE);
  const phase = readPhase(spec?.http ?? [], canary);
  return phase === null ? null : { ...weights, ...phase };
}

/**
 * The mirror and A/B phase's part of the route, read back: the canary route's mirror to the secondary (Istio
 * mirrors 100 % when `mirrorPercentage` is absent) and the A/B route's matches. A phase route edited into a
 * shape we do not own reads as null, so the reconciler re-applies.
 */
function readPhase(http: ObservedRoute[], canary: ObservedRoute | undefined): Pick<Weights, "mirror" | "match"> | null {
  const out: Pick<Weights, "mirror" | "match"> = {};
  if (canary?.mirror !== undefined) {
    if (destinationTrack(canary.mirror) !== "secondary") return null;
    out.mirror = canary.mirrorPercentage?.value ?? 100;
  }
  const ab = http.find((r) => r.name === AB_ROUTE);
  if (ab !== undefined) {
    const only = ab.route?.length === 1 ? ab.route[0] : undefined;
    if (destinationTrack(only?.destination) !== "secondary" || ab.match === undefined || ab.match.length === 0)
      return null;
    const rules = ab.match.map((m) =>
      Object.entries(m.headers ?? {}).map(([name, s]): [string, StringMatch] => [
        name,
        s.exact !== undefined ? { exact: s.exact } : { regex: s.regex ?? "" },
      ]),
    );
    if (rules.some((r) => r.length === 0)) return null;
    out.match = rules.map(ruleOfHeaders);
  }
  return out;
}

/**
 * The VirtualService and DestinationRule an app kept from `mesh: istio`, once it routes otherwise (`none`,
 * `gateway-api`): the VirtualService first routes everything to the app's Service (which then selects both
 * tracks without a mesh, the primary's with the Gateway API's), then both go.
 */
export const istioLeftover: LeftoverRoute = {
  kind: "VirtualService",
  name: (app) => childNames(appRef(app).name).virtualService,
  read: handedOverAt,
  handover: (app, spec, at) => [buildHandoverVirtualService(app, spec, at)],
  objects: (app) => {
    const names = childNames(appRef(app).name);
    return [
      { apiVersion: ISTIO_API_VERSION, kind: "VirtualService", name: names.virtualService },
      { apiVersion: ISTIO_API_VERSION, kind: "DestinationRule", name: names.destinationRule },
    ];
  },
};

export const istioRouter: TrafficRouter = {
  kind: "VirtualService",
  objectName: (app) => childNames(appRef(app).name).virtualService,
  desired: (app, spec, weights, selectors) => [
    buildDestinationRule(app, selectors),
    buildVirtualService(app, spec, weights),
  ],
  routedWeights: readIstioWeights,
};
