import type { Logger } from "pino";
import { isConflict, retryAfterMs, toError } from "../kube/errors.js";
import { sleep, systemClock, type Clock } from "../time/clock.js";
import type { Informer } from "./informer.js";
import { WorkQueue, type WorkQueueOptions } from "./workqueue.js";

/** What a reconcile asks of the controller when it succeeds. */
export interface ReconcileResult {
  /** Reconcile the key again after this long even if nothing changes (a step or deadline is due). */
  requeueAfterMs?: number;
}

/** Reconciles one key (`namespace/name`). Throwing means "retry with backoff", unless it is a TerminalError. */
export type Reconcile = (key: string) => Promise<ReconcileResult | void>;

/** How one reconcile ended, for metrics. */
export type ReconcileOutcome = "success" | "requeue" | "error" | "terminal";

/** Observes reconciles (metrics). Hooks must not throw; if they do, the error is logged and ignored. */
export interface ControllerHooks {
  reconciled?(info: { key: string; durationMs: number; outcome: ReconcileOutcome }): void;
}

/**
 * Thrown by a reconcile for a failure that retrying cannot fix: the key is not requeued (until an event
 * adds it again). controller-runtime's `TerminalError`.
 */
export class TerminalError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "TerminalError";
  }
}

export interface ControllerOptions {
  /** Names the controller in logs. */
  name: string;
  reconcile: Reconcile;
  /** Keys reconciled in parallel. Default 2. */
  workers?: number;
  queue?: Omit<WorkQueueOptions, "clock">;
  log: Logger;
  hooks?: ControllerHooks;
  clock?: Clock;
  /**
   * How often `run` checks whether the caches have synced, for informers that cannot tell (no `onSynced`);
   * the others wake it as they sync. Default 100 ms.
   */
  syncPollMs?: number;
  /** A reconcile running longer than this makes the controller unhealthy (a worker is stuck). Default 2 min. */
  stuckAfterMs?: number;
}

/** Liveness (`/healthz`): whether the controller can still do its job, and if not, why. */
export interface Health {
  healthy: boolean;
  reason?: string;
}

export const DEFAULT_STUCK_AFTER_MS = 120_000;
/** The longest a worker reconciles without letting the event loop turn (real time, not the injected clock). */
export const WORK_SLICE_MS = 20;

/**
 * A generic controller in the manner of client-go's: informers feed keys into a rate-limited work queue,
 * N workers reconcile keys, errors are retried with per-key backoff, and no key is ever reconciled by two
 * workers at once. It knows nothing of what it reconciles.
 *
 *   const c = new Controller({ name, reconcile, log });
 *   c.watch(apps, objectKey).watch(deployments, keyFromLabel(LABELS.app));
 *   await c.run(signal); // resolves after stop (or abort) has drained in-flight reconciles
 */
export class Controller {
  readonly queue: WorkQueue;
  private readonly informers: Informer<unknown>[] = [];
  private readonly workers: number;
  private readonly log: Logger;
  private readonly clock: Clock;
  private readonly syncPollMs: number;
  private running = false;
  private synced = false;
  private stopping = false;
  private workersDone: Promise<void> = Promise.resolve();
  private stopped: Promise<void> | undefined;
  private abandoned = false;
  /** Reconciles in flight, by key, with when each began. */
  private readonly inFlightSince = new Map<string, number>();
  /** Aborted to end `run`'s wait for the caches early: an informer synced, or the controller is stopping. */
  private syncWait: AbortController | undefined;
  /** When the caches synced (clock time); undefined before. */
  private syncedAt: number | undefined;
  /** The start-up milestones still to log once: the first reconcile, and the queue's first running empty. */
  private firstReconcileLogged = false;
  private caughtUpLogged = false;
  private reconcilesSinceSync = 0;

  constructor(private readonly options: ControllerOptions) {
    this.workers = options.workers ?? 2;
    if (!Number.isInteger(this.workers) || this.workers < 1) {
      throw new Error(`controller ${options.name}: workers must be a positive integer, got ${this.workers}`);
    }
    this.clock = options.clock ?? systemClock;
    this.syncPollMs = options.syncPollMs ?? 100;
    this.log = options.log.child({ controller: options.name });
    this.queue = new WorkQueue({ ...options.queue, clock: this.clock });
  }

