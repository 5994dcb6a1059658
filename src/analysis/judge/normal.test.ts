import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { erfc, normalIsf, normalSf } from "./normal.js";

const near = (actual: number, expected: number, rel = 1e-12): void =>
  assert.ok(Math.abs(actual - expected) <= rel * Math.abs(expected), `${actual} is not ${expected}`);

describe("normalSf", () => {
  test("textbook points", () => {
    assert.equal(normalSf(0), 0.5);
    near(normalSf(1.959963984540054), 0.025);
    near(normalSf(-1), 0.8413447460685429);
    // Far in the tail, where 1 − Φ(z) computed as a difference would be 0.
    near(normalSf(10), 7.619853024160527e-24);
    assert.equal(normalSf(Infinity), 0);
    assert.equal(normalSf(-Infinity), 1);
    assert.ok(Number.isNaN(normalSf(NaN)));
  });
  test("erfc at the seam of its two methods", () => {
    near(erfc(3 - 1e-12), erfc(3), 1e-10);
    near(erfc(3), 2.209049699858544e-5);
  });
  test("property: sf(z) + sf(−z) = 1 and sf decreases", () => {
    fc.assert(
      fc.property(fc.double({ min: -30, max: 30, noNaN: true }), fc.double({ min: 0, max: 5, noNaN: true }), (z, d) => {
        assert.ok(Math.abs(normalSf(z) + normalSf(-z) - 1) < 1e-15);
        assert.ok(normalSf(z + d) <= normalSf(z));
      }),
    );
  });
});

describe("normalIsf", () => {
  test("textbook points", () => {
    near(normalIsf(0.025), 1.959963984540054);
    near(normalIsf(0.05), 1.6448536269514722);
    assert.equal(normalIsf(0.5), 0);
    assert.equal(normalIsf(0), Infinity);
    assert.throws(() => normalIsf(1.5), RangeError);
  });
  test("property: the inverse of sf", () => {
    fc.assert(
      fc.property(fc.double({ min: 1e-300, max: 0.999, noNaN: true }), (p) => {
        near(normalSf(normalIsf(p)), p, 1e-9);
      }),
    );
  });
});
