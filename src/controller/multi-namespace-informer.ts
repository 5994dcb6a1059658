/** Several per-namespace informers read as one: the facade of a controller limited to some namespaces. */
import type { Informer } from "./informer.js";

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
