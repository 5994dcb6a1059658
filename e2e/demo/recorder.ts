/**
 * Follows one CanaryApp through the project's informers (list + watch, restarts with backoff): the object
 * itself, the weights its route (VirtualService or HTTPRoute) carries, its two Deployments, and the core/v1 Events recorded on
 * it. Every change is kept with the time it arrived, for the live view, the story's waits and the tests.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { pino, type Logger } from "pino";
import type { CanaryApp, Track } from "../../src/api/types.js";
import { GROUP, LABELS, MANAGED_BY_VALUE, PLURAL, VERSION } from "../../src/api/types.js";
import { createInformer } from "../../src/controller/create-informer.js";
import { handedEach, type ObjectList } from "../../src/kube/list-watch.js";
import type { Informer } from "../../src/controller/informer.js";
import { createClients, type PooledKubeConfig } from "../../src/kube/client.js";
import { ISTIO_NETWORKING } from "../../src/router/istio.js";
import { childNames } from "../../src/api/meta.js";
import { readIstioWeights } from "../../src/router/istio.js";
import { GATEWAY_API, readHTTPRouteWeights } from "../../src/router/gateway-api.js";
import type { Mesh } from "../../src/api/types.js";

/** A value with the time (Date.now()) it was seen. */
export interface Timed<T> {
  at: number;
  value: T;
}

export interface RouteWeights {
  primary: number;
  secondary: number;
}

/** A Deployment as the story shows it. */
export interface WorkloadState {
  image: string;
  available: number;
  replicas: number;
}

/** A core/v1 Event recorded on the CanaryApp. */
export interface AppEvent {
  type: string;
  reason: string;
  message: string;
  /** How many times it happened (the recorder counts repeats into one Event). */
  count: number;
}

export type Change =
  | { kind: "app"; at: number; app: CanaryApp }
  | { kind: "route"; at: number; weights: RouteWeights | null }
  | { kind: "workload"; at: number; track: Track; state: WorkloadState | null }
  | { kind: "event"; at: number; event: AppEvent };

interface Meta {
  name?: string;
  namespace?: string;
  resourceVersion?: string;
}
interface DeploymentLike {
  metadata?: Meta;
  spec?: { replicas?: number; template?: { spec?: { containers?: { image?: string }[] } } };
  status?: { availableReplicas?: number };
}
interface EventLike {
  metadata?: Meta;
  involvedObject?: { kind?: string; name?: string };
  type?: string;
  reason?: string;
  message?: string;
  count?: number;
}
interface VirtualServiceLike {
  metadata?: Meta;
}

/** The object each router splits traffic with, and how its split is read (only where it is carried). */
const ROUTES = {
  istio: { type: { ...ISTIO_NETWORKING, plural: "virtualservices" }, read: readIstioWeights },
  "gateway-api": { type: { ...GATEWAY_API, plural: "httproutes" }, read: readHTTPRouteWeights },
} as const;
const SYNC_TIMEOUT_MS = 30_000;
const CHILDREN = `${LABELS.managedBy}=${MANAGED_BY_VALUE}`;

export class StoryRecorder {
  /** Every change, in arrival order. */
  readonly changes: Change[] = [];
  private readonly listeners = new Set<(change: Change) => void>();
  private readonly informers: Informer<unknown>[];
  private readonly names: ReturnType<typeof childNames>;
  private readonly readWeights: (route: unknown) => RouteWeights | null;
  /** The route's implementation reports what it carries (the Gateway API's status), read by `readWeights`. */
  private readonly reportsCarried: boolean;
  private current: {
    app: CanaryApp | undefined;
    weights: RouteWeights | null;
    workloads: Record<Track, WorkloadState | null>;
  } = { app: undefined, weights: null, workloads: { primary: null, secondary: null } };

