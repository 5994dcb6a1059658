/**
 * What the simulator has done, for /state: per app, the weights and Ready pods it last read, and the
 * requests it sent to each subset by response code since it started.
 */
import type { Track } from "../../src/api/types.js";
import type { AppView } from "./mesh-view.js";
import type { SimulatedRequest } from "./traffic.js";

export interface SentCounts {
  total: number;
  byCode: Record<string, number>;
}

/** Where a request went: a subset, or `unrouted` when no route and no Ready pod left it nowhere to go. */
export type Destination = Track | "unrouted";

export interface AppState {
  namespace: string;
  name: string;
  /** The mesh route's weights as read from the VirtualService; null: no route (Service round robin). */
  weights: Record<Track, number> | null;
  readyPods: Record<Track, string[]>;
  /** Distinct images of the Ready pods. */
  images: Record<Track, string[]>;
  workloads: Record<Track, string>;
  sent: Record<Destination, SentCounts>;
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

export class Ledger {
  private readonly sent = new Map<string, Record<Destination, SentCounts>>();
  private views: AppView[] = [];
  ticks = 0;

  /** The apps as read at the latest tick. */
  setViews(views: AppView[]): void {
    this.views = views;
  }

  record(app: AppView, requests: readonly SimulatedRequest[]): void {
    const key = `${app.namespace}/${app.name}`;
    let counts = this.sent.get(key);
    if (!counts) this.sent.set(key, (counts = emptySent()));
    for (const r of requests) {
      const c = counts[r.track ?? "unrouted"];
      c.total++;
      c.byCode[String(r.code)] = (c.byCode[String(r.code)] ?? 0) + 1;
    }
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
        workloads: perTrack((t) => v.tracks[t].workload),
        sent: structuredClone(this.sent.get(`${v.namespace}/${v.name}`) ?? emptySent()),
      })),
    };
  }
}
