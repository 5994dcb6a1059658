import type { Fence, FenceToken } from "../controller/fence.js";
import type { ClusterWriter, EventSink } from "./ports.js";

/** Told of every write the fence let through or refused, with the app's share (for the per-share write counter). */
export type FencedWriteObserver = (share: number | undefined, result: "ok" | "refused") => void;

/** Checks the fence and tells `observe` what it decided; throws NotOwnedError when it refused. */
function checked(fence: Fence, what: string, observe: FencedWriteObserver | undefined): void {
  let token: FenceToken;
  try {
    token = fence.check(what);
  } catch (error) {
    observe?.(fence.token()?.share, "refused");
    throw error;
  }
  observe?.(token.share, "ok");
}

/**
 * The writer with a fence in front (ADR 0016): each write first checks that this replica still holds the
 * app's share under the term its reconcile began in, and throws NotOwnedError otherwise. Reads go through.
 */
export function fencedWriter(writer: ClusterWriter, fence: Fence, passed?: FencedWriteObserver): ClusterWriter {
  const guard = (what: string): void => checked(fence, what, passed);
  return {
    apply: async (object) => {
      guard(`${object.kind} ${object.metadata.name ?? ""}: apply`);
      return await writer.apply(object);
    },
    create: async (object) => {
      guard(`${object.kind} ${object.metadata.name ?? ""}: create`);
      return await writer.create(object);
    },
    remove: async (ref) => {
      guard(`${ref.kind} ${ref.name}: delete`);
      return await writer.remove(ref);
    },
    deletePod: async (namespace, name, resourceVersion) => {
      guard(`Pod ${name}: delete`);
      return await writer.deletePod(namespace, name, resourceVersion);
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
      checked(fence, `Event ${event.reason}`, passed);
      return await sink.record(app, event);
    },
    tell: async (app, event, name) => {
      checked(fence, `Event ${event.reason}`, passed);
      return await sink.tell(app, event, name);
    },
  };
}
