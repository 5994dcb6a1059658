/**
 * What the simulator has done, for /state: per app, the routing, weights and Ready pods it last read (the
 * VirtualService's or HTTPRoutes' rules, and each HTTPRoute's parents as the implementation judges them),
 * and the requests it sent to each track by response code since it started: from callers in the mesh,
 * from callers outside it, through Gateways, and the copies mirrored.
 */
import type { Track } from "../../src/api/types.js";
import { describeParent } from "./gateway-api-objects.js";
import type { AppView } from "./mesh-view.js";
import { routingState, type RoutingState } from "./routing-table.js";
import type { SimulatedRequest } from "./traffic.js";

/** The bad requests of every app: what a rollout must never cause (see BadRequest in traffic.ts). */
export function totalBad(state: SimulatorState): BadCounts & { total: number } {
  const sum = (f: (a: AppState) => number) => state.apps.reduce((n, a) => n + f(a), 0);
  const noReadyPods = sum((a) => a.bad.noReadyPods);
  const reset = sum((a) => a.bad.reset);
  const replaced = sum((a) => a.bad.replaced);
  // `replaced` is the primary's own rolling update, not the rollout's doing: told, not counted as bad.
  return { noReadyPods, reset, replaced, total: noReadyPods + reset };
}

export interface SentCounts {
  total: number;
  byCode: Record<string, number>;
}

/** Where a request went: a track, or `unrouted` when it reached no track (see SimulatedRequest.track). */
export type Destination = Track | "unrouted";

/** An HTTPRoute of the app's as the implementation judges it. */
export interface HTTPRouteState {
  name: string;
  generation: number | null;
  /** Each parentRef (per listener, for a Gateway) and whether it takes the route. */
  parents: { parent: string; listener?: string; accepted: boolean; reason: string; message: string }[];
  /** What `ResolvedRefs` says of its rules, for the mesh and for Gateways; null: all resolved. */
  resolvedRefs: { mesh: string | null; gateway: string | null };
}

export interface AppState {
  namespace: string;
  name: string;
  /**
   * The weights by track of the rule a request without headers takes, as read from the VirtualService or
   * HTTPRoute that routes the app; null: no route (the app's Service).
   */
  weights: Record<Track, number> | null;
  /** Which object routes mesh callers to the app, and its rules as read; null: none (the app's Service). */
  mesh: RoutingState | null;
  /** The app's HTTPRoutes and their parents. */
  httpRoutes: HTTPRouteState[];
  readyPods: Record<Track, string[]>;
  /** Distinct images of the Ready pods. */
  images: Record<Track, string[]>;
  /** The distinct workload names (destination_workload) of each track's Ready pods. */
  workloads: Record<Track, string[]>;
  sent: Record<Destination, SentCounts>;
  /** Requests from callers without a sidecar (the app's Service's endpoints), by the track they reached. */
  outsideMesh: Record<Destination, SentCounts>;
  /** Requests that entered through a Gateway, by the track they reached. */
  throughGateways: Record<Destination, SentCounts>;
  /** Copies of requests mirrored to a pod (answers discarded), by the track of the mirror. */
  mirrored: Record<Destination, SentCounts>;
  /**
   * Of the mesh requests (`sent`), those that carried a header or cookie of the simulator's `requestHeaders`,
   * by the track they reached: what an A/B rule on them may send to the secondary.
   */
  tagged: Record<Destination, SentCounts>;
  /** Requests that reached a destination with no Ready pod, or were reset by a deleted pod (mesh or not). */
  bad: BadCounts;
  /** The first and latest bad requests (at most 20), to tell where they came from. */
  recentBad: string[];
}

export interface BadCounts {
  noReadyPods: number;
  reset: number;
  /** Requests to a primary pod its Deployment's rolling update had removed (see BadRequest). */
  replaced: number;
}

export interface SimulatorState {
  rps: number;
  tickMs: number;
  ticks: number;
  apps: AppState[];
}

const emptySent = (): Record<Destination, SentCounts> => ({
  primary: { total: 0, byCode: {} },
  secondary: { total: 0, byCode: {} },
  unrouted: { total: 0, byCode: {} },
});

function count(
  counts: Record<Destination, SentCounts>,
  requests: readonly SimulatedRequest[],
  bad: BadCounts | undefined,
): void {
  for (const r of requests) {
    const c = counts[r.track ?? "unrouted"];
    c.total++;
    c.byCode[String(r.code)] = (c.byCode[String(r.code)] ?? 0) + 1;
    if (r.bad !== undefined && bad !== undefined) bad[r.bad]++;
  }
}

