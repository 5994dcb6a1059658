import type { Fence, FenceToken } from "../controller/fence.js";
import type { ClusterWriter, EventSink } from "./ports.js";

/** Told of every write the fence let through, with the share it was for (for the per-share write counter). */
export type FencedWriteObserver = (token: FenceToken) => void;

/**
 * The writer with a fence in front (ADR 0016): each write first checks that this replica still holds the
 * app's share under the term its reconcile began in, and throws NotOwnedError otherwise. Reads go through.
 */
export function fencedWriter(writer: ClusterWriter, fence: Fence, passed?: FencedWriteObserver): ClusterWriter {
  const guard = (what: string): void => passed?.(fence.check(what));
  return {
    apply: async (object) => {
      guard(`${object.kind} ${object.metadata.name ?? ""}: apply`);
      return await writer.apply(object);
    },
    remove: async (ref) => {
      guard(`${ref.kind} ${ref.name}: delete`);
      return await writer.remove(ref);
    },
    replaceStatus: async (app, status) => {
      guard("status");
      return await writer.replaceStatus(app, status);
    },
    removeAnnotations: async (app, keys) => {
      guard("annotations");
      return await writer.removeAnnotations(app, keys);
    },
    read: (ref) => writer.read(ref),
  };
}

/** The Event sink with the same fence: an Event about an app is a write for it too. */
export function fencedEvents(sink: EventSink, fence: Fence, passed?: FencedWriteObserver): EventSink {
  return {
    record: async (app, event) => {
      passed?.(fence.check(`Event ${event.reason}`));
      return await sink.record(app, event);
    },
    tell: async (app, event, name) => {
      passed?.(fence.check(`Event ${event.reason}`));
      return await sink.tell(app, event, name);
    },
  };
}