  /**
   * Enqueues `keyOf(obj)` on every add, update and delete the informer sees (for an update, also the key of
   * the old object when it differs, e.g. when a label moved the object to another parent). `keyOf`
   * returning undefined ignores the object. The informer is started, awaited and stopped by `run`/`stop`.
   */
  watch<T>(informer: Informer<T>, keyOf: (obj: T) => string | undefined): this {
    const enqueue = (obj: T): void => {
      const key = keyOf(obj);
      if (key !== undefined) this.queue.add(key);
    };
    informer.onAdd(enqueue);
    informer.onUpdate((obj, old) => {
      enqueue(obj);
      if (keyOf(old) !== keyOf(obj)) enqueue(old);
    });
    informer.onDelete(enqueue);
    return this.addCache(informer);
  }

  /** Registers an informer the reconcile reads without reacting to its events (started and synced by `run`). */
  addCache<T>(informer: Informer<T>): this {
    if (this.running) throw new Error(`controller ${this.options.name}: informers must be added before run()`);
    informer.onSynced?.(() => this.syncWait?.abort());
    if (!this.informers.includes(informer)) this.informers.push(informer);
    return this;
  }

  /**
   * Starts the informers, waits until all have synced (no reconcile runs on a partial cache), then runs
   * the workers. Resolves once stopped, by `stop()` or by `signal` aborting.
   */
  async run(signal?: AbortSignal): Promise<void> {
    if (this.running) throw new Error(`controller ${this.options.name}: already running`);
    this.running = true;
    // Stopped before it ran: start nothing that stop() would not stop again.
    if (this.stopping) return;
    const onAbort = (): void => void this.stop();
    signal?.addEventListener("abort", onAbort, { once: true });
    if (signal?.aborted === true) onAbort();
    try {
      const waitingSince = this.clock.now();
      this.startCaches();
      this.log.info({ informers: this.informers.length }, "waiting for caches to sync");
      while (!this.stopping && !this.cachesSynced()) {
        this.syncWait = new AbortController();
        await sleep(this.clock, this.syncPollMs, this.syncWait.signal);
      }
      this.syncWait = undefined;
      if (!this.stopping) {
        this.synced = true;
        this.syncedAt = this.clock.now();
        this.log.info({ workers: this.workers, ms: this.syncedAt - waitingSince }, "caches synced; starting workers");
        this.workersDone = Promise.all(Array.from({ length: this.workers }, () => this.worker())).then(() => undefined);
        await this.workersDone;
      }
      await this.stop();
    } finally {
      signal?.removeEventListener("abort", onAbort);
    }
  }

  /**
   * Stops taking work, waits for in-flight reconciles to finish, then stops the informers. Idempotent;
   * resolves when done.
   */
  stop(): Promise<void> {
    this.stopped ??= (async () => {
      this.stopping = true;
      this.syncWait?.abort();
      this.log.info({ inFlight: this.queue.inFlight() }, "stopping; draining in-flight reconciles");
      await this.queue.shutDownWithDrain();
      await this.workersDone;
      await Promise.all(this.informers.map((i) => i.stop()));
      this.log.info("stopped");
    })();
    return this.stopped;
  }

  /**
   * Starts the informers without running workers, so that a standby's caches are warm (and /readyz
   * can say so) before it leads. Idempotent; `run` starts them too.
   */
  startCaches(): void {
    for (const informer of this.informers) informer.start();
  }

  /** Whether every informer has loaded its first list. */
  cachesSynced(): boolean {
    return this.informers.every((i) => i.hasSynced());
  }

  /**
   * Stops at once, without waiting for in-flight reconciles (the lease was lost: another replica may be
   * acting). Reconciles still running from then on make the controller unhealthy.
   */
  abandon(): Promise<void> {
    this.abandoned = true;
    return this.stop();
  }

