/**
 * The data plane, simulated: where each request of an app goes and how it is answered. Pure, given the
 * random source: Envoy picks a weighted cluster at random per request, and so does this.
 */
import type { Track } from "../../src/api/types.js";
import { behaviourFor, type BehaviourTable } from "./behaviour.js";
import { TRACKS, type AppView, type PodView } from "./mesh-view.js";
import { pick, type Random } from "./prng.js";

/**
 * Envoy's response flags: "UH" no healthy upstream, "UC" upstream connection termination (the pod went
 * away under the request); "-" when there is none.
 */
export type ResponseFlags = "-" | "UH" | "UC";

/**
 * Why a request went wrong through no fault of the image: it reached a destination with no Ready pod, or
 * the pod it was sent to had been deleted: `reset` when the pod was the secondary's (removed by the
 * controller before the proxies had the new route: what the drain prevents), `replaced` when it was the
 * primary's, replaced by its Deployment's rolling update (kwok removes a deleted pod at once, where a real
 * pod would keep serving for its termination grace; the app's own shutdown decides, not the rollout).
 */
export type BadRequest = "noReadyPods" | "reset" | "replaced";

const goneKind = (pod: PodView): BadRequest => (pod.track === "secondary" ? "reset" : "replaced");

/** One simulated request, as the destination's sidecar would report it. */
export interface SimulatedRequest {
  /** The subset it was routed to; null when no route and no Ready pod left nowhere to send it. */
  track: Track | null;
  /** destination_workload: the track's Deployment, or "unknown" when the request reached no workload. */
  workload: string;
  pod: string | null;
  code: number;
  flags: ResponseFlags;
  latencyMs: number;
  /** Set when the request failed for a reason the rollout must never cause (see BadRequest). */
  bad?: BadRequest;
}

/** How long Envoy takes to answer 503 when a cluster has no healthy host: next to nothing. */
const NO_UPSTREAM_LATENCY_MS = 0.5;

/** The subset a request takes under `weights` (relative; their sum need not be 100). null if all are 0. */
export function chooseTrack(weights: Record<Track, number>, random: Random): Track | null {
  const total = weights.primary + weights.secondary;
  if (total <= 0) return null;
  return random() * total < weights.primary ? "primary" : "secondary";
}

function answer(pod: PodView, workload: string, behaviours: BehaviourTable, random: Random): SimulatedRequest {
  const b = behaviourFor(pod.image, behaviours);
  const failed = random() < b.errorRate;
  return {
    track: pod.track,
    workload,
    pod: pod.name,
    code: failed ? 500 : 200,
    flags: "-",
    latencyMs: b.latencyMs + random() * b.jitterMs,
  };
}

/**
 * `count` requests to `app`. With a mesh route, each takes a subset by weight and then a Ready pod of that
 * subset; a subset with weight but no Ready pod answers 503 UH, attributed to that subset's workload.
 * Without a route, the Service's round robin spreads requests over every Ready pod of the app.
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
): SimulatedRequest[] {
  const served = (pod: PodView, workload: string): SimulatedRequest =>
    live !== undefined && !live.has(`${app.namespace}/${pod.name}`)
      ? { track: pod.track, workload, pod: pod.name, code: 503, flags: "UC", latencyMs: 0, bad: goneKind(pod) }
      : answer(pod, workload, behaviours, random);
  const requests: SimulatedRequest[] = [];
  const everyReady = TRACKS.flatMap((t) => app.tracks[t].readyPods);
  for (let i = 0; i < count; i++) {
    if (app.weights === null) {
      const pod = pick(everyReady, random);
      requests.push(
        pod
          ? served(pod, app.tracks[pod.track].workload)
          : { track: null, workload: "unknown", pod: null, code: 503, flags: "UH", latencyMs: NO_UPSTREAM_LATENCY_MS },
      );
      continue;
    }
    const track = chooseTrack(app.weights, random);
    if (track === null) continue; // every weight is 0: Envoy has nowhere to route, no workload sees it
    const { workload, readyPods } = app.tracks[track];
    const pod = pick(readyPods, random);
    requests.push(
      pod
        ? served(pod, workload)
        : {
            track,
            workload,
            pod: null,
            code: 503,
            flags: "UH",
            latencyMs: NO_UPSTREAM_LATENCY_MS,
            bad: "noReadyPods",
          },
    );
  }
  return requests;
}

/**
 * `count` requests from callers without a sidecar: no VirtualService applies to them, kube-proxy sends
 * each to one of the ready endpoints of the app's Service (`app.servicePods`). A Service with none
 * answers nothing (connection refused), counted as a request that reached no Ready pod.
 */
export function simulateOutsideMesh(
  app: AppView,
  count: number,
  behaviours: BehaviourTable,
  random: Random,
  live?: ReadonlySet<string>,
): SimulatedRequest[] {
  const requests: SimulatedRequest[] = [];
  for (let i = 0; i < count; i++) {
    const pod = pick(app.servicePods, random);
    if (pod === undefined) {
      requests.push({
        track: null,
        workload: "unknown",
        pod: null,
        code: 503,
        flags: "UH",
        latencyMs: 0,
        bad: "noReadyPods",
      });
    } else if (live !== undefined && !live.has(`${app.namespace}/${pod.name}`)) {
      const workload = app.tracks[pod.track].workload;
      requests.push({
        track: pod.track,
        workload,
        pod: pod.name,
        code: 503,
        flags: "UC",
        latencyMs: 0,
        bad: goneKind(pod),
      });
    } else {
      requests.push(answer(pod, app.tracks[pod.track].workload, behaviours, random));
    }
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
