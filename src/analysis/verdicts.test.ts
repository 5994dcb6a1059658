import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { MetricResult } from "../api/types.js";
import { describeResult, formatNumber, judgeAnalysis, scoreAnalysis, scoreCheck } from "./verdicts.js";
import type { AnalysisCheck } from "./checks.js";
import { failing, passing, queryFailed } from "../rollout/fixtures.test-helpers.js";
import type { QueryOutcome } from "./outcome.js";

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
      const v = judgeAnalysis(c.results, { failWhenPrometheusFails: c.failWhen, requireTraffic: false });
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

describe("the traffic check: evidence that the secondary served the step", () => {
  const traffic: AnalysisCheck = {
    name: "secondary-traffic",
    mode: "traffic",
    query: "sum(increase(x[37s]))",
    min: 20,
    window: "37s",
  };
  const cases: { outcome: QueryOutcome; passed: boolean; reason: string; value?: number }[] = [
    { outcome: { kind: "empty" }, passed: false, reason: "NoTraffic" },
    { outcome: { kind: "value", value: NaN }, passed: false, reason: "NoTraffic" },
    { outcome: { kind: "value", value: 0 }, passed: false, reason: "TooFewRequests", value: 0 },
    { outcome: { kind: "value", value: 19.9 }, passed: false, reason: "TooFewRequests", value: 19.9 },
    { outcome: { kind: "value", value: 20 }, passed: true, reason: "TrafficShown", value: 20 },
    { outcome: { kind: "values", values: [12, 9] }, passed: true, reason: "TrafficShown", value: 21 },
    { outcome: { kind: "error", message: "timeout" }, passed: false, reason: "QueryFailed" },
  ];
  for (const c of cases) {
    test(`${JSON.stringify(c.outcome)} → ${c.reason}`, () => {
      const r = scoreCheck(traffic, c.outcome);
      assert.equal(r.kind, "traffic");
      assert.equal(r.passed, c.passed);
      assert.equal(r.reason, c.reason);
      assert.equal(r.value, c.value);
      assert.equal(r.sampleSize, c.value);
      assert.equal(r.query, "sum(increase(x[37s]))");
      assert.equal(r.window, "37s");
      assert.equal(r.rule, "≥ 20 requests to the secondary in the step");
    });
  }

  test("scoreAnalysis gives every result the sample size the traffic check measured", () => {
    const results = scoreAnalysis(
      [traffic, seed, rate],
      [{ kind: "value", value: 42 }, { kind: "empty" }, { kind: "value", value: 100 }],
    );
    assert.deepEqual(
      results.map((r) => [r.name, r.sampleSize, r.rule]),
      [
        ["secondary-traffic", 42, "≥ 20 requests to the secondary in the step"],
        ["prometheusQuery", 42, "no series (any series is a failure)"],
        ["request-success-rate", 42, "every series ≥ 99"],
      ],
    );
  });
});

describe("threshold checks judge every series", () => {
  const latency: AnalysisCheck = { name: "latency", mode: "threshold", query: "q", max: 500 };
  const labelled = (values: number[]): QueryOutcome => ({
    kind: "values",
    values,
    labels: values.map((_, i) => `{pod="p${i}"}`),
  });

  test("one bad series among good ones fails, and is named", () => {
    const r = scoreCheck(latency, labelled([120, 130, 800, 90]));
    assert.equal(r.passed, false);
    assert.equal(r.reason, "AboveMax");
    assert.equal(r.value, 800);
    assert.deepEqual(r.values, [120, 130, 800, 90]);
    assert.deepEqual(r.failingSeries, ['{pod="p2"}']);
    assert.equal(describeResult(r), 'latency {pod="p2"}: 800 > 500 (1 of 4 series)');
  });

  test("the bad series is found wherever Prometheus puts it", () => {
    for (const values of [
      [800, 1, 1],
      [1, 800, 1],
      [1, 1, 800],
    ]) {
      assert.equal(scoreCheck(latency, labelled(values)).passed, false, JSON.stringify(values));
    }
  });

  test("every bad series is named", () => {
    const r = scoreCheck(latency, labelled([900, 1, 700]));
    assert.deepEqual(r.failingSeries, ['{pod="p0"}', '{pod="p2"}']);
  });

  test("all series within bounds pass", () => {
    const r = scoreCheck(latency, labelled([1, 2, 3]));
    assert.equal(r.passed, true);
    assert.equal(r.message, "3 series, all ≤ 500");
  });

  test("a NaN series among good ones is no data, never a pass", () => {
    const r = scoreCheck(latency, labelled([1, NaN]));
    assert.equal(r.passed, false);
    assert.equal(r.reason, "NoData");
    assert.match(r.message ?? "", /pod="p1"/);
  });

  test("series without labels are named by their place", () => {
    const r = scoreCheck(latency, { kind: "values", values: [1, 600] });
    assert.deepEqual(r.failingSeries, ["series 2"]);
  });
});

