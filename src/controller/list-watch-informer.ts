/**
 * The list + watch loop and cache of one collection path (ADR 0002).
 *
 * The HTTP side is a {@link Watcher}: the controller's `KubeRest` (kube/rest.ts: its own connection pool,
 * auth and TLS, the watch stream's liveness), or client-node's stream for tools and tests (kube/watch.ts).
 * Lists are read as they arrive, item by item (ADR 0019), and what a cache keeps of each object is its
 * `transform` (kube/trim.ts, ADR 0013), frozen (src/controller/cached-objects.ts). This file owns the loop:
 *
 * - list (or `load`: a share's or a label selector's part of the resource, for sharding, ADR 0016), then
 *   watch from the list's resourceVersion, with bookmarks and a jittered server-side timeout;
 * - a failed list or watch is retried after `backoffMs` (controller/backoff.ts), logged;
 * - 410 Gone (an expired resourceVersion, as a watch ERROR event or an HTTP status) relists at once;
 * - a watch the server or the client's liveness check ends is resumed from the last resourceVersion;
 * - on relist, objects that disappeared get `onDelete`, changed ones `onUpdate`, new ones `onAdd`;
 * - `stalled()` says why a cache has not been current for a while (the readiness probe shows it).
 */
import type { Logger } from "pino";
import { backoffMs } from "./backoff.js";
import { KubeApiError, isGone, toError } from "../kube/errors.js";
import type { ListedMeta, Watcher } from "../kube/list-watch.js";
import { abortable } from "./abortable.js";
import { keyOf, normalise } from "./cached-objects.js";
import type { Informer, ObjectWithMeta } from "./informer.js";
import { sleep, systemClock, type Clock } from "../time/clock.js";

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
  /** A field selector of the watch (the `list` applies the same one), e.g. `involvedObject.kind=CanaryApp`. */
  fieldSelector?: string;
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
      if (this.options.fieldSelector !== undefined) params.fieldSelector = this.options.fieldSelector;
      // managedFields never reaches the cache (cached-objects.ts): the watcher need not parse it.
      this.options.watcher.watch(this.options.path, params, onEvent, onDone, { withoutManagedFields: true }).then(
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
