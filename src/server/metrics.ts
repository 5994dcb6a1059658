import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import type { MetricResult } from "../api/types.js";
import { AppMetrics, type AppState } from "./app-metrics.js";
import type { ControllerHooks, ReconcileOutcome } from "../controller/controller.js";

export { PHASES } from "./app-metrics.js";

export interface ControllerMetricsOptions {
  /** Also export the process metrics of prom-client (CPU, memory, event loop lag...). Default true. */
  processMetrics?: boolean;
}

/**
 * The controller's Prometheus metrics, on a registry of its own (so tests and several instances never
 * collide on prom-client's global one).
 */
/** A sharded replica's figures, read at scrape time (ADR 0016). */
export interface ShardFigures {
  /** Shares held. */
  shares: number;
  /** CanaryApps in the cache of the shares held. */
  apps: number;
  /** Shares held whose caches are still loading. */
  loading: number;
}

export class ControllerMetrics {
  readonly registry = new Registry();
  private readonly reconcileDuration: Histogram<"result">;
  private readonly reconcileErrors: Counter;
  private readonly apiRequestDuration: Histogram<"kind" | "verb" | "result">;
  /** The request duration's series by kind, verb and result (a few dozen at most). */
  private readonly apiRequestSeries = new Map<string, Histogram.Internal<"kind" | "verb" | "result">>();
  private readonly apiRequests: Counter;
  /** The series of each app, outside prom-client (ADR 0020). */
  private readonly apps = new AppMetrics();
  private queueDepthSource: () => number = () => 0;
  private leaderSource: () => boolean = () => false;
  private shardSource: () => ShardFigures = () => ({ shares: 0, apps: 0, loading: 0 });
  private cacheSource: () => Record<string, number> = () => ({});
  private readonly shardWrites: Counter<"share" | "result">;