  private constructor(
    kc: PooledKubeConfig,
    readonly namespace: string,
    readonly name: string,
    log: Logger,
    mesh: Exclude<Mesh, "none">,
  ) {
    this.names = childNames(name);
    const route = ROUTES[mesh];
    this.readWeights = route.read;
    this.reportsCarried = mesh === "gateway-api";
    const { apps, core, customObjects, watch } = createClients(kc);
    const common = { namespaces: [namespace], watcher: watch, log };
    const canaryApps = createInformer<CanaryApp>({
      ...common,
      type: { group: GROUP, version: VERSION, plural: PLURAL },
      list: ({ each }) =>
        handedEach(
          customObjects.listNamespacedCustomObject({
            group: GROUP,
            version: VERSION,
            plural: PLURAL,
            namespace,
          }) as Promise<ObjectList<CanaryApp>>,
          each,
        ),
    });
    const virtualServices = createInformer<VirtualServiceLike>({
      ...common,
      type: route.type,
      labelSelector: CHILDREN,
      list: ({ labelSelector, each }) =>
        handedEach(
          customObjects.listNamespacedCustomObject({ ...route.type, namespace, labelSelector }) as Promise<
            ObjectList<VirtualServiceLike>
          >,
          each,
        ),
    });
    const deployments = createInformer<DeploymentLike>({
      ...common,
      type: { group: "apps", version: "v1", plural: "deployments" },
      labelSelector: CHILDREN,
      list: ({ labelSelector, each }) => handedEach(apps.listNamespacedDeployment({ namespace, labelSelector }), each),
    });
    const events = createInformer<EventLike>({
      ...common,
      type: { group: "", version: "v1", plural: "events" },
      list: ({ each }) => handedEach(core.listNamespacedEvent({ namespace }), each),
    });

    const onApp = () => this.appChanged(canaryApps.get(namespace, name));
    canaryApps.onAdd(onApp);
    canaryApps.onUpdate(onApp);
    canaryApps.onDelete(onApp);
    const onRoute = () => this.routeChanged(virtualServices.get(namespace, this.names.virtualService));
    virtualServices.onAdd(onRoute);
    virtualServices.onUpdate(onRoute);
    virtualServices.onDelete(onRoute);
    const onWorkload = () => {
      for (const track of ["primary", "secondary"] as const) {
        this.workloadChanged(track, deployments.get(namespace, this.names[track]));
      }
    };
    deployments.onAdd(onWorkload);
    deployments.onUpdate(onWorkload);
    deployments.onDelete(onWorkload);
    events.onAdd((e) => this.eventSeen(e, undefined));
    events.onUpdate((e, old) => this.eventSeen(e, old));
    this.informers = [canaryApps, virtualServices, deployments, events] as Informer<unknown>[];
  }

  /**
   * Starts following `name` in `namespace`, its split read from the object of its `mesh` (the VirtualService,
   * or the HTTPRoute); resolves once every informer has listed.
   */
  static async start(
    kc: PooledKubeConfig,
    namespace: string,
    name: string,
    log?: Logger,
    mesh: Exclude<Mesh, "none"> = "istio",
  ): Promise<StoryRecorder> {
    const recorder = new StoryRecorder(kc, namespace, name, log ?? pino({ level: "silent" }), mesh);
    for (const informer of recorder.informers) informer.start();
    const deadline = Date.now() + SYNC_TIMEOUT_MS;
    while (!recorder.informers.every((i) => i.hasSynced())) {
      if (Date.now() > deadline) {
        await recorder.stop();
        throw new Error(`the story's watches on namespace ${namespace} did not sync within ${SYNC_TIMEOUT_MS / 1000}s`);
      }
      await sleep(50);
    }
    return recorder;
  }

  app(): CanaryApp | undefined {
    return this.current.app;
  }

  /** The split the VirtualService's canary route has now; null while it is missing. */
  weights(): RouteWeights | null {
    return this.current.weights;
  }

  workload(track: Track): WorkloadState | null {
    return this.current.workloads[track];
  }

  /** The route's splits, each with the time it was first seen. */
  weightTimeline(since = 0): Timed<RouteWeights | null>[] {
    return this.changes
      .filter((c): c is Extract<Change, { kind: "route" }> => c.kind === "route" && c.at >= since)
      .map((c) => ({ at: c.at, value: c.weights }));
  }

  /** The Events recorded on the app (a repeat counts again), in arrival order. */
  events(since = 0): Timed<AppEvent>[] {
    return this.changes
      .filter((c): c is Extract<Change, { kind: "event" }> => c.kind === "event" && c.at >= since)
      .map((c) => ({ at: c.at, value: c.event }));
  }

