import type { Logger } from "pino";
import type { ResolvedSpec } from "../api/defaults.js";
import { withDefaults } from "../api/defaults.js";
import { InvalidSpecError } from "../api/errors.js";
import type { CanaryApp, CanaryAppStatus } from "../api/types.js";
import { CONDITION } from "../api/types.js";
import { splitKey } from "../controller/keys.js";
import { isConflict, statusCodeOf, toError } from "../kube/errors.js";
import { setCondition } from "../rollout/conditions.js";
import { desiredChildren } from "../resources/children.js";
import { alreadyApplied, stableJson, withAppliedHash } from "../resources/compare.js";
import type { TrafficRouter } from "../router/router.js";
import { analysisDue, plan } from "../rollout/planner.js";
import type { Plan, PlannedEvent } from "../rollout/types.js";
import { runAnalysis } from "./analysis.js";
import { observe } from "./observe.js";
import type { Caches, ClusterWriter, EventSink, QueryRunner, ReconcileObserver } from "./ports.js";

export interface ReconcilerDeps {
  caches: Caches;
  writer: ClusterWriter;
  events: EventSink;
  runQueries: QueryRunner;
  router: TrafficRouter;
  observer: ReconcileObserver;
  log: Logger;
  now: () => Date;
  /** Why the app's Prometheus may not be queried (its Secret or URL is refused); checked before each plan. */
  vetPrometheus?: (app: CanaryApp) => { reason: string; message: string } | undefined;
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
 * One reconcile of one CanaryApp: observe (caches, and Prometheus when a step is due) → plan (pure) →
 * persist → act.
 *
 * The status is persisted before the children are touched. The status is the rollout's only memory, so
 * it is written as intent: a controller killed between the two steps restarts from a status that already
 * names the step it was taking and simply makes the world match it, instead of taking the step again.
 * The write is guarded by resourceVersion, so a reconcile that planned from a stale cache loses and
 * re-plans instead of overwriting newer state.
 */
export class CanaryReconciler {
  constructor(private readonly deps: ReconcilerDeps) {}

  async reconcile(key: string): Promise<ReconcileResult> {
    const { namespace, name } = splitKey(key);
    const cached = this.deps.caches.canaryApps.get(namespace, name) as CanaryApp | undefined;
    if (!cached) {
      // Deleted: the garbage collector removes the children through their owner references.
      this.deps.observer.appRemoved(namespace, name);
      return {};
    }
    if (cached.metadata.deletionTimestamp) return {};
    const app = structuredClone(cached);
    const log = this.deps.log.child({ canaryapp: key, generation: app.metadata.generation });
    const now = this.deps.now();

    let spec: ResolvedSpec;
    let result: Plan;
    try {
      spec = withDefaults(app.spec);
      const refused = this.deps.vetPrometheus?.(app);
      const observed = {
        ...observe(app, this.deps.caches, this.deps.router),
        ...(refused && { analysisRefused: refused }),
      };
      if (analysisDue({ app, spec, observed, now })) {
        const analysis = await runAnalysis(app, spec, this.deps.runQueries);
        this.deps.observer.analysisRan(
          app,
          analysis.every((m) => m.passed),
        );
        log.info({ metrics: analysis }, "analysis ran");
        result = plan({ app, spec, observed: { ...observed, analysis }, now });
      } else {
        result = plan({ app, spec, observed, now });
      }
    } catch (error) {
      if (error instanceof InvalidSpecError) return this.reportInvalidSpec(app, error, now, log);
      throw error;
    }

    await this.persist(app, result.status, key);
    for (const event of result.events) await this.emit(app, event, log);
    const rejection = await this.actOrRejection(app, spec, result, log);
    await this.persist(app, withChildrenCondition(app.status ?? {}, rejection, now), key);
    if (rejection) {
      // Retrying cannot help until the spec changes, and a spec change reconciles again by itself.
      await this.emit(app, { type: "Warning", reason: "ChildRejected", message: rejection }, log);
      this.deps.observer.appObserved(app, app.status ?? {});
      return {};
    }
    if (result.removeAnnotations.length > 0) await this.deps.writer.removeAnnotations(app, result.removeAnnotations);
    this.deps.observer.appObserved(app, result.status);
    return result.requeueAfterSeconds === undefined ? {} : { requeueAfterMs: result.requeueAfterSeconds * 1000 };
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
  ): Promise<string | undefined> {
    try {
      await this.act(app, spec, result, log);
      return undefined;
    } catch (error) {
      const code = statusCodeOf(error);
      if (code === 400 || code === 422) return toError(error).message;
      throw error;
    }
  }

