import { backoffMs } from "./backoff.js";
import { systemClock, type Clock, type Timer } from "../time/clock.js";

/** Options of a {@link WorkQueue}. */
export interface WorkQueueOptions {
  /** First delay of `addRateLimited` for a key. Default 200 ms. */
  baseDelayMs?: number;
  /** Longest delay of `addRateLimited`. Default 5 minutes. */
  maxDelayMs?: number;
  clock?: Clock;
}

export const DEFAULT_BASE_DELAY_MS = 200;
export const DEFAULT_MAX_DELAY_MS = 5 * 60 * 1000;

/**
 * A rate-limited work queue of string keys with the semantics of client-go's `workqueue`:
 *
 * - A key waiting in the queue is there once, however often it is added (the *dirty* set).
 * - A key handed out by `get()` is *processing* until `done(key)`. Adding it meanwhile marks it dirty
 *   but does not queue it: it is queued again on `done`, so two workers never hold the same key.
 * - `addAfter` holds a key back until a delay passes; when called again for a waiting key the earliest
 *   deadline wins.
 * - `addRateLimited` is `addAfter` with a per-key exponential backoff (base · 2^failures, capped), never
 *   shorter than a Retry-After the server gave; `forget` resets it after a success.
 * - After `shutDown`, adds are ignored and `get()` resolves `undefined` at once: workers stop taking
 *   work. Keys still queued are dropped; a new leader lists everything again anyway.
 */
export class WorkQueue {
  private readonly queue: string[] = [];
  private readonly dirty = new Set<string>();
  private readonly processing = new Set<string>();
  private readonly waitingGetters: ((key: string | undefined) => void)[] = [];
  private readonly delayed = new Map<string, { readyAt: number; timer: Timer }>();
  private readonly failures = new Map<string, number>();
  private readonly drainWaiters: (() => void)[] = [];
  private shuttingDown = false;

  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly clock: Clock;

  constructor(options: WorkQueueOptions = {}) {
    this.baseDelayMs = options.baseDelayMs ?? DEFAULT_BASE_DELAY_MS;
    this.maxDelayMs = options.maxDelayMs ?? DEFAULT_MAX_DELAY_MS;
    this.clock = options.clock ?? systemClock;
    if (this.baseDelayMs <= 0 || this.maxDelayMs < this.baseDelayMs) {
      throw new Error(`work queue: invalid backoff ${this.baseDelayMs}..${this.maxDelayMs} ms`);
    }
  }

  /** Queues `key` unless it is already queued; a key being processed is queued again on `done`. */
  add(key: string): void {
    if (this.shuttingDown || this.dirty.has(key)) return;
    this.dirty.add(key);
    if (this.processing.has(key)) return;
    this.queue.push(key);
    this.dispatch();
  }

  /**
   * Queues `key` after `delayMs`. While the key waits, a later call can only bring its deadline forward
   * (earliest wins), so a short requeue is never postponed by a long one.
   */
  addAfter(key: string, delayMs: number): void {
    if (this.shuttingDown) return;
    if (delayMs <= 0) {
      this.add(key);
      return;
    }
    const readyAt = this.clock.now() + delayMs;
    const existing = this.delayed.get(key);
    if (existing !== undefined) {
      if (existing.readyAt <= readyAt) return;
      existing.timer.cancel();
    }
    const timer = this.clock.schedule(() => {
      this.delayed.delete(key);
      this.add(key);
    }, delayMs);
    this.delayed.set(key, { readyAt, timer });
  }

  /**
   * Queues `key` after its next backoff delay (base · 2^n for the n-th consecutive failure, capped at the
   * maximum) and returns that delay. `afterMs`, when the server said how long to wait (Retry-After), is
   * the least delay: the backoff may be longer, never shorter than what the server asked for (itself
   * capped at the maximum).
   */
  addRateLimited(key: string, afterMs?: number): number {
    const n = this.failures.get(key) ?? 0;
    this.failures.set(key, n + 1);
    const asked = afterMs !== undefined && Number.isFinite(afterMs) && afterMs > 0 ? afterMs : 0;
    const delayMs = Math.min(Math.max(backoffMs(n + 1, this.baseDelayMs, this.maxDelayMs), asked), this.maxDelayMs);
    this.addAfter(key, delayMs);
    return delayMs;
  }

  /** Resets the backoff of `key` (call it after a successful reconcile). Does not dequeue the key. */
  forget(key: string): void {
    this.failures.delete(key);
  }

  /** How many times `key` was rate-limited since its last `forget`. */
  numRequeues(key: string): number {
    return this.failures.get(key) ?? 0;
  }

  /**
   * The next key to process; waits while the queue is empty. Resolves `undefined` once the queue is shut
   * down. The caller must call `done(key)` when finished with it.
   */
  get(): Promise<string | undefined> {
    if (this.shuttingDown) return Promise.resolve(undefined);
    const key = this.queue.shift();
    if (key !== undefined) return Promise.resolve(this.startProcessing(key));
    return new Promise((resolve) => this.waitingGetters.push(resolve));
  }

  /** Marks `key` as no longer processing; if it was added meanwhile, it is queued again now. */
  done(key: string): void {
    this.processing.delete(key);
    if (this.dirty.has(key) && !this.shuttingDown) {
      this.queue.push(key);
      this.dispatch();
    }
    if (this.shuttingDown && this.processing.size === 0) {
      for (const resolve of this.drainWaiters.splice(0)) resolve();
    }
  }

  /**
   * Forgets `key` entirely: no longer queued, delayed or rate-limited, and not queued again when a worker
   * holding it calls `done` (a replica that lost the key's share drops its work).
   */
  remove(key: string): void {
    this.dirty.delete(key);
    const at = this.queue.indexOf(key);
    if (at !== -1) this.queue.splice(at, 1);
    this.delayed.get(key)?.timer.cancel();
    this.delayed.delete(key);
    this.failures.delete(key);
  }

  /** Keys waiting to be handed out (not counting delayed or processing ones). */
  len(): number {
    return this.queue.length;
  }

  /** Keys handed out and not yet done. */
  inFlight(): number {
    return this.processing.size;
  }

  isShuttingDown(): boolean {
    return this.shuttingDown;
  }

  /** Stops the queue: adds are ignored, delayed keys are dropped, waiting and future `get()`s get `undefined`. */
  shutDown(): void {
    if (this.shuttingDown) return;
    this.shuttingDown = true;
    for (const { timer } of this.delayed.values()) timer.cancel();
    this.delayed.clear();
    this.queue.length = 0;
    this.dirty.clear();
    for (const resolve of this.waitingGetters.splice(0)) resolve(undefined);
  }

  /** Shuts down and resolves once every key handed out has been marked `done`. */
  shutDownWithDrain(): Promise<void> {
    this.shutDown();
    if (this.processing.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.drainWaiters.push(resolve));
  }

  private startProcessing(key: string): string {
    this.processing.add(key);
    this.dirty.delete(key);
    return key;
  }

  private dispatch(): void {
    while (this.waitingGetters.length > 0 && this.queue.length > 0) {
      const resolve = this.waitingGetters.shift();
      const key = this.queue.shift();
      if (resolve === undefined || key === undefined) break;
      resolve(this.startProcessing(key));
    }
  }
}
