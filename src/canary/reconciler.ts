import type { Logger } from "pino";
import type { Clock } from "../time/clock.js";
import type { ResolvedSpec } from "../api/defaults.js";
import type { CanaryApp, CanaryAppStatus, MetricResult } from "../api/types.js";
import { appRef, childNames } from "../api/meta.js";
import { objectKey, splitKey } from "../object-keys.js";
import { isConflict, statusCodeOf, toError } from "../kube/errors.js";
import { desiredChildren, withMetadataLabels, type ChildObject } from "../resources/children.js";
import { nameClash, ownedByAnotherApp, takeOverRefusal, type ExistingObject } from "../resources/ownership.js";
import { alreadyApplied, APPLIED_HASH_ANNOTATION, withAppliedHash } from "../resources/applied-hash.js";
import type { TrafficRouter } from "../router/router.js";
import type { WorkloadTarget } from "../workload/workload.js";
import type { AnalysisCheck } from "../analysis/checks.js";
import type { Planning } from "../rollout/planner.js";
import { startPlan } from "../rollout/planner.js";
import { CHILDREN_APPLIED } from "../rollout/conditions.js";
import { childrenApplied, primaryCreated, statusEqual } from "../rollout/reported.js";
import { timestamp } from "../time/timestamps.js";
import type { NotificationDeliveries } from "../notify/deliveries.js";
import type { ReconcileFailure } from "../notify/outbox.js";
import { withNotices } from "../notify/outbox.js";
import type { Plan, PlannedEvent } from "../rollout/types.js";
import type { AnalysisRuns } from "./analysis-runs.js";
import { AheadOfCache } from "./ahead-of-cache.js";
import { appPorts, routerMissing } from "./app-ports.js";
import { childEvents, type ChildChange } from "./child-events.js";
import { observe } from "./observe.js";
import { stale, toTell, told, withTransition } from "./told-events.js";
import type { Caches, ClusterWriter, EventSink, ReconcileObserver } from "./ports.js";
import { childCache } from "./ports.js";

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

/** Thrown when the status write lost a race; the key is simply reconciled again on fresh state. */
export class StaleStatusError extends Error {
  constructor(key: string, options?: { cause?: unknown }) {
    super(`CanaryApp ${key}: status changed since it was read`, options);
    this.name = "StaleStatusError";
  }
}

/**
 * One reconcile of one CanaryApp: observe (the caches) → plan (pure; when the planner says a step's
 * analysis is due, the checks run and the plan completes with their results) → persist → act. It decides
 * nothing itself: every status it writes comes from the planner (rollout/).
 *
 * The status is persisted before the children are touched. The status is the rollout's only memory, so
 * it is written as intent: a controller killed between the two steps restarts from a status that already
 * names the step it was taking and simply makes the world match it, instead of taking the step again.
 * The write is guarded by resourceVersion, so a reconcile that planned from a stale cache loses and
 * re-plans instead of overwriting newer state.
 */
/** How often a CanaryApp blocked by an object it does not own looks again for the hand-over annotation. */
export const NOT_OWNED_RECHECK_SECONDS = 10;

/** An object named like a child exists and may not be taken over (see takeOverRefusal). */
class ChildNotOwnedError extends Error {
  override name = "ChildNotOwnedError";
}

export class CanaryReconciler {
  /** What this process wrote or told that the caches and the status do not show yet. */
  readonly #ahead = new AheadOfCache();

  constructor(private readonly deps: ReconcilerDeps) {}

