/**
 * The Events of a status transition, recorded with it (pure; ADR 0001). The status write that records a
 * transition also records the Events it calls for as `status.lastEvents.pending`; once they are known to
 * exist the next status write drops `pending`. A controller killed in between leaves them pending, and the
 * next reconcile tells them again. Each Event is named after (transition time, number, index, app uid), so telling it
 * twice is a 409 the recorder ignores: at least once, never twice.
 */
import { hash as digest } from "node:crypto";
import type { CanaryApp, CanaryAppStatus, TransitionEvents } from "../api/types.js";
import type { PlannedEvent } from "../rollout/types.js";

/**
 * A transition's Events are told again only this long after it: the API server keeps Events an hour, and
 * an Event of a decision taken long before tells nobody anything.
 */
export const REPLAY_SECONDS = 600;
/** Events kept per transition, and the length of each message kept (events.k8s.io refuses notes over 1 kB). */
const MAX_EVENTS = 10;
const MAX_MESSAGE_LENGTH = 1024;

/** `next` recording `events` as the Events of a new transition (numbered after the previous one), if any. */
export function withTransition(
  previous: CanaryAppStatus,
  next: CanaryAppStatus,
  events: readonly PlannedEvent[],
  at: string,
): CanaryAppStatus {
  if (events.length === 0) return next;
  const seq = (previous.lastEvents?.seq ?? 0) + 1;
  const pending = events.slice(0, MAX_EVENTS).map(({ type, reason, message }) => ({
    type,
    reason,
    message: message.length > MAX_MESSAGE_LENGTH ? `${message.slice(0, MAX_MESSAGE_LENGTH - 3)}...` : message,
  }));
  return { ...next, lastEvents: { seq, at, pending } };
}

/** The recorded Events not yet known to exist, with their names; [] when none or the transition is too old. */
export function toTell(app: CanaryApp, now: Date): { name: string; event: PlannedEvent }[] {
  const last = app.status?.lastEvents;
  if (last?.pending === undefined || last.pending.length === 0 || stale(last, now)) return [];
  return last.pending.map((event, index) => ({ name: eventName(app, last.seq, index, last.at), event }));
}

/** Whether the transition is too old for its Events to be told again. */
export function stale(last: TransitionEvents, now: Date): boolean {
  const at = Date.parse(last.at);
  return Number.isNaN(at) || now.getTime() - at > REPLAY_SECONDS * 1000;
}

/** `status` with its transition's Events marked as told (only the number and time kept). */
export function told(status: CanaryAppStatus): CanaryAppStatus {
  const last = status.lastEvents;
  if (last?.pending === undefined) return status;
  return { ...status, lastEvents: { seq: last.seq, at: last.at } };
}

/**
 * The name of a transition's index-th Event: `<app name>.<24 hex>`, the first 16 the transition's time in
 * nanoseconds (as client-go names Events, so a listing by name is in time order; the transition's number
 * and the index in the last digits keep its Events in the order they were planned), the last 8 a hash of the
 * app's uid. Every controller reads the same time from status, so every controller names it alike.
 */
export function eventName(app: CanaryApp, seq: number, index: number, at: string): string {
  const name = app.metadata.name ?? "object";
  const identity = app.metadata.uid ?? `${app.metadata.namespace ?? ""}/${name}`;
  const ms = Date.parse(at);
  const nanos = BigInt(Number.isNaN(ms) ? 0 : ms) * 1_000_000n + BigInt((seq % 1000) * 1000 + index);
  const time = nanos.toString(16).padStart(16, "0");
  const hash = digest("sha256", identity, "hex").slice(0, 8);
  return `${name.slice(0, 253 - 25)}.${time}${hash}`;
}
