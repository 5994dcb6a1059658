import type { KubeConfig } from "@kubernetes/client-node";
import { StreamWatch } from "../../src/kube/watch.js";

/** An object as the watches last saw it (only the fields the benchmark reads). */
export interface Seen {
  metadata: {
    name: string;
    generation?: number;
    labels?: Record<string, string>;
    ownerReferences?: { kind?: string; name?: string }[];
  };
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
}

/**
 * The objects of a few collections of one namespace, kept current by watches (with the admin credentials,
 * not through the counting proxy), so the benchmark times changes as they happen without polling.
 */
export class NamespaceView {
  /** Collection path → name → object. */
  private readonly objects = new Map<string, Map<string, Seen>>();
  private readonly listeners = new Set<() => void>();
  private readonly aborts = new Set<{ abort(): void }>();
  private stopped = false;

  constructor(
    private readonly kc: KubeConfig,
    private readonly paths: readonly string[],
  ) {}

  async start(): Promise<void> {
    await Promise.all(this.paths.map((path) => this.follow(path)));
  }

  /** The object `name` of the collection at `path`, as last seen. */
  get(path: string, name: string): Seen | undefined {
    return this.objects.get(path)?.get(name);
  }

  /** Every object of the collection at `path`, as last seen. */
  list(path: string): Seen[] {
    return [...(this.objects.get(path)?.values() ?? [])];
  }

  /** Resolves with the time (Date.now()) `check` first holds, checked now and on every change. */
  until(what: string, check: () => boolean, timeoutMs: number): Promise<number> {
    return new Promise<number>((resolve, reject) => {
      const evaluate = () => {
        if (!check()) return;
        clearTimeout(timer);
        this.listeners.delete(evaluate);
        resolve(Date.now());
      };
      const timer = setTimeout(() => {
        this.listeners.delete(evaluate);
        reject(new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`));
      }, timeoutMs);
      this.listeners.add(evaluate);
      evaluate();
    });
  }

  stop(): void {
    this.stopped = true;
    for (const a of this.aborts) a.abort();
    this.aborts.clear();
  }

  /** A watch with no resourceVersion starts with every existing object; it is reopened when it ends. */
  private async follow(path: string): Promise<void> {
    const objects = this.objects.get(path) ?? new Map<string, Seen>();
    this.objects.set(path, objects);
    const started: { handle?: { abort(): void } } = {};
    started.handle = await new StreamWatch(this.kc).watch(
      path,
      { allowWatchBookmarks: false },
      (type, object) => {
        const seen = object as Seen;
        if (type === "DELETED") objects.delete(seen.metadata.name);
        else if (type === "ADDED" || type === "MODIFIED") objects.set(seen.metadata.name, seen);
        else return;
        for (const listener of [...this.listeners]) listener();
      },
      () => {
        if (started.handle !== undefined) this.aborts.delete(started.handle);
        if (!this.stopped) setTimeout(() => void this.follow(path).catch(() => undefined), 200);
      },
    );
    this.aborts.add(started.handle);
  }
}
