/**
 * What the dashboard reads, live: CanaryApps and the Events about them, each by one list and then one watch
 * (src/controller/list-watch-informer.ts, the controller's own informer loop), with the user's kubeconfig. No
 * polling: after the first list, nothing is asked of the API server while nothing changes.
 *
 * A list or watch the user may not make (401, 403) is kept as a problem the page shows; the informer keeps
 * retrying with its backoff, so that a right granted later shows up without a restart.
 */
import { pino, type Logger } from "pino";
import type { CanaryApp } from "../api/types.js";
import { GROUP, PLURAL, VERSION } from "../api/types.js";
import type { KubeClients } from "../kube/client.js";
import { statusCodeOf, toError } from "../kube/errors.js";
import { handedEach, type ListedMeta, type ObjectList, type Watcher } from "../kube/list-watch.js";
import { createInformer } from "../controller/create-informer.js";
import type { Informer } from "../controller/informer.js";
import type { AnalysisPoint, Problem, WeightPoint } from "./model.js";
import { appKey, nextAnalysisHistory, nextWeightHistory, type EventLike } from "./view-model.js";

/** The Events the dashboard shows: those about CanaryApps. */
export const EVENT_SELECTOR = "involvedObject.kind=CanaryApp";

/** What changed since the last notice: apps by key (changed or gone), and whether the problems did. */
export interface Change {
  apps: Set<string>;
  problems: boolean;
}

export interface SourceOptions {
  clients: KubeClients;
  /** The namespaces to show; undefined: all. */
  namespace: string | undefined;
  now?: () => number;
  log?: Logger;
}

/** Only what the page shows of an Event. */
function trimEvent(e: EventLike): EventLike {
  const { name, namespace, resourceVersion, creationTimestamp } = e.metadata ?? {};
  const { type, reason, message, count, lastTimestamp, eventTime, firstTimestamp } = e;
  const kept = { type, reason, message, count, lastTimestamp, eventTime, firstTimestamp };
  return {
    metadata: { name, namespace, resourceVersion, creationTimestamp },
    involvedObject: { name: e.involvedObject?.name ?? "", namespace: e.involvedObject?.namespace ?? "" },
    // Without the fields the Event lacks: the cache keeps no undefined keys.
    ...Object.fromEntries(Object.entries(kept).filter(([, v]) => v !== undefined)),
  };
}

function involvedKey(e: EventLike): string {
  return `${e.involvedObject?.namespace ?? e.metadata?.namespace ?? ""}/${e.involvedObject?.name ?? ""}`;
}

/** The apps and Events the dashboard shows, the weights and analyses it has seen, and what it may not read. */
export class DashboardSource {
  readonly apps: Informer<CanaryApp>;
  readonly events: Informer<EventLike>;
  private readonly problems = new Map<string, Problem>();
  private readonly eventsByApp = new Map<string, Map<string, EventLike>>();
  private readonly weightHistory = new Map<string, readonly WeightPoint[]>();
  private readonly analysisHistory = new Map<string, readonly AnalysisPoint[]>();
  private readonly listeners: ((change: Change) => void)[] = [];
  private readonly now: () => number;

