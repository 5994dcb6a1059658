import { backoffMs } from "./backoff.js";
import type { Logger } from "pino";
import { KubeApiError, isGone, toError } from "../kube/errors.js";
import { abortable } from "./abortable.js";
import { sleep, systemClock, type Clock } from "../time/clock.js";

/**
 * Informers: list + watch caches of one resource, with event handlers, in the manner of client-go's
 * reflector and shared informer (ADR 0002).
 *
 * The HTTP side is a {@link Watcher}: the controller's `KubeRest` (kube/rest.ts: its own connection pool,
 * auth and TLS, the watch stream's liveness), or client-node's stream for tools and tests (kube/watch.ts).
 * Lists are read as they arrive, item by item (ADR 0019), and what a cache keeps of each object is its
 * `transform` (kube/trim.ts, ADR 0013). This file owns the loop:
 *
 * - list (or `load`: a share's or a label selector's part of the resource, for sharding, ADR 0016), then
 *   watch from the list's resourceVersion, with bookmarks and a jittered server-side timeout;
 * - a failed list or watch is retried after `backoffMs` (controller/backoff.ts), logged;
 * - 410 Gone (an expired resourceVersion, as a watch ERROR event or an HTTP status) relists at once;
 * - a watch the server or the client's liveness check ends is resumed from the last resourceVersion;
 * - on relist, objects that disappeared get `onDelete`, changed ones `onUpdate`, new ones `onAdd`;
 * - `stalled()` says why a cache has not been current for a while (the readiness probe shows it).
 *
 * Cached objects are plain JSON and deep-frozen: they are shared with every reader and must never be
 * mutated (sample-controller: "NEVER modify objects from the store"). Callers `structuredClone` before
 * editing; an accidental write throws a TypeError instead of silently corrupting the cache.
 */

/** The part of an object an informer needs. */
export interface ObjectWithMeta {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
}

/** A list response's own metadata: what is left of it once its items are handed over. */
export interface ListedMeta {
  metadata?: { resourceVersion?: string };
  /** Handed to `each`, never returned: a list function that returns its items has not handed them over. */
  items?: never;
}

/** A list response. */
export interface ObjectList<T> {
  metadata?: { resourceVersion?: string };
  items: T[];
}

/**
 * Lists by a function that returns the whole list at once (a test's, a tool's): hands its items to `each`
 * in order and resolves with the rest, as a list `each` is handed items as they arrive does.
 */
export async function handedEach<T>(list: Promise<ObjectList<T>>, each: (item: T) => void): Promise<ListedMeta> {
  const { items, ...rest } = await list;
  for (const item of items) each(item);
  return rest;
}

/** Streams watch events; client-node's `Watch` satisfies it. */
export interface Watcher {
  watch(
    path: string,
    queryParams: Record<string, string | number | boolean | undefined>,
    callback: (type: string, object: unknown) => void,
    done: (err: unknown) => void,
  ): Promise<{ abort(): void }>;
}

/** What the controller and readers use of an informer. */
export interface Informer<T> {
  /** Starts listing and watching in the background. Idempotent. */
  start(): void;
  /** Stops watching and resolves once the loop has ended. The cache keeps its last content. */
  stop(): Promise<void>;
  /** True once the first list has been loaded (and ever after). */
  hasSynced(): boolean;
  /**
   * Calls `handler` when `hasSynced` turns true (not if it already is), so that a waiter need not poll.
   * Optional: without it, a waiter polls `hasSynced`.
   */
  onSynced?(handler: () => void): void;
  /**
   * Why the cache can no longer be trusted to follow the server (its list or watch has failed for longer
   * than its backoff ceiling allows to recover), or undefined. Optional: a cache without a watch has none.
   */
  stalled?(): string | undefined;
  /** The cached object; frozen, never to be mutated. */
  get(namespace: string, name: string): T | undefined;
  /** Cached objects, of one namespace or all. */
  list(namespace?: string): T[];
  /** How many objects are cached (without copying them, as `list().length` would). */
  size(): number;
  onAdd(handler: (obj: T) => void): void;
  onUpdate(handler: (obj: T, old: T) => void): void;
  onDelete(handler: (obj: T) => void): void;
  /**
   * Lists the objects that also match `labelSelector` (none: all of them) and merges those `keep` admits into
   * the cache while the watch goes on, then resolves (or once the informer has stopped): a filtered cache
   * whose filter widened. Optional: only caches with `keep` need it.
   */
  load?(labelSelector?: string): Promise<void>;
  /** Forgets, without events, the cached objects its `keep` no longer admits (a filter that narrowed). */
  prune?(): void;
}

