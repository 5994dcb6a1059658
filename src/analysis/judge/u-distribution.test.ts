import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { uCdf, uPmf, uSf } from "./u-distribution.js";

describe("uPmf", () => {
  test("n = 5, m = 4: the counts of arrangements over C(9, 4) = 126", () => {
    // The number of ways to reach U = u is the number of partitions of u into at most 4 parts of at most 5.
    const counts = Array.from(uPmf(5, 4), (p) => Math.round(p * 126));
    assert.deepEqual(counts, [1, 1, 2, 3, 5, 6, 8, 9, 11, 11, 12, 11, 11, 9, 8, 6, 5, 3, 2, 1, 1]);
  });
  test("one sample empty: all the mass on 0", () => assert.deepEqual(Array.from(uPmf(0, 7)), [1]));
  test("a size that is not a count is refused", () => assert.throws(() => uPmf(1.5, 2), RangeError));
  test("sf and cdf: tails of 5 × 4", () => {
    const pmf = uPmf(5, 4);
    assert.equal(Math.round(uSf(pmf, 17) * 126), 7);
    assert.equal(Math.round(uCdf(pmf, 3) * 126), 7);
    assert.equal(uSf(pmf, 0), 1);
    assert.equal(uCdf(pmf, -1), 0);
  });
  test("property: a distribution, symmetric about n·m/2, the same for (n, m) and (m, n)", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 15 }), fc.integer({ min: 0, max: 15 }), (n, m) => {
        const pmf = uPmf(n, m);
        assert.equal(pmf.length, n * m + 1);
        assert.ok(Math.abs(pmf.reduce((a, b) => a + b, 0) - 1) < 1e-12);
        const swapped = uPmf(m, n);
        pmf.forEach((p, u) => {
          assert.ok(Math.abs(p - (pmf[n * m - u] as number)) < 1e-15);
          assert.ok(Math.abs(p - (swapped[u] as number)) < 1e-15);
        });
      }),
    );
  });
});
