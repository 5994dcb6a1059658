import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { applyMergePatch, mergePatchFrom } from "./merge-patch.js";

describe("mergePatchFrom", () => {
  const cases: { name: string; from: unknown; to: unknown; patch: unknown }[] = [
    { name: "no change", from: { a: 1, b: { c: [1, 2] } }, to: { b: { c: [1, 2] }, a: 1 }, patch: {} },
    { name: "removed key becomes null", from: { a: 1, canary: { step: 2 } }, to: { a: 1 }, patch: { canary: null } },
    {
      name: "nested removal",
      from: { canary: { step: 2, pausedAt: "t" } },
      to: { canary: { step: 2 } },
      patch: { canary: { pausedAt: null } },
    },
    {
      name: "scalar change",
      from: { phase: "Healthy" },
      to: { phase: "Progressing" },
      patch: { phase: "Progressing" },
    },
    {
      name: "arrays are replaced whole",
      from: { conditions: [{ type: "Ready" }, { type: "X" }] },
      to: { conditions: [{ type: "Ready" }] },
      patch: { conditions: [{ type: "Ready" }] },
    },
    {
      name: "new object",
      from: {},
      to: { weights: { primary: 90, secondary: 10 } },
      patch: { weights: { primary: 90, secondary: 10 } },
    },
    { name: "object replaces scalar", from: { a: 1 }, to: { a: { b: 2 } }, patch: { a: { b: 2 } } },
    { name: "undefined members are absent", from: { a: 1, b: undefined }, to: { a: 1, c: undefined }, patch: {} },
    { name: "from nothing", from: undefined, to: { a: 1 }, patch: { a: 1 } },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const patch = mergePatchFrom(c.from, c.to);
      assert.deepEqual(patch, c.patch);
      // The patch, applied to the old document, yields the new one (without its undefined members).
      assert.deepEqual(JSON.parse(JSON.stringify(applyMergePatch(c.from, patch))), JSON.parse(JSON.stringify(c.to)));
    });
  }
});
