/**
 * The data plane, simulated: where each request of an app goes and how it is answered. Pure, given the
 * random source: Envoy takes the first route rule matching the request, picks a weighted cluster of it at
 * random, then an endpoint of it, and mirrors a copy as the rule says; so does this. Which track a request
 * belongs to comes from the route destination it took, never from pod labels.
 */
import type { Track } from "../../src/api/types.js";
import { behaviourFor, type BehaviourTable } from "./behaviour.js";
import type { ClusterView, PodView, RouteDestinationView, ServiceRef } from "./cluster-model.js";
import type { AppView } from "./mesh-view.js";
import { pick, type Random } from "./prng.js";
import { drawHeaders, type HeaderSpec } from "./request-headers.js";
import { simRequest } from "./request-match.js";
import { ruleFor, type RouteRule, type RoutingTable } from "./routing-table.js";

/**
 * Envoy's response flags: "UH" no healthy upstream, "UC" upstream connection termination (the pod went
 * away under the request), "NC" no cluster found (the route names a Service or subset that does not
 * exist), "NR" no route (no rule of the host's routes matches the request); "-" when there is none (a
 * route's direct response has none either: envoy source/common/stream_info/utility.h lists no flag for it).
 */
export type ResponseFlags = "-" | "UH" | "UC" | "NC" | "NR";

/**
 * Why a request went wrong through no fault of the image: it reached a destination with no Ready pod (or
 * no cluster, or no route, at all), or the pod it was sent to had been deleted: `reset` when it was sent to the
 * secondary (whose pods the controller removed before the proxies had the new route: what the drain
 * prevents), `replaced` otherwise, e.g. a primary pod replaced by its Deployment's rolling update (kwok
 * removes a deleted pod at once, where a real pod would keep serving for its termination grace; the app's
 * own shutdown decides, not the rollout).
 */
export type BadRequest = "noReadyPods" | "reset" | "replaced";

const goneKind = (track: Track | null): BadRequest => (track === "secondary" ? "reset" : "replaced");

/** One simulated request: where it went and how it was answered. telemetry.ts reports it as Istio would. */
export interface SimulatedRequest {
  /**
   * The track it was sent to: the track of the route destination it took; without a route (or from a
   * caller outside the mesh), the track whose Service has the pod it reached. null when neither applies.
   */
  track: Track | null;
  /**
   * The Service of the cluster the caller's proxy sent it to (the outbound cluster's `istio.services`);
   * null when there was no cluster (NC) or no proxy (a caller outside the mesh).
   */
  service: ServiceRef | null;
  /** The endpoint it was sent to; null when there was none. */
  pod: PodView | null;
  /** Whether the pod's sidecar received it (and so reports it too): false when it was never sent or the pod was gone. */
  reached: boolean;
  code: number;
  flags: ResponseFlags;
  latencyMs: number;
  /** Set when the request failed for a reason the rollout must never cause (see BadRequest). */
  bad?: BadRequest;
  /**
   * The copies the route mirrored (HTTPRoute RequestMirror, VirtualService mirror) that reached a pod: each
   * answered by that pod, the answer discarded (the caller gets this request's own). Absent: none.
   */
  mirrors?: SimulatedRequest[];
  /** It carried a header or cookie of the simulator's `requestHeaders` (an A/B rule may match it). */
  tagged?: true;
}

/** How long Envoy takes to answer 503 when it has no cluster or no healthy host: next to nothing. */
const NO_UPSTREAM_LATENCY_MS = 0.5;

/** The destination a request takes under the route's weights (relative; their sum need not be 100). undefined if all are 0. */
export function chooseDestination<T extends { weight: number }>(
  destinations: readonly T[],
  random: Random,
): T | undefined {
  const total = destinations.reduce((sum, d) => sum + Math.max(0, d.weight), 0);
  if (total <= 0) return undefined;
  let x = random() * total;
  for (const d of destinations) {
    const w = Math.max(0, d.weight);
    if (x < w) return d;
    x -= w;
  }
  return destinations.findLast((d) => d.weight > 0);
}