export interface BackoffOptions {
  /** First retry delay after a failure. Default 1 s. */
  initialMs?: number;
  /** Longest retry delay. Default 30 s. */
  maxMs?: number;
}

export interface ListWatchOptions<T> {
  /** Names the resource in logs, e.g. "deployments". */
  resource: string;
  /** The collection path, e.g. /apis/apps/v1/namespaces/shop/deployments or /apis/apps/v1/deployments. */
  path: string;
  /**
   * Lists the same collection (same namespace and label selector) as `path` watches; with `narrower`, only
   * the objects that match that label selector too. Hands every item to `each` (as it arrives, so that an item
   * is cut down before the next is read) and resolves with the list's metadata once all are in.
   */
  list: (narrower: string | undefined, each: (item: T) => void) => Promise<ListedMeta>;
  labelSelector?: string;
  watcher: Watcher;
  log: Logger;
  clock?: Clock;
  backoff?: BackoffOptions;
  /** The server-side length of one watch request, in seconds; default a random 300–599. */
  watchTimeoutSeconds?: () => number;
  /**
   * Cuts an object down to what the controller reads before it is cached (a fresh copy nobody else holds,
   * which it may edit in place); the default keeps everything but managedFields.
   */
  transform?: (obj: T) => T;
  /**
   * Which objects to cache, asked of each listed or watched object as it comes (before `transform`); the
   * others are neither cached nor told to the handlers. It may change its answer: `load` then loads what it
   * admits now, `prune` forgets what it no longer admits. Default: every object.
   */
  keep?: (obj: T) => boolean;
  /**
   * Whether an object carries the label a narrowed `load` finds it by (its share's). The informer remembers
   * every object it has seen without (from its full lists and every watch event since, kept or not), and while
   * any is left, a `load` lists everything instead of narrowing: a narrowed list would miss it. Default: none
   * is needed.
   */
  labelled?: (obj: T) => boolean;
}

/**
 * A watch that ends normally sooner than this without delivering anything counts as a failure, so that
 * a server closing watches at once cannot make the informer spin.
 */
const MIN_HEALTHY_WATCH_MS = 1000;

type WatchOutcome = "closed" | "expired" | "idle";

function keyOf(obj: ObjectWithMeta): string {
  return `${obj.metadata?.namespace ?? ""}/${obj.metadata?.name ?? ""}`;
}

/**
 * Freezes a parsed JSON value and everything in it. Walks arrays by index and objects by `for…in` (plain
 * JSON objects have nothing enumerable on their prototype), so that no array of values is allocated per
 * object: at 5,000 apps the caches freeze about a million objects while they load.
 */
function deepFreeze<T>(value: T): T {
  if (typeof value !== "object" || value === null || Object.isFrozen(value)) return value;
  Object.freeze(value);
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const child: unknown = value[i];
      if (typeof child === "object" && child !== null) deepFreeze(child);
    }
  } else {
    const record = value as Record<string, unknown>;
    for (const key in record) {
      const child = record[key];
      if (typeof child === "object" && child !== null) deepFreeze(child);
    }
  }
  return value;
}

/**
 * Drops `metadata.managedFields` from an object about to be cached: server-side apply's bookkeeping is
 * often the larger part of an object, and nothing the controller decides reads it (controller-runtime's
 * caches strip it the same way). `obj` is a fresh copy that nobody else holds yet.
 */
function stripManagedFields<T>(obj: T): T {
  const metadata = (obj as { metadata?: { managedFields?: unknown } }).metadata;
  if (metadata !== undefined) delete metadata.managedFields;
  return obj;
}

/**
 * A listed or watched object as it is cached: without managedFields, transformed, frozen. Lists and watch
 * events are the API server's answers as parsed (plain JSON that nobody else holds), so nothing is copied:
 * at 5,000 apps a copy of every listed object cost about 0.7 s of a start-up.
 */
function normalise<T>(obj: T, transform: (obj: T) => T = (o) => o): T {
  return deepFreeze(transform(stripManagedFields(obj)));
}