  private async act(app: CanaryApp, spec: ResolvedSpec, result: Plan, log: Logger): Promise<void> {
    const desired = desiredChildren(app, spec, result, this.deps.router);
    for (const child of desired.apply) {
      const hashed = withAppliedHash(child);
      const existing = this.cacheFor(child.kind).get(child.metadata.namespace, child.metadata.name);
      if (alreadyApplied(hashed, existing)) continue;
      await this.deps.writer.apply(hashed);
      const action = existing ? "Updated" : "Created";
      log.info({ kind: child.kind, child: child.metadata.name }, `${action.toLowerCase()} child`);
      await this.emit(
        app,
        { type: "Normal", reason: action, message: `${action} ${child.kind} ${child.metadata.name}` },
        log,
      );
    }
    for (const ref of desired.remove) {
      if (!this.cacheFor(ref.kind).get(ref.namespace, ref.name)) continue;
      await this.deps.writer.remove(ref);
      log.info({ kind: ref.kind, child: ref.name }, "deleted child");
      await this.emit(app, { type: "Normal", reason: "Deleted", message: `Deleted ${ref.kind} ${ref.name}` }, log);
    }
  }

  private cacheFor(kind: string) {
    const { caches } = this.deps;
    switch (kind) {
      case "Deployment":
        return caches.deployments;
      case "Service":
        return caches.services;
      case "DestinationRule":
        return caches.destinationRules;
      case "VirtualService":
        return caches.virtualServices;
      default:
        throw new Error(`no cache for child kind ${kind}`);
    }
  }

  private async emit(app: CanaryApp, event: PlannedEvent, log: Logger): Promise<void> {
    await this.deps.events.record(app, event);
    this.deps.observer.eventRecorded(app, event);
    const fields = { reason: event.reason, eventType: event.type };
    if (event.type === "Warning") log.warn(fields, event.message);
    else log.info(fields, event.message);
  }

  /** Shows the problem on the object (condition, phase, one Event per new message) and waits for a spec change. */
  private async reportInvalidSpec(
    app: CanaryApp,
    error: InvalidSpecError,
    now: Date,
    log: Logger,
  ): Promise<ReconcileResult> {
    const previous = app.status ?? {};
    const generation = app.metadata.generation === undefined ? {} : { observedGeneration: app.metadata.generation };
    const condition = {
      type: CONDITION.InvalidSpec,
      status: "True" as const,
      reason: "InvalidSpec",
      message: error.message,
    };
    const status: CanaryAppStatus = {
      ...previous,
      phase: "Invalid",
      message: `The spec cannot be acted on: ${error.message}`,
      conditions: setCondition(previous.conditions, { ...condition, ...generation }, now.toISOString()),
      ...generation,
    };
    if (!statusEqual(previous, status)) {
      await this.persist(app, status, `${app.metadata.namespace}/${app.metadata.name}`);
      await this.emit(app, { type: "Warning", reason: "InvalidSpec", message: error.message }, log);
    }
    this.deps.observer.appObserved(app, status);
    return {};
  }
}

/** The condition a rejected child sets, and that clears once every child applies again. */
export const CHILDREN_APPLIED = "ChildrenApplied";

/**
 * Sets ChildrenApplied=False with the server's message on a rejection, and back to True once children
 * apply; an app that never had a rejection carries no such condition (and costs no extra status write).
 */
export function withChildrenCondition(
  status: CanaryAppStatus,
  rejection: string | undefined,
  now: Date,
): CanaryAppStatus {
  const present = status.conditions?.some((c) => c.type === CHILDREN_APPLIED) ?? false;
  if (rejection === undefined && !present) return status;
  const update =
    rejection === undefined
      ? { type: CHILDREN_APPLIED, status: "True" as const, reason: "Applied", message: "every child matches the spec" }
      : { type: CHILDREN_APPLIED, status: "False" as const, reason: "Rejected", message: rejection };
  return { ...status, conditions: setCondition(status.conditions, update, now.toISOString()) };
}

/** Status equality by content (key order and undefined fields do not matter). */
export function statusEqual(a: CanaryAppStatus | undefined, b: CanaryAppStatus | undefined): boolean {
  return stableJson(a ?? {}) === stableJson(b ?? {});
}
