import stringify from "safe-stable-stringify";

/**
 * JSON with object keys sorted, so equal content always hashes (and compares) the same: the one canonical JSON
 * of the project (applied hashes, revisions). Written as JSON.stringify would write the same value with its keys
 * sorted (pinned by a property test), so hashes stay what they were.
 */
export function stableJson(value: unknown): string {
  return stringify(value) ?? "";
}

/**
 * Whether `a` and `b` are the same JSON up to key order (`stableJson(a) === stableJson(b)`), without writing
 * either out: walked side by side, it stops at the first difference and builds nothing. A reconcile compares
 * an app's status this way at least once (ADR 0018); written out and sorted, that was a sixth of a warm
 * restart's CPU at 5,000 apps.
 *
 * As JSON.stringify reads values: `toJSON` is called (a Date is its string), a member that is undefined, a
 * function or a symbol is absent (in an array it is null), and a number that is not finite is null.
 */
export function jsonEqual(a: unknown, b: unknown): boolean {
  return sameJson(asJson(a, ""), asJson(b, ""));
}

/** `value` as JSON.stringify writes it at `key`; undefined for what it leaves out. */
function asJson(value: unknown, key: string): unknown {
  let v = value;
  if (v !== null && typeof v === "object" && typeof (v as { toJSON?: unknown }).toJSON === "function") {
    v = (v as { toJSON: (key: string) => unknown }).toJSON(key);
  }
  if (typeof v === "number") return Number.isFinite(v) ? v : null;
  if (typeof v === "function" || typeof v === "symbol") return undefined;
  return v;
}

function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) {
      if (!sameJson(asJson(a[i], String(i)) ?? null, asJson(b[i], String(i)) ?? null)) return false;
    }
    return true;
  }
  if (Array.isArray(b)) return false;
  const ra = a as Record<string, unknown>;
  const rb = b as Record<string, unknown>;
  let members = 0;
  for (const key of Object.keys(ra)) {
    const va = asJson(ra[key], key);
    if (va === undefined) continue;
    members++;
    if (!Object.hasOwn(rb, key) || !sameJson(va, asJson(rb[key], key))) return false;
  }
  for (const key of Object.keys(rb)) if (asJson(rb[key], key) !== undefined) members--;
  return members === 0;
}
