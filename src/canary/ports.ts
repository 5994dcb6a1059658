import type { CanaryAnalysisTemplate, CanaryApp, CanaryAppStatus, MetricResult } from "../api/types.js";
import type { PlannedEvent } from "../rollout/types.js";
import type { ChildObject, ChildRef } from "../resources/children.js";
import type { ExistingObject } from "../resources/ownership.js";

/** Read access to one informer cache. Objects returned must not be mutated. */
export interface ObjectCache<T = unknown> {
  get(namespace: string, name: string): T | undefined;
  /** False for a kind of an optional API the API server does not serve (its cache stays empty). */
  served?(): boolean | undefined;
}

/** The caches a reconcile observes: everything it reads comes from here, never from the API server. */
export interface Caches {
  canaryApps: ObjectCache<CanaryApp>;
  /** The children's caches by kind ("Deployment", "VirtualService"...), one a kind the controller applies. */
  children: ReadonlyMap<string, ObjectCache>;
  /** The secondaries' pods (labelled as ours), when watched: what digest the tested pods run. */
  secondaryPods?: { list(namespace?: string): unknown[] };
  /** The pods of StatefulSet workloads (labelled with their revision), when watched. */
  statefulSetPods?: { list(namespace?: string): unknown[] };
  /**
   * The analysis templates (ADR 0031): CanaryAnalysisTemplates by namespace, ClusterCanaryAnalysisTemplates
   * under the namespace "". Absent: no template is found, and an app that names one is told so.
   */
  analysisTemplates?: {
    namespaced: ObjectCache<CanaryAnalysisTemplate>;
    cluster: ObjectCache<CanaryAnalysisTemplate>;
  };
}

/** The cache of one kind of child; a kind without one is a wiring mistake. */
export function childCache(caches: Caches, kind: string): ObjectCache {
  const cache = caches.children.get(kind);
  if (cache === undefined) throw new Error(`no cache for child kind ${kind}`);
  return cache;
}

/** Finds a CanaryApp of `app`'s namespace by name, in the cache. */
export function appsOfNamespace(caches: Caches, app: CanaryApp): (name: string) => CanaryApp | undefined {
  const namespace = app.metadata.namespace ?? "";
  return (name) => caches.canaryApps.get(namespace, name);
}

/** The writes a reconcile makes. */
export interface ClusterWriter {
  /** Server-side apply under the controller's field manager. */
  apply(object: ChildObject): Promise<void>;
  /**
   * The same apply, made only if no object has the name: resolves false, having changed nothing, when one
   * exists (then `read` tells whose it is).
   */
  create(object: ChildObject): Promise<boolean>;
  /** Delete; a missing object is not an error. */
  remove(ref: ChildRef): Promise<void>;
  /**
   * Delete a pod only if it is still at `resourceVersion` (it may have become Ready since it was seen);
   * resolves false, having deleted nothing, when it changed or is gone.
   */
  deletePod(namespace: string, name: string, resourceVersion: string): Promise<boolean>;
  /**
   * Replace the status subresource, guarded by the app's resourceVersion (a conflict throws). Resolves
   * with the app's new resourceVersion.
   */
  replaceStatus(app: CanaryApp, status: CanaryAppStatus): Promise<string | undefined>;
  /** Remove metadata annotations from the app. */
  /** Removes the annotations; returns the app's new resourceVersion. */
  removeAnnotations(app: CanaryApp, keys: string[]): Promise<string | undefined>;
  /** Read an object the caches do not hold (one not labelled as ours); undefined when it does not exist. */
  read(ref: ChildRef): Promise<ExistingObject | undefined>;
}

export interface EventSink {
  record(app: CanaryApp, event: PlannedEvent): Promise<void>;
  /** Creates the Event named `name` unless it exists; resolves to whether it exists afterwards. */
  tell(app: CanaryApp, event: PlannedEvent, name: string): Promise<boolean>;
}

/** What the reconciler reports for metrics, after every reconcile of a live app and once when it is gone. */
export interface ReconcileObserver {
  appObserved(app: CanaryApp, status: CanaryAppStatus): void;
  appRemoved(namespace: string, name: string): void;
  /** An analysis (or a gate's webhooks) ran; `results` are its checks as judged. */
  analysisRan(app: CanaryApp, passed: boolean, results?: readonly MetricResult[]): void;
  eventRecorded(app: CanaryApp, event: PlannedEvent): void;
  /** Every write the controller makes to the API server (apply, delete, status, annotations, events). */
  wrote(kind: string, verb: "apply" | "delete" | "status" | "annotate" | "event"): void;
}
