import type { KubernetesObject } from "@kubernetes/client-node";
import { FIELD_MANAGER } from "../api/types.js";
import { isConflict, isNotFound, toError } from "./errors.js";
import { resourceOf } from "./kinds.js";
import { mergePatchFrom } from "./merge-patch.js";
import type { KubeRest } from "./rest.js";

/** Names one object of any kind. */
export interface ObjectRef {
  apiVersion: string;
  kind: string;
  namespace?: string;
  name: string;
}

/** Names one namespaced custom object by its resource (plural), as the custom objects API wants it. */
export interface CustomObjectRef {
  group: string;
  version: string;
  plural: string;
  namespace: string;
  name: string;
}

/** The calls these helpers make. */
export type ObjectClient = Pick<KubeRest, "apply" | "delete" | "mergePatch">;

/** The call {@link patchStatus} makes. */
export type StatusClient = Pick<KubeRest, "mergePatch">;

function describeRef(ref: { kind: string; namespace?: string; name: string }): string {
  return `${ref.kind} ${ref.namespace !== undefined ? `${ref.namespace}/` : ""}${ref.name}`;
}

function refOf(obj: KubernetesObject): { kind: string; namespace?: string; name: string } {
  return { kind: obj.kind ?? "object", namespace: obj.metadata?.namespace, name: obj.metadata?.name ?? "(unnamed)" };
}

/**
 * Server-side applies `obj` under {@link FIELD_MANAGER} with force, so this controller owns every field it
 * sets and takes fields back from anyone who changed them. `obj` should hold only the fields the controller
 * means to own (no status, no resourceVersion unless a precondition is wanted). Returns the object as
 * stored. Errors name the object.
 */
export async function serverSideApply<T extends KubernetesObject>(
  api: ObjectClient,
  obj: T,
  options: { dryRun?: boolean } = {},
): Promise<T> {
  try {
    const { group, version, plural } = resourceOf(obj.apiVersion ?? "", obj.kind ?? "");
    const ref = { group, version, plural, namespace: obj.metadata?.namespace, name: obj.metadata?.name ?? "" };
    return await api.apply<T>(ref, obj, {
      fieldManager: FIELD_MANAGER,
      force: true,
      ...(options.dryRun === true ? { dryRun: "All" as const } : {}),
    });
  } catch (error) {
    throw toError(error, `${describeRef(refOf(obj))}: apply`);
  }
}

/**
 * A resourceVersion no stored object has: etcd revisions are positive 64-bit integers that grow from 1 by one
 * per write, so this one is never reached. An apply carrying it creates the object when its name is free
 * (a create ignores the resourceVersion it is given) and is refused with 409 Conflict when an object of that
 * name exists (an update must name the stored resourceVersion).
 */
export const NEVER_STORED_RESOURCE_VERSION = "9223372036854775807";

/**
 * Server-side applies `obj` as {@link serverSideApply} does, but only to create it: resolves to the object
 * created, or to undefined, having changed nothing, when an object of that name already exists (whoever owns
 * it). Unlike a POST, the fields are recorded under the controller's Apply manager, so later applies prune
 * what they stop setting. One request where a read and an apply were two (ADR 0018).
 */
export async function serverSideCreate<T extends KubernetesObject>(api: ObjectClient, obj: T): Promise<T | undefined> {
  const metadata = { ...obj.metadata, resourceVersion: NEVER_STORED_RESOURCE_VERSION };
  try {
    return await serverSideApply(api, { ...obj, metadata });
  } catch (error) {
    if (isConflict(error)) return undefined;
    throw error;
  }
}

/**
 * Deletes the object with background propagation (dependents are collected after it). Returns false if it
 * did not exist: a missing object is the wanted state, not an error.
 */
export async function deleteIfExists(api: ObjectClient, ref: ObjectRef): Promise<boolean> {
  try {
    const resource = resourceOf(ref.apiVersion, ref.kind);
    await api.delete({ ...resource, namespace: ref.namespace, name: ref.name }, { propagationPolicy: "Background" });
    return true;
  } catch (error) {
    if (isNotFound(error)) return false;
    throw toError(error, `${describeRef(ref)}: delete`);
  }
}

/**
 * Deletes a pod only while it is at `resourceVersion`: false when it is gone (404) or changed (409), the
 * server then having deleted nothing.
 */
export async function deletePodAt(
  api: ObjectClient,
  namespace: string,
  name: string,
  resourceVersion: string,
): Promise<boolean> {
  try {
    await api.delete({ group: "", version: "v1", plural: "pods", namespace, name }, {}, { resourceVersion });
    return true;
  } catch (error) {
    if (isNotFound(error) || isConflict(error)) return false;
    throw toError(error, `Pod ${namespace}/${name}: delete`);
  }
}

export interface PatchStatusOptions {
  /**
   * Precondition: the write fails with 409 Conflict unless the object still has this resourceVersion, so a
   * status computed from a stale read never overwrites a newer one.
   */
  resourceVersion?: string;
  /**
   * The status as it was read. Keys it has and `status` lacks are sent as `null` and so removed; without it
   * the patch only adds and changes keys.
   */
  previous?: unknown;
}

/**
 * Writes a custom object's `/status` with a JSON merge patch. Pass the complete next status with
 * `previous` (and usually `resourceVersion`) to make the stored status equal to it.
 */
export async function patchStatus(
  api: StatusClient,
  ref: CustomObjectRef,
  status: object,
  options: PatchStatusOptions = {},
): Promise<unknown> {
  const body: Record<string, unknown> = {
    status: options.previous !== undefined ? mergePatchFrom(options.previous, status) : status,
  };
  if (options.resourceVersion !== undefined) body.metadata = { resourceVersion: options.resourceVersion };
  try {
    return await api.mergePatch<unknown>(
      {
        group: ref.group,
        version: ref.version,
        plural: ref.plural,
        namespace: ref.namespace,
        name: ref.name,
        subresource: "status",
      },
      body,
    );
  } catch (error) {
    throw toError(error, `${ref.plural}.${ref.group} ${ref.namespace}/${ref.name}: status patch`);
  }
}

/**
 * Sets or removes metadata annotations with a JSON merge patch: a string sets the annotation, `null`
 * removes it. With `resourceVersion` the patch is conditional (409 Conflict if the object changed).
 */
export async function patchMetadataAnnotations(
  api: ObjectClient,
  ref: ObjectRef,
  annotations: Record<string, string | null>,
  options: { resourceVersion?: string } = {},
): Promise<string | undefined> {
  const metadata: Record<string, unknown> = { name: ref.name, namespace: ref.namespace, annotations };
  if (options.resourceVersion !== undefined) metadata.resourceVersion = options.resourceVersion;
  try {
    const resource = resourceOf(ref.apiVersion, ref.kind);
    const patched = await api.mergePatch<KubernetesObject>(
      { ...resource, namespace: ref.namespace, name: ref.name },
      { apiVersion: ref.apiVersion, kind: ref.kind, metadata },
      { fieldManager: FIELD_MANAGER },
    );
    const resourceVersion: unknown = patched.metadata?.resourceVersion;
    return typeof resourceVersion === "string" ? resourceVersion : undefined;
  } catch (error) {
    throw toError(error, `${describeRef(ref)}: annotate`);
  }
}
