/**
 * Informers: list + watch caches of one resource, with event handlers, in the manner of client-go's
 * reflector and shared informer (ADR 0002). This file is what the controller and readers use of one; the
 * list/watch loop of one collection path is src/controller/list-watch-informer.ts, several per-namespace
 * informers read as one src/controller/multi-namespace-informer.ts, and `createInformer`
 * (src/controller/create-informer.ts) builds either for a resource.
 *
 * Cached objects are plain JSON and deep-frozen (src/controller/cached-objects.ts): they are shared with every
 * reader and must never be mutated.
 */

/** The part of an object an informer needs. */
export interface ObjectWithMeta {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
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
  /**
   * Whether the API server serves the kind: false for a kind of an optional API it does not serve (its cache
   * stays empty, src/controller/served-informer.ts), undefined until known. Absent: served.
   */
  served?(): boolean | undefined;
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
