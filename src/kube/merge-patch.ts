/**
 * JSON merge patches (RFC 7386). A merge patch cannot tell "absent" from "leave alone": to remove a key
 * it must say `null`. `mergePatchFrom` builds the patch that turns one document into another, so that a
 * controller can write a complete next status as a merge patch without leaving stale keys behind.
 */

import { jsonEqual } from "../api/json.js";

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value) && !(value instanceof Date);
}

/**
 * The merge patch that turns `from` into `to`: keys of `from` missing in `to` become `null`, changed
 * objects are diffed recursively, anything else that differs (arrays, scalars) is replaced whole, and
 * unchanged members are left out. Returns `{}` when nothing changed.
 */
export function mergePatchFrom(from: unknown, to: unknown): Json {
  if (!isPlainObject(to)) return (to === undefined ? null : JSON.parse(JSON.stringify(to))) as Json;
  if (!isPlainObject(from)) return JSON.parse(JSON.stringify(to)) as Json;
  const patch: Record<string, Json> = {};
  for (const key of Object.keys(from)) {
    if (from[key] !== undefined && to[key] === undefined) patch[key] = null;
  }
  for (const key of Object.keys(to)) {
    const next = to[key];
    if (next === undefined || jsonEqual(from[key], next)) continue;
    patch[key] =
      isPlainObject(next) && isPlainObject(from[key])
        ? mergePatchFrom(from[key], next)
        : mergePatchFrom(undefined, next);
  }
  return patch;
}

/** Applies a merge patch (RFC 7386) to a document; used to check patches in tests and by fakes. */
export function applyMergePatch(target: unknown, patch: unknown): unknown {
  if (!isPlainObject(patch)) return patch;
  const result: Record<string, unknown> = isPlainObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = applyMergePatch(result[key], value);
  }
  return result;
}
