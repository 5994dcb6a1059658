/**
 * The reconciler's ports (canary/ports.ts) on a real API server: the writes it makes, the Events it
 * records and the Secrets the metrics provider reads. Every write is reported to `wrote` first.
 */
import type { KubernetesObject } from "@kubernetes/client-node";
import type { CanaryApp, CanaryAppStatus } from "../api/types.js";
import { API_VERSION, KIND } from "../api/types.js";
import type { ObjectRef } from "./apply.js";
import {
  deleteIfExists,
  deletePodAt,
  patchMetadataAnnotations,
  patchStatus,
  serverSideApply,
  serverSideCreate,
} from "./apply.js";
import { isNotFound, toError } from "./errors.js";
import type { EventRecorder, EventType } from "./events.js";
import { CANARY_APPS, resourceOf } from "./kinds.js";
import type { KubeRest } from "./rest.js";

/** Told of every write the controller makes (for its metrics). */
export type WriteObserver = (kind: string, verb: "apply" | "delete" | "status" | "annotate" | "event") => void;

/** Told how long each request to the API server took (for its metrics). */
export type RequestObserver = (kind: string, verb: string, seconds: number, ok: boolean) => void;

/** Runs one request, telling `took` how long it took and whether it succeeded. */
async function timed<T>(
  took: RequestObserver | undefined,
  kind: string,
  verb: string,
  request: () => Promise<T>,
): Promise<T> {
  const start = performance.now();
  let ok = false;
  try {
    const result = await request();
    ok = true;
    return result;
  } finally {
    took?.(kind, verb, (performance.now() - start) / 1000, ok);
  }
}

/** Writes children and the CanaryApp's status and annotations (see ClusterWriter). */
export function clusterWriter(api: KubeRest, wrote: WriteObserver, took?: RequestObserver) {
  return {
    async apply(object: KubernetesObject & { kind: string }): Promise<void> {
      wrote(object.kind, "apply");
      await timed(took, object.kind, "apply", () => serverSideApply(api, object));
    },
    async create(object: KubernetesObject & { kind: string }): Promise<boolean> {
      wrote(object.kind, "apply");
      const created = await timed(took, object.kind, "apply", () => serverSideCreate(api, object));
      return created !== undefined;
    },
    async remove(ref: ObjectRef): Promise<void> {
      wrote(ref.kind, "delete");
      await timed(took, ref.kind, "delete", () => deleteIfExists(api, ref));
    },
    async deletePod(namespace: string, name: string, resourceVersion: string): Promise<boolean> {
      wrote("Pod", "delete");
      return await timed(took, "Pod", "delete", () => deletePodAt(api, namespace, name, resourceVersion));
    },
    async replaceStatus(app: CanaryApp, status: CanaryAppStatus): Promise<string | undefined> {
      wrote(KIND, "status");
      const { name = "", namespace = "", resourceVersion } = app.metadata;
      const updated = await timed(took, KIND, "status", () =>
        patchStatus(
          api,
          { group: CANARY_APPS.group, version: CANARY_APPS.version, plural: CANARY_APPS.plural, namespace, name },
          status,
          { previous: app.status ?? {}, ...(resourceVersion ? { resourceVersion } : {}) },
        ),
      );
      return resourceVersionOf(updated);
    },
    async read(ref: ObjectRef): Promise<KubernetesObject | undefined> {
      try {
        return await timed(took, ref.kind, "read", () =>
          api.get<KubernetesObject>({
            ...resourceOf(ref.apiVersion, ref.kind),
            namespace: ref.namespace,
            name: ref.name,
          }),
        );
      } catch (error) {
        if (isNotFound(error)) return undefined;
        throw toError(error, `${ref.kind} ${ref.namespace ?? ""}/${ref.name}: read`);
      }
    },
    async removeAnnotations(app: CanaryApp, keys: string[]): Promise<string | undefined> {
      wrote(KIND, "annotate");
      const { name = "", namespace } = app.metadata;
      return await timed(took, KIND, "annotate", () =>
        patchMetadataAnnotations(
          api,
          { apiVersion: API_VERSION, kind: KIND, name, namespace },
          Object.fromEntries(keys.map((k) => [k, null])),
        ),
      );
    },
  };
}

/** The resourceVersion of an object the API server returned, if it has one. */
function resourceVersionOf(object: unknown): string | undefined {
  if (typeof object !== "object" || object === null || !("metadata" in object)) return undefined;
  const { metadata } = object;
  if (typeof metadata !== "object" || metadata === null || !("resourceVersion" in metadata)) return undefined;
  return typeof metadata.resourceVersion === "string" ? metadata.resourceVersion : undefined;
}

/** Records Events about CanaryApps (see EventSink). */
export function eventSink(recorder: EventRecorder, wrote: WriteObserver) {
  return {
    record(app: CanaryApp, event: { type: EventType; reason: string; message: string }): Promise<void> {
      wrote("Event", "event");
      return recorder.record(
        { apiVersion: API_VERSION, kind: KIND, metadata: app.metadata },
        event.type,
        event.reason,
        event.message,
      );
    },
    tell(app: CanaryApp, event: { type: EventType; reason: string; message: string }, name: string): Promise<boolean> {
      wrote("Event", "event");
      return recorder.create(
        { apiVersion: API_VERSION, kind: KIND, metadata: app.metadata },
        event.type,
        event.reason,
        event.message,
        name,
      );
    },
  };
}
