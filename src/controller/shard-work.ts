import type { Logger } from "pino";
import { systemClock, type Clock } from "../time/clock.js";
import { toError } from "../kube/errors.js";
import { Fence } from "./fence.js";

/** The part of the work queue sharding needs. */
export interface ShardQueue {
  add(key: string): void;
  remove(key: string): void;
}

/**
 * A cache that keeps only the objects of the shares this replica holds (`ListWatchInformer`'s `keep`).
 * `load` resolves once the cache holds every object of `shares` (gained: `keep` admits them now) — by a list of
 * just those shares where the objects carry a share label, by a full list otherwise — while its watch goes on;
 * `prune` drops, without events, the objects `keep` no longer admits.
 */
export interface ShardCache {
  load(shares: readonly number[]): Promise<void>;
  prune(): void;
}

/** Shares gained that wait for one load together, and its end. */
interface LoadBatch {
  shares: Set<number>;
  loaded: Promise<void>;
  begin: () => void;
}

export interface ShardWorkOptions {
  shares: number;
  /** The term under which this replica holds a share now (`ShardElector.term`). */
  termOf: (share: number) => string | undefined;
  queue: ShardQueue;
  /** The keys of the apps in the cache now. */
  appKeys: () => Iterable<string>;
  /**
   * The caches filtered by share: loaded again when a share is gained (its apps are worked on only once they
   * are), pruned when one is lost. None: every cache holds every app.
   */
  caches?: readonly ShardCache[];
  /** An app's work was dropped (its share was lost): forget what is kept per app. */
  dropped?: (key: string) => void;
  log: Logger;
  /** Times the loads (logged). Default: the system clock. */
  clock?: Clock;
}

/**
 * Which keys a sharded replica works on (ADR 0016), between the share election, the fence and the work
 * queue, so that no event is lost however shares come and go:
 *
 * - An event for an app of a share held (and loaded) is queued.
 * - A key that cannot be worked on although the share is this replica's — its caches are still loading, or
 *   its fence closed because a renewal ran late — is remembered, by `offer` or by the fence's `run`, and queued
 *   when the share is usable again: loaded, renewed under the same term (`resumed`), or taken anew.
 * - A share gained is worked on once its caches have loaded: then every app of it in the cache is queued,
 *   with the keys remembered for it (an app deleted meanwhile is in no cache, only there).
 * - A share lost: its keys leave the queue and their per-app state is dropped — the cached apps' and the
 *   remembered keys' — and the caches let go of its objects.
 *
 * An event for a share nobody holds needs no memory: whoever takes the share lists its apps then.
 */
export class ShardWork {
  readonly fence: Fence;
  /** Shares gained and not lost since: what the caches keep. */
  private readonly wanted = new Set<number>();
  /** Shares gained whose caches are loading, each with the load it waits for. */
  private readonly loading = new Map<number, symbol>();
  /** Keys of wanted shares that could not be worked on when their event came. */
  private readonly skipped = new Map<number, Set<string>>();
  private readonly caches: readonly ShardCache[];
  /** Whether a load is in flight: shares gained meanwhile wait in `next`, and are loaded together after it. */
  private loadInFlight = false;
  private next: LoadBatch | undefined;

  constructor(private readonly options: ShardWorkOptions) {
    this.caches = options.caches ?? [];
    this.fence = new Fence({
      shares: options.shares,
      // A share whose caches are loading is not held yet as far as reconciles go: they would read it empty.
      termOf: (share) => (this.loading.has(share) ? undefined : options.termOf(share)),
      skipped: (key, share) => this.remember(key, share),
    });
  }

  /** Whether the caches keep the objects of `share`: it was gained and not lost since. */
  keeps(share: number): boolean {
    return this.wanted.has(share);
  }

  /** Whether the caches keep the objects of the app `key` (undefined: an object of no app, kept). */
  keepsKey(key: string | undefined): boolean {
    return key === undefined || this.wanted.has(this.fence.shareOf(key));
  }

  /** Shares gained whose caches are still loading. */
  loadingShares(): number[] {
    return [...this.loading.keys()].sort((a, b) => a - b);
  }