/** The cache and list/watch loop of one collection path. */
export class ListWatchInformer<T extends ObjectWithMeta> implements Informer<T> {
  private store = new Map<string, T>();
  private resourceVersion = "";
  private synced = false;
  /** Whether the current (or last) watch delivered anything: a watch that worked resets the backoff. */
  private watchDelivered = false;
  /** When the current run of list/watch failures began; undefined while they work. */
  private failingSince: number | undefined;
  /** When the open watch was accepted; undefined while none is open. */
  private watchOpenSince: number | undefined;
  private abort: AbortController | undefined;
  private loop: Promise<void> | undefined;
  private readonly addHandlers: ((obj: T) => void)[] = [];
  private readonly updateHandlers: ((obj: T, old: T) => void)[] = [];
  private readonly deleteHandlers: ((obj: T) => void)[] = [];
  private readonly syncedHandlers: (() => void)[] = [];
  private readonly clock: Clock;
  private readonly initialBackoffMs: number;
  private readonly maxBackoffMs: number;
  private readonly log: Logger;
  private readonly watchTimeoutSeconds: () => number;
  /** For each `load` in flight, the keys the watch has touched since it began. */
  private readonly loads = new Set<Set<string>>();
  /** How many lists have replaced the cache: a load that sees this change was overtaken by a relist. */
  private relists = 0;
  /** The keys of the objects on the server that are not `labelled` (as the last list and the watch since say). */
  private readonly unlabelled = new Set<string>();

  constructor(private readonly options: ListWatchOptions<T>) {
    this.clock = options.clock ?? systemClock;
    this.watchTimeoutSeconds = options.watchTimeoutSeconds ?? (() => 300 + Math.floor(Math.random() * 300));
    this.initialBackoffMs = options.backoff?.initialMs ?? 1000;
    this.maxBackoffMs = options.backoff?.maxMs ?? 30_000;
    this.log = options.log.child({ resource: options.resource, path: options.path });
  }

  start(): void {
    if (this.abort !== undefined) return;
    const abort = new AbortController();
    this.abort = abort;
    this.loop = this.run(abort.signal).catch((err: unknown) => {
      // run() handles its own errors; reaching here is a bug, and the informer must say it stopped.
      this.log.error({ err: toError(err) }, "informer loop crashed");
    });
  }

  async stop(): Promise<void> {
    this.abort?.abort();
    await this.loop;
    this.abort = undefined;
    this.loop = undefined;
  }

  /**
   * Lists the objects that also match `labelSelector` (undefined: every object of the collection) and merges
   * them into the cache without ending the watch; resolves once merged, or once the informer has stopped. A
   * failed list is retried with the informer's backoff.
   *
   * The watch goes on meanwhile and is the newer source for whatever it delivers: every key it touches
   * (added, changed, deleted, kept or not) while the list is in flight is remembered, and the listed item of
   * such a key is skipped — the list may be older than the watch (a deleted object would come back, a change
   * would be undone), and the watch delivers every later change in order anyway. The other items `keep`
   * admits are cached and told as a list tells them (add, or update when the cached version differs); none
   * is removed (deletions are the watch's). A full relist that completes meanwhile has loaded everything
   * `keep` admits at a later point: the load's list is then dropped.
   *
   * While an object is known on the server without its label (`labelled`), the load lists every object
   * instead: written before the label was, it would not be found by it.
   */
  async load(labelSelector?: string): Promise<void> {
    const abort = this.abort;
    if (abort === undefined) return;
    const signal = abort.signal;
    if (labelSelector !== undefined && this.unlabelled.size > 0) {
      this.log.info(
        { unlabelled: this.unlabelled.size, labelSelector },
        "objects without the label a load lists by: loading by a full list",
      );
      labelSelector = undefined;
    }
    let failures = 0;
    while (!signal.aborted) {
      const touched = new Set<string>();
      const relists = this.relists;
      this.loads.add(touched);
      try {
        let list: ListedMeta | undefined;
        const items: T[] = [];
        const keep = this.options.keep;
        const transform = this.options.transform;
        try {
          list = await abortable(
            this.options.list(labelSelector, (item) => {
              if (keep === undefined || keep(item)) items.push(normalise(item, transform));
            }),
            signal,
          );
        } catch (error) {
          failures++;
          const delayMs = backoffMs(failures, this.initialBackoffMs, this.maxBackoffMs);
          this.log.warn(
            { err: toError(error, `${this.options.resource}: list`), failures, delayMs, labelSelector },
            "load failed; retrying",
          );
          await sleep(this.clock, delayMs, signal);
          continue;
        }
        if (list === undefined || signal.aborted) return;
        if (this.relists === relists) this.merge(items, touched);
        return;
      } finally {
        this.loads.delete(touched);
      }
    }
  }

