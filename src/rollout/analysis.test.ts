import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { MetricResult } from "../api/types.js";
import { describeResult, formatNumber, judgeAnalysis, scoreCheck } from "./analysis.js";
import type { AnalysisCheck } from "./checks.js";
import { failing, passing, queryFailed } from "./fixtures.test-helpers.js";
import type { QueryOutcome } from "./types.js";

const seed: AnalysisCheck = { name: "prometheusQuery", mode: "seed", query: "q" };
const rate: AnalysisCheck = { name: "request-success-rate", mode: "threshold", query: "q", min: 99 };
const duration: AnalysisCheck = { name: "request-duration", mode: "threshold", query: "q", max: 500 };
const band: AnalysisCheck = { name: "band", mode: "threshold", query: "q", min: 1, max: 2 };

describe("scoreCheck", () => {
  const cases: { check: AnalysisCheck; outcome: QueryOutcome; passed: boolean; reason: string; value?: number }[] = [
    { check: seed, outcome: { kind: "empty" }, passed: true, reason: "NoFailingSeries" },
    { check: seed, outcome: { kind: "values", values: [] }, passed: true, reason: "NoFailingSeries" },
    { check: seed, outcome: { kind: "value", value: 7 }, passed: false, reason: "NonEmptyResult", value: 7 },
    { check: seed, outcome: { kind: "values", values: [3, 4, 5] }, passed: false, reason: "NonEmptyResult", value: 3 },
    { check: seed, outcome: { kind: "value", value: 0 }, passed: false, reason: "NonEmptyResult", value: 0 },
    { check: seed, outcome: { kind: "error", message: "timeout" }, passed: false, reason: "QueryFailed" },
    { check: rate, outcome: { kind: "value", value: 99.5 }, passed: true, reason: "ok", value: 99.5 },
    { check: rate, outcome: { kind: "value", value: 99 }, passed: true, reason: "ok", value: 99 },
    { check: rate, outcome: { kind: "value", value: 98.9 }, passed: false, reason: "BelowMin", value: 98.9 },
    { check: rate, outcome: { kind: "values", values: [50, 100] }, passed: false, reason: "BelowMin", value: 50 },
    { check: rate, outcome: { kind: "empty" }, passed: false, reason: "NoData" },
    { check: rate, outcome: { kind: "value", value: NaN }, passed: false, reason: "NoData" },
    { check: rate, outcome: { kind: "value", value: Infinity }, passed: false, reason: "NoData" },
    { check: rate, outcome: { kind: "error", message: "503" }, passed: false, reason: "QueryFailed" },
    { check: duration, outcome: { kind: "value", value: 500 }, passed: true, reason: "ok", value: 500 },
    { check: duration, outcome: { kind: "value", value: 501 }, passed: false, reason: "AboveMax", value: 501 },
    { check: band, outcome: { kind: "value", value: 0.5 }, passed: false, reason: "BelowMin", value: 0.5 },
    { check: band, outcome: { kind: "value", value: 1.5 }, passed: true, reason: "ok", value: 1.5 },
    { check: band, outcome: { kind: "value", value: 2.5 }, passed: false, reason: "AboveMax", value: 2.5 },
  ];
  for (const c of cases) {
    test(`${c.check.name} ${JSON.stringify(c.outcome)} → ${c.reason}`, () => {
      const r = scoreCheck(c.check, c.outcome);
      assert.equal(r.name, c.check.name);
      assert.equal(r.passed, c.passed);
      assert.equal(r.reason, c.reason);
      assert.equal(r.value, c.value);
      assert.equal(r.min, c.check.min);
      assert.equal(r.max, c.check.max);
    });
  }

  test("messages read as status phrases", () => {
    assert.equal(
      describeResult(scoreCheck(seed, { kind: "value", value: 7 })),
      "prometheusQuery returned 1 failing series (value 7)",
    );
    assert.equal(
      describeResult(scoreCheck(seed, { kind: "values", values: [2, 9] })),
      "prometheusQuery returned 2 failing series (value 2)",
    );
    assert.equal(describeResult(scoreCheck(rate, { kind: "value", value: 99.7 })), "request-success-rate 99.7 ≥ 99");
    assert.equal(describeResult(scoreCheck(duration, { kind: "value", value: 612 })), "request-duration 612 > 500");
    assert.equal(describeResult(scoreCheck(rate, { kind: "empty" })), "request-success-rate had no data");
  });
});

describe("judgeAnalysis", () => {
  const cases: { name: string; results: MetricResult[]; failWhen: boolean; verdict: string; decisive?: string }[] = [
    { name: "all passed", results: [passing("a"), passing("b")], failWhen: true, verdict: "passed" },
    { name: "one failed", results: [passing("a"), failing("b")], failWhen: true, verdict: "failed", decisive: "b" },
    {
      name: "query failed, counting",
      results: [queryFailed("a"), passing("b")],
      failWhen: true,
      verdict: "failed",
      decisive: "a",
    },
    {
      name: "query failed, not counting",
      results: [queryFailed("a"), passing("b")],
      failWhen: false,
      verdict: "inconclusive",
    },
    {
      name: "query failed and a real failure, not counting",
      results: [queryFailed("a"), failing("b")],
      failWhen: false,
      verdict: "failed",
      decisive: "b",
    },
    {
      name: "the real failure is reported before a failed query",
      results: [queryFailed("a"), failing("b")],
      failWhen: true,
      verdict: "failed",
      decisive: "b",
    },
    { name: "no results never pass", results: [], failWhen: true, verdict: "inconclusive" },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const v = judgeAnalysis(c.results, c.failWhen);
      assert.equal(v.kind, c.verdict);
      if (v.kind === "failed") assert.equal(v.decisive.name, c.decisive);
    });
  }
});

describe("formatNumber", () => {
  const cases: [number, string][] = [
    [7, "7"],
    [99.7, "99.7"],
    [99.73456, "99.735"],
    [0.0001, "0"],
    [NaN, "NaN"],
  ];
  for (const [n, s] of cases) test(`${n} → ${s}`, () => assert.equal(formatNumber(n), s));
});
