import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { CompareSettings, Figure } from "./comparison.js";
import { COMPARE_QUERY, Z_CRITICAL, judgeComparison, readFigures, twoProportionZ } from "./comparison.js";
import { scoreCheck } from "./verdicts.js";
import { renderQuery } from "./templates.js";

const settings: CompareSettings = { minSamples: 100, errorMarginPercent: 1, latencyRatioMax: 1.5 };

describe("twoProportionZ", () => {
  test("a textbook case: 30/300 against 15/300", () => {
    // pooled 45/600 = 0.075; se = sqrt(0.075 * 0.925 * (2/300)) = 0.02151; (0.1 - 0.05)/se = 2.325
    assert.equal(Math.round(twoProportionZ(15, 300, 30, 300) * 1000) / 1000, 2.325);
  });
  test("no errors anywhere: 0, not NaN", () => assert.equal(twoProportionZ(0, 100, 0, 100), 0));
  test("a better secondary is negative", () => assert.ok(twoProportionZ(50, 1000, 0, 300) < 0));
});

describe("judgeComparison", () => {
  const cases: { name: string; f: Partial<Record<Figure, number>>; reason: string; passed: boolean }[] = [
    {
      name: "a primary with errors at rest, a clean secondary: passes",
      f: { primary_total: 3000, primary_errors: 300, secondary_total: 300, secondary_errors: 0 },
      reason: "ok",
      passed: true,
    },
    {
      name: "the same error ratio on both: passes",
      f: { primary_total: 3000, primary_errors: 60, secondary_total: 300, secondary_errors: 6 },
      reason: "ok",
      passed: true,
    },
    {
      name: "a clearly worse secondary: fails",
      f: { primary_total: 3000, primary_errors: 30, secondary_total: 300, secondary_errors: 90 },
      reason: "ErrorRatioWorse",
      passed: false,
    },
    {
      name: "significant but within the margin (a huge sample, +0.5 points): passes",
      f: { primary_total: 1e6, primary_errors: 1e4, secondary_total: 1e6, secondary_errors: 1.5e4 },
      reason: "ok",
      passed: true,
    },
    {
      name: "above the margin but not significant (3 errors in 100): passes",
      f: { primary_total: 100, primary_errors: 1, secondary_total: 100, secondary_errors: 3 },
      reason: "ok",
      passed: true,
    },
    {
      name: "no 5xx series on either track: no errors, passes",
      f: { primary_total: 500, secondary_total: 200 },
      reason: "ok",
      passed: true,
    },
    {
      name: "too few secondary requests: no verdict",
      f: { primary_total: 3000, primary_errors: 0, secondary_total: 99, secondary_errors: 0 },
      reason: "TooFewSamples",
      passed: false,
    },
    { name: "no data at all: no verdict", f: {}, reason: "TooFewSamples", passed: false },
    {
      name: "a p99 twice the primary's: fails",
      f: { primary_total: 500, secondary_total: 500, primary_p99: 100, secondary_p99: 200 },
      reason: "LatencyWorse",
      passed: false,
    },
    {
      name: "a p99 in the +Inf bucket: fails",
      f: { primary_total: 500, secondary_total: 500, primary_p99: 100, secondary_p99: Infinity },
      reason: "LatencyWorse",
      passed: false,
    },
    {
      name: "a p99 within the bound: passes",
      f: { primary_total: 500, secondary_total: 500, primary_p99: 100, secondary_p99: 140 },
      reason: "ok",
      passed: true,
    },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const r = judgeComparison(c.f, settings);
      assert.equal(r.reason, c.reason, r.message);
      assert.equal(r.passed, c.passed);
    });
  }

  /*
   * What the message says of the errors: both tests, each with its verdict, joined by "and" when they
   * agree and by "but" when only one of them finds the secondary worse (the step fails only when both do).
   */
  const said: { name: string; f: Partial<Record<Figure, number>>; passed: boolean; message: RegExp }[] = [
    {
      name: "significant and beyond the margin: fails, and says both",
      f: { primary_total: 3000, primary_errors: 30, secondary_total: 300, secondary_errors: 90 },
      passed: false,
      message: /: z \d+\.?\d* > 2\.326 \(significant\) and \+29 points > 1 \(beyond the margin\)$/,
    },
    {
      name: "significant but within the margin: passes on the margin, not on z",
      f: { primary_total: 1e6, primary_errors: 1e4, secondary_total: 1e6, secondary_errors: 1.5e4 },
      passed: true,
      message: /: z 31\.\d+ > 2\.326 \(significant\) but \+0\.5 points ≤ 1 \(within the margin\);/,
    },
    {
      name: "beyond the margin but not significant: passes on z, not on the margin",
      f: { primary_total: 100, primary_errors: 1, secondary_total: 100, secondary_errors: 3 },
      passed: true,
      message: /: \+2 points > 1 \(beyond the margin\) but z \d\.\d+ ≤ 2\.326 \(not significant\);/,
    },
    {
      name: "neither: passes on both",
      f: { primary_total: 3000, primary_errors: 300, secondary_total: 300, secondary_errors: 0 },
      passed: true,
      message: /: z -\d+\.?\d* ≤ 2\.326 \(not significant\) and -10 points ≤ 1 \(within the margin\);/,
    },
  ];
  for (const c of said) {
    test(`the errors' message: ${c.name}`, () => {
      const r = judgeComparison(c.f, settings);
      assert.equal(r.passed, c.passed);
      assert.match(r.message ?? "", c.message);
      assert.doesNotMatch(r.message ?? "", c.passed ? /> 2\.326 \(significant\) and/ : /≤ 2\.326/);
    });
  }

  /*
   * The latency check runs whenever either track has a p99 in the window. A p99 of 0 ms is no measurement
   * (Prometheus' histogram_quantile gives more than 0 for any request in Istio's buckets, NaN for none).
   * Without a primary p99 to compare with, a secondary's p99 is never passed: it is inconclusive.
   */
  const enough = { primary_total: 500, secondary_total: 500 };
  const latency: {
    name: string;
    f: Partial<Record<Figure, number>>;
    settings?: CompareSettings;
    reason: string;
    passed: boolean;
    message: RegExp;
  }[] = [
    {
      name: "a primary p99 of 0 against a secondary at 5 s: no verdict, never a pass",
      f: { ...enough, primary_p99: 0, secondary_p99: 5000 },
      reason: "LatencyUnmeasured",
      passed: false,
      message: /p99 5000 ms, but the primary has no p99 to compare it with \(0 ms\)/,
    },
    {
      name: "no primary histogram against a secondary at 5 s: no verdict",
      f: { ...enough, secondary_p99: 5000 },
      reason: "LatencyUnmeasured",
      passed: false,
      message: /p99 5000 ms, but the primary has no p99 to compare it with \(no latency histogram in the window\)/,
    },
    {
      name: "a primary without any request against a secondary at 5 s: too few samples, never a pass",
      f: { primary_total: 0, secondary_total: 500, secondary_p99: 5000 },
      reason: "TooFewSamples",
      passed: false,
      message: /too few requests to compare: secondary 500, primary 0/,
    },
    {
      name: "a primary p99 and none for the secondary: no verdict",
      f: { ...enough, primary_p99: 100 },
      reason: "LatencyUnmeasured",
      passed: false,
      message: /the secondary has no p99 \(no latency histogram in the window\) to compare with the primary's 100 ms/,
    },
    {
      name: "both p99s 0: no verdict",
      f: { ...enough, primary_p99: 0, secondary_p99: 0 },
      reason: "LatencyUnmeasured",
      passed: false,
      message: /the secondary has no p99 \(0 ms\)/,
    },
    {
      name: "no primary p99, a secondary above request-duration's max: fails on the absolute bound",
      f: { ...enough, secondary_p99: 5000 },
      settings: { ...settings, latencyMaxMs: 500 },
      reason: "LatencyWorse",
      passed: false,
      message: /p99 5000 ms, but the primary has no p99 to compare it with .*; > 500 ms \(request-duration max\)$/,
    },
    {
      name: "a primary p99 of 0, a secondary within request-duration's max: passes on the absolute bound",
      f: { ...enough, primary_p99: 0, secondary_p99: 300 },
      settings: { ...settings, latencyMaxMs: 500 },
      reason: "ok",
      passed: true,
      message: /p99 300 ms, but the primary has no p99 to compare it with \(0 ms\); ≤ 500 ms \(request-duration max\)$/,
    },
    {
      name: "the absolute bound never stands in for the secondary's own p99",
      f: { ...enough, primary_p99: 100 },
      settings: { ...settings, latencyMaxMs: 500 },
      reason: "LatencyUnmeasured",
      passed: false,
      message: /the secondary has no p99/,
    },
    {
      name: "both in the +Inf bucket: a ratio of 1, not NaN",
      f: { ...enough, primary_p99: Infinity, secondary_p99: Infinity },
      reason: "ok",
      passed: true,
      message: /ratio 1 ≤ 1\.5$/,
    },
    {
      name: "no histogram on either track: the errors decide, and the message says latency was not compared",
      f: { ...enough },
      reason: "ok",
      passed: true,
      message: /; p99 not compared: neither track has a latency histogram in the window$/,
    },
    {
      name: "a p99 within the bound: passes, and says the ratio and the bound",
      f: { ...enough, primary_p99: 100, secondary_p99: 140 },
      reason: "ok",
      passed: true,
      message: /; p99 140 ms vs primary 100 ms, ratio 1\.4 ≤ 1\.5$/,
    },
    {
      name: "a p99 beyond the bound: fails, and says the ratio and the bound",
      f: { ...enough, primary_p99: 100, secondary_p99: 200 },
      reason: "LatencyWorse",
      passed: false,
      message: /; p99 200 ms vs primary 100 ms, ratio 2 > 1\.5$/,
    },
  ];
  for (const c of latency) {
    test(`latency: ${c.name}`, () => {
      const r = judgeComparison(c.f, c.settings ?? settings);
      assert.equal(r.reason, c.reason, r.message);
      assert.equal(r.passed, c.passed);
      assert.match(r.message ?? "", c.message);
    });
  }

  test("the figures are in the result and the message", () => {
    const r = judgeComparison(
      { primary_total: 3000, primary_errors: 30, secondary_total: 300, secondary_errors: 90 },
      settings,
    );
    assert.equal(r.sampleSize, 300);
    assert.equal(r.value, 30);
    assert.equal(r.figures?.["secondaryErrors"], 90);
    assert.equal(r.figures?.["primaryErrorRatio"], 0.01);
    assert.ok((r.figures?.["z"] ?? 0) > Z_CRITICAL);
    assert.match(
      r.message ?? "",
      /^errors 90\/300 \(30 %\) vs primary 30\/3000 \(1 %\): z \d+(\.\d+)? > 2\.326 \(significant\) and \+29 points > 1 \(beyond the margin\)$/,
    );
  });
});

