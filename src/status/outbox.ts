/**
 * The notifications' outbox, derived from status transitions (pure). A reconcile adds the notices its plan
 * calls for to the status it persists, before anything is sent: what the status records will be said even
 * if the controller dies right after. Delivery (deliveries.ts) runs off the work queue and reports how far
 * it got; the next status drops what was delivered. A notice may thus be delivered twice (sent, then the
 * controller killed before the status said so), never lost; its idempotency key lets receivers drop repeats.
 */
import type { CanaryApp, CanaryAppStatus, FailedImage, Notice, NotificationOutbox } from "../api/types.js";
import type { PlannedEvent } from "../rollout/types.js";

/** Notices kept at most; the oldest go first when a receiver stays away this long. */
export const OUTBOX_MAX = 20;

/** The events of a plan that are worth a notification; everything else is only a Kubernetes Event. */
const NOTIFIED = new Set(["TestStarted", "Promoted", "RolledBack", "FailedImage", "PromotionSlow"]);

/** A failure the reconciler (not the planner) found: a child the API server rejected, or one not ours. */
export interface ReconcileFailure {
  reason: string;
  message: string;
}

function notice(
  base: Pick<Notice, "seq" | "idempotencyKey" | "time">,
  fields: Omit<Notice, "seq" | "idempotencyKey" | "time">,
): Notice {
  return { ...base, ...fields };
}

function failureFields(failed: FailedImage | undefined): Pick<Notice, "metric" | "value" | "query"> {
  return {
    ...(failed?.metric !== undefined ? { metric: failed.metric } : {}),
    ...(failed?.value !== undefined ? { value: failed.value } : {}),
    ...(failed?.query !== undefined ? { query: failed.query } : {}),
  };
}

/** What one planned event says as a notice (without its number), or undefined when it is not notified. */
function fromEvent(
  app: CanaryApp,
  previous: CanaryAppStatus,
  next: CanaryAppStatus,
  event: PlannedEvent,
): Omit<Notice, "seq" | "idempotencyKey" | "time"> | undefined {
  if (!NOTIFIED.has(event.reason)) return undefined;
  const primaryImage = next.primaryImage;
  const primary = primaryImage !== undefined ? { primaryImage } : {};
  switch (event.reason) {
    case "TestStarted":
      return { event: "TestStarted", image: next.canary?.image ?? app.spec.image, ...primary, message: event.message };
    case "Promoted":
      return { event: "Promoted", image: primaryImage ?? app.spec.image, ...primary, message: event.message };
    case "RolledBack": {
      const ended = previous.canary;
      const image = ended?.image ?? app.spec.image;
      const failed = next.failedImages?.find((f) => f.image === image);
      const outcome = ended?.outcome;
      return {
        event: "RolledBack",
        image,
        ...primary,
        reason: outcome?.reason ?? failed?.reason ?? "RolledBack",
        message: outcome?.message ?? event.message,
        ...failureFields(failed),
      };
    }
    case "FailedImage": {
      const failed = next.failedImages?.find((f) => f.image === app.spec.image);
      return {
        event: "FailedImageSkipped",
        image: app.spec.image,
        ...primary,
        reason: failed?.reason ?? "FailedImage",
        message: event.message,
        ...failureFields(failed),
      };
    }
    default:
      return {
        event: "Failure",
        ...(next.canary?.image !== undefined ? { image: next.canary.image } : {}),
        ...primary,
        reason: event.reason,
        message: event.message,
      };
  }
}

/**
 * `next` with the outbox brought up to date: the notices called for by `events` (and by `failure`) added
 * with the next numbers, those up to `delivered` removed. `at` is the plan's time.
 */
export function withNotices(
  app: CanaryApp,
  previous: CanaryAppStatus,
  next: CanaryAppStatus,
  input: { events: readonly PlannedEvent[]; failure?: ReconcileFailure; delivered: number | undefined; at: string },
): CanaryAppStatus {
  const box: NotificationOutbox = structuredClone(next.notifications ?? { seq: 0, delivered: 0, pending: [] });
  const uid = app.metadata.uid ?? `${app.metadata.namespace ?? ""}/${app.metadata.name ?? ""}`;
  const add = (fields: Omit<Notice, "seq" | "idempotencyKey" | "time">): void => {
    box.seq += 1;
    box.pending.push(notice({ seq: box.seq, idempotencyKey: `${uid}/${box.seq}`, time: input.at }, fields));
  };
  for (const event of input.events) {
    const fields = fromEvent(app, previous, next, event);
    if (fields !== undefined) add(fields);
  }
  if (input.failure !== undefined) {
    add({
      event: "Failure",
      ...(next.canary?.image !== undefined ? { image: next.canary.image } : {}),
      ...(next.primaryImage !== undefined ? { primaryImage: next.primaryImage } : {}),
      reason: input.failure.reason,
      message: input.failure.message,
    });
  }
  box.delivered = Math.max(box.delivered, input.delivered ?? 0);
  box.pending = box.pending.filter((n) => n.seq > box.delivered).slice(-OUTBOX_MAX);
  if (box.seq === 0 && next.notifications === undefined) return next;
  return { ...next, notifications: box };
}
