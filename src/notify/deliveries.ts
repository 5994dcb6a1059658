import type { Logger } from "pino";
import type { Clock } from "../time/clock.js";
import type { CanaryApp, Notice } from "../api/types.js";
import { toError } from "../kube/errors.js";

/** Sends one notice of `app` to all its receivers; rejects when any did not take it (it is sent again later). */
export type NoticeSender = (app: CanaryApp, notice: Notice) => Promise<void>;

export interface DeliveriesOptions {
  send: NoticeSender;
  /** Called with the app's key when delivery got further (or gave up for now): the key is reconciled again. */
  requeue(key: string): void;
  /** How long after a failed delivery it is tried again. Default 30 s. */
  retryAfterMs?: number;
  clock: Clock;
  log: Logger;
}

interface Delivery {
  /** The highest sequence number delivered (this process). */
  delivered: number;
  inFlight: boolean;
  /** A retry is scheduled after a failure. */
  waiting: boolean;
}

/**
 * Notifications are delivered off the work queue, one app's in order, one at a time: a reconcile hands over
 * the app's outbox (`deliver`) and returns at once; each notice delivered moves `delivered(key)` on, which
 * the next reconcile writes to the status. A delivery that fails is tried again `retryAfterMs` later (the
 * sender retries with backoff within one attempt already).
 */
export class NotificationDeliveries {
  private readonly apps = new Map<string, Delivery>();

  constructor(private readonly options: DeliveriesOptions) {}

  /** The highest sequence number delivered for `key` by this process, if any. */
  delivered(key: string): number | undefined {
    return this.apps.get(key)?.delivered;
  }

  /** Starts delivering the app's pending notices, unless a delivery of its is under way. */
  deliver(key: string, app: CanaryApp): void {
    const box = app.status?.notifications;
    if (box === undefined) return;
    const state = this.apps.get(key) ?? { delivered: box.delivered, inFlight: false, waiting: false };
    state.delivered = Math.max(state.delivered, box.delivered);
    this.apps.set(key, state);
    const pending = box.pending.filter((n) => n.seq > state.delivered);
    if (pending.length === 0 || state.inFlight || state.waiting) return;
    state.inFlight = true;
    const log = this.options.log.child({ canaryapp: key });
    void this.run(key, structuredClone(app), pending, state, log);
  }

  /** Forgets the app (it is gone); a delivery under way ends unheard. */
  forget(key: string): void {
    this.apps.delete(key);
  }

  private async run(key: string, app: CanaryApp, pending: Notice[], state: Delivery, log: Logger): Promise<void> {
    try {
      for (const notice of pending) {
        await this.options.send(app, notice);
        state.delivered = Math.max(state.delivered, notice.seq);
        log.info({ seq: notice.seq, event: notice.event, key: notice.idempotencyKey }, "notification delivered");
      }
    } catch (error) {
      log.warn({ err: toError(error) }, "notification not delivered; trying again later");
      state.waiting = true;
      this.options.clock.schedule(() => {
        state.waiting = false;
        if (this.apps.get(key) === state) this.options.requeue(key);
      }, this.options.retryAfterMs ?? 30_000);
    } finally {
      state.inFlight = false;
    }
    if (this.apps.get(key) === state) this.options.requeue(key);
  }
}