/** The track a request takes under `weights` by track. null if all are 0. */
export function chooseTrack(weights: Record<Track, number>, random: Random): Track | null {
  const chosen = chooseDestination(
    [
      { track: "primary" as const, weight: weights.primary },
      { track: "secondary" as const, weight: weights.secondary },
    ],
    random,
  );
  return chosen?.track ?? null;
}

function answer(
  pod: PodView,
  track: Track | null,
  service: ServiceRef | null,
  behaviours: BehaviourTable,
  random: Random,
): SimulatedRequest {
  const b = behaviourFor(pod.image, behaviours);
  const failed = random() < b.errorRate;
  return {
    track,
    service,
    pod,
    reached: true,
    code: failed ? 500 : 200,
    flags: "-",
    latencyMs: b.latencyMs + random() * b.jitterMs,
  };
}

/**
 * One request through a cluster: to one of its endpoints, answered by that pod's image; 503 UH when it has
 * none; reset (503 UC) when the pod chosen no longer exists (`live`, as `namespace/name`).
 */
function through(
  cluster: ClusterView,
  trackOf: (pod: PodView | null) => Track | null,
  bad: { noEndpoint?: BadRequest },
  behaviours: BehaviourTable,
  random: Random,
  live: ReadonlySet<string> | undefined,
): SimulatedRequest {
  const pod = pick(cluster.endpoints, random);
  if (pod === undefined) {
    return {
      track: trackOf(null),
      service: cluster.service,
      pod: null,
      reached: false,
      code: 503,
      flags: "UH",
      latencyMs: NO_UPSTREAM_LATENCY_MS,
      ...(bad.noEndpoint !== undefined ? { bad: bad.noEndpoint } : {}),
    };
  }
  const track = trackOf(pod);
  if (live !== undefined && !live.has(`${pod.namespace}/${pod.name}`)) {
    return {
      track,
      service: cluster.service,
      pod,
      reached: false,
      code: 503,
      flags: "UC",
      latencyMs: 0,
      bad: goneKind(track),
    };
  }
  return answer(pod, track, cluster.service, behaviours, random);
}

/** A request to a route destination whose cluster does not exist: Envoy answers `code` (routing-table.ts) NC. */
function noCluster(destination: RouteDestinationView, code: number): SimulatedRequest {
  return {
    track: destination.track ?? null,
    service: null,
    pod: null,
    reached: false,
    code,
    flags: "NC",
    latencyMs: NO_UPSTREAM_LATENCY_MS,
    bad: "noReadyPods",
  };
}

/**
 * A request answered by the proxy itself, reaching no workload: no route (404 NR), or a rule's direct response
 * (500, a redirect).
 */
export function answeredByProxy(code: number, flags: ResponseFlags): SimulatedRequest {
  return {
    track: null,
    service: null,
    pod: null,
    reached: false,
    code,
    flags,
    latencyMs: NO_UPSTREAM_LATENCY_MS,
    // A redirect is an answer; an error from the proxy itself reached no pod.
    ...(code >= 400 ? { bad: "noReadyPods" as const } : {}),
  };
}

/**
 * The copies of a request the rule mirrors, each drawn with its percentage, that reach a pod (a mirror
 * with no cluster or no endpoint, or whose pod is gone, reaches nothing and nobody reports it).
 */
function mirrored(
  rule: RouteRule,
  behaviours: BehaviourTable,
  random: Random,
  live: ReadonlySet<string> | undefined,
): SimulatedRequest[] {
  const copies: SimulatedRequest[] = [];
  for (const mirror of rule.mirrors) {
    if (!(random() * 100 < mirror.percent)) continue;
    const cluster = mirror.destination.cluster;
    if (cluster === null) continue;
    const track = mirror.destination.track ?? null;
    const copy = through(cluster, () => track, {}, behaviours, random, live);
    if (copy.reached) copies.push(copy);
  }
  return copies;
}

/**
 * One request routed by `table`: its first matching rule (none: 404 NR), that rule's direct response, or a
 * destination by weight and an endpoint of its cluster, with the rule's mirrors. undefined when every
 * weight is 0 (Envoy has nowhere to route; no workload sees it).
 */
