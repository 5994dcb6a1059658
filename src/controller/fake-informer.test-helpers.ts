import type { Informer, ObjectWithMeta } from "./informer.js";

/**
 * An in-memory {@link Informer} for tests: `set` and `remove` change the cache and fire the handlers as
 * watch events would; `hasSynced` is whatever the test says (default: synced once started). With `keep`,
 * it caches only what `keep` admits, as a ListWatchInformer with `keep` does: `set` and `remove` change the
 * server's objects, `load` loads what `keep` admits now (removing nothing: deletions are the watch's),
 * `prune` forgets what it no longer admits.
 */
export class FakeInformer<T extends ObjectWithMeta> implements Informer<T> {
  private readonly objects = new Map<string, T>();
  /** What the API server has (with `keep`, the cache holds only part of it). */
  private readonly server = new Map<string, T>();
  /** Which objects the cache keeps; default all. */
  keep: (obj: T) => boolean = () => true;
  /** The label selector of every `load`, in order (undefined: a load of everything). */
  readonly loads: (string | undefined)[] = [];
  /** When set, `load` waits for it before listing (a slow list). */
  loadGate: Promise<void> | undefined;
  private readonly adds: ((obj: T) => void)[] = [];
  private readonly updates: ((obj: T, old: T) => void)[] = [];
  private readonly deletes: ((obj: T) => void)[] = [];
  private readonly syncedHandlers: (() => void)[] = [];
  started = false;
  stopped = false;
  /** When set, overrides "synced once started". */
  synced: boolean | undefined;
  /** What `stalled` answers (a list/watch that stopped recovering). */
  stalledReason: string | undefined;

  constructor(initial: T[] = [], keep?: (obj: T) => boolean) {
    if (keep !== undefined) this.keep = keep;
    for (const obj of initial) {
      this.server.set(keyOf(obj), obj);
      if (this.keep(obj)) this.objects.set(keyOf(obj), obj);
    }
  }

  start(): void {
    this.started = true;
    // As a real informer's initial list: every object is an add.
    for (const obj of this.objects.values()) for (const h of this.adds) h(obj);
  }

  stop(): Promise<void> {
    this.stopped = true;
    return Promise.resolve();
  }

  hasSynced(): boolean {
    return this.synced ?? this.started;
  }

  onSynced(handler: () => void): void {
    this.syncedHandlers.push(handler);
  }

  /** Marks the cache synced and, if it was not, tells the `onSynced` handlers, as a real first list does. */
  sync(): void {
    const was = this.hasSynced();
    this.synced = true;
    if (!was) for (const handler of this.syncedHandlers) handler();
  }

  stalled(): string | undefined {
    return this.stalledReason;
  }

  get(namespace: string, name: string): T | undefined {
    return this.objects.get(`${namespace}/${name}`);
  }

  size(): number {
    return this.objects.size;
  }

  list(namespace?: string): T[] {
    return [...this.objects.values()].filter((o) => namespace === undefined || o.metadata?.namespace === namespace);
  }

  onAdd(handler: (obj: T) => void): void {
    this.adds.push(handler);
  }

  onUpdate(handler: (obj: T, old: T) => void): void {
    this.updates.push(handler);
  }

  onDelete(handler: (obj: T) => void): void {
    this.deletes.push(handler);
  }

  /** Adds or replaces an object, firing add or update handlers (when kept). */
  set(obj: T): void {
    const key = keyOf(obj);
    this.server.set(key, obj);
    const old = this.objects.get(key);
    if (!this.keep(obj)) {
      this.objects.delete(key);
      return;
    }
    this.objects.set(key, obj);
    if (old === undefined) for (const h of this.adds) h(obj);
    else for (const h of this.updates) h(obj, old);
  }

  /** Removes an object, firing delete handlers (when it was cached). */
  remove(namespace: string, name: string): void {
    const key = `${namespace}/${name}`;
    this.server.delete(key);
    const old = this.objects.get(key);
    if (old === undefined) return;
    this.objects.delete(key);
    for (const h of this.deletes) h(old);
  }

  /** Caches what `keep` admits of the server's objects and is not cached as it is, firing add or update handlers. */
  private admitServer(): void {
    for (const [key, obj] of this.server) {
      if (!this.keep(obj)) continue;
      const old = this.objects.get(key);
      if (old === obj) continue;
      this.objects.set(key, obj);
      if (old === undefined) for (const h of this.adds) h(obj);
      else for (const h of this.updates) h(obj, old);
    }
  }

  /**
   * Loads (on a later turn, as a request would) what `keep` admits now of the server's objects, while the watch
   * goes on: the selector is recorded, not applied.
   */
  async load(labelSelector?: string): Promise<void> {
    await Promise.resolve();
    await this.loadGate;
    this.loads.push(labelSelector);
    this.admitServer();
  }

  /** Forgets, without events, the cached objects `keep` no longer admits. */
  prune(): void {
    for (const [key, obj] of [...this.objects]) if (!this.keep(obj)) this.objects.delete(key);
  }
}

function keyOf(obj: ObjectWithMeta): string {
  return `${obj.metadata?.namespace ?? ""}/${obj.metadata?.name ?? ""}`;
}