  constructor(options: ControllerMetricsOptions = {}) {
    const registers = [this.registry];
    if (options.processMetrics !== false) collectDefaultMetrics({ register: this.registry });
    this.reconcileDuration = new Histogram({
      name: "canaryapp_reconcile_duration_seconds",
      help: "Time one reconcile took, by result (success, requeue, error, terminal).",
      labelNames: ["result"],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
    this.reconcileErrors = new Counter({
      name: "canaryapp_reconcile_errors_total",
      help: "Reconciles that failed (retried with backoff, or terminal).",
      registers,
    });
    const source = (): number => this.queueDepthSource();
    new Gauge({
      name: "canaryapp_workqueue_depth",
      help: "Keys waiting in the work queue.",
      registers,
      collect() {
        this.set(source());
      },
    });
    this.apiRequestDuration = new Histogram({
      name: "canaryapp_api_request_duration_seconds",
      help: "Time the API server took to answer the controller's requests, by kind, verb and result (ok, error).",
      labelNames: ["kind", "verb", "result"],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    this.apiRequests = new Counter({
      name: "canaryapp_api_requests_total",
      help: "Every request the controller sent to the API server (reads, lists, watches, writes, Events, the Lease), by verb (get, watch, post, put, patch, delete; a list is a get).",
      labelNames: ["verb"],
      registers,
    });
    const isLeader = (): boolean => this.leaderSource();
    new Gauge({
      name: "canaryapp_leader",
      help: "1 while this replica holds the leader lease (sharded: at least one share), else 0.",
      registers,
      // Read at scrape time, so the gauge is never behind the lease.
      collect() {
        this.set(isLeader() ? 1 : 0);
      },
    });
    const shards = (): ShardFigures => this.shardSource();
    new Gauge({
      name: "canaryapp_shards_held",
      help: "Shares of the apps this replica holds a Lease for (0 unless sharded, ADR 0016).",
      registers,
      collect() {
        this.set(shards().shares);
      },
    });
    new Gauge({
      name: "canaryapp_shard_apps",
      help: "CanaryApps in the shares this replica holds (0 unless sharded).",
      registers,
      collect() {
        this.set(shards().apps);
      },
    });
    new Gauge({
      name: "canaryapp_shards_loading",
      help: "Shares held whose objects are still being loaded into the caches: their apps are not worked on yet.",
      registers,
      collect() {
        this.set(shards().loading);
      },
    });
    const cacheSizes = (): Record<string, number> => this.cacheSource();
    new Gauge({
      name: "canaryapp_cached_objects",
      help: "Objects in each informer cache (sharded: only those of the apps in the shares held, ADR 0016).",
      labelNames: ["cache"],
      registers,
      collect() {
        this.reset();
        for (const [cache, n] of Object.entries(cacheSizes())) this.set({ cache }, n);
      },
    });
    this.shardWrites = new Counter({
      name: "canaryapp_shard_writes_total",
      help: "Writes for apps of each share, by whether the fence let them through (ok) or refused them (refused).",
      labelNames: ["share", "result"],
      registers,
    });
  }

  /** A write for an app of `share` that the fence let through or refused. */
  shardWrite(share: number | undefined, result: "ok" | "refused"): void {
    this.shardWrites.inc({ share: share === undefined ? "" : String(share), result });
  }

  /** Where `canaryapp_cached_objects` reads from at scrape time: objects per informer cache. */
  setCacheSource(source: () => Record<string, number>): void {
    this.cacheSource = source;
  }

  /** Where the shard gauges read from at scrape time: shares held and apps in them. */
  setShardSource(source: () => ShardFigures): void {
    this.shardSource = source;
  }

  /** Hooks for `Controller`: reconcile durations and errors. */
  controllerHooks(): ControllerHooks {
    return {
      reconciled: ({ durationMs, outcome }) => this.observeReconcile(durationMs / 1000, outcome),
    };
  }

  observeReconcile(durationSeconds: number, outcome: ReconcileOutcome): void {
    this.reconcileDuration.observe({ result: outcome }, durationSeconds);
    if (outcome === "error" || outcome === "terminal") this.reconcileErrors.inc();
  }

  /** Where the queue depth gauge reads from at scrape time, e.g. `() => controller.queueDepth()`. */
  setQueueDepthSource(source: () => number): void {
    this.queueDepthSource = source;
  }

  /** Sets the per-app gauges; absent fields are left as they are. */
  setAppState(namespace: string, name: string, state: AppState): void {
    this.apps.setState(namespace, name, state);
  }

  countTransition(namespace: string, name: string, reason: string): void {
    this.apps.countTransition(namespace, name, reason);
  }

  countAnalysis(namespace: string, name: string, result: string): void {
    this.apps.countAnalysis(namespace, name, result);
  }

  /** The values of one analysis' checks, and their thresholds. */
  setAnalysis(namespace: string, name: string, results: readonly MetricResult[]): void {
    this.apps.setAnalysis(namespace, name, results);
  }

  /** A traffic step of the app ended after `seconds`. */
  observeStep(namespace: string, name: string, seconds: number): void {
    this.apps.observeStep(namespace, name, seconds);
  }

  /** The app's failed images as its status records them. */
  setFailedImages(namespace: string, name: string, failed: readonly { image: string; reason: string }[]): void {
    this.apps.setFailedImages(namespace, name, failed);
  }

  /** One request of any kind (read, list, watch, write, Event, Lease) went to the API server. */
  countApiRequest(verb: string): void {
    this.apiRequests.inc({ verb });
  }

  /**
   * One request to the API server took `seconds`. Each series' child is looked up once and kept: the labels'
   * hash is then not made again for every request.
   */
  observeApiRequest(kind: string, verb: string, seconds: number, ok: boolean): void {
    const result = ok ? "ok" : "error";
    const key = `${kind}\u0000${verb}\u0000${result}`;
    let series = this.apiRequestSeries.get(key);
    if (series === undefined) {
      series = this.apiRequestDuration.labels({ kind, verb, result });
      this.apiRequestSeries.set(key, series);
    }
    series.observe(seconds);
  }

  /** Drops every series of a deleted app, so it no longer shows in dashboards. */
  removeApp(namespace: string, name: string): void {
    this.apps.remove(namespace, name);
  }

  /** Where the leader gauge reads from at scrape time, e.g. `() => elector.isLeader()`. */
  setLeaderSource(source: () => boolean): void {
    this.leaderSource = source;
  }

  /** The exposition text, for /metrics. */
  async metrics(): Promise<string> {
    const shared = await this.registry.metrics();
    return `${shared.trimEnd()}\n\n${this.apps.render()}`;
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
