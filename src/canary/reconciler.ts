import type { Logger } from "pino";
import type { Clock } from "../time/clock.js";
import type { CanaryApp, MetricResult } from "../api/types.js";
import { objectKey, splitKey } from "../object-keys.js";
import { nameClash } from "../resources/ownership.js";
import type { TrafficRouter } from "../router/router.js";
import type { WorkloadTarget } from "../workload/workload.js";
import type { AnalysisCheck } from "../analysis/checks.js";
import type { Planning } from "../rollout/planner.js";
import { startPlan } from "../rollout/planner.js";
import type { NotificationDeliveries } from "../notify/deliveries.js";
import type { Plan, PlannedEvent } from "../rollout/types.js";
import { StatusWriter } from "../status/writer.js";
import type { AnalysisRuns } from "./analysis-runs.js";
import { AheadOfCache } from "./ahead-of-cache.js";
import { appPorts, routerMissing } from "./app-ports.js";
import { observe, observeTemplates } from "./observe.js";
import type { Caches, ClusterWriter, EventSink, ReconcileObserver } from "./ports.js";
import { appsOfNamespace } from "./ports.js";
import { Actor } from "./act.js";

export interface ReconcilerDeps {
  caches: Caches;
  writer: ClusterWriter;
  events: EventSink;
  /** Runs the checks off the work queue; a finished run requeues the app's key. */
  analyses: AnalysisRuns;
  router: TrafficRouter;
  /** The Deployment target; an app whose spec.workload asks for a StatefulSet gets that target instead. */
  workload: WorkloadTarget;
  observer: ReconcileObserver;
  log: Logger;
  clock: Clock;
  /**
   * Notifications: which apps have receivers (their status keeps an outbox of notices), and the deliveries
   * that run off the work queue. Absent: no app is notified.
   */
  notices?: { deliveries: NotificationDeliveries; enabled(app: CanaryApp): boolean };
  /**
   * Labels added to every child's object metadata (never to a pod template): a sharded replica's share label
   * (ADR 0016), by which a replica gaining the share lists the children. Absent: none.
   */
  childLabels?: (app: CanaryApp) => Readonly<Record<string, string>>;
  /** Why the app's Prometheus may not be queried (its Secret or URL is refused); checked before each plan. */
  vetPrometheus?: (app: CanaryApp) => { reason: string; message: string } | undefined;
  /**
   * Why nothing of the app may be written (its route answers for a host or attaches to a gateway the operator
   * does not allow); checked before each plan, before any child is touched.
   */
  vetRoute?: (app: CanaryApp) => { reason: string; message: string } | undefined;
}

/**
 * The identity of the step an analysis is for: the test (image, start), its stage, step and the step's
 * start, and the checks as rendered. Any of them changing makes an earlier run's result stale.
 */
export function analysisStep(app: CanaryApp, checks: readonly AnalysisCheck[]): string {
  const canary = app.status?.canary;
  return JSON.stringify([
    canary?.image ?? null,
    canary?.startedAt ?? null,
    canary?.stage ?? null,
    canary?.step ?? null,
    canary?.stepStartedAt ?? null,
    canary?.stepRoutedAt ?? null,
    // A gate held by a webhook is asked again later: each ask is a run of its own.
    canary?.gates?.waiting?.checkedAt ?? null,
    checks,
  ]);
}

export interface ReconcileResult {
  requeueAfterMs?: number;
}

/** How often a CanaryApp blocked by an object it does not own looks again for the hand-over annotation. */
export const NOT_OWNED_RECHECK_SECONDS = 10;

/**
 * One reconcile of one CanaryApp: observe (the caches) → plan (pure; when the planner says a step's
 * analysis is due, the checks run and the plan completes with their results) → persist → act. It decides
 * nothing itself: every status it writes comes from the planner (rollout/), through the one status writer
 * (status/writer.ts); every child it writes, through the actor (act.ts).
 *
 * The status is persisted before the children are touched. The status is the rollout's only memory, so
 * it is written as intent: a controller killed between the two steps restarts from a status that already
 * names the step it was taking and simply makes the world match it, instead of taking the step again.
 * The write is guarded by resourceVersion, so a reconcile that planned from a stale cache loses and
 * re-plans instead of overwriting newer state.
 */
export class CanaryReconciler {
  /** What this process wrote or told that the caches and the status do not show yet. */
  readonly #ahead = new AheadOfCache();
  /** Every status write goes through it. */
  readonly #status: StatusWriter;
  /** Every write of a child goes through it. */
  readonly #actor: Actor;