  /**
   * Merges a load's items (kept and normalised as they were listed) into the cache, but none whose key the
   * watch touched during the load.
   */
  private merge(items: readonly T[], touched: ReadonlySet<string>): void {
    const keep = this.options.keep;
    for (const obj of items) {
      const key = keyOf(obj);
      if (touched.has(key)) continue;
      // Asked again: what it admits may have changed while the list was arriving.
      if (keep !== undefined && !keep(obj)) continue;
      const old = this.store.get(key);
      if (old !== undefined && old.metadata?.resourceVersion === obj.metadata?.resourceVersion) continue;
      this.store.set(key, obj);
      if (old === undefined) this.emit(this.addHandlers, obj);
      else this.emitUpdate(obj, old);
    }
  }

  /** Forgets, without events, the cached objects `keep` no longer admits. */
  prune(): void {
    const keep = this.options.keep;
    if (keep === undefined) return;
    for (const [key, obj] of this.store) if (!keep(obj)) this.store.delete(key);
  }

  hasSynced(): boolean {
    return this.synced;
  }

  /**
   * A list or watch that keeps failing is retried with backoff up to `maxBackoffMs` apart; failing for
   * more than two such ceilings means the server is not coming back for it (or this process cannot reach
   * it), and the cache ages unseen: liveness should turn.
   */
  stalled(): string | undefined {
    if (this.failingSince === undefined) return undefined;
    const now = this.clock.now();
    if (this.watchOpenSince !== undefined && now - this.watchOpenSince >= MIN_HEALTHY_WATCH_MS) {
      this.failingSince = undefined;
      return undefined;
    }
    const forMs = now - this.failingSince;
    if (forMs <= 2 * this.maxBackoffMs) return undefined;
    return `${this.options.resource}: list/watch failing for ${Math.round(forMs / 1000)}s (backoff ceiling ${this.maxBackoffMs / 1000}s)`;
  }

  get(namespace: string, name: string): T | undefined {
    return this.store.get(`${namespace}/${name}`);
  }

  size(): number {
    return this.store.size;
  }

  list(namespace?: string): T[] {
    const all = [...this.store.values()];
    return namespace === undefined ? all : all.filter((o) => (o.metadata?.namespace ?? "") === namespace);
  }

  onAdd(handler: (obj: T) => void): void {
    this.addHandlers.push(handler);
  }

  onUpdate(handler: (obj: T, old: T) => void): void {
    this.updateHandlers.push(handler);
  }

  onDelete(handler: (obj: T) => void): void {
    this.deleteHandlers.push(handler);
  }

  onSynced(handler: () => void): void {
    this.syncedHandlers.push(handler);
  }

  /** The resourceVersion the next watch resumes from ("" means: list first). */
  lastResourceVersion(): string {
    return this.resourceVersion;
  }

  private async run(signal: AbortSignal): Promise<void> {
    let failures = 0;
    while (!signal.aborted) {
      try {
        if (this.resourceVersion === "") await this.relist(signal);
        if (signal.aborted) break;
        const started = this.clock.now();
        const outcome = await this.watchOnce(signal);
        if (outcome === "expired") {
          this.log.info({ resourceVersion: this.resourceVersion }, "watch resourceVersion expired; relisting");
          this.resourceVersion = "";
          failures = 0;
        } else if (outcome === "idle" && this.clock.now() - started < MIN_HEALTHY_WATCH_MS) {
          throw new Error(`${this.options.resource}: watch closed at once without events`);
        } else {
          failures = 0;
          this.log.debug({ resourceVersion: this.resourceVersion }, "watch ended; resuming");
        }
      } catch (error) {
        if (signal.aborted) break;
        if (this.watchDelivered) failures = 0;
        this.watchDelivered = false;
        if (isGone(error)) {
          this.log.info({ resourceVersion: this.resourceVersion }, "watch resourceVersion gone; relisting");
          this.resourceVersion = "";
          continue;
        }
        failures++;
        this.failingSince ??= this.clock.now();
        const delayMs = backoffMs(failures, this.initialBackoffMs, this.maxBackoffMs);
        this.log.warn(
          { err: toError(error), failures, delayMs, synced: this.synced },
          this.resourceVersion === "" ? "list failed; retrying" : "watch failed; restarting",
        );
        await sleep(this.clock, delayMs, signal);
      }
    }
  }