  /**
   * Liveness: unhealthy when a reconcile has run longer than `stuckAfterMs`, when a cache's list/watch
   * has stopped recovering, or when work still runs after `abandon`.
   */
  health(): Health {
    const now = this.clock.now();
    if (this.abandoned && this.inFlightSince.size > 0) {
      return {
        healthy: false,
        reason: `the lease was lost but ${this.inFlightSince.size} reconcile(s) still run (${[...this.inFlightSince.keys()].join(", ")})`,
      };
    }
    const bound = this.options.stuckAfterMs ?? DEFAULT_STUCK_AFTER_MS;
    for (const [key, since] of this.inFlightSince) {
      if (now - since > bound) {
        return {
          healthy: false,
          reason: `a worker is stuck: the reconcile of ${key} has run for ${Math.round((now - since) / 1000)}s (bound ${bound / 1000}s)`,
        };
      }
    }
    if (this.running && !this.stopping) {
      for (const informer of this.informers) {
        const stalled = informer.stalled?.();
        if (stalled !== undefined)
          return { healthy: false, reason: `a cache stopped following the server: ${stalled}` };
      }
    }
    return { healthy: true };
  }

  /** True while running with every cache synced: what /readyz reports. */
  ready(): boolean {
    return this.synced && !this.stopping;
  }

  /** Keys waiting to be reconciled (for the queue depth gauge). */
  queueDepth(): number {
    return this.queue.len();
  }

  private async worker(): Promise<void> {
    let turnAt = performance.now();
    for (;;) {
      const key = await this.queue.get();
      if (key === undefined) return;
      await this.process(key);
      // A reconcile with nothing to write (a restart over thousands of settled apps) resolves in microtasks
      // alone: back to back, they would keep the event loop from probes, watch events and lease renewals
      // until the queue is empty. So a worker lets the loop turn after each slice of work.
      if (performance.now() - turnAt >= WORK_SLICE_MS) {
        await new Promise<void>((resolve) => setImmediate(resolve));
        turnAt = performance.now();
      }
    }
  }

  /**
   * Logs, once each, how long after the caches synced the first reconcile ended and the queue first ran empty
   * (every key queued by the initial lists reconciled once): how soon a restarted controller acts, and when it
   * has caught up. Called as the queue is told a key is done, so that the count and the queue's state move
   * together however the workers' reconciles interleave.
   */
  private logStartUp(key: string): void {
    if (this.caughtUpLogged || this.syncedAt === undefined) return;
    this.reconcilesSinceSync++;
    const ms = this.clock.now() - this.syncedAt;
    if (!this.firstReconcileLogged) {
      this.firstReconcileLogged = true;
      this.log.info({ key, ms }, "first reconcile done");
    }
    if (this.queue.len() === 0 && this.queue.inFlight() === 0) {
      this.caughtUpLogged = true;
      this.log.info({ reconciles: this.reconcilesSinceSync, ms }, "caught up: the queue ran empty");
    }
  }

  private async process(key: string): Promise<void> {
    const started = this.clock.now();
    this.inFlightSince.set(key, started);
    let outcome: ReconcileOutcome;
    try {
      const result = await this.options.reconcile(key);
      this.queue.forget(key);
      const after = result?.requeueAfterMs;
      if (after !== undefined && Number.isFinite(after) && after >= 0) {
        this.queue.addAfter(key, after);
        outcome = "requeue";
      } else {
        outcome = "success";
      }
    } catch (thrown) {
      const err = toError(thrown);
      if (err instanceof TerminalError) {
        this.queue.forget(key);
        this.log.error({ key, err }, "reconcile failed; not retrying");
        outcome = "terminal";
      } else {
        // Throttled (429 from priority and fairness): the server said when to come back; sooner only queues again.
        const backoffMs = this.queue.addRateLimited(key, retryAfterMs(err));
        const fields = { key, err, requeues: this.queue.numRequeues(key), backoffMs };
        // A conflict only means the cache was behind a write; the retry reads the newer state.
        if (isConflict(err) || isConflict(err.cause)) this.log.info(fields, "reconcile hit a conflict; retrying");
        else this.log.warn(fields, "reconcile failed; retrying");
        outcome = "error";
      }
    } finally {
      this.inFlightSince.delete(key);
      this.queue.done(key);
      this.logStartUp(key);
    }
    try {
      this.options.hooks?.reconciled?.({ key, durationMs: this.clock.now() - started, outcome });
    } catch (error) {
      this.log.error({ err: toError(error) }, "controller hook threw");
    }
  }
}
