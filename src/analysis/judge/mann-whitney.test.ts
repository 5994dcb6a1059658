import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { mannWhitneyU, type Alternative } from "./mann-whitney.js";
import { normalSf } from "./normal.js";

// The worked example of ADR 0030. Pooled and sorted: 11y 12y 16x 17y 19x 20y 22x 24x 29x, so x's ranks are
// 3, 5, 7, 8, 9: R₁ = 32, U = 32 − 5·6/2 = 17 (and 20 − 17 = 3 for y). Of the C(9, 4) = 126 equally likely
// arrangements, 7 have U ≥ 17 (as many as have U ≤ 3: 1 + 1 + 2 + 3).
const X = [19, 22, 16, 29, 24];
const Y = [20, 11, 17, 12];

describe("mannWhitneyU: the worked example", () => {
  test("small, no ties: exact", () => {
    assert.deepEqual(mannWhitneyU(X, Y, "greater"), { u: 17, p: 7 / 126, method: "exact" });
    assert.deepEqual(mannWhitneyU(X, Y, "two-sided"), { u: 17, p: 14 / 126, method: "exact" });
    assert.deepEqual(mannWhitneyU(X, Y, "less"), { u: 17, p: 1 - 4 / 126, method: "exact" });
  });
  test("asymptotic when asked: z = (17 − 10 − ½) / √(20·10/12)", () => {
    const r = mannWhitneyU(X, Y, "greater", { method: "asymptotic" });
    const z = 6.5 / Math.sqrt((20 * 10) / 12);
    assert.equal(r.method, "asymptotic");
    assert.ok(Math.abs((r.z as number) - z) < 1e-12);
    assert.ok(Math.abs(r.p - normalSf(z)) < 1e-15);
    const plain = mannWhitneyU(X, Y, "greater", { method: "asymptotic", continuity: false });
    assert.ok(Math.abs((plain.z as number) - 7 / Math.sqrt(200 / 12)) < 1e-12);
  });
});

describe("mannWhitneyU: SciPy's choice of method", () => {
  const nine = [1, 2, 3, 4, 5, 6, 7, 8, 9];
  test("both samples above 8: asymptotic", () =>
    assert.equal(
      mannWhitneyU(
        nine,
        nine.map((v) => v + 0.5),
        "greater",
      ).method,
      "asymptotic",
    ));
  test("one sample of 8 or fewer, no ties: exact", () =>
    assert.equal(
      mannWhitneyU(
        nine.slice(0, 8),
        nine.map((v) => v + 0.5),
        "greater",
      ).method,
      "exact",
    ));
  test("a tie anywhere: asymptotic", () => assert.equal(mannWhitneyU([1, 2], [2, 3], "greater").method, "asymptotic"));
});

describe("mannWhitneyU: ties and edges", () => {
  test("ties: average ranks and the tie-corrected variance", () => {
    // Pooled 1x 2x 2y 3y: ranks 1, 2.5, 2.5, 4; U = 3.5 − 3 = 0.5; σ² = 4/12 · (5 − 6/12) = 1.5.
    const r = mannWhitneyU([1, 2], [2, 3], "less");
    assert.equal(r.u, 0.5);
    assert.ok(Math.abs((r.z as number) - (3.5 - 2 - 0.5) / Math.sqrt(1.5)) < 1e-12);
  });
  test("every value the same: no evidence, p = 1 (SciPy: NaN without continuity)", () => {
    for (const continuity of [true, false]) {
      const r = mannWhitneyU([3, 3, 3], [3, 3], "greater", { continuity });
      assert.deepEqual([r.u, r.p, r.method], [3, 1, "asymptotic"]);
    }
  });
  test("samples of one", () => {
    assert.deepEqual(mannWhitneyU([2], [1], "greater"), { u: 1, p: 0.5, method: "exact" });
    assert.deepEqual(mannWhitneyU([2], [1], "two-sided"), { u: 1, p: 1, method: "exact" });
  });
  test("empty or non-finite samples are refused", () => {
    assert.throws(() => mannWhitneyU([], [1], "greater"), RangeError);
    assert.throws(() => mannWhitneyU([1], [NaN], "greater"), RangeError);
  });
});

describe("mannWhitneyU: properties", () => {
  const sample = fc.array(
    fc.integer({ min: 0, max: 30 }).map((v) => v / 2),
    { minLength: 1, maxLength: 25 },
  );
  const alternative = fc.constantFrom<Alternative>("two-sided", "greater", "less");
  const method = fc.constantFrom("auto" as const, "exact" as const, "asymptotic" as const);

  test("U of x plus U of y is n·m, and p is a probability", () => {
    fc.assert(
      fc.property(sample, sample, alternative, method, fc.boolean(), (x, y, alt, how, continuity) => {
        const a = mannWhitneyU(x, y, alt, { method: how, continuity });
        const b = mannWhitneyU(y, x, alt, { method: how, continuity });
        assert.equal(a.u + b.u, x.length * y.length);
        assert.ok(a.p >= 0 && a.p <= 1, `p=${a.p}`);
      }),
    );
  });
  test("swapping x and y swaps greater and less; two-sided stays", () => {
    fc.assert(
      fc.property(sample, sample, method, (x, y, how) => {
        const p = (a: number[], b: number[], alt: Alternative): number => mannWhitneyU(a, b, alt, { method: how }).p;
        // Equal up to rounding: the exact distribution of (n, m) is summed in another order than (m, n)'s.
        const same = (a: number, b: number): boolean => Math.abs(a - b) <= 1e-12 * Math.max(a, b);
        assert.ok(same(p(x, y, "greater"), p(y, x, "less")));
        assert.ok(same(p(x, y, "less"), p(y, x, "greater")));
        assert.ok(same(p(x, y, "two-sided"), p(y, x, "two-sided")));
      }),
    );
  });
  test("moving x up never raises the p of greater", () => {
    fc.assert(
      fc.property(sample, sample, fc.integer({ min: 1, max: 20 }), (x, y, d) => {
        const before = mannWhitneyU(x, y, "greater", { method: "asymptotic" }).p;
        const after = mannWhitneyU(
          x.map((v) => v + d),
          y,
          "greater",
          { method: "asymptotic" },
        ).p;
        // Moving x changes the ties, hence σ, so allow for rounding only when U did not move. Moved onto one value
        // with every y (all tied: no evidence at all, p is 1 by definition) p may rise to 1.
        const moved = x.map((v) => v + d);
        const allTied = [...moved, ...y].every((v) => v === y[0]);
        assert.ok(
          after <= before + 1e-12 || allTied || mannWhitneyU(x, y, "greater").u === x.length * y.length,
          `p ${before} → ${after}`,
        );
      }),
    );
  });
});