  private async relist(signal: AbortSignal): Promise<void> {
    let list: ListedMeta | undefined;
    // Built as the items arrive, taken only once the whole list is in.
    const next = new Map<string, T>();
    const unlabelled = new Set<string>();
    const { keep, labelled, transform } = this.options;
    try {
      // Not awaited past a stop: a hanging list must not hold up shutdown.
      list = await abortable(
        this.options.list(undefined, (item) => {
          if (labelled !== undefined && !labelled(item)) unlabelled.add(keyOf(item));
          if (keep !== undefined && !keep(item)) return;
          const obj = normalise(item, transform);
          next.set(keyOf(obj), obj);
        }),
        signal,
      );
    } catch (error) {
      throw toError(error, `${this.options.resource}: list`);
    }
    if (list === undefined) return;
    // Asked again: what it admits may have changed while the list was arriving.
    if (keep !== undefined) for (const [key, obj] of next) if (!keep(obj)) next.delete(key);
    this.unlabelled.clear();
    for (const key of unlabelled) this.unlabelled.add(key);
    const previous = this.store;
    this.store = next;
    this.relists++;
    this.resourceVersion = list.metadata?.resourceVersion ?? "";
    const first = !this.synced;
    this.synced = true;
    this.failingSince = undefined;
    for (const [key, old] of previous) {
      if (!next.has(key)) this.emit(this.deleteHandlers, old);
    }
    for (const [key, obj] of next) {
      const old = previous.get(key);
      if (old === undefined) this.emit(this.addHandlers, obj);
      else if (old.metadata?.resourceVersion !== obj.metadata?.resourceVersion) this.emitUpdate(obj, old);
    }
    if (first) {
      for (const handler of this.syncedHandlers) {
        try {
          handler();
        } catch (error) {
          this.log.error({ err: toError(error) }, "informer handler threw");
        }
      }
    }
  }

  /** One watch from the current resourceVersion until it ends; rejects on errors other than expiry. */
  private watchOnce(signal: AbortSignal): Promise<WatchOutcome> {
    return new Promise<WatchOutcome>((resolve, reject) => {
      let settled = false;
      this.watchDelivered = false;
      let handle: { abort(): void } | undefined;
      const finish = (outcome: WatchOutcome | Error): void => {
        if (settled) return;
        settled = true;
        this.watchOpenSince = undefined;
        signal.removeEventListener("abort", onAbort);
        handle?.abort();
        if (outcome instanceof Error) reject(outcome);
        else resolve(outcome);
      };
      const onAbort = (): void => finish("closed");
      signal.addEventListener("abort", onAbort, { once: true });

      const onEvent = (type: string, object: unknown): void => {
        if (settled) return;
        this.watchDelivered = true;
        this.failingSince = undefined;
        if (type === "ERROR") {
          const status = (object ?? {}) as { code?: unknown; reason?: unknown; message?: unknown };
          const code = typeof status.code === "number" ? status.code : 500;
          if (code === 410) {
            finish("expired");
            return;
          }
          const reason = typeof status.reason === "string" ? status.reason : "";
          const message = typeof status.message === "string" ? status.message : "watch error";
          finish(new KubeApiError(`${this.options.resource}: watch: ${message}`, code, reason));
          return;
        }
        this.apply(type, object as T);
      };
      const onDone = (err: unknown): void => {
        if (err === null || err === undefined) {
          finish(this.watchDelivered ? "closed" : "idle");
        } else if (err instanceof Error && err.name === "TimeoutError") {
          // The client's inactivity timeout: a quiet watch, not a failure. Resume from where it was.
          finish("closed");
        } else {
          finish(toError(err, `${this.options.resource}: watch`));
        }
      };

      const params: Record<string, string | boolean> = {
        resourceVersion: this.resourceVersion,
        allowWatchBookmarks: true,
        // The server ends the watch after this long and it resumes at once; jittered so that replicas'
        // informers do not all come back together (client-go: 5–10 minutes).
        timeoutSeconds: String(this.watchTimeoutSeconds()),
      };
      if (this.options.labelSelector !== undefined) params.labelSelector = this.options.labelSelector;
      this.options.watcher.watch(this.options.path, params, onEvent, onDone).then(
        (h) => {
          handle = h;
          // Accepted: a watch that stays open is following again, even if nothing changes for long.
          if (!settled) this.watchOpenSince = this.clock.now();
          // Settled while the request was being set up (stop, or an immediate error): close it now.
          if (settled) h.abort();
        },
        (err: unknown) => finish(toError(err, `${this.options.resource}: watch`)),
      );
    });
  }

