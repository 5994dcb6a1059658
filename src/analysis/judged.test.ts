import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { AnalysisCheck, JudgeSettings } from "./checks.js";
import { SCORE_CHECK_NAME } from "./judged.js";
import type { QueryOutcome } from "./outcome.js";
import { judgeAnalysis, scoreAnalysis } from "./verdicts.js";

const SETTINGS: JudgeSettings = {
  direction: "increase",
  effectTolerance: 0.1,
  minSamples: 10,
  confidence: 0.95,
  weight: 1,
  critical: false,
  mustHaveData: true,
  intervalSeconds: 2,
  score: { pass: 95, marginal: 75 },
  look: { index: 1, planned: 2 },
};

function pair(name: string, settings: Partial<JudgeSettings> = {}): AnalysisCheck[] {
  return (["primary", "secondary"] as const).map((track) => ({
    name,
    mode: "judge",
    query: `q{revision="${track}"}`,
    track,
    window: "20s",
    judge: { ...SETTINGS, ...settings },
  }));
}

/** Twelve samples around `centre`, a deterministic wobble of ±5 %. */
function samples(centre: number, phase = 0): QueryOutcome {
  return {
    kind: "samples",
    values: Array.from({ length: 12 }, (_, i) => centre * (1 + 0.05 * Math.sin(i * 1.7 + phase))),
  };
}

const judge = { failWhenPrometheusFails: true, requireTraffic: false };

describe("judged metrics and their score", () => {
  test("+30 % on the secondary's median: the metric is Increased, the score 50 fails, the latency metric decides", () => {
    const checks = [...pair("latency-p50"), ...pair("error-ratio")];
    const results = scoreAnalysis(checks, [samples(20), samples(26, 1), samples(0.01), samples(0.01, 1)]);
    assert.deepEqual(
      results.map((r) => [r.name, r.kind, r.reason]),
      [
        ["latency-p50", "judge", "Increased"],
        ["error-ratio", "judge", "ok"],
        [SCORE_CHECK_NAME, "score", "ScoreFailed"],
      ],
    );
    const latency = results[0];
    assert.equal(latency?.figures?.["secondarySamples"], 12);
    assert.equal(latency?.figures?.["primarySamples"], 12);
    assert.ok((latency?.figures?.["relativeShift"] ?? 0) > 0.2, JSON.stringify(latency?.figures));
    assert.ok((latency?.figures?.["p"] ?? 1) < (latency?.figures?.["alpha"] ?? 0));
    assert.equal(results[2]?.value, 50);
    const verdict = judgeAnalysis(results, judge);
    assert.equal(verdict.kind, "failed");
    if (verdict.kind !== "failed") return;
    assert.equal(verdict.decisive.name, "latency-p50");
    assert.match(
      verdict.decisive.message ?? "",
      /^secondary median 26\.\d+ vs primary 19\.\d+; shift 6\.\d+ \[5\.\d+, 6\.\d+\] \(\+30\.7 % of the primary's median\), U 144, p [\d.]+e-\d+ < α 0\.025; 12\/12 samples; canary-score 50 < 75 \(2 of 2 metrics counted\)$/,
    );
  });

  test("noise only: every metric passes, the score is 100", () => {
    const results = scoreAnalysis(pair("latency-p50"), [samples(20), samples(20, 2)]);
    assert.equal(results[0]?.reason, "ok");
    assert.equal(results[1]?.reason, "ScorePassed");
    assert.equal(results[1]?.value, 100);
    assert.deepEqual(judgeAnalysis(results, judge), { kind: "passed", trafficNotRequired: true });
  });

  test("a marginal score goes on before the last step and fails at it", () => {
    const checks = (look: { index: number; planned: number }) => [
      ...pair("latency-p50", { weight: 1, look }),
      ...pair("throughput", { weight: 3, look }),
    ];
    const outcomes = [samples(20), samples(26, 1), samples(100), samples(100, 1)];
    const early = scoreAnalysis(checks({ index: 1, planned: 2 }), outcomes);
    assert.equal(early[2]?.reason, "ScoreMarginal");
    assert.equal(early[2]?.value, 75);
    assert.equal(judgeAnalysis(early, judge).kind, "passed");
    const last = scoreAnalysis(checks({ index: 2, planned: 2 }), outcomes);
    assert.equal(last[2]?.reason, "ScoreFailed");
    assert.equal(judgeAnalysis(last, judge).kind, "failed");
  });

  test("a critical metric that fails fails the analysis whatever the score", () => {
    const checks = [...pair("latency-p50", { critical: true }), ...pair("a"), ...pair("b"), ...pair("c"), ...pair("d")];
    const ok = [samples(5), samples(5, 1)];
    const results = scoreAnalysis(checks, [samples(20), samples(26, 1), ...ok, ...ok, ...ok, ...ok]);
    const score = results.find((r) => r.name === SCORE_CHECK_NAME);
    assert.equal(score?.reason, "CriticalMetricFailed");
    const verdict = judgeAnalysis(results, judge);
    assert.equal(verdict.kind === "failed" ? verdict.decisive.name : verdict.kind, "latency-p50");
  });

  test("no data on a track is a failed metric (mustHaveData); too few samples leave nothing judged", () => {
    const none = scoreAnalysis(pair("latency-p50"), [samples(20), { kind: "empty" }]);
    assert.equal(none[0]?.reason, "NoData");
    assert.equal(none[1]?.reason, "ScoreFailed");
    const few = scoreAnalysis(pair("latency-p50"), [samples(20), { kind: "samples", values: [20, 21, 22] }]);
    assert.equal(few[0]?.reason, "TooFewSamples");
    assert.equal(few[1]?.reason, "ScoreUnjudged");
    const verdict = judgeAnalysis(few, judge);
    assert.equal(verdict.kind, "inconclusive");
  });

  test("a failed query is judged as any failed query, and not scored", () => {
    const results = scoreAnalysis(pair("latency-p50"), [samples(20), { kind: "error", message: "timeout" }]);
    assert.equal(results[0]?.reason, "QueryFailed");
    assert.equal(results[0]?.message, "the secondary's query failed: timeout");
    assert.equal(results.length, 1, "no score without a counted metric");
    const waits = judgeAnalysis(results, { ...judge, failWhenPrometheusFails: false });
    assert.equal(waits.kind === "inconclusive" ? waits.cause : waits.kind, "PrometheusUnavailable");
    assert.equal(judgeAnalysis(results, judge).kind, "failed");
  });
});
