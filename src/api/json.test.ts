import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { jsonEqual, stableJson } from "./json.js";

/** Values as statuses hold them, and what JSON.stringify reads specially: undefined, NaN, ±Infinity, -0, Dates. */
const { value } = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    fc.constantFrom(undefined, null, true, false, Number.NaN, Infinity, -Infinity, -0, 0, 1, "", "a", "0"),
    fc.integer({ min: -3, max: 3 }),
    fc.string({ maxLength: 3 }),
    fc.date({ min: new Date(0), max: new Date(10_000), noInvalidDate: true }),
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(fc.constantFrom("a", "b", "c", "d", "toString", "__proto__"), tie("value"), { maxKeys: 4 }),
  ),
}));

/** The same content built again with its keys in another order, and JSON's equivalents swapped in. */
function rebuilt(v: unknown, flip: boolean): unknown {
  if (typeof v === "number" && !Number.isFinite(v)) return flip ? null : v;
  if (v instanceof Date) return flip ? v.toJSON() : new Date(v.getTime());
  if (Array.isArray(v)) return v.map((x) => (x === undefined && flip ? null : rebuilt(x, !flip)));
  if (v !== null && typeof v === "object") {
    const entries = Object.entries(v).reverse();
    const out: Record<string, unknown> = {};
    for (const [k, x] of entries)
      if (!(x === undefined && flip))
        Object.defineProperty(out, k, {
          value: rebuilt(x, !flip),
          enumerable: true,
          writable: true,
          configurable: true,
        });
    if (flip) out["extra"] = undefined;
    return out;
  }
  return v;
}

describe("jsonEqual", () => {
  test("agrees with comparing stableJson texts, on unrelated values", () => {
    fc.assert(
      fc.property(value, value, (a, b) => {
        assert.equal(jsonEqual(a, b), stableJson(a) === stableJson(b));
      }),
      { numRuns: 2000 },
    );
  });

  test("agrees with comparing stableJson texts, on a value and the same content rebuilt or changed a little", () => {
    fc.assert(
      fc.property(value, fc.boolean(), value, fc.boolean(), (a, flip, other, change) => {
        const b = rebuilt(a, flip);
        const c =
          change && a !== null && typeof a === "object" && !Array.isArray(a) ? { ...(b as object), d: other } : b;
        assert.equal(jsonEqual(a, c), stableJson(a) === stableJson(c));
        if (!change) assert.equal(jsonEqual(a, c), true);
      }),
      { numRuns: 2000 },
    );
  });

  test("cases by hand", () => {
    assert.equal(jsonEqual({ a: 1, b: undefined }, { a: 1 }), true);
    assert.equal(jsonEqual({ a: [undefined] }, { a: [null] }), true);
    assert.equal(jsonEqual({ v: Number.NaN }, { v: null }), true);
    assert.equal(jsonEqual({ at: new Date(0) }, { at: "1970-01-01T00:00:00.000Z" }), true);
    assert.equal(jsonEqual({ a: 1 }, { a: 1, b: 2 }), false);
    assert.equal(jsonEqual([1, 2], [2, 1]), false);
    assert.equal(jsonEqual({ a: {} }, { a: [] }), false);
    assert.equal(jsonEqual({ a: "1" }, { a: 1 }), false);
  });
});

describe("stableJson", () => {
  /** JSON.stringify with every object's keys sorted: what stableJson wrote before it was the library's. */
  const sortedStringify = (v: unknown): string | undefined =>
    JSON.stringify(v, (_key, x: unknown) =>
      x !== null && typeof x === "object" && !Array.isArray(x)
        ? Object.fromEntries(Object.entries(x as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1)))
        : x,
    );

  test("writes what JSON.stringify writes with the keys sorted (so applied hashes and revisions do not change)", () => {
    fc.assert(
      fc.property(value, (v) => {
        assert.equal(stableJson(v), sortedStringify(v) ?? "");
      }),
      { numRuns: 3000 },
    );
    assert.equal(stableJson({ b: [1, { d: 2, c: undefined }], a: "x" }), '{"a":"x","b":[1,{"d":2}]}');
  });
});