  private apply(type: string, raw: T): void {
    const rv = raw.metadata?.resourceVersion;
    if (type === "BOOKMARK") {
      if (rv !== undefined) this.resourceVersion = rv;
      return;
    }
    if (type !== "ADDED" && type !== "MODIFIED" && type !== "DELETED") return;
    // The loads in flight must not overwrite what the watch says now with what their (older) list says.
    if (this.loads.size > 0) {
      const key = keyOf(raw);
      for (const touched of this.loads) touched.add(key);
    }
    const labelled = this.options.labelled;
    if (labelled !== undefined) {
      if (type !== "DELETED" && !labelled(raw)) this.unlabelled.add(keyOf(raw));
      else this.unlabelled.delete(keyOf(raw));
    }
    const keep = this.options.keep;
    if (keep !== undefined && !keep(raw)) {
      // Not ours (another replica's share): not cached, nobody told. One cached before is forgotten.
      this.store.delete(keyOf(raw));
      if (rv !== undefined) this.resourceVersion = rv;
      return;
    }
    const obj = normalise(raw, this.options.transform);
    const key = keyOf(obj);
    const old = this.store.get(key);
    if (type === "DELETED") {
      this.store.delete(key);
      if (old !== undefined) this.emit(this.deleteHandlers, obj);
    } else {
      this.store.set(key, obj);
      if (old === undefined) this.emit(this.addHandlers, obj);
      else if (old.metadata?.resourceVersion !== rv) this.emitUpdate(obj, old);
    }
    if (rv !== undefined) this.resourceVersion = rv;
  }

  private emit(handlers: ((obj: T) => void)[], obj: T): void {
    for (const handler of handlers) {
      try {
        handler(obj);
      } catch (error) {
        this.log.error({ err: toError(error), object: keyOf(obj) }, "informer handler threw");
      }
    }
  }

  private emitUpdate(obj: T, old: T): void {
    for (const handler of this.updateHandlers) {
      try {
        handler(obj, old);
      } catch (error) {
        this.log.error({ err: toError(error), object: keyOf(obj) }, "informer handler threw");
      }
    }
  }
}

/** Identifies a resource collection: group ("" for core), version and plural. */
export interface ResourceType {
  group: string;
  version: string;
  plural: string;
}

/** The collection path of a resource, in one namespace or (namespace undefined) across all. */
export function resourcePath(type: ResourceType, namespace?: string): string {
  const base = type.group === "" ? `/api/${type.version}` : `/apis/${type.group}/${type.version}`;
  return namespace === undefined
    ? `${base}/${type.plural}`
    : `${base}/namespaces/${encodeURIComponent(namespace)}/${type.plural}`;
}

export interface InformerOptions<T> {
  type: ResourceType;
  /** Namespaces to watch; empty or absent means all namespaces (one cluster-wide watch). */
  namespaces?: readonly string[];
  /**
   * Lists the collection in `namespace` (undefined: across all namespaces) with the label selector, handing each
   * item to `each` as it arrives (`KubeRest.listEach`, as src/kube/kinds.ts does), e.g.
   * `({ namespace, labelSelector, each }) => rest.listEach(deployments, { namespace, labelSelector }, each)`; a call
   * that returns a whole list is wrapped in `handedEach`, e.g.
   * `({ namespace, labelSelector, each }) => handedEach(apps.listNamespacedDeployment({ namespace: namespace ?? "", labelSelector }), each)`.
   */
  list: (args: { namespace?: string; labelSelector?: string; each: (item: T) => void }) => Promise<ListedMeta>;
  labelSelector?: string;
  watcher: Watcher;
  log: Logger;
  clock?: Clock;
  backoff?: BackoffOptions;
  /** See ListWatchOptions.transform. */
  transform?: (obj: T) => T;
  /** See ListWatchOptions.keep. */
  keep?: (obj: T) => boolean;
  /** See ListWatchOptions.labelled. */
  labelled?: (obj: T) => boolean;
}

