import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { scoreMetrics, type MetricOutcome, type Score, type ScoredMetric } from "./score.js";

const metric = (name: string, outcome: MetricOutcome, more: Partial<ScoredMetric> = {}): ScoredMetric => ({
  name,
  weight: 1,
  critical: false,
  mustHaveData: true,
  outcome,
  ...more,
});

describe("scoreMetrics", () => {
  const cases: { name: string; metrics: ScoredMetric[]; lastLook?: boolean; want: Score }[] = [
    {
      name: "all passed: 100, pass",
      metrics: [metric("latency", "pass"), metric("errors", "pass")],
      want: { score: 100, verdict: "pass", counted: 2 },
    },
    {
      // The ADR's example: weights 3 and 1, the lighter one failed: 75, the marginal threshold itself.
      name: "weighted: 3 of 4 passed: 75, marginal, the test goes on",
      metrics: [metric("latency", "pass", { weight: 3 }), metric("cpu", "fail")],
      want: { score: 75, verdict: "marginal", counted: 2 },
    },
    {
      name: "the same on the last look: fail (the last look must reach pass)",
      metrics: [metric("latency", "pass", { weight: 3 }), metric("cpu", "fail")],
      lastLook: true,
      want: { score: 75, verdict: "fail", counted: 2 },
    },
    {
      name: "below marginal: fail",
      metrics: [metric("a", "pass"), metric("b", "fail")],
      want: { score: 50, verdict: "fail", counted: 2 },
    },
    {
      name: "a critical metric failed: score 0, fail, named",
      metrics: [metric("a", "pass", { weight: 10 }), metric("errors", "fail", { critical: true })],
      want: { score: 0, verdict: "fail", criticalFailed: ["errors"], counted: 2 },
    },
    {
      name: "nodata with mustHaveData counts as a failure (critical too)",
      metrics: [metric("a", "pass"), metric("b", "nodata", { critical: true })],
      want: { score: 0, verdict: "fail", criticalFailed: ["b"], counted: 2 },
    },
    {
      name: "nodata without mustHaveData is left out",
      metrics: [metric("a", "pass"), metric("b", "nodata", { mustHaveData: false })],
      want: { score: 100, verdict: "pass", counted: 1 },
    },
    {
      name: "toofew is left out",
      metrics: [metric("a", "pass"), metric("b", "toofew")],
      want: { score: 100, verdict: "pass", counted: 1 },
    },
    {
      name: "toofew leaving nothing counted: inconclusive",
      metrics: [metric("a", "toofew"), metric("b", "nodata", { mustHaveData: false })],
      want: { score: 0, verdict: "inconclusive", counted: 0 },
    },
    { name: "no judged metric: inconclusive", metrics: [], want: { score: 0, verdict: "inconclusive", counted: 0 } },
    {
      name: "a critical metric left out holds back a pass",
      metrics: [metric("a", "pass"), metric("errors", "toofew", { critical: true })],
      want: { score: 100, verdict: "inconclusive", counted: 1 },
    },
    {
      name: "counted metrics all of weight 0: inconclusive",
      metrics: [metric("a", "pass", { weight: 0 })],
      want: { score: 0, verdict: "inconclusive", counted: 1 },
    },
  ];
  for (const c of cases) {
    test(c.name, () => assert.deepEqual(scoreMetrics(c.metrics, {}, c.lastLook ?? false), c.want));
  }

  test("thresholds from the spec", () => {
    const metrics = [metric("a", "pass", { weight: 9 }), metric("b", "fail")];
    assert.equal(scoreMetrics(metrics, { pass: 90 }, true).verdict, "pass");
    assert.equal(scoreMetrics(metrics, { pass: 99, marginal: 95 }, false).verdict, "fail");
  });
  test("bad thresholds or weights are refused", () => {
    assert.throws(() => scoreMetrics([], { pass: 70, marginal: 80 }, false), RangeError);
    assert.throws(() => scoreMetrics([metric("a", "pass", { weight: -1 })], {}, false), RangeError);
    assert.throws(() => scoreMetrics([metric("a", "pass", { weight: NaN })], {}, false), RangeError);
  });
});

describe("scoreMetrics: properties", () => {
  const outcome = fc.constantFrom<MetricOutcome>("pass", "fail", "nodata", "toofew");
  const metrics = fc.array(
    fc.record({
      name: fc.string(),
      weight: fc.integer({ min: 0, max: 5 }),
      critical: fc.boolean(),
      mustHaveData: fc.boolean(),
      outcome,
    }),
    { maxLength: 8 },
  );
  // Marginal and inconclusive both let the test go on without a verdict.
  const rank = { fail: 0, inconclusive: 1, marginal: 1, pass: 2 } as const;

  test("turning a failed metric into a passed one never lowers the score", () => {
    fc.assert(
      fc.property(metrics, fc.nat(), fc.boolean(), (ms, i, last) => {
        const failed = ms.flatMap((m, j) => (m.outcome === "fail" ? [j] : []));
        if (failed.length === 0) return;
        const j = failed[i % failed.length] as number;
        const better = ms.map((m, k) => (k === j ? { ...m, outcome: "pass" as const } : m));
        const before = scoreMetrics(ms, {}, last);
        const after = scoreMetrics(better, {}, last);
        assert.ok(after.score >= before.score, `${after.score} < ${before.score}`);
        assert.ok(rank[after.verdict] >= rank[before.verdict], `${before.verdict} → ${after.verdict}`);
      }),
    );
  });
  test("the score is in [0, 100], and a pass never has a critical metric failed", () => {
    fc.assert(
      fc.property(metrics, fc.boolean(), (ms, last) => {
        const s = scoreMetrics(ms, {}, last);
        assert.ok(s.score >= 0 && s.score <= 100);
        if (s.verdict === "pass") assert.equal(s.criticalFailed, undefined);
        if (last) assert.notEqual(s.verdict, "marginal");
      }),
    );
  });
});
