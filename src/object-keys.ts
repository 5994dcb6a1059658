/**
 * Work queue keys are `namespace/name` of the object to reconcile. These helpers map watched objects to
 * the key of the object they belong to, for `Controller.watch`. Whatever is kept or told per app (the posts'
 * rate limit, the apps that asked about a Service) goes by the same key; this file imports nothing, so any
 * folder may use it.
 */

/** An owner reference, as in metadata.ownerReferences. */
export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  controller?: boolean;
}

/** The metadata the key functions read. */
export interface KeyedObject {
  metadata?: {
    name?: string;
    namespace?: string;
    labels?: Record<string, string>;
    ownerReferences?: OwnerReference[];
  };
}

/** `namespace/name` of the object itself (cluster-scoped objects: `/name` is avoided, just `name`). */
export function objectKey(obj: KeyedObject): string | undefined {
  const name = obj.metadata?.name;
  if (name === undefined || name === "") return undefined;
  const namespace = obj.metadata?.namespace;
  return namespace === undefined || namespace === "" ? name : `${namespace}/${name}`;
}

/** Splits `namespace/name`; a key without a slash is a cluster-scoped name (namespace ""). */
export function splitKey(key: string): { namespace: string; name: string } {
  const slash = key.indexOf("/");
  return slash < 0 ? { namespace: "", name: key } : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

/**
 * Keys a child by a label naming its parent in the same namespace, e.g. `keyFromLabel(LABELS.app)` maps a
 * Deployment labelled `canaryapp.io/app: web` in `shop` to `shop/web`. Objects without the label map to
 * nothing.
 */
export function keyFromLabel(label: string): (obj: KeyedObject) => string | undefined {
  return (obj) => {
    const parent = obj.metadata?.labels?.[label];
    const namespace = obj.metadata?.namespace;
    if (parent === undefined || parent === "" || namespace === undefined) return undefined;
    return `${namespace}/${parent}`;
  };
}

/**
 * Keys a child by its controller owner reference of the given kind and API group (any version), e.g.
 * `keyFromControllerOwner("canaryapp.io", "CanaryApp")`. Owners are always in the child's namespace.
 */
export function keyFromControllerOwner(group: string, kind: string): (obj: KeyedObject) => string | undefined {
  return (obj) => {
    const namespace = obj.metadata?.namespace;
    const owner = obj.metadata?.ownerReferences?.find(
      (ref) => ref.controller === true && ref.kind === kind && groupOf(ref.apiVersion) === group,
    );
    if (owner === undefined || namespace === undefined) return undefined;
    return `${namespace}/${owner.name}`;
  };
}

function groupOf(apiVersion: string): string {
  const slash = apiVersion.indexOf("/");
  return slash < 0 ? "" : apiVersion.slice(0, slash);
}
