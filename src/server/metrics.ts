import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import type { MetricResult, Phase } from "../api/types.js";
import type { ControllerHooks, ReconcileOutcome } from "../controller/controller.js";

/** Every phase, so that `canaryapp_phase` can show 1 for the current one and 0 for the others. */
export const PHASES = [
  "Initializing",
  "Healthy",
  "Progressing",
  "Paused",
  "Promoting",
  "RollingBack",
  "Failed",
  "Invalid",
] as const satisfies readonly Phase[];

// Fails to compile when a phase is added to the API but not to PHASES.
type MissingPhase = Exclude<Phase, (typeof PHASES)[number]>;
const _allPhasesListed: MissingPhase extends never ? true : MissingPhase = true;
void _allPhasesListed;

export interface ControllerMetricsOptions {
  /** Also export the process metrics of prom-client (CPU, memory, event loop lag...). Default true. */
  processMetrics?: boolean;
}

/** Per-app series that are not phases; tracked so they can be removed when the app goes away. */
interface AppSeries {
  transitionReasons: Set<string>;
  analysisResults: Set<string>;
  /** Checks with a value (and thresholds) shown. */
  checks: Set<string>;
  /** Failed images shown, as JSON [image, reason]. */
  failedImages: Set<string>;
  stepDurations: boolean;
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
  private readonly phase: Gauge<"namespace" | "name" | "phase">;
  private readonly secondaryWeight: Gauge<"namespace" | "name">;
  private readonly failedChecks: Gauge<"namespace" | "name">;
  private readonly transitions: Counter<"namespace" | "name" | "reason">;
  private readonly analyses: Counter<"namespace" | "name" | "result">;
  private readonly analysisValue: Gauge<"namespace" | "name" | "check">;
  private readonly analysisMin: Gauge<"namespace" | "name" | "check">;
  private readonly analysisMax: Gauge<"namespace" | "name" | "check">;
  private readonly stepDuration: Histogram<"namespace" | "name">;
  private readonly failedImageCount: Gauge<"namespace" | "name">;
  private readonly failedImage: Gauge<"namespace" | "name" | "image" | "reason">;
  private readonly apiRequestDuration: Histogram<"kind" | "verb" | "result">;
  private readonly apiRequests: Counter;
  private readonly apps = new Map<string, AppSeries>();
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
    this.phase = new Gauge({
      name: "canaryapp_phase",
      help: "1 for the CanaryApp's current phase, 0 for the others.",
      labelNames: ["namespace", "name", "phase"],
      registers,
    });
    this.secondaryWeight = new Gauge({
      name: "canaryapp_secondary_weight",
      help: "Percentage of traffic routed to the secondary (the version under test).",
      labelNames: ["namespace", "name"],
      registers,
    });
    this.failedChecks = new Gauge({
      name: "canaryapp_failed_checks",
      help: "Failed analysis checks counted in the current test.",
      labelNames: ["namespace", "name"],
      registers,
    });
    this.transitions = new Counter({
      name: "canaryapp_transitions_total",
      help: "Rollout transitions (test started, step advanced, promoted, rolled back...), by reason.",
      labelNames: ["namespace", "name", "reason"],
      registers,
    });
    this.analyses = new Counter({
      name: "canaryapp_analysis_total",
      help: "Analyses run, by result.",
      labelNames: ["namespace", "name", "result"],
      registers,
    });
    const checkLabels = ["namespace", "name", "check"] as const;
    this.analysisValue = new Gauge({
      name: "canaryapp_analysis_value",
      help: "The value each check of the last analysis measured (a webhook's: the HTTP status it answered).",
      labelNames: checkLabels,
      registers,
    });
    this.analysisMin = new Gauge({
      name: "canaryapp_analysis_threshold_min",
      help: "The lowest value each check passes with (its min), for checks that have one.",
      labelNames: checkLabels,
      registers,
    });
    this.analysisMax = new Gauge({
      name: "canaryapp_analysis_threshold_max",
      help: "The highest value each check passes with (its max), for checks that have one.",
      labelNames: checkLabels,
      registers,
    });
    this.stepDuration = new Histogram({
      name: "canaryapp_step_duration_seconds",
      help: "How long each traffic step lasted, from its weight applied to the next step, promotion or rollback.",
      labelNames: ["namespace", "name"],
      buckets: [1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600],
      registers,
    });
    this.failedImageCount = new Gauge({
      name: "canaryapp_failed_images",
      help: "Images recorded as failed in the CanaryApp's status (status.failedImages).",
      labelNames: ["namespace", "name"],
      registers,
    });
    this.failedImage = new Gauge({
      name: "canaryapp_failed_image_info",
      help: "1 for each image recorded as failed, with the reason it failed.",
      labelNames: ["namespace", "name", "image", "reason"],
      registers,
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
      help: "Every request the controller sent to the API server (reads, lists, watches, writes, Events, the Lease).",
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
  setAppState(
    namespace: string,
    name: string,
    state: { phase?: Phase; secondaryWeight?: number; failedChecks?: number },
  ): void {
    this.series(namespace, name);
    if (state.phase !== undefined) {
      for (const phase of PHASES) this.phase.set({ namespace, name, phase }, phase === state.phase ? 1 : 0);
    }
    if (state.secondaryWeight !== undefined) this.secondaryWeight.set({ namespace, name }, state.secondaryWeight);
    if (state.failedChecks !== undefined) this.failedChecks.set({ namespace, name }, state.failedChecks);
  }

  countTransition(namespace: string, name: string, reason: string): void {
    this.series(namespace, name).transitionReasons.add(reason);
    this.transitions.inc({ namespace, name, reason });
  }

  countAnalysis(namespace: string, name: string, result: string): void {
    this.series(namespace, name).analysisResults.add(result);
    this.analyses.inc({ namespace, name, result });
  }

  /** The values of one analysis' checks, and their thresholds. */
  setAnalysis(namespace: string, name: string, results: readonly MetricResult[]): void {
    const series = this.series(namespace, name);
    for (const r of results) {
      const labels = { namespace, name, check: r.name };
      series.checks.add(r.name);
      if (r.value !== undefined && Number.isFinite(r.value)) this.analysisValue.set(labels, r.value);
      else this.analysisValue.remove(labels);
      if (r.min !== undefined) this.analysisMin.set(labels, r.min);
      if (r.max !== undefined) this.analysisMax.set(labels, r.max);
    }
  }

  /** A traffic step of the app ended after `seconds`. */
  observeStep(namespace: string, name: string, seconds: number): void {
    this.series(namespace, name).stepDurations = true;
    this.stepDuration.observe({ namespace, name }, seconds);
  }

  /** The app's failed images as its status records them. */
  setFailedImages(namespace: string, name: string, failed: readonly { image: string; reason: string }[]): void {
    const series = this.series(namespace, name);
    this.failedImageCount.set({ namespace, name }, failed.length);
    const now = new Set(failed.map((f) => JSON.stringify([f.image, f.reason])));
    for (const shown of series.failedImages) {
      if (now.has(shown)) continue;
      const [image = "", reason = ""] = JSON.parse(shown) as string[];
      this.failedImage.remove({ namespace, name, image, reason });
    }
    for (const f of failed) this.failedImage.set({ namespace, name, image: f.image, reason: f.reason }, 1);
    series.failedImages = now;
  }

  /** One request of any kind (read, list, watch, write, Event, Lease) went to the API server. */
  countApiRequest(): void {
    this.apiRequests.inc();
  }

  /** One request to the API server took `seconds`. */
  observeApiRequest(kind: string, verb: string, seconds: number, ok: boolean): void {
    this.apiRequestDuration.observe({ kind, verb, result: ok ? "ok" : "error" }, seconds);
  }

  /** Drops every series of a deleted app, so it no longer shows in dashboards. */
  removeApp(namespace: string, name: string): void {
    const series = this.apps.get(`${namespace}/${name}`);
    if (series === undefined) return;
    for (const phase of PHASES) this.phase.remove({ namespace, name, phase });
    this.secondaryWeight.remove({ namespace, name });
    this.failedChecks.remove({ namespace, name });
    for (const reason of series.transitionReasons) this.transitions.remove({ namespace, name, reason });
    for (const result of series.analysisResults) this.analyses.remove({ namespace, name, result });
    for (const check of series.checks) {
      for (const gauge of [this.analysisValue, this.analysisMin, this.analysisMax])
        gauge.remove({ namespace, name, check });
    }
    this.failedImageCount.remove({ namespace, name });
    for (const shown of series.failedImages) {
      const [image = "", reason = ""] = JSON.parse(shown) as string[];
      this.failedImage.remove({ namespace, name, image, reason });
    }
    if (series.stepDurations) this.stepDuration.remove({ namespace, name });
    this.apps.delete(`${namespace}/${name}`);
  }

  /** Where the leader gauge reads from at scrape time, e.g. `() => elector.isLeader()`. */
  setLeaderSource(source: () => boolean): void {
    this.leaderSource = source;
  }

  /** The exposition text, for /metrics. */
  metrics(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  private series(namespace: string, name: string): AppSeries {
    const key = `${namespace}/${name}`;
    let series = this.apps.get(key);
    if (series === undefined) {
      series = {
        transitionReasons: new Set(),
        analysisResults: new Set(),
        checks: new Set(),
        failedImages: new Set(),
        stepDurations: false,
      };
      this.apps.set(key, series);
    }
    return series;
  }
}
