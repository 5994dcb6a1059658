/**
 * Acting on a plan: the children applied and removed in the plan's order, stranded pods deleted, one Event
 * per kind of change. Skips what is already so (the applied hash, or a write of this process the caches have
 * not shown yet) and never takes over an object that is not the app's (ADR 0005).
 */
import type { Logger } from "pino";
import type { ResolvedSpec } from "../api/defaults.js";
import type { CanaryApp } from "../api/types.js";
import { appRef, childNames } from "../api/meta.js";
import { statusCodeOf, toError } from "../kube/errors.js";
import { desiredChildren, withMetadataLabels, type ChildObject } from "../resources/children.js";
import { ownedByAnotherApp, takeOverRefusal, type ExistingObject } from "../resources/ownership.js";
import { alreadyApplied, APPLIED_HASH_ANNOTATION, withAppliedHash } from "../resources/applied-hash.js";
import type { TrafficRouter } from "../router/router.js";
import type { WorkloadTarget } from "../workload/workload.js";
import type { Plan, PlannedEvent } from "../rollout/types.js";
import type { Acted } from "../status/writer.js";
import type { AheadOfCache } from "./ahead-of-cache.js";
import { appPorts } from "./app-ports.js";
import { childEvents, type ChildChange } from "./child-events.js";
import type { Caches, ClusterWriter } from "./ports.js";
import { appsOfNamespace, childCache } from "./ports.js";

/** An object named like a child exists and may not be taken over (see takeOverRefusal). */
class ChildNotOwnedError extends Error {
  override name = "ChildNotOwnedError";
}

export interface ActorDeps {
  caches: Caches;
  writer: ClusterWriter;
  router: TrafficRouter;
  workload: WorkloadTarget;
  /** What this process wrote that the caches do not show yet. */
  ahead: AheadOfCache;
  /** Labels added to every child's object metadata (see ReconcilerDeps.childLabels). */
  childLabels?: (app: CanaryApp) => Readonly<Record<string, string>>;
  /** Records an Event of the app. */
  emit(app: CanaryApp, event: PlannedEvent, log: Logger): Promise<void>;
}

export class Actor {
  constructor(private readonly deps: ActorDeps) {}

  /**
   * Acts; returns the API server's message when it rejected a child as invalid (a spec problem the schema
   * could not see, such as a malformed probe in `pod`), and throws on anything retrying may fix.
   */
  async act(app: CanaryApp, spec: ResolvedSpec, result: Plan, log: Logger): Promise<Acted> {
    try {
      const created = await this.actTelling(app, spec, result, log);
      return { createdPrimary: this.deps.workload.observe(created) };
    } catch (error) {
      if (error instanceof ChildNotOwnedError)
        return { rejection: { reason: "ChildNotOwned", message: error.message }, createdPrimary: null };
      const code = statusCodeOf(error);
      if (code === 400 || code === 422)
        return { rejection: { reason: "ChildRejected", message: toError(error).message }, createdPrimary: null };
      throw error;
    }
  }

  /** Acts; resolves to the primary workload as applied when this reconcile created it. */
  private async actTelling(app: CanaryApp, spec: ResolvedSpec, result: Plan, log: Logger): Promise<unknown> {
    const changes: ChildChange[] = [];
    try {
      return await this.change(app, spec, result, log, changes);
    } finally {
      // What was done is told even when a later child failed: one Event per kind of change, updates only when
      // the plan says so (child-events.ts).
      for (const event of childEvents(changes, result.tellChildUpdates)) await this.deps.emit(app, event, log);
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
          : ownedByAnotherApp(
              { ...(existing as ExistingObject), kind: child.kind },
              app,
              appsOfNamespace(this.deps.caches, app),
            );
      if (taken !== undefined) throw new ChildNotOwnedError(taken);
      const ref = { kind: child.kind, namespace: child.metadata.namespace, name: child.metadata.name };
      const hash = hashed.metadata.annotations?.[APPLIED_HASH_ANNOTATION] ?? "";
      if (this.deps.ahead.appliedUnseen(ref, hash)) continue;
      if (existing === undefined) await this.create(app, hashed);
      else await this.deps.writer.apply(hashed);
      this.deps.ahead.applied(ref, hash);
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
      if (this.deps.ahead.deletedUnseen(ref)) continue;
      await this.deps.writer.remove(ref);
      this.deps.ahead.deleted(ref);
      log.debug({ kind: ref.kind, child: ref.name }, "deleted child");
      changes.push({ action: "Deleted", kind: ref.kind, name: ref.name });
    }
    // After the workload's apply: its controller has the template to make these pods again from.
    for (const pod of result.deletePods ?? []) {
      const deleted = await this.deps.writer.deletePod(appRef(app).namespace, pod.name, pod.resourceVersion);
      this.deps.ahead.deleted({ kind: "Pod", namespace: appRef(app).namespace, name: pod.name });
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
}