export function routeRequest(
  table: RoutingTable,
  headers: Readonly<Record<string, string>>,
  port: number | undefined,
  behaviours: BehaviourTable,
  random: Random,
  live: ReadonlySet<string> | undefined,
): SimulatedRequest | undefined {
  const rule = ruleFor(table, simRequest(headers, port));
  if (rule === undefined) return answeredByProxy(404, "NR");
  if (rule.directResponse !== undefined) return answeredByProxy(rule.directResponse, "-");
  const destination = chooseDestination(rule.destinations, random);
  if (destination === undefined) return undefined;
  const track = destination.track ?? null;
  if (destination.cluster === null) return noCluster(destination, table.clusterNotFoundCode);
  const request = through(destination.cluster, () => track, { noEndpoint: "noReadyPods" }, behaviours, random, live);
  if (rule.mirrors.length === 0) return request;
  const copies = mirrored(rule, behaviours, random, live);
  return copies.length > 0 ? { ...request, mirrors: copies } : request;
}

/**
 * `count` requests to `app` from callers in the mesh, each carrying the headers `headers` draws for it.
 * With mesh routing (a VirtualService's or HTTPRoutes'), each is routed by it (routeRequest): a destination
 * with weight but no Ready pod answers 503 UH, one whose Service or subset does not exist 503 NC (500 NC
 * from an HTTPRoute), no matching rule 404 NR. Without routing, the app's Service `<name>` takes them (its
 * endpoints at random); without that Service there is nowhere to send them (no name to call).
 *
 * `app` is the app as the proxies know it, which may be a moment old; `live` (when given) names the pods
 * that exist now (`namespace/name`): a request sent to a pod no longer among them is reset (503 UC).
 */
export function simulateRequests(
  app: AppView,
  count: number,
  behaviours: BehaviourTable,
  random: Random,
  live?: ReadonlySet<string>,
  headers: readonly HeaderSpec[] = [],
): SimulatedRequest[] {
  const requests: SimulatedRequest[] = [];
  for (let i = 0; i < count; i++) {
    const drawn = headers.length > 0 ? drawHeaders(headers, random) : {};
    if (app.mesh === null) {
      if (app.service === null) continue;
      // No route: before the app is up nothing is bad, and the Service's own endpoints say which track.
      requests.push(through(app.service, (pod) => pod?.serviceTrack ?? null, {}, behaviours, random, live));
      continue;
    }
    const request = routeRequest(app.mesh, drawn, app.port, behaviours, random, live);
    if (request !== undefined) requests.push(Object.keys(drawn).length > 0 ? { ...request, tagged: true } : request);
  }
  return requests;
}

/**
 * `count` requests from callers without a sidecar: no VirtualService applies to them, kube-proxy sends
 * each to one of the ready endpoints of the app's Service. A Service with none (or no Service) answers
 * nothing (connection refused), counted as a request that reached no Ready pod.
 */
export function simulateOutsideMesh(
  app: AppView,
  count: number,
  behaviours: BehaviourTable,
  random: Random,
  live?: ReadonlySet<string>,
): SimulatedRequest[] {
  const requests: SimulatedRequest[] = [];
  const endpoints: ClusterView = app.service ?? {
    service: { name: app.name, namespace: app.namespace, host: "" },
    endpoints: [],
  };
  for (let i = 0; i < count; i++) {
    const r = through(
      endpoints,
      (pod) => pod?.serviceTrack ?? null,
      { noEndpoint: "noReadyPods" },
      behaviours,
      random,
      live,
    );
    // No proxy at the caller: there is no outbound cluster, and nothing answers 503 but the failure itself.
    requests.push({ ...r, service: null, ...(r.reached ? {} : { latencyMs: 0 }) });
  }
  return requests;
}

/**
 * Spreads a rate over ticks: how many whole requests this tick sends, carrying the fraction to the next,
 * so that 20 rps at 4 ticks a second is exactly 5 a tick and 3 rps is 1, 1, 0, 1... summing to 3 a second.
 */
export function requestsThisTick(rps: number, tickMs: number, carry: number): { count: number; carry: number } {
  const due = carry + (rps * tickMs) / 1000;
  const count = Math.floor(due + 1e-9);
  return { count, carry: due - count };
}
