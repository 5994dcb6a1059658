/**
 * The informer of a kind the API server may not serve: a custom resource of an optional API (the Gateway
 * API's HTTPRoute, whose CRDs a cluster may not have). On start it asks whether the kind is served; if it is,
 * it lists and watches it as any informer; if not, it is an empty cache, synced at once, that makes no request
 * at all — a controller in a cluster without that API costs nothing for it and never stalls on it. Whether
 * the kind is served is known after start (`served`), so that what needs it can say it is missing.
 */
import type { Logger } from "pino";
import type { Informer } from "./informer.js";

type Handlers<T> = {
  add: ((obj: T) => void)[];
  update: ((obj: T, old: T) => void)[];
  delete: ((obj: T) => void)[];
  synced: (() => void)[];
};

export class ServedInformer<T> implements Informer<T> {
  readonly #isServed: () => Promise<boolean>;
  readonly #make: () => Informer<T>;
  readonly #log: Logger;
  readonly #handlers: Handlers<T> = { add: [], update: [], delete: [], synced: [] };
  #inner: Informer<T> | undefined;
  #state: "unknown" | "asking" | "served" | "absent" = "unknown";
  #stopped = false;

  /**
   * `isServed` asks the API server (discovery); it may retry, and should resolve false rather than reject
   * when it cannot tell. `make` builds the real informer, once the kind is known to be served.
   */
  constructor(options: { isServed: () => Promise<boolean>; make: () => Informer<T>; log: Logger }) {
    this.#isServed = options.isServed;
    this.#make = options.make;
    this.#log = options.log;
  }

  /** Whether the API server serves the kind: undefined until the informer has started and asked. */
  served(): boolean | undefined {
    return this.#state === "served" ? true : this.#state === "absent" ? false : undefined;
  }

  start(): void {
    if (this.#state !== "unknown") {
      this.#inner?.start();
      return;
    }
    this.#state = "asking";
    this.#stopped = false;
    void this.#isServed()
      .catch(() => false)
      .then((served) => {
        if (this.#stopped) {
          this.#state = "unknown";
          return;
        }
        if (!served) {
          this.#state = "absent";
          this.#log.info("the API server does not serve this kind: its cache stays empty");
          for (const handler of this.#handlers.synced) handler();
          return;
        }
        const inner = this.#make();
        for (const h of this.#handlers.add) inner.onAdd(h);
        for (const h of this.#handlers.update) inner.onUpdate(h);
        for (const h of this.#handlers.delete) inner.onDelete(h);
        for (const h of this.#handlers.synced) this.#whenSynced(inner, h);
        this.#inner = inner;
        this.#state = "served";
        inner.start();
      });
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#inner?.stop();
  }

  hasSynced(): boolean {
    return this.#state === "absent" || (this.#inner?.hasSynced() ?? false);
  }

  onSynced(handler: () => void): void {
    this.#handlers.synced.push(handler);
    if (this.#inner !== undefined) this.#whenSynced(this.#inner, handler);
  }

  stalled(): string | undefined {
    return this.#inner?.stalled?.();
  }

  get(namespace: string, name: string): T | undefined {
    return this.#inner?.get(namespace, name);
  }

  list(namespace?: string): T[] {
    return this.#inner?.list(namespace) ?? [];
  }

  size(): number {
    return this.#inner?.size() ?? 0;
  }

  onAdd(handler: (obj: T) => void): void {
    this.#handlers.add.push(handler);
    this.#inner?.onAdd(handler);
  }

  onUpdate(handler: (obj: T, old: T) => void): void {
    this.#handlers.update.push(handler);
    this.#inner?.onUpdate(handler);
  }

  onDelete(handler: (obj: T) => void): void {
    this.#handlers.delete.push(handler);
    this.#inner?.onDelete(handler);
  }

  async load(labelSelector?: string): Promise<void> {
    await this.#inner?.load?.(labelSelector);
  }

  prune(): void {
    this.#inner?.prune?.();
  }

  /** Calls `handler` once `inner` has synced: the inner informer's own notice, else (without one) at once if synced. */
  #whenSynced(inner: Informer<T>, handler: () => void): void {
    if (inner.onSynced !== undefined) inner.onSynced(handler);
    else if (inner.hasSynced()) handler();
  }
}
