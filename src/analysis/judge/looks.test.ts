import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { lookAlpha } from "./looks.js";

test("95 % over 5 steps: each look at (1 − 0.95) / 5", () => {
  const alpha = 1 - 0.95;
  for (let look = 1; look <= 5; look++) assert.ok(Math.abs(lookAlpha(0.95, 5, look) - alpha / 5) < 1e-15);
  assert.ok(Math.abs(lookAlpha(0.95, 1, 1) - alpha) < 1e-15);
});

test("looks outside the plan and confidences out of range are refused", () => {
  assert.throws(() => lookAlpha(0.95, 5, 6), RangeError);
  assert.throws(() => lookAlpha(0.95, 5, 0), RangeError);
  assert.throws(() => lookAlpha(0.95, 0, 1), RangeError);
  assert.throws(() => lookAlpha(1, 5, 1), RangeError);
});

test("property: the looks' alphas never add up above 1 − confidence, and spend nearly all of it", () => {
  fc.assert(
    fc.property(fc.double({ min: 0.5, max: 0.9999, noNaN: true }), fc.integer({ min: 1, max: 200 }), (c, k) => {
      let sum = 0;
      for (let look = 1; look <= k; look++) sum += lookAlpha(c, k, look);
      assert.ok(sum <= 1 - c, `${sum} > ${1 - c}`);
      assert.ok(sum >= (1 - c) * (1 - 1e-12));
    }),
  );
});
