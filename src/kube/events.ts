import { hostname } from "node:os";
import type { CoreV1Event } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { systemClock, type Clock } from "../time/clock.js";
import { isConflict, isNotFound, toError } from "./errors.js";
import type { KubeRest } from "./rest.js";

/** The object an Event is about. */
export interface InvolvedObject {
  apiVersion?: string;
  kind?: string;
  metadata: { name?: string; namespace?: string; uid?: string; resourceVersion?: string };
}

export type EventType = "Normal" | "Warning";

/** The two Event writes the recorder makes; {@link eventClientFor} implements them. */
export interface EventClient {
  create(namespace: string, event: CoreV1Event): Promise<void>;
  /** Merge-patches an existing Event (count and lastTimestamp). */
  patch(namespace: string, name: string, patch: Record<string, unknown>): Promise<void>;
}

const EVENTS = { group: "", version: "v1", plural: "events" } as const;

export function eventClientFor(api: Pick<KubeRest, "create" | "mergePatch">): EventClient {
  return {
    async create(namespace, event) {
      await api.create({ ...EVENTS, namespace }, event);
    },
    async patch(namespace, name, patch) {
      await api.mergePatch({ ...EVENTS, namespace, name }, patch);
    },
  };
}

export const EVENT_SOURCE_COMPONENT = "canaryapp-controller";
const DEDUPE_WINDOW_MS = 10 * 60 * 1000;
const DEFAULT_CACHE_SIZE = 4096;
/** Longer messages are cut: Events are for people, and events.k8s.io rejects notes over 1 kB. */
const MAX_MESSAGE_LENGTH = 1024;

export interface EventRecorderOptions {
  client: EventClient;
  log: Logger;
  /** source.component and reportingComponent. Default "canaryapp-controller". */
  component?: string;
  /** reportingInstance and source.host. Default: the hostname. */
  instance?: string;
  clock?: Clock;
  /** How many distinct events are remembered for counting repeats. Default 4096. */
  cacheSize?: number;
}

interface Seen {
  name: string;
  namespace: string;
  count: number;
  lastMs: number;
}

/**
 * Writes core/v1 Events about objects, as client-go's recorder does: an event identical to one recorded
 * less than 10 minutes before (same object, type, reason and message) increments that Event's `count`
 * and `lastTimestamp` instead of adding another, so a condition repeated on every reconcile shows as one
 * line with a count. Remembered events are kept in a bounded LRU map.
 *
 * `record` never rejects: an Event is a courtesy to the user and must not fail a reconcile. Failures are
 * logged.
 */
export class EventRecorder {
  private readonly client: EventClient;
  private readonly log: Logger;
  private readonly component: string;
  private readonly instance: string;
  private readonly clock: Clock;
  private readonly cacheSize: number;
  private readonly seen = new Map<string, Seen>();
  /** Serialises records of the same event, so two concurrent repeats do not both create one. */
  private readonly inFlight = new Map<string, Promise<void>>();
  private sequence = 0n;

  constructor(options: EventRecorderOptions) {
    this.client = options.client;
    this.log = options.log;
    this.component = options.component ?? EVENT_SOURCE_COMPONENT;
    this.instance = options.instance ?? hostname();
    this.clock = options.clock ?? systemClock;
    this.cacheSize = options.cacheSize ?? DEFAULT_CACHE_SIZE;
  }

  /** Records an Event in the object's namespace. Resolves when written (or when writing failed and was logged). */
  record(obj: InvolvedObject, type: EventType, reason: string, message: string): Promise<void> {
    const text = message.length > MAX_MESSAGE_LENGTH ? `${message.slice(0, MAX_MESSAGE_LENGTH - 3)}...` : message;
    const key = [
      obj.apiVersion,
      obj.kind,
      obj.metadata.namespace,
      obj.metadata.name,
      obj.metadata.uid,
      type,
      reason,
      text,
    ].join("\u0000");
    const previous = this.inFlight.get(key) ?? Promise.resolve();
    const next = previous.then(() => this.write(key, obj, type, reason, text));
    this.inFlight.set(key, next);
    void next.then(() => {
      if (this.inFlight.get(key) === next) this.inFlight.delete(key);
    });
    return next;
  }

