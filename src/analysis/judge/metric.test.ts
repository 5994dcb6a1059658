import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { lookAlpha } from "./looks.js";
import { EXACT_P_LIMIT, judgeMetric, metricOutcome, relativeShift } from "./metric.js";

// The worked example of ADR 0030: the primary's p50 latency (ms), one sample every 10 s over a 2-minute step,
// judged at the first of 5 steps with the default confidence (alpha 0.05 / 5 = 0.01).
const BASELINE = [19.2, 20.1, 20.8, 19.7, 20.4, 21.0, 19.5, 20.2, 19.9, 20.6, 20.0, 19.8];
const SLOWER = [25.9, 26.4, 25.6, 26.8, 25.1, 26.2, 27.0, 25.8, 26.5, 25.4, 26.1, 26.7];
const NOISE = [20.3, 19.6, 20.9, 19.4, 20.5, 20.05, 19.85, 21.1, 20.25, 19.75, 20.7, 19.55];
const FIVE_PERCENT = BASELINE.map((v) => Math.round(v * 105) / 100);
const alpha = lookAlpha(0.95, 5, 1);

const near = (actual: number | undefined, expected: number, rel = 1e-9): void =>
  assert.ok(actual !== undefined && Math.abs(actual - expected) <= rel * Math.abs(expected), `${actual} ≠ ${expected}`);

describe("judgeMetric: the worked example", () => {
  test("a canary 30 % slower: high", () => {
    const r = judgeMetric({ canary: SLOWER, baseline: BASELINE, alpha });
    assert.equal(r.verdict, "high");
    // Every canary sample above every baseline sample: U = 12 · 12 = 144, z = (144 − 72 − ½)/√300.
    assert.equal(r.u, 144);
    assert.equal(r.method, "asymptotic");
    near(r.p, 1.82922767694855e-5, 1e-6); // SciPy 1.10.1: mannwhitneyu(SLOWER, BASELINE, alternative="greater")
    assert.deepEqual([r.n, r.m, r.canaryMedian, r.baselineMedian, r.shift], [12, 12, 26.15, 20.05, 6]);
    near(r.ciLow, 5.4);
    near(r.ciHigh, 6.7);
    near(r.relativeShift, 6 / 20.05);
  });
  test("noise only: pass", () => {
    const r = judgeMetric({ canary: NOISE, baseline: BASELINE, alpha });
    assert.equal(r.verdict, "pass");
    assert.equal(r.u, 76);
    near(r.p, 0.4199299862700017, 1e-6); // SciPy 1.10.1
    assert.ok((r.ciLow as number) < 0 && (r.ciHigh as number) > 0);
  });
  test("5 % slower: significant, but within the 10 % tolerance: pass", () => {
    const r = judgeMetric({ canary: FIVE_PERCENT, baseline: BASELINE, alpha });
    assert.equal(r.verdict, "pass");
    assert.ok((r.p as number) < alpha && (r.ciLow as number) > 0);
    near(r.relativeShift, 0.0501246882793017, 1e-6);
    assert.equal(
      judgeMetric({ canary: FIVE_PERCENT, baseline: BASELINE, alpha, effectTolerance: 0.02 }).verdict,
      "high",
    );
  });
});

describe("judgeMetric: direction", () => {
  test("increase ignores a drop; decrease fails it as low; either fails both ways", () => {
    const input = { canary: BASELINE, baseline: SLOWER, alpha };
    assert.equal(judgeMetric({ ...input, direction: "increase" }).verdict, "pass");
    assert.equal(judgeMetric({ ...input, direction: "decrease" }).verdict, "low");
    assert.equal(judgeMetric({ ...input, direction: "either" }).verdict, "low");
    assert.equal(judgeMetric({ canary: SLOWER, baseline: BASELINE, alpha, direction: "either" }).verdict, "high");
    assert.equal(judgeMetric({ canary: SLOWER, baseline: BASELINE, alpha, direction: "decrease" }).verdict, "pass");
  });
});

