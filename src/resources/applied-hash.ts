import { hash as digest } from "node:crypto";
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
  const hash = digest("sha256", stableJson(desired), "hex").slice(0, 16);
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
 *
 * The kind is known from the cache the object came from, so `apiVersion`/`kind` are not compared: items of a
 * built-in list carry neither, and a restarted controller must not re-apply everything it listed. Resource
 * quantities compare by value, as the API server rewrites them (`cpu: 1` → "1", "0.5" → "500m").
 */
export function alreadyApplied(desired: WithMeta, actual: unknown): boolean {
  if (actual === undefined || actual === null) return false;
  const {
    apiVersion: _apiVersion,
    kind: _kind,
    ...content
  } = desired as WithMeta & {
    apiVersion?: unknown;
    kind?: unknown;
  };
  return isSubset(content, actual);
}

/**
 * Objects at these paths must hold exactly the keys the controller sets: a key added by hand there changes
 * what the child does (a `fault`, `match`, `mirror` or `retries` on the canary route, a traffic policy on a
 * subset), so it counts as drift to repair. Elsewhere the server's defaults and other managers' fields do not.
 */
const CLOSED_PATHS: readonly (readonly string[])[] = [
  ["spec", "http", "[]"],
  ["spec", "http", "[]", "route", "[]"],
  ["spec", "subsets", "[]"],
];

function isClosed(path: readonly string[]): boolean {
  return CLOSED_PATHS.some((closed) => closed.length === path.length && closed.every((part, i) => part === path[i]));
}

/**
 * Every value in `want` is present and equal in `have`; arrays must match element by element; objects at
 * the CLOSED_PATHS hold no other keys. Values under `resources.requests` and `resources.limits` are
 * quantities and compare by value.
 */
export function isSubset(want: unknown, have: unknown, path: readonly string[] = []): boolean {
  return subset(want, have, [...path]);
}

/** {@link isSubset} with the path as one stack, pushed and popped as the walk goes: nothing is allocated per value. */
function subset(want: unknown, have: unknown, path: string[]): boolean {
  if (Array.isArray(want)) {
    if (!Array.isArray(have) || want.length !== have.length) return false;
    path.push("[]");
    for (let i = 0; i < want.length; i++) {
      if (!subset(want[i], have[i], path)) {
        path.pop();
        return false;
      }
    }
    path.pop();
    return true;
  }
  if (want !== null && typeof want === "object") {
    if (have === null || typeof have !== "object" || Array.isArray(have)) return false;
    const record = have as Record<string, unknown>;
    const wanted = want as Record<string, unknown>;
    // Plain JSON objects: `for…in` walks exactly their own keys.
    if (isClosed(path)) for (const key in record) if (!(key in wanted)) return false;
    for (const key in wanted) {
      const value = wanted[key];
      if (value === undefined) continue;
      path.push(key);
      const same = subset(value, record[key], path);
      path.pop();
      if (!same) return false;
    }
    return true;
  }
  if (want === have) return true;
  // The API server omits a false boolean (omitempty), e.g. a Deployment's spec.paused.
  if (want === false && have === undefined) return true;
  return isQuantityPath(path) && sameQuantity(want, have);
}

function isQuantityPath(path: readonly string[]): boolean {
  const section = path.at(-2);
  return path.at(-3) === "resources" && (section === "requests" || section === "limits");
}

const SUFFIXES: Record<string, number> = {
  "": 1,
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

/** The value of a Kubernetes resource quantity ("500m", "1.5Gi", "1e3", 2), or undefined if it is none. */
export function quantityValue(quantity: unknown): number | undefined {
  if (typeof quantity === "number") return Number.isFinite(quantity) ? quantity : undefined;
  if (typeof quantity !== "string") return undefined;
  const match = /^([+-]?(?:\d+(?:\.\d*)?|\.\d+))(?:[eE]([+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]))?$/.exec(quantity);
  if (match === null) return undefined;
  const [, number = "", exponent, suffix = ""] = match;
  const scale = exponent !== undefined ? 10 ** Number(exponent) : SUFFIXES[suffix];
  return scale === undefined ? undefined : Number(number) * scale;
}

/** Equal quantities, whatever their notation (the API server keeps milli-precision). */
export function sameQuantity(a: unknown, b: unknown): boolean {
  const x = quantityValue(a);
  const y = quantityValue(b);
  if (x === undefined || y === undefined) return false;
  return Math.abs(x - y) <= Math.max(Math.abs(x), Math.abs(y)) * 1e-12;
}