  constructor(options: SourceOptions) {
    const { clients, namespace } = options;
    this.now = options.now ?? Date.now;
    const log = options.log ?? pino({ level: "silent" });
    const namespaces = namespace === undefined ? [] : [namespace];
    const watcher = this.watching(clients.watch);

    this.apps = createInformer<CanaryApp>({
      type: { group: GROUP, version: VERSION, plural: PLURAL },
      namespaces,
      watcher: watcher("canaryapps"),
      log,
      list: ({ namespace: ns, each }) =>
        this.listing(
          "canaryapps",
          handedEach(
            (ns === undefined
              ? clients.customObjects.listClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL })
              : clients.customObjects.listNamespacedCustomObject({
                  group: GROUP,
                  version: VERSION,
                  plural: PLURAL,
                  namespace: ns,
                })) as Promise<ObjectList<CanaryApp>>,
            each,
          ),
        ),
    });
    this.events = createInformer<EventLike>({
      type: { group: "", version: "v1", plural: "events" },
      namespaces,
      fieldSelector: EVENT_SELECTOR,
      watcher: watcher("events"),
      log,
      transform: trimEvent,
      list: ({ namespace: ns, each }) =>
        this.listing(
          "events",
          handedEach(
            (ns === undefined
              ? clients.core.listEventForAllNamespaces({ fieldSelector: EVENT_SELECTOR })
              : clients.core.listNamespacedEvent({
                  namespace: ns,
                  fieldSelector: EVENT_SELECTOR,
                })) as Promise<ObjectList<EventLike>>,
            each,
          ),
        ),
    });

    const appChanged = (app: CanaryApp): void => {
      const key = appKey(app);
      this.weightHistory.set(key, nextWeightHistory(this.weightHistory.get(key) ?? [], app, this.now()));
      this.analysisHistory.set(key, nextAnalysisHistory(this.analysisHistory.get(key) ?? [], app));
      this.notify({ apps: new Set([key]), problems: false });
    };
    this.apps.onAdd(appChanged);
    this.apps.onUpdate(appChanged);
    this.apps.onDelete((app) => {
      const key = appKey(app);
      this.weightHistory.delete(key);
      this.analysisHistory.delete(key);
      this.notify({ apps: new Set([key]), problems: false });
    });
    const eventChanged = (e: EventLike, deleted: boolean): void => {
      const key = involvedKey(e);
      const own = this.eventsByApp.get(key) ?? new Map<string, EventLike>();
      const name = `${e.metadata?.namespace ?? ""}/${e.metadata?.name ?? ""}`;
      if (deleted) own.delete(name);
      else own.set(name, e);
      if (own.size === 0) this.eventsByApp.delete(key);
      else this.eventsByApp.set(key, own);
      this.notify({ apps: new Set([key]), problems: false });
    };
    // A first list with nothing in it tells no object: the pages still learn that the list is in.
    this.apps.onSynced?.(() => this.notify({ apps: new Set(), problems: true }));
    this.events.onSynced?.(() => this.notify({ apps: new Set(), problems: true }));
    this.events.onAdd((e) => eventChanged(e, false));
    this.events.onUpdate((e) => eventChanged(e, false));
    this.events.onDelete((e) => eventChanged(e, true));
  }

  /** A list that records (or clears) the problem of `resource` as it fails or succeeds. */
  private async listing(resource: string, list: Promise<ListedMeta>): Promise<ListedMeta> {
    try {
      const meta = await list;
      this.setProblem(resource, undefined);
      return meta;
    } catch (error) {
      this.recordFailure(resource, error);
      throw error;
    }
  }

  /** The watcher with a refused watch recorded as a problem. */
  private watching(inner: Watcher): (resource: string) => Watcher {
    return (resource) => ({
      watch: (path, query, callback, done) =>
        inner.watch(path, query, callback, (err) => {
          if (err !== null && err !== undefined) this.recordFailure(resource, err);
          done(err);
        }),
    });
  }

  private recordFailure(resource: string, error: unknown): void {
    const code = statusCodeOf(error);
    if (code === 401 || code === 403) this.setProblem(resource, toError(error).message);
  }

  private setProblem(resource: string, message: string | undefined): void {
    const had = this.problems.get(resource)?.message;
    if (had === message) return;
    if (message === undefined) this.problems.delete(resource);
    else this.problems.set(resource, { resource, message });
    this.notify({ apps: new Set(), problems: true });
  }

  /** Calls `listener` after every change. */
  onChange(listener: (change: Change) => void): void {
    this.listeners.push(listener);
  }

  private notify(change: Change): void {
    for (const listener of this.listeners) listener(change);
  }

  start(): void {
    this.apps.start();
    this.events.start();
  }

  async stop(): Promise<void> {
    await Promise.all([this.apps.stop(), this.events.stop()]);
  }

  synced(): boolean {
    return this.apps.hasSynced() && (this.events.hasSynced() || this.problems.has("events"));
  }

  problemList(): Problem[] {
    return [...this.problems.values()];
  }

  app(key: string): CanaryApp | undefined {
    const slash = key.indexOf("/");
    return this.apps.get(key.slice(0, slash), key.slice(slash + 1));
  }

  eventsOf(key: string): EventLike[] {
    return [...(this.eventsByApp.get(key)?.values() ?? [])];
  }

  historyOf(key: string): { weights: readonly WeightPoint[]; analyses: readonly AnalysisPoint[] } {
    return { weights: this.weightHistory.get(key) ?? [], analyses: this.analysisHistory.get(key) ?? [] };
  }
}

/** What the server reads of the source (a test gives it a fake). */
export type DashboardReader = Pick<
  DashboardSource,
  "onChange" | "synced" | "problemList" | "app" | "eventsOf" | "historyOf"
> & { apps: Pick<Informer<CanaryApp>, "hasSynced" | "list"> };