describe("judgeMetric: not enough data", () => {
  test("an empty track: nodata, mustHaveData carried (default true)", () => {
    assert.deepEqual(judgeMetric({ canary: [], baseline: BASELINE, alpha }), {
      verdict: "nodata",
      mustHaveData: true,
      alpha,
      n: 0,
      m: 12,
    });
    assert.equal(judgeMetric({ canary: BASELINE, baseline: [], alpha, mustHaveData: false }).mustHaveData, false);
  });
  test("non-finite samples are dropped before counting", () => {
    const r = judgeMetric({ canary: [NaN, Infinity, -Infinity], baseline: BASELINE, alpha });
    assert.equal(r.verdict, "nodata");
    const kept = judgeMetric({ canary: [...SLOWER, NaN], baseline: [...BASELINE, Infinity], alpha });
    assert.deepEqual([kept.verdict, kept.n, kept.m], ["high", 12, 12]);
  });
  test("fewer than minSamples on either track: toofew, medians still told", () => {
    const r = judgeMetric({ canary: SLOWER.slice(0, 9), baseline: BASELINE, alpha });
    assert.deepEqual([r.verdict, r.n, r.p], ["toofew", 9, undefined]);
    assert.equal(r.baselineMedian, 20.05);
    assert.equal(judgeMetric({ canary: SLOWER.slice(0, 9), baseline: BASELINE, alpha, minSamples: 5 }).verdict, "high");
  });
  test("a short sample against a long one: asymptotic above EXACT_P_LIMIT pairs, exact below", () => {
    const long = Array.from({ length: 400 }, (_, i) => 20 + (i % 97) / 10);
    const short = [31, 32, 33, 34, 35, 36, 37, 38];
    assert.ok(short.length * long.length > EXACT_P_LIMIT);
    const r = judgeMetric({ canary: short, baseline: long.slice(0, 397), alpha, minSamples: 5 });
    assert.deepEqual([r.verdict, r.method], ["high", "asymptotic"]);
    const small = judgeMetric({ canary: short, baseline: [20.1, 20.3, 20.2, 19.9, 20.0], alpha, minSamples: 5 });
    assert.deepEqual([small.verdict, small.method], ["high", "exact"]);
  });
  test("an alpha out of (0, 0.5) is refused", () => {
    assert.throws(() => judgeMetric({ canary: SLOWER, baseline: BASELINE, alpha: 0.5 }), RangeError);
  });
});

describe("relativeShift", () => {
  test("against the baseline's median, its sign kept; a zero median makes any shift infinite", () => {
    assert.equal(relativeShift(2, -4), 0.5);
    assert.equal(relativeShift(0, 0), 0);
    assert.equal(relativeShift(0.1, 0), Infinity);
    assert.equal(relativeShift(-0.1, 0), -Infinity);
  });
  test("errors that appear where there were none: high", () => {
    const zeros = new Array<number>(12).fill(0);
    const r = judgeMetric({
      canary: [0.2, 0.1, 0.3, 0.2, 0.4, 0.1, 0.2, 0.3, 0.2, 0.1, 0.3, 0.2],
      baseline: zeros,
      alpha,
    });
    assert.deepEqual([r.verdict, r.relativeShift], ["high", Infinity]);
  });
});

test("metricOutcome: high and low fail", () => {
  assert.deepEqual((["pass", "high", "low", "nodata", "toofew"] as const).map(metricOutcome), [
    "pass",
    "fail",
    "fail",
    "nodata",
    "toofew",
  ]);
});

describe("judgeMetric: properties", () => {
  const sample = fc.array(fc.double({ min: 1, max: 100, noNaN: true }), { minLength: 10, maxLength: 40 });
  test("a canary identical to its baseline always passes", () => {
    fc.assert(
      fc.property(sample, fc.constantFrom("increase" as const, "decrease" as const, "either" as const), (s, d) => {
        assert.equal(judgeMetric({ canary: s, baseline: s, alpha: 0.05, direction: d }).verdict, "pass");
      }),
    );
  });
  test("a failure has p below alpha, the interval off 0 and the shift beyond the tolerance", () => {
    fc.assert(
      fc.property(sample, sample, fc.double({ min: 0, max: 60, noNaN: true }), (c, b, shift) => {
        const r = judgeMetric({ canary: c.map((v) => v + shift), baseline: b, alpha: 0.01, direction: "either" });
        if (r.verdict === "high") {
          assert.ok((r.p as number) < 0.01 && (r.ciLow as number) > 0 && (r.relativeShift as number) > 0.1);
        }
        if (r.verdict === "low") {
          assert.ok((r.p as number) < 0.01 && (r.ciHigh as number) < 0 && (r.relativeShift as number) < -0.1);
        }
      }),
    );
  });
});
