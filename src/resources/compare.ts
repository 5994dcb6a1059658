import { createHash } from "node:crypto";
import { stableJson } from "../api/json.js";

export { stableJson };

/**
 * Annotation holding the hash of what the controller last applied to a child. Together with the subset
 * check below it lets a reconcile skip an apply when nothing would change: the hash catches fields the
 * controller stopped setting (a subset check alone cannot see a removal), the subset check catches edits
 * made by hand (which leave the hash alone).
 */
export const APPLIED_HASH_ANNOTATION = "canaryapp.io/applied-hash";

interface WithMeta {
  metadata: { name: string; annotations?: Record<string, string> };
}

/** A copy of `desired` carrying the hash of its own content. */
export function withAppliedHash<T extends WithMeta>(desired: T): T {
  const hash = createHash("sha256").update(stableJson(desired)).digest("hex").slice(0, 16);
  return {
    ...desired,
    metadata: {
      ...desired.metadata,
      annotations: { ...desired.metadata.annotations, [APPLIED_HASH_ANNOTATION]: hash },
    },
  };
}

/**
 * True when the object in the cluster already says everything the desired one says (the server may add
 * defaults and other managers' fields; those do not count) and was last applied from the same content.
 */
export function alreadyApplied(desired: WithMeta, actual: unknown): boolean {
  if (actual === undefined || actual === null) return false;
  return isSubset(desired, actual);
}

/** Every value in `want` is present and equal in `have`; arrays must match element by element. */
export function isSubset(want: unknown, have: unknown): boolean {
  if (Array.isArray(want)) {
    return Array.isArray(have) && want.length === have.length && want.every((w, i) => isSubset(w, have[i]));
  }
  if (want !== null && typeof want === "object") {
    if (have === null || typeof have !== "object" || Array.isArray(have)) return false;
    const record = have as Record<string, unknown>;
    return Object.entries(want).every(([key, value]) => value === undefined || isSubset(value, record[key]));
  }
  return want === have;
}