export class Ledger {
  private readonly sent = new Map<string, Record<Destination, SentCounts>>();
  private readonly outside = new Map<string, Record<Destination, SentCounts>>();
  private readonly gateway = new Map<string, Record<Destination, SentCounts>>();
  private readonly mirrors = new Map<string, Record<Destination, SentCounts>>();
  private readonly tagged = new Map<string, Record<Destination, SentCounts>>();
  private readonly bad = new Map<string, BadCounts>();
  private readonly recentBad = new Map<string, string[]>();
  private views: AppView[] = [];
  ticks = 0;

  /** The apps as read at the latest tick. */
  setViews(views: AppView[]): void {
    this.views = views;
  }

  /**
   * Counts requests sent through the mesh, or (`outsideMesh`) by callers without a sidecar, or (`via`) through
   * that Gateway, and the copies they mirrored. Bad requests count only once the app is `up` (its primary
   * was Ready once): before its first pod, nothing serves it.
   */
  record(app: AppView, requests: readonly SimulatedRequest[], outsideMesh = false, up = true, via?: string): void {
    const key = `${app.namespace}/${app.name}`;
    const table = via !== undefined ? this.gateway : outsideMesh ? this.outside : this.sent;
    let counts = table.get(key);
    if (!counts) table.set(key, (counts = emptySent()));
    const carried = requests.filter((r) => r.tagged === true);
    if (carried.length > 0 && via === undefined && !outsideMesh) {
      let tagged = this.tagged.get(key);
      if (!tagged) this.tagged.set(key, (tagged = emptySent()));
      count(tagged, carried, undefined);
    }
    const copies = requests.flatMap((r) => r.mirrors ?? []);
    if (copies.length > 0) {
      let mirrored = this.mirrors.get(key);
      if (!mirrored) this.mirrors.set(key, (mirrored = emptySent()));
      count(mirrored, copies, undefined);
    }
    let bad = this.bad.get(key);
    if (!bad) this.bad.set(key, (bad = { noReadyPods: 0, reset: 0, replaced: 0 }));
    count(counts, requests, up ? bad : undefined);
    if (!up) return;
    const recent = this.recentBad.get(key) ?? [];
    for (const r of requests) {
      if (r.bad === undefined) continue;
      recent.push(
        `tick ${this.ticks}: ${r.bad} ${r.code} ${r.track ?? "-"} ${r.pod?.name ?? "-"}${
          via !== undefined ? ` (through ${via})` : outsideMesh ? " (outside the mesh)" : ""
        }`,
      );
    }
    // The first ten and the latest ten.
    this.recentBad.set(key, recent.length > 20 ? [...recent.slice(0, 10), ...recent.slice(-10)] : recent);
  }

  state(rps: number, tickMs: number): SimulatorState {
    const perTrack = <T>(f: (t: Track) => T): Record<Track, T> => ({
      primary: f("primary"),
      secondary: f("secondary"),
    });
    return {
      rps,
      tickMs,
      ticks: this.ticks,
      apps: this.views.map((v) => ({
        namespace: v.namespace,
        name: v.name,
        weights: v.weights,
        mesh: v.mesh === null ? null : routingState(v.mesh),
        httpRoutes: v.httpRoutes.map((r) => ({
          name: r.route.metadata?.name ?? "",
          generation: r.route.metadata?.generation ?? null,
          parents: r.parents.map((p) => ({
            parent: describeParent(p.ref, v.namespace),
            ...(p.listener !== undefined ? { listener: p.listener.name } : {}),
            accepted: p.denied === undefined,
            reason: p.denied?.reason ?? "Accepted",
            message: p.denied?.message ?? "",
          })),
          resolvedRefs: {
            mesh: r.mesh.error === undefined ? null : `${r.mesh.error.reason}: ${r.mesh.error.message}`,
            gateway: r.gateway.error === undefined ? null : `${r.gateway.error.reason}: ${r.gateway.error.message}`,
          },
        })),
        readyPods: perTrack((t) => v.tracks[t].readyPods.map((p) => p.name)),
        images: perTrack((t) => [...new Set(v.tracks[t].readyPods.map((p) => p.image))]),
        workloads: perTrack((t) => [...new Set(v.tracks[t].readyPods.map((p) => p.workload.name))]),
        sent: structuredClone(this.sent.get(`${v.namespace}/${v.name}`) ?? emptySent()),
        outsideMesh: structuredClone(this.outside.get(`${v.namespace}/${v.name}`) ?? emptySent()),
        throughGateways: structuredClone(this.gateway.get(`${v.namespace}/${v.name}`) ?? emptySent()),
        mirrored: structuredClone(this.mirrors.get(`${v.namespace}/${v.name}`) ?? emptySent()),
        tagged: structuredClone(this.tagged.get(`${v.namespace}/${v.name}`) ?? emptySent()),
        bad: { ...(this.bad.get(`${v.namespace}/${v.name}`) ?? { noReadyPods: 0, reset: 0, replaced: 0 }) },
        recentBad: [...(this.recentBad.get(`${v.namespace}/${v.name}`) ?? [])],
      })),
    };
  }
}