/**
 * One informer over all namespaces, or one per namespace behind a single facade when `namespaces` names
 * some (so the controller needs list/watch rights only there).
 */
export function createInformer<T extends ObjectWithMeta>(options: InformerOptions<T>): Informer<T> {
  const make = (namespace: string | undefined): ListWatchInformer<T> =>
    new ListWatchInformer<T>({
      resource: options.type.group === "" ? options.type.plural : `${options.type.plural}.${options.type.group}`,
      path: resourcePath(options.type, namespace),
      list: (narrower, each) =>
        options.list({ namespace, labelSelector: joinSelectors(options.labelSelector, narrower), each }),
      labelSelector: options.labelSelector,
      watcher: options.watcher,
      log: options.log,
      clock: options.clock,
      backoff: options.backoff,
      transform: options.transform,
      ...(options.keep !== undefined ? { keep: options.keep } : {}),
      ...(options.labelled !== undefined ? { labelled: options.labelled } : {}),
    });
  const namespaces = [...new Set(options.namespaces ?? [])];
  if (namespaces.length === 0) return make(undefined);
  return new MultiNamespaceInformer(new Map(namespaces.map((ns) => [ns, make(ns)])));
}

/** Both label selectors at once (an object must match each): their requirements joined by a comma. */
export function joinSelectors(a: string | undefined, b: string | undefined): string | undefined {
  if (a === undefined || a === "") return b;
  if (b === undefined || b === "") return a;
  return `${a},${b}`;
}

/**
 * Gives a composite informer `onSynced`: `handler` runs when the last of `parts` syncs. Only when each part
 * can tell (a part without `onSynced` leaves the composite's waiters to poll).
 */
export function onAllSynced(parts: readonly Informer<unknown>[], synced: () => boolean, handler: () => void): void {
  if (!parts.every((part) => part.onSynced !== undefined)) return;
  for (const part of parts) part.onSynced?.(() => (synced() ? handler() : undefined));
}

/** Several per-namespace informers read as one. */
export class MultiNamespaceInformer<T> implements Informer<T> {
  constructor(private readonly byNamespace: ReadonlyMap<string, Informer<T>>) {}

  start(): void {
    for (const informer of this.byNamespace.values()) informer.start();
  }

  async stop(): Promise<void> {
    await Promise.all([...this.byNamespace.values()].map((i) => i.stop()));
  }

  hasSynced(): boolean {
    return [...this.byNamespace.values()].every((i) => i.hasSynced());
  }

  stalled(): string | undefined {
    for (const informer of this.byNamespace.values()) {
      const reason = informer.stalled?.();
      if (reason !== undefined) return reason;
    }
    return undefined;
  }

  get(namespace: string, name: string): T | undefined {
    return this.byNamespace.get(namespace)?.get(namespace, name);
  }

  size(): number {
    let n = 0;
    for (const informer of this.byNamespace.values()) n += informer.size();
    return n;
  }

  list(namespace?: string): T[] {
    if (namespace !== undefined) return this.byNamespace.get(namespace)?.list(namespace) ?? [];
    return [...this.byNamespace.values()].flatMap((i) => i.list());
  }

  onAdd(handler: (obj: T) => void): void {
    for (const informer of this.byNamespace.values()) informer.onAdd(handler);
  }

  onUpdate(handler: (obj: T, old: T) => void): void {
    for (const informer of this.byNamespace.values()) informer.onUpdate(handler);
  }

  onDelete(handler: (obj: T) => void): void {
    for (const informer of this.byNamespace.values()) informer.onDelete(handler);
  }

  onSynced(handler: () => void): void {
    onAllSynced([...this.byNamespace.values()], () => this.hasSynced(), handler);
  }

  async load(labelSelector?: string): Promise<void> {
    await Promise.all([...this.byNamespace.values()].map((i) => i.load?.(labelSelector) ?? Promise.resolve()));
  }

  prune(): void {
    for (const informer of this.byNamespace.values()) informer.prune?.();
  }
}
