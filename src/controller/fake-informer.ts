import type { Informer, ObjectWithMeta } from "./informer.js";

/**
 * An in-memory {@link Informer} for tests: `set` and `remove` change the cache and fire the handlers as
 * watch events would; `hasSynced` is whatever the test says (default: synced once started).
 */
export class FakeInformer<T extends ObjectWithMeta> implements Informer<T> {
  private readonly objects = new Map<string, T>();
  private readonly adds: ((obj: T) => void)[] = [];
  private readonly updates: ((obj: T, old: T) => void)[] = [];
  private readonly deletes: ((obj: T) => void)[] = [];
  started = false;
  stopped = false;
  /** When set, overrides "synced once started". */
  synced: boolean | undefined;
  /** What `stalled` answers (a list/watch that stopped recovering). */
  stalledReason: string | undefined;

  constructor(initial: T[] = []) {
    for (const obj of initial) this.objects.set(keyOf(obj), obj);
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

  stalled(): string | undefined {
    return this.stalledReason;
  }

  get(namespace: string, name: string): T | undefined {
    return this.objects.get(`${namespace}/${name}`);
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

  /** Adds or replaces an object, firing add or update handlers. */
  set(obj: T): void {
    const key = keyOf(obj);
    const old = this.objects.get(key);
    this.objects.set(key, obj);
    if (old === undefined) for (const h of this.adds) h(obj);
    else for (const h of this.updates) h(obj, old);
  }

  /** Removes an object, firing delete handlers. */
  remove(namespace: string, name: string): void {
    const key = `${namespace}/${name}`;
    const old = this.objects.get(key);
    if (old === undefined) return;
    this.objects.delete(key);
    for (const h of this.deletes) h(old);
  }
}

function keyOf(obj: ObjectWithMeta): string {
  return `${obj.metadata?.namespace ?? ""}/${obj.metadata?.name ?? ""}`;
}