  async reconcile(key: string): Promise<ReconcileResult> {
    const app = this.read(key);
    if (app === undefined) return {};
    const log = this.deps.log.child({ canaryapp: key, generation: app.metadata.generation });
    const now = new Date(this.deps.clock.now());
    const refused = this.deps.vetPrometheus?.(app);
    const ports = appPorts(app, this.deps);
    const specRefused =
      nameClash(app, this.appNamed(app)) ??
      this.deps.vetRoute?.(app) ??
      routerMissing(app, ports.router, this.deps.caches);
    const observed = observe(app, this.deps.caches, ports.router, ports.workload);
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
      },
      now,
    });
    if (planning.kind === "invalid") {
      await this.record(app, planning.plan, key, log, now);
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
    const toldAll = await this.record(app, plan, key, log, now);
    // The requests this plan answered are on record in status now: they are consumed before the world is
    // changed, so a GitOps tool sees no drift for longer than the status write takes.
    if (plan.removeAnnotations.length > 0) await this.removeConsumed(app, plan.removeAnnotations);
    const { rejection, createdPrimary } = await this.actOrRejection(app, planning.spec, plan, log);
    const applied = primaryCreated(
      childrenApplied(app.status ?? {}, rejection?.message, now),
      rejection === undefined ? this.deps.workload.observe(createdPrimary) : null,
      app.metadata.generation,
      now,
    );
    const next = this.noticed(app, applied, now, [], this.newRejection(app, rejection));
    // The Events are marked told only in a write the app needs anyway (see AheadOfCache).
    await this.persist(app, toldAll && !statusEqual(app.status, next) ? told(next) : next, key);
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

  /** Finds a CanaryApp of `app`'s namespace by name, in the cache. */
  private appNamed(app: CanaryApp): (name: string) => CanaryApp | undefined {
    const namespace = app.metadata.namespace ?? "";
    return (name) => this.deps.caches.canaryApps.get(namespace, name);
  }

  /** A copy of the cached app to reconcile, or undefined when there is nothing to do. */
  private read(key: string): CanaryApp | undefined {
    const { namespace, name } = splitKey(key);
    const cached = this.deps.caches.canaryApps.get(namespace, name);
    if (!cached) {
      // Deleted: the garbage collector removes the children through their owner references.
      this.#ahead.forgetApp(key);
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

  /**
   * Persists the planned status with its Events (status.lastEvents), then tells them: the decision is on
   * record before anyone hears of it, and a controller killed in between leaves them for the next reconcile.
   * Resolves to whether the recorded Events all exist now (the next status write then marks them told).
   */
  private async record(
    app: CanaryApp,
    plan: { status: CanaryAppStatus; events: PlannedEvent[] },
    key: string,
    log: Logger,
    now: Date,
  ): Promise<boolean> {
    // Events of an earlier transition not known to exist yet are told before this one's replace them.
    if (plan.events.length > 0) await this.tell(app, log, now);
    const previous = app.status ?? {};
    const status = withTransition(
      previous,
      this.noticed(app, plan.status, now, plan.events),
      plan.events,
      timestamp(now),
    );
    await this.persist(app, status, key);
    return this.tell(app, log, now);
  }

  /** The cache shows an event of a child: a write of it by this process is no longer ahead of the cache. */
  childSeen(kind: string, obj: { metadata?: { namespace?: string; name?: string } }): void {
    this.#ahead.seen({ kind, namespace: obj.metadata?.namespace, name: obj.metadata?.name });
  }

  /** Names the transition whose Events the app's status records: its uid, number and time. */
  private transitionOf(app: CanaryApp): string | undefined {
    const last = app.status?.lastEvents;
    return last === undefined ? undefined : `${app.metadata.uid ?? ""}/${last.seq}/${last.at}`;
  }

  /** Tells the Events the app's status records as pending; resolves to whether they all exist now. */
  private async tell(app: CanaryApp, log: Logger, now: Date): Promise<boolean> {
    const last = app.status?.lastEvents;
    if (last?.pending === undefined) return true;
    const key = objectKey(app) ?? "";
    const transition = this.transitionOf(app);
    if (this.#ahead.toldTransition(key, transition)) return true;
    if (stale(last, now)) {
      // Said once per process: the mark stays pending in status until the app's next write.
      log.warn({ transition: last.seq, at: last.at }, "the last transition's Events are too old to tell again");
      this.#ahead.told(key, transition);
      return true;
    }
    let all = true;
    for (const { name, event } of toTell(app, now)) {
      if (!(await this.deps.events.tell(app, event, name))) {
        all = false;
        continue;
      }
      this.deps.observer.eventRecorded(app, event);
      const fields = { reason: event.reason, eventType: event.type };
      if (event.type === "Warning") log.warn(fields, event.message);
      else log.info(fields, event.message);
    }
    if (all) this.#ahead.told(key, transition);
    return all;
  }

  /**
   * `status` with the app's outbox brought up to date (notices for `events` and `failure` added, those
   * delivered removed), when the app has receivers; written with the status, before anything is sent.
   */
  private noticed(
    app: CanaryApp,
    status: CanaryAppStatus,
    now: Date,
    events: readonly PlannedEvent[],
    failure?: ReconcileFailure,
  ): CanaryAppStatus {
    const notices = this.deps.notices;
    if (notices === undefined || !notices.enabled(app)) return status;
    const key = objectKey(app) ?? "";
    return withNotices(app, app.status ?? {}, status, {
      events,
      ...(failure !== undefined ? { failure } : {}),
      delivered: notices.deliveries.delivered(key),
      at: timestamp(now),
    });
  }

  /** A rejection of a child that the status did not name yet: one notice per new rejection. */
  private newRejection(
    app: CanaryApp,
    rejection: { reason: string; message: string } | undefined,
  ): ReconcileFailure | undefined {
    if (rejection === undefined) return undefined;
    const named = app.status?.conditions?.some(
      (c) => c.type === CHILDREN_APPLIED && c.status === "False" && c.message === rejection.message,
    );
    return named === true ? undefined : rejection;
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

  /** Writes `status` if it differs from the app's, and keeps `app` current (status, resourceVersion). */
  private async persist(app: CanaryApp, status: CanaryAppStatus, key: string): Promise<void> {
    if (statusEqual(app.status, status)) return;
    try {
      const resourceVersion = await this.deps.writer.replaceStatus(app, status);
      app.status = status;
      if (resourceVersion !== undefined) app.metadata.resourceVersion = resourceVersion;
    } catch (error) {
      if (isConflict(error)) throw new StaleStatusError(key, { cause: error });
      throw error;
    }
  }

  /**
   * Acts; returns the API server's message when it rejected a child as invalid (a spec problem the schema
   * could not see, such as a malformed probe in `pod`), and throws on anything retrying may fix.
   */
  private async actOrRejection(
    app: CanaryApp,
    spec: ResolvedSpec,
    result: Plan,
    log: Logger,
  ): Promise<{ rejection?: { reason: "ChildRejected" | "ChildNotOwned"; message: string }; createdPrimary?: unknown }> {
    try {
      return { createdPrimary: await this.act(app, spec, result, log) };
    } catch (error) {
      if (error instanceof ChildNotOwnedError)
        return { rejection: { reason: "ChildNotOwned", message: error.message } };
      const code = statusCodeOf(error);
      if (code === 400 || code === 422)
        return { rejection: { reason: "ChildRejected", message: toError(error).message } };
      throw error;
    }
  }

  /** Acts; resolves to the primary workload as applied when this reconcile created it. */
  private async act(app: CanaryApp, spec: ResolvedSpec, result: Plan, log: Logger): Promise<unknown> {
    const changes: ChildChange[] = [];
    try {
      return await this.change(app, spec, result, log, changes);
    } finally {
      // What was done is told even when a later child failed: one Event per kind of change, updates only when
      // the plan says so (child-events.ts).
      for (const event of childEvents(changes, result.tellChildUpdates)) await this.emit(app, event, log);
    }
  }

  /** Applies and removes the plan's children, in order, adding each change made to `changes`. */
  private async change(
    app: CanaryApp,
    spec: ResolvedSpec,
    result: Plan,
    log: Logger,
    changes: ChildChange[],
  ): Promise<unknown> {
    const { router, workload } = appPorts(app, this.deps);
    const desired = desiredChildren(app, spec, result, router, workload);
    const primaryName = childNames(appRef(app).name).primary;
    let createdPrimary: unknown;
    const labels = this.deps.childLabels?.(app) ?? {};
    for (const planned of desired.apply) {
      const child = withMetadataLabels(planned, labels);
      const hashed = withAppliedHash(child);
      const existing = childCache(this.deps.caches, child.kind).get(child.metadata.namespace, child.metadata.name);
      if (alreadyApplied(hashed, existing)) continue;
      // The caches hold every object carrying the controller's label, other apps' children too.
      const taken =
        existing === undefined
          ? undefined
          : ownedByAnotherApp({ ...(existing as ExistingObject), kind: child.kind }, app, this.appNamed(app));
      if (taken !== undefined) throw new ChildNotOwnedError(taken);
      const ref = { kind: child.kind, namespace: child.metadata.namespace, name: child.metadata.name };
      const hash = hashed.metadata.annotations?.[APPLIED_HASH_ANNOTATION] ?? "";
      if (this.#ahead.appliedUnseen(ref, hash)) continue;
      if (existing === undefined) await this.create(app, hashed);
      else await this.deps.writer.apply(hashed);
      this.#ahead.applied(ref, hash);
      const action = existing ? "Updated" : "Created";
      // At info, the one Event per kind of change (logged as it is recorded) names every child.
      log.debug({ kind: child.kind, child: child.metadata.name }, `${action.toLowerCase()} child`);
      changes.push({ action, kind: child.kind, name: child.metadata.name });
      if (!existing && child.kind === this.deps.workload.kind && child.metadata.name === primaryName) {
        createdPrimary = hashed;
      }
    }
    for (const ref of desired.remove) {
      if (!childCache(this.deps.caches, ref.kind).get(ref.namespace, ref.name)) continue;
      if (this.#ahead.deletedUnseen(ref)) continue;
      await this.deps.writer.remove(ref);
      this.#ahead.deleted(ref);
      log.debug({ kind: ref.kind, child: ref.name }, "deleted child");
      changes.push({ action: "Deleted", kind: ref.kind, name: ref.name });
    }
    // After the workload's apply: its controller has the template to make these pods again from.
    for (const pod of result.deletePods ?? []) {
      const deleted = await this.deps.writer.deletePod(appRef(app).namespace, pod.name, pod.resourceVersion);
      this.#ahead.deleted({ kind: "Pod", namespace: appRef(app).namespace, name: pod.name });
      log.info({ pod: pod.name, revision: pod.revision, deleted }, "deleted stranded pod");
    }
    return createdPrimary;
  }

  /**
   * Creates a child the caches do not hold (they hold only objects labelled as ours) if its name is free; if
   * something has the name, it is read and taken over only when it is ours or handed over (ADR 0005), else
   * left unchanged. A free name costs one request (ADR 0018).
   */
  private async create(app: CanaryApp, child: ChildObject): Promise<void> {
    if (await this.deps.writer.create(child)) return;
    const ref = {
      apiVersion: child.apiVersion,
      kind: child.kind,
      namespace: child.metadata.namespace,
      name: child.metadata.name,
    };
    const refusal = takeOverRefusal(await this.deps.writer.read(ref), app);
    if (refusal !== undefined) throw new ChildNotOwnedError(refusal);
    await this.deps.writer.apply(child);
  }

  private async emit(app: CanaryApp, event: PlannedEvent, log: Logger): Promise<void> {
    await this.deps.events.record(app, event);
    this.deps.observer.eventRecorded(app, event);
    const fields = { reason: event.reason, eventType: event.type };
    if (event.type === "Warning") log.warn(fields, event.message);
    else log.info(fields, event.message);
  }
}