describe("judgeAnalysis: no pass without evidence", () => {
  const traffic = (reason: string, passed: boolean, value?: number): MetricResult => ({
    name: "secondary-traffic",
    kind: "traffic",
    passed,
    reason,
    ...(value !== undefined ? { value } : {}),
  });
  const shown = traffic("TrafficShown", true, 100);
  const none = traffic("NoTraffic", false);
  const few = traffic("TooFewRequests", false, 3);
  const down = { ...traffic("QueryFailed", false), message: "query failed: connection refused" };
  const seedEmpty: MetricResult = { name: "prometheusQuery", kind: "seed", passed: true, reason: "NoFailingSeries" };
  const seedHit: MetricResult = { name: "prometheusQuery", kind: "seed", passed: false, reason: "NonEmptyResult" };
  const noData: MetricResult = { name: "request-success-rate", passed: false, reason: "NoData" };
  const cases: {
    name: string;
    results: MetricResult[];
    failWhen?: boolean;
    requireTraffic?: boolean;
    verdict: string;
    cause?: string;
    decisive?: string;
  }[] = [
    { name: "evidence and an empty seed query: passed", results: [shown, seedEmpty], verdict: "passed" },
    {
      name: "no traffic, empty seed query: inconclusive",
      results: [none, seedEmpty],
      verdict: "inconclusive",
      cause: "NoEvidence",
    },
    { name: "too few requests: inconclusive", results: [few, passing()], verdict: "inconclusive", cause: "NoEvidence" },
    {
      name: "no traffic and no data: inconclusive, not failed",
      results: [none, noData],
      verdict: "inconclusive",
      cause: "NoEvidence",
    },
    {
      name: "evidence and no data: failed",
      results: [shown, noData],
      verdict: "failed",
      decisive: "request-success-rate",
    },
    {
      name: "no traffic but the seed query found failures: failed",
      results: [none, seedHit],
      verdict: "failed",
      decisive: "prometheusQuery",
    },
    { name: "no traffic but a bound broken: failed", results: [few, failing("b")], verdict: "failed", decisive: "b" },
    {
      name: "no traffic check among the results: inconclusive",
      results: [passing()],
      verdict: "inconclusive",
      cause: "NoEvidence",
    },
    {
      name: "Prometheus down, counting: failed, named by the spec's own check",
      results: [down, queryFailed()],
      verdict: "failed",
      decisive: "request-success-rate",
    },
    {
      name: "only the traffic query failed, counting: failed",
      results: [down, passing()],
      verdict: "failed",
      decisive: "secondary-traffic",
    },
    {
      name: "Prometheus down, not counting: inconclusive for want of an answer",
      results: [down, queryFailed()],
      failWhen: false,
      verdict: "inconclusive",
      cause: "PrometheusUnavailable",
    },
    {
      name: "a comparison without enough samples: inconclusive",
      results: [shown, { name: "compare-with-primary", kind: "compare", passed: false, reason: "TooFewSamples" }],
      verdict: "inconclusive",
      cause: "NoEvidence",
    },
    {
      name: "a comparison that could not measure one track's latency: inconclusive, never a pass",
      results: [shown, { name: "compare-with-primary", kind: "compare", passed: false, reason: "LatencyUnmeasured" }],
      verdict: "inconclusive",
      cause: "NoEvidence",
    },
    {
      name: "a comparison that finds the secondary worse: failed",
      results: [shown, { name: "compare-with-primary", kind: "compare", passed: false, reason: "ErrorRatioWorse" }],
      verdict: "failed",
      decisive: "compare-with-primary",
    },
    {
      name: "the opt-out: an empty seed query passes, saying so",
      results: [seedEmpty],
      requireTraffic: false,
      verdict: "passed",
    },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const v = judgeAnalysis(c.results, {
        failWhenPrometheusFails: c.failWhen ?? true,
        requireTraffic: c.requireTraffic ?? true,
      });
      assert.equal(v.kind, c.verdict);
      if (v.kind === "failed") assert.equal(v.decisive.name, c.decisive);
      if (v.kind === "inconclusive") assert.equal(v.cause, c.cause);
      if (v.kind === "passed") assert.equal(v.trafficNotRequired === true, c.requireTraffic === false);
    });
  }
});