  constructor(private readonly deps: ReconcilerDeps) {
    const notices = deps.notices;
    this.#status = new StatusWriter({
      store: deps.writer,
      events: deps.events,
      told: this.#ahead,
      ...(notices !== undefined && {
        notices: { enabled: (app) => notices.enabled(app), delivered: (key) => notices.deliveries.delivered(key) },
      }),
      onEvent: (app, event, log) => this.noted(app, event, log),
    });
    this.#actor = new Actor({ ...deps, ahead: this.#ahead, emit: (app, event, log) => this.emit(app, event, log) });
  }

  async reconcile(key: string): Promise<ReconcileResult> {
    const app = this.read(key);
    if (app === undefined) return {};
    this.#status.withHeld(app);
    const log = this.deps.log.child({ canaryapp: key, generation: app.metadata.generation });
    const now = new Date(this.deps.clock.now());
    const refused = this.deps.vetPrometheus?.(app);
    const ports = appPorts(app, this.deps);
    const specRefused =
      nameClash(app, appsOfNamespace(this.deps.caches, app)) ??
      this.deps.vetRoute?.(app) ??
      routerMissing(app, ports.router, this.deps.caches);
    const observed = observe(app, this.deps.caches, ports.router, ports.workload);
    const templates = observeTemplates(app, this.deps.caches);
    const planning = startPlan({
      app,
      observed: {
        ...observed,
        // A pod this process deleted, whose deletion the cache has not shown yet, is not there any more.
        ...(observed.setPods !== undefined && {
          setPods: {
            ...observed.setPods,
            pods: observed.setPods.pods.filter(
              (pod) => !this.#ahead.deletedUnseen({ kind: "Pod", namespace: app.metadata.namespace, name: pod.name }),
            ),
          },
        }),
        ...(refused && { analysisRefused: refused }),
        ...(specRefused && { specRefused }),
        ...(templates !== undefined && { analysisTemplates: templates }),
      },
      now,
    });
    if (planning.kind === "invalid") {
      await this.#status.record(app, planning.plan, now, log);
      return this.finish(app);
    }
    let plan: Plan;
    if (planning.kind === "ready") plan = planning.plan;
    else {
      const results = this.analysed(key, app, planning, log);
      // Still running: the run's end requeues the key, and no worker waits for it meanwhile.
      if (results === undefined) return this.finish(app);
      plan = planning.complete(results);
    }
    const toldAll = await this.#status.record(app, plan, now, log);
    // The requests this plan answered are on record in status now: they are consumed before the world is
    // changed, so a GitOps tool sees no drift for longer than the status write takes.
    if (plan.removeAnnotations.length > 0) await this.removeConsumed(app, plan.removeAnnotations);
    const acted = await this.#actor.act(app, planning.spec, plan, log);
    await this.#status.recordActed(app, acted, toldAll, now);
    const rejection = acted.rejection;
    if (rejection !== undefined) {
      // Retrying cannot help until the spec changes, and a spec change reconciles again by itself; an object
      // in the way that is not ours may be handed over with an annotation on it, which no watch of ours sees.
      await this.emit(app, { type: "Warning", reason: rejection.reason, message: rejection.message }, log);
      // A refused child may hold a running test: the planner's requeue brings its deadline (RouteRefused).
      return this.finish(
        app,
        rejection.reason === "ChildNotOwned" ? NOT_OWNED_RECHECK_SECONDS : plan.requeueAfterSeconds,
      );
    }
    return this.finish(app, plan.requeueAfterSeconds);
  }

  /** A copy of the cached app to reconcile, or undefined when there is nothing to do. */
  private read(key: string): CanaryApp | undefined {
    const { namespace, name } = splitKey(key);
    const cached = this.deps.caches.canaryApps.get(namespace, name);
    if (!cached) {
      // Deleted: the garbage collector removes the children through their owner references.
      this.#ahead.forgetApp(key);
      this.#status.forget(key);
      this.deps.observer.appRemoved(namespace, name);
      this.deps.analyses.forget(key);
      this.deps.notices?.deliveries.forget(key);
      return undefined;
    }
    if (cached.metadata.deletionTimestamp) return undefined;
    return structuredClone(cached);
  }

  /**
   * The results of the analysis the planner asked for, once its run (started by the first reconcile that
   * found it due) has finished; undefined while it runs. A run is tied to the step it was started for, so
   * a result is never planned with for a later step.
   */
  private analysed(
    key: string,
    app: CanaryApp,
    planning: Extract<Planning, { kind: "analysisDue" }>,
    log: Logger,
  ): MetricResult[] | undefined {
    const state = this.deps.analyses.state(key, analysisStep(app, planning.checks), app, planning.checks);
    if (state.kind === "running") return undefined;
    if (state.kind === "failed") throw state.error;
    this.deps.observer.analysisRan(
      app,
      state.results.every((m) => m.passed),
      state.results,
    );
    log.info({ metrics: state.results }, "analysis ran");
    return state.results;
  }

  /** The cache shows an event of a child: a write of it by this process is no longer ahead of the cache. */
  childSeen(kind: string, obj: { metadata?: { namespace?: string; name?: string } }): void {
    this.#ahead.seen({ kind, namespace: obj.metadata?.namespace, name: obj.metadata?.name });
  }

  private finish(app: CanaryApp, requeueAfterSeconds?: number): ReconcileResult {
    this.deps.notices?.deliveries.deliver(objectKey(app) ?? "", app);
    this.deps.observer.appObserved(app, app.status ?? {});
    return requeueAfterSeconds === undefined ? {} : { requeueAfterMs: requeueAfterSeconds * 1000 };
  }

  /** Removes the answered requests' annotations, and keeps `app` current (annotations, resourceVersion). */
  private async removeConsumed(app: CanaryApp, keys: string[]): Promise<void> {
    const resourceVersion = await this.deps.writer.removeAnnotations(app, keys);
    const annotations = app.metadata.annotations;
    if (annotations !== undefined) for (const key of keys) delete annotations[key];
    if (resourceVersion !== undefined) app.metadata.resourceVersion = resourceVersion;
  }

  private async emit(app: CanaryApp, event: PlannedEvent, log: Logger): Promise<void> {
    await this.deps.events.record(app, event);
    this.noted(app, event, log);
  }

  /** An Event exists now: counted and logged. */
  private noted(app: CanaryApp, event: PlannedEvent, log: Logger): void {
    this.deps.observer.eventRecorded(app, event);
    const fields = { reason: event.reason, eventType: event.type };
    if (event.type === "Warning") log.warn(fields, event.message);
    else log.info(fields, event.message);
  }
}
