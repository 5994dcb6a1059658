/**
 * What the simulator has done, for /state: per app, the weights and Ready pods it last read, and the
 * requests it sent to each subset by response code since it started.
 */
import type { Track } from "../../src/api/types.js";
import type { AppView } from "./mesh-view.js";
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

export interface AppState {
  namespace: string;
  name: string;
  /** The mesh route's weights by track as read from the VirtualService; null: no route (the app's Service). */
  weights: Record<Track, number> | null;
  readyPods: Record<Track, string[]>;
  /** Distinct images of the Ready pods. */
  images: Record<Track, string[]>;
  /** The distinct workload names (destination_workload) of each track's Ready pods. */
  workloads: Record<Track, string[]>;
  sent: Record<Destination, SentCounts>;
  /** Requests from callers without a sidecar (the app's Service's endpoints), by the track they reached. */
  outsideMesh: Record<Destination, SentCounts>;
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
  private readonly bad = new Map<string, BadCounts>();
  private readonly recentBad = new Map<string, string[]>();
  private views: AppView[] = [];
  ticks = 0;

  /** The apps as read at the latest tick. */
  setViews(views: AppView[]): void {
    this.views = views;
  }

  /**
   * Counts requests sent through the mesh, or (`outsideMesh`) by callers without a sidecar. Bad requests
   * count only once the app is `up` (its primary was Ready once): before its first pod, nothing serves it.
   */
  record(app: AppView, requests: readonly SimulatedRequest[], outsideMesh = false, up = true): void {
    const key = `${app.namespace}/${app.name}`;
    const table = outsideMesh ? this.outside : this.sent;
    let counts = table.get(key);
    if (!counts) table.set(key, (counts = emptySent()));
    let bad = this.bad.get(key);
    if (!bad) this.bad.set(key, (bad = { noReadyPods: 0, reset: 0, replaced: 0 }));
    count(counts, requests, up ? bad : undefined);
    if (!up) return;
    const recent = this.recentBad.get(key) ?? [];
    for (const r of requests) {
      if (r.bad === undefined) continue;
      recent.push(
        `tick ${this.ticks}: ${r.bad} ${r.track ?? "-"} ${r.pod?.name ?? "-"}${outsideMesh ? " (outside the mesh)" : ""}`,
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
        readyPods: perTrack((t) => v.tracks[t].readyPods.map((p) => p.name)),
        images: perTrack((t) => [...new Set(v.tracks[t].readyPods.map((p) => p.image))]),
        workloads: perTrack((t) => [...new Set(v.tracks[t].readyPods.map((p) => p.workload.name))]),
        sent: structuredClone(this.sent.get(`${v.namespace}/${v.name}`) ?? emptySent()),
        outsideMesh: structuredClone(this.outside.get(`${v.namespace}/${v.name}`) ?? emptySent()),
        bad: { ...(this.bad.get(`${v.namespace}/${v.name}`) ?? { noReadyPods: 0, reset: 0, replaced: 0 }) },
        recentBad: [...(this.recentBad.get(`${v.namespace}/${v.name}`) ?? [])],
      })),
    };
  }
}
