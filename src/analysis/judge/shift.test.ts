import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { ciRank, EXACT_CI_LIMIT, hodgesLehmann, pairwiseDifferences } from "./shift.js";

// The worked example of ADR 0030 (mann-whitney.test.ts has its U). The 20 differences x − y, sorted:
// −4 −1 −1 2 2 4 4 5 5 7 7 8 9 10 11 12 12 13 17 18; their median is 7. At alpha 0.1, k = 3: P(U ≤ 2) = 4/126
// < 0.05 ≤ P(U ≤ 3) = 7/126, so the interval is [d₍₃₎, d₍₁₈₎] = [−1, 13], of coverage 1 − 8/126.
const X = [19, 22, 16, 29, 24];
const Y = [20, 11, 17, 12];

describe("hodgesLehmann: the worked example", () => {
  test("the sorted differences", () =>
    assert.deepEqual(
      Array.from(pairwiseDifferences(X, Y)),
      [-4, -1, -1, 2, 2, 4, 4, 5, 5, 7, 7, 8, 9, 10, 11, 12, 12, 13, 17, 18],
    ));
  test("estimate, interval and coverage", () => {
    assert.deepEqual(ciRank(5, 4, 0.1), { k: 3, coverage: 1 - 8 / 126 });
    assert.deepEqual(hodgesLehmann(X, Y, 0.1), { estimate: 7, ciLow: -1, ciHigh: 13, coverage: 1 - 8 / 126 });
  });
});

describe("hodgesLehmann: edges", () => {
  test("samples too small for the level: the whole range, its coverage told", () => {
    const r = hodgesLehmann([2], [1], 0.05);
    assert.deepEqual(r, { estimate: 1, ciLow: 1, ciHigh: 1, coverage: 0 });
  });
  test("large samples: k from the normal approximation", () => {
    const n = 60;
    assert.ok(n * n > EXACT_CI_LIMIT);
    // ⌊1800 − 1.959964 · √(3600 · 121 / 12)⌋ = ⌊1800 − 373.4⌋ = 1426.
    assert.deepEqual(ciRank(n, n, 0.05), { k: 1426, coverage: 0.95 });
    // Close to what the exact distribution gives at the limit (50 × 50: k from both agree within one).
    const exact = ciRank(50, 50, 0.05).k;
    const approx = Math.floor(1250 - 1.959963984540054 * Math.sqrt((2500 * 101) / 12));
    assert.ok(Math.abs(exact - approx) <= 1, `${exact} against ${approx}`);
  });
  test("empty samples and alphas out of range are refused", () => {
    assert.throws(() => hodgesLehmann([], [1], 0.05), RangeError);
    assert.throws(() => hodgesLehmann([1], [1], 0), RangeError);
  });
});

describe("hodgesLehmann: properties", () => {
  const sample = fc.array(fc.integer({ min: -50, max: 50 }), { minLength: 1, maxLength: 70 });
  const alpha = fc.constantFrom(0.01, 0.05, 0.1, 0.2);
  test("the interval contains the estimate", () => {
    fc.assert(
      fc.property(sample, sample, alpha, (x, y, a) => {
        const r = hodgesLehmann(x, y, a);
        assert.ok(r.ciLow <= r.estimate && r.estimate <= r.ciHigh, JSON.stringify(r));
      }),
    );
  });
  test("shifting y by c moves the estimate and the interval by −c", () => {
    fc.assert(
      fc.property(sample, sample, alpha, fc.integer({ min: -100, max: 100 }), (x, y, a, c) => {
        const before = hodgesLehmann(x, y, a);
        const after = hodgesLehmann(
          x,
          y.map((v) => v + c),
          a,
        );
        assert.equal(after.estimate, before.estimate - c);
        assert.equal(after.ciLow, before.ciLow - c);
        assert.equal(after.ciHigh, before.ciHigh - c);
      }),
    );
  });
  test("a lower alpha never narrows the interval", () => {
    fc.assert(
      fc.property(sample, sample, (x, y) => {
        const wide = hodgesLehmann(x, y, 0.01);
        const narrow = hodgesLehmann(x, y, 0.1);
        assert.ok(wide.ciLow <= narrow.ciLow && wide.ciHigh >= narrow.ciHigh);
      }),
    );
  });
});