describe("the comparison query", () => {
  test("renders with the app's variables, one series per figure", () => {
    const q = renderQuery(COMPARE_QUERY, {
      name: "web",
      namespace: "shop",
      primary: "web-primary",
      secondary: "web-secondary",
      service: "web",
      interval: "30s",
      stepWindow: "37s",
      stepStart: "0",
      primaryRevision: "1a2b",
      secondaryRevision: "3c4d",
      track: "secondary",
      workload: "web-secondary",
      revision: "3c4d",
    });
    assert.match(
      q,
      /destination_canonical_service="web",destination_canonical_revision="1a2b",response_code=~"5\.\*"\}\[37s\]/,
    );
    assert.match(q, /destination_canonical_revision="3c4d"\}\[37s\]/);
    assert.equal(q.match(/label_replace/g)?.length, 6);
    assert.doesNotMatch(q, /\{\{|TRACK|SELECT/);
  });

  test("figures are read by their label; NaN is absent", () => {
    assert.deepEqual(
      readFigures({
        kind: "values",
        values: [10, NaN, 3],
        labels: ['{figure="primary_total"}', '{figure="primary_p99"}', '{figure="secondary_total"}'],
      }),
      { primary_total: 10, secondary_total: 3 },
    );
    assert.deepEqual(readFigures({ kind: "empty" }), {});
  });

  test("scored as a check: judged, with its rule", () => {
    const r = scoreCheck(
      { name: "compare-with-primary", mode: "compare", query: "q", compare: settings },
      {
        kind: "values",
        values: [3000, 300, 300, 0],
        labels: [
          '{figure="primary_total"}',
          '{figure="primary_errors"}',
          '{figure="secondary_total"}',
          '{figure="secondary_errors"}',
        ],
      },
    );
    assert.equal(r.kind, "compare");
    assert.equal(r.passed, true);
    assert.match(r.rule ?? "", /≥ 100 requests on each track/);
  });
});