  /** An event for `key`: queued when its share is held, remembered when it is this replica's but not usable. */
  offer(key: string): void {
    if (this.accepts(key)) this.options.queue.add(key);
  }

  /**
   * Whether an event for `key` is to be queued now (its share is held and usable); if not and the share is
   * this replica's all the same, the key is remembered and queued once it is usable. For key functions.
   */
  accepts(key: string): boolean {
    if (this.fence.owns(key)) return true;
    this.remember(key, this.fence.shareOf(key));
    return false;
  }

  /** This replica now holds `share` (a new term): load its objects, then queue its apps. */
  gained(share: number): void {
    this.wanted.add(share);
    if (this.caches.length === 0) {
      this.release(share);
      return;
    }
    const load = Symbol(`load of share ${share}`);
    this.loading.set(share, load);
    void this.loadWith(share).then(() => {
      // Lost (or lost and gained again, a newer load) while loading: nothing to do for this load.
      if (this.loading.get(share) !== load) return;
      this.loading.delete(share);
      this.release(share);
    });
  }

  /**
   * `share`'s fence opened again under the same term (a renewal landed late, nobody took the share meanwhile):
   * its caches were kept, so nothing is loaded; its apps are queued with the keys remembered while it was closed.
   */
  resumed(share: number): void {
    if (!this.wanted.has(share) || this.loading.has(share)) return;
    this.release(share);
  }

  /** This replica no longer holds `share`: drop its work and its objects. */
  lost(share: number): void {
    const keys = new Set([...this.keysOf(share), ...(this.skipped.get(share) ?? [])]);
    this.wanted.delete(share);
    this.loading.delete(share);
    this.skipped.delete(share);
    for (const key of keys) {
      this.options.queue.remove(key);
      this.options.dropped?.(key);
    }
    for (const cache of this.caches) cache.prune();
  }

  private remember(key: string, share: number): void {
    if (!this.wanted.has(share)) return;
    let keys = this.skipped.get(share);
    if (keys === undefined) this.skipped.set(share, (keys = new Set()));
    keys.add(key);
  }

  /** Queues every app of `share` in the cache and every key remembered for it. */
  private release(share: number): void {
    const keys = new Set([...this.keysOf(share), ...(this.skipped.get(share) ?? [])]);
    this.skipped.delete(share);
    for (const key of keys) this.options.queue.add(key);
  }

  /**
   * Resolves once a load that includes `share` has ended. Shares gained while a load is in flight (the takes of
   * one round end one by one) are loaded together by the next one: a takeover of ten shares lists a few times,
   * not ten times each cache that has no share label to list by.
   */
  private loadWith(share: number): Promise<void> {
    if (this.next === undefined) {
      let begin = (): void => undefined;
      const shares = new Set<number>();
      const loaded = new Promise<void>((resolve) => {
        begin = () => void this.load([...shares]).then(resolve);
      });
      this.next = { shares, loaded, begin };
    }
    const batch = this.next;
    batch.shares.add(share);
    this.beginNext();
    return batch.loaded;
  }

  private beginNext(): void {
    const batch = this.next;
    if (this.loadInFlight || batch === undefined) return;
    this.next = undefined;
    this.loadInFlight = true;
    batch.begin();
    void batch.loaded.then(() => {
      this.loadInFlight = false;
      this.beginNext();
    });
  }

  private async load(shares: readonly number[]): Promise<void> {
    const clock = this.options.clock ?? systemClock;
    const began = clock.now();
    try {
      await Promise.all(this.caches.map((cache) => cache.load(shares)));
      this.options.log.info({ shares, ms: clock.now() - began }, "loaded the objects of shares gained");
    } catch (error) {
      // The informers retry their lists themselves; a rejection here is a stop. Work on what is cached.
      this.options.log.warn({ err: toError(error) }, "could not load the objects of a share gained");
    }
  }

  private keysOf(share: number): string[] {
    return [...this.options.appKeys()].filter((key) => this.fence.shareOf(key) === share);
  }
}