  /**
   * Creates the Event under `name` (a name every controller gives it, see status/transition-events.ts) unless one by that
   * name exists, without counting repeats. Resolves to whether it exists afterwards; never rejects.
   */
  async create(obj: InvolvedObject, type: EventType, reason: string, message: string, name: string): Promise<boolean> {
    const text = message.length > MAX_MESSAGE_LENGTH ? `${message.slice(0, MAX_MESSAGE_LENGTH - 3)}...` : message;
    const namespace = obj.metadata.namespace ?? "default";
    const event = this.newEvent(obj, namespace, type, reason, text, this.clock.now());
    try {
      await this.client.create(namespace, { ...event, metadata: { name, namespace } });
      return true;
    } catch (error) {
      // AlreadyExists: told before (by this controller or one killed after telling it).
      if (isConflict(error)) return true;
      const objectName = `${obj.kind ?? "object"} ${namespace}/${obj.metadata.name ?? ""}`;
      this.log.warn({ err: toError(error), object: objectName, reason, type }, "could not record event");
      return false;
    }
  }

  private async write(
    key: string,
    obj: InvolvedObject,
    type: EventType,
    reason: string,
    message: string,
  ): Promise<void> {
    const namespace = obj.metadata.namespace ?? "default";
    const objectName = `${obj.kind ?? "object"} ${namespace}/${obj.metadata.name ?? ""}`;
    const now = this.clock.now();
    const seen = this.seen.get(key);
    try {
      if (seen !== undefined && now - seen.lastMs < DEDUPE_WINDOW_MS) {
        try {
          await this.client.patch(seen.namespace, seen.name, {
            count: seen.count + 1,
            lastTimestamp: new Date(now).toISOString(),
          });
          this.remember(key, { ...seen, count: seen.count + 1, lastMs: now });
          return;
        } catch (error) {
          // The Event expired (the API server keeps them an hour) or was deleted: start a new one.
          if (!isNotFound(error)) throw error;
        }
      }
      const event = this.newEvent(obj, namespace, type, reason, message, now);
      await this.client.create(namespace, event);
      this.remember(key, { name: event.metadata.name ?? "", namespace, count: 1, lastMs: now });
    } catch (error) {
      this.log.warn({ err: toError(error), object: objectName, reason, type }, "could not record event");
    }
  }

  private newEvent(
    obj: InvolvedObject,
    namespace: string,
    type: EventType,
    reason: string,
    message: string,
    now: number,
  ): CoreV1Event {
    const time = new Date(now);
    // As client-go: <object name>.<unix nanoseconds in hex>; the sequence keeps names unique within a millisecond.
    const nanos = BigInt(now) * 1_000_000n + (this.sequence++ % 1_000_000n);
    return {
      metadata: { name: `${obj.metadata.name ?? "object"}.${nanos.toString(16)}`, namespace },
      involvedObject: {
        apiVersion: obj.apiVersion,
        kind: obj.kind,
        name: obj.metadata.name,
        namespace: obj.metadata.namespace,
        uid: obj.metadata.uid,
        resourceVersion: obj.metadata.resourceVersion,
      },
      type,
      reason,
      message,
      source: { component: this.component, host: this.instance },
      reportingComponent: this.component,
      reportingInstance: this.instance,
      firstTimestamp: time,
      lastTimestamp: time,
      count: 1,
    };
  }

  private remember(key: string, seen: Seen): void {
    // Map iteration order is insertion order: re-inserting moves the key to the young end.
    this.seen.delete(key);
    this.seen.set(key, seen);
    while (this.seen.size > this.cacheSize) {
      const oldest = this.seen.keys().next().value;
      if (oldest === undefined) break;
      this.seen.delete(oldest);
    }
  }
}
