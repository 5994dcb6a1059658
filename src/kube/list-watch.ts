/**
 * What the API server side hands to a cache: a list's items and metadata, and a stream of watch events. The
 * controller's `KubeRest` (src/kube/rest.ts) and client-node's stream (src/kube/watch.ts) implement these; the
 * informers (src/controller/) consume them.
 */
import type { WatchReadOptions } from "./watch-stream.js";

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

/**
 * Streams watch events; client-node's `Watch` satisfies it (it takes no `options`: its events keep their
 * managedFields, which the informer then drops).
 */
export interface Watcher {
  watch(
    path: string,
    queryParams: Record<string, string | number | boolean | undefined>,
    callback: (type: string, object: unknown) => void,
    done: (err: unknown) => void,
    options?: WatchReadOptions,
  ): Promise<{ abort(): void }>;
}