  /** What was seen last, in one line, for failure messages. */
  describe(): string {
    const status = this.current.app?.status;
    const workload = (track: Track) => {
      const w = this.current.workloads[track];
      return w === null ? "none" : `${w.image} ${w.available}/${w.replicas} available`;
    };
    const weights = this.current.weights;
    return [
      `phase ${status?.phase ?? "?"}`,
      `stage ${status?.canary?.stage ?? "-"}`,
      `route ${weights === null ? "none" : `${weights.primary}/${weights.secondary}`}`,
      `primary ${workload("primary")}`,
      `secondary ${workload("secondary")}`,
      `message ${JSON.stringify(status?.message ?? "")}`,
    ].join("; ");
  }

  subscribe(listener: (change: Change) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Resolves with the first value other than undefined that `check` returns, evaluated now and after every
   * change; rejects when `check` throws, after `timeoutMs`, or when `signal` aborts.
   */
  until<T>(
    what: string,
    check: (recorder: this) => T | undefined,
    { timeoutMs = 30_000, signal }: { timeoutMs?: number; signal?: AbortSignal } = {},
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const finish = (outcome: () => void) => {
        clearTimeout(timer);
        this.listeners.delete(evaluate);
        signal?.removeEventListener("abort", onAbort);
        outcome();
      };
      const evaluate = () => {
        let value: T | undefined;
        try {
          value = check(this);
        } catch (err) {
          finish(() => reject(err instanceof Error ? err : new Error(String(err))));
          return;
        }
        if (value !== undefined) finish(() => resolve(value));
      };
      const onAbort = () => finish(() => reject(new Error(`stopped while waiting for ${what}`)));
      const timer = setTimeout(
        () =>
          finish(() =>
            reject(new Error(`timed out after ${timeoutMs / 1000}s waiting for ${what}; ${this.describe()}`)),
          ),
        timeoutMs,
      );
      if (signal?.aborted) return onAbort();
      signal?.addEventListener("abort", onAbort);
      this.listeners.add(evaluate);
      evaluate();
    });
  }

  async stop(): Promise<void> {
    await Promise.all(this.informers.map((i) => i.stop()));
  }

  private push(change: Change): void {
    this.changes.push(change);
    for (const listener of [...this.listeners]) listener(change);
  }

  private appChanged(app: CanaryApp | undefined): void {
    const before = this.current.app;
    if (before?.metadata.resourceVersion === app?.metadata.resourceVersion) return;
    // Only what a person follows: the spec's image and the status (metadata changes such as removed
    // annotations are not news).
    const same =
      before !== undefined &&
      app !== undefined &&
      before.spec.image === app.spec.image &&
      JSON.stringify(before.status) === JSON.stringify(app.status);
    this.current.app = app;
    if (!same && app !== undefined) this.push({ kind: "app", at: Date.now(), app });
  }

  private routeChanged(vs: VirtualServiceLike | undefined): void {
    const weights = vs === undefined ? null : this.readWeights(vs);
    // A route written but not yet carried (its implementation has not reported on this generation) still
    // routes by the split it carried last: no change until it carries the new one.
    if (this.reportsCarried && vs !== undefined && weights === null && this.current.weights !== null) return;
    if (JSON.stringify(weights) === JSON.stringify(this.current.weights)) return;
    this.current.weights = weights;
    this.push({ kind: "route", at: Date.now(), weights });
  }

  private workloadChanged(track: Track, deployment: DeploymentLike | undefined): void {
    const state: WorkloadState | null =
      deployment === undefined
        ? null
        : {
            image: deployment.spec?.template?.spec?.containers?.[0]?.image ?? "",
            available: deployment.status?.availableReplicas ?? 0,
            replicas: deployment.spec?.replicas ?? 1,
          };
    if (JSON.stringify(state) === JSON.stringify(this.current.workloads[track])) return;
    this.current.workloads[track] = state;
    this.push({ kind: "workload", at: Date.now(), track, state });
  }

  private eventSeen(e: EventLike, old: EventLike | undefined): void {
    if (e.involvedObject?.kind !== "CanaryApp" || e.involvedObject.name !== this.name) return;
    const count = e.count ?? 1;
    // An update that is not a repeat (e.g. only metadata) is not a new occurrence.
    if (old !== undefined && (old.count ?? 1) >= count) return;
    this.push({
      kind: "event",
      at: Date.now(),
      event: { type: e.type ?? "Normal", reason: e.reason ?? "", message: e.message ?? "", count },
    });
  }
}
