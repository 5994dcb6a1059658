import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { MetricResult } from "../api/types.js";
import { scoreCheck } from "../analysis/verdicts.js";
import { FakeWorld } from "./fake-world.test-helpers.js";
import {
  V1,
  V2,
  makeApp,
  deployment,
  drainedPlan,
  evidence,
  iso,
  passing,
  queryFailed,
  reasons,
  routed,
  runPlan,
  testing,
  type Scenario,
} from "./fixtures.test-helpers.js";

const noTraffic: MetricResult = {
  name: "secondary-traffic",
  kind: "traffic",
  min: 20,
  passed: false,
  reason: "NoTraffic",
  message: "found no requests to the secondary in 30s (no data; 20 needed)",
  query: 'sum(increase(istio_requests_total{destination_workload="web-secondary"}[30s]))',
  window: "30s",
};

const seedEmpty: MetricResult = {
  name: "prometheusQuery",
  kind: "seed",
  passed: true,
  reason: "NoFailingSeries",
  message: "returned no failing series",
};

/** A test of V2 at step 1 (20 %), one interval in, with the given analysis results. */
function at1(analysis: MetricResult[], extra: Partial<Scenario> = {}, canary = {}): Scenario {
  return {
    image: V2,
    spec: { prometheusQuery: "errors > 2" },
    status: testing({ step: 1, stepStartedAt: iso(0), stepBeganAt: iso(0), ...canary }),
    observed: { secondary: deployment(V2), routedWeights: routed(20), analysis },
    now: 30,
    ...extra,
  };
}

describe("seed mode without evidence", () => {
  test("an empty seed query and no traffic: inconclusive, the step goes on and its window keeps growing", () => {
    const p = runPlan(at1([noTraffic, seedEmpty]));
    const canary = p.status.canary;
    assert.equal(canary?.stage, "Stepping");
    assert.equal(canary?.step, 1);
    assert.equal(canary?.stepStartedAt, iso(30), "the next analysis is one interval away");
    assert.equal(canary?.stepBeganAt, iso(0), "the step's window still starts when its weight did");
    assert.deepEqual(canary?.inconclusive, { count: 1, since: iso(30) });
    assert.equal(canary?.failedChecks, 0);
    assert.equal(canary?.lastAnalysis?.verdict, "Inconclusive");
    assert.deepEqual(p.weights, { primary: 80, secondary: 20 });
    assert.deepEqual(reasons(p), ["AnalysisInconclusive"]);
    assert.match(
      p.events[0]?.message ?? "",
      /no evidence of traffic\); .*1 of 5 analyses without evidence.*found no requests/,
    );
    assert.match(p.events[0]?.message ?? "", /\[window 30s; query sum\(increase/);
  });

  test("at the limit: rolled back NoEvidence, with the value and the query in failedImages", () => {
    const p = runPlan(
      at1(
        [{ ...noTraffic, value: 4, reason: "TooFewRequests" }, seedEmpty],
        {},
        { inconclusive: { count: 4, since: iso(-120) } },
      ),
    );
    assert.equal(p.status.canary?.stage, "RollingBack");
    const failed = p.status.failedImages?.[0];
    assert.equal(failed?.reason, "NoEvidence");
    assert.equal(failed?.metric, "secondary-traffic");
    assert.equal(failed?.value, 4);
    assert.equal(failed?.query, noTraffic.query);
    assert.match(failed?.message ?? "", /no evidence that the secondary served traffic in 5 analyses in a row/);
    assert.deepEqual(p.weights, { primary: 100, secondary: 0 });
    assert.deepEqual(reasons(p), ["AnalysisInconclusive", "RollingBack"]);
  });

  test("after the progress deadline without a verdict: NoEvidence, even below the limit", () => {
    const p = runPlan(
      at1(
        [noTraffic, seedEmpty],
        { analysis: { progressDeadlineSeconds: 60 } },
        { inconclusive: { count: 1, since: iso(-40) } },
      ),
    );
    assert.equal(p.status.failedImages?.[0]?.reason, "NoEvidence");
    assert.match(p.status.failedImages?.[0]?.message ?? "", /no verdict for 60s/);
  });

  test("evidence after an inconclusive analysis: the step passes and the count is forgotten", () => {
    const p = runPlan(at1([evidence(), seedEmpty], {}, { inconclusive: { count: 3, since: iso(-60) } }));
    assert.equal(p.status.canary?.step, 2);
    assert.equal(p.status.canary?.inconclusive, undefined);
    assert.equal(p.status.canary?.stepBeganAt, iso(30));
    assert.deepEqual(reasons(p), ["AnalysisPassed", "StepAdvanced"]);
  });

  test("the seed query's failures fail the step even without evidence of traffic", () => {
    const hit: MetricResult = {
      name: "prometheusQuery",
      kind: "seed",
      value: 7,
      passed: false,
      reason: "NonEmptyResult",
    };
    const p = runPlan(at1([noTraffic, hit]));
    assert.equal(p.status.failedImages?.[0]?.reason, "AnalysisFailed");
    assert.equal(p.status.failedImages?.[0]?.metric, "prometheusQuery");
  });
});

describe("the opt-out: analysis.requireTraffic false", () => {
  test("an empty seed query passes, and status and Event say it was judged without evidence", () => {
    const p = runPlan(at1([seedEmpty], { analysis: { requireTraffic: false } }));
    assert.equal(p.status.canary?.step, 2);
    assert.equal(p.status.canary?.lastAnalysis?.trafficNotRequired, true);
    assert.match(p.status.message ?? "", /passed without evidence of traffic \(analysis\.requireTraffic: false\)/);
    assert.match(p.events[0]?.message ?? "", /passed without evidence of traffic/);
  });
});

describe("Prometheus down with failWhenPrometheusFails false", () => {
  const down = { analysis: { failWhenPrometheusFails: false, progressDeadlineSeconds: 120 } };
  const noAnswer = [{ ...queryFailed("secondary-traffic"), kind: "traffic" as const }, queryFailed("prometheusQuery")];

  test("no answer: the secondary's weight goes to 0 in the same plan", () => {
    const p = runPlan(at1(noAnswer, down));
    assert.deepEqual(p.weights, { primary: 100, secondary: 0 });
    assert.equal(p.status.canary?.trafficWithheld, true);
    assert.equal(p.status.canary?.stage, "Stepping");
    assert.equal(p.status.canary?.failedChecks, 0);
    assert.deepEqual(reasons(p), ["AnalysisInconclusive"]);
    assert.match(p.status.message ?? "", /Prometheus gave no answer .*no traffic until it does/);
    assert.ok(p.requeueAfterSeconds !== undefined && p.requeueAfterSeconds <= 30, "asks again within an interval");
  });

  test("withheld traffic is not a readiness change: the secondary stays at 0 until Prometheus answers", () => {
    const s = at1([], down, {
      trafficWithheld: true,
      stepStartedAt: iso(20),
      inconclusive: { count: 0, since: iso(20) },
    });
    const { analysis: _none, ...observed } = s.observed ?? {};
    const p = runPlan({ ...s, observed: { ...observed, routedWeights: routed(0) } });
    assert.deepEqual(p.weights, { primary: 100, secondary: 0 });
    assert.deepEqual(p.events, []);
  });

  test("an answer: the weight comes back and the step starts over, judging nothing", () => {
    const s = at1([evidence(), seedEmpty], down, {
      trafficWithheld: true,
      inconclusive: { count: 0, since: iso(0) },
    });
    const p = runPlan({ ...s, observed: { ...s.observed, routedWeights: routed(0) } });
    assert.deepEqual(p.weights, { primary: 80, secondary: 20 });
    assert.equal(p.status.canary?.step, 1);
    assert.equal(p.status.canary?.trafficWithheld, undefined);
    assert.equal(p.status.canary?.stepBeganAt, iso(30));
    assert.deepEqual(reasons(p), ["AnalysisResumed"]);
  });

  test("no answer for the whole deadline: NoEvidence", () => {
    const s = at1(noAnswer, down, { trafficWithheld: true, inconclusive: { count: 0, since: iso(-100) } });
    const drained = { ...s, observed: { ...s.observed, routedWeights: routed(0) } };
    const p = runPlan(drained);
    assert.deepEqual(reasons(p), ["AnalysisInconclusive", "RollingBack"]);
    assert.equal(p.status.failedImages?.[0]?.reason, "NoEvidence");
    assert.match(p.status.failedImages?.[0]?.message ?? "", /no verdict for 120s: .*query failed/);
    // It had traffic at step 1 before it was withheld: the rollback ends after the drain period.
    assert.deepEqual(reasons(drainedPlan(drained).plan), ["RolledBack"]);
  });

  test("failWhenPrometheusFails true (the default): a failure as before, nothing withheld", () => {
    const p = runPlan(at1(noAnswer));
    assert.equal(p.status.failedImages?.[0]?.reason, "AnalysisFailed");
    assert.equal(p.status.canary?.trafficWithheld, undefined);
  });
});

describe("a passed analysis tells its figures", () => {
  test("the Event names each result's query, window and rule, and the sample size", () => {
    const rate: MetricResult = {
      ...passing(),
      query: "sum(rate(x[30s]))",
      window: "30s",
      rule: "every series ≥ 99",
      sampleSize: 100,
    };
    const p = runPlan(at1([{ ...evidence(), query: "sum(increase(y[30s]))", window: "30s" }, rate], { spec: {} }));
    assert.equal(p.events[0]?.reason, "AnalysisPassed");
    assert.match(
      p.events[0]?.message ?? "",
      /request-success-rate 99\.9 ≥ 99 \[window 30s; 100 requests; rule every series ≥ 99; query sum\(rate\(x\[30s\]\)\)\]/,
    );
    assert.deepEqual(p.status.canary?.lastAnalysis?.metrics[1], rate);
  });
});

describe("a world whose Prometheus has no Istio metrics", () => {
  test("the seed's manifest (unscoped query, every query empty): no promotion, rolled back NoEvidence", () => {
    const seedQuery = 'increase(istio_requests_total{destination_service_name="web",response_code=~"5.*"}[20s]) > 2';
    const app = makeApp({ image: V1, spec: { prometheusQuery: seedQuery }, analysis: { interval: "5s" } });
    const world = new FakeWorld(app, 3, (checks) => checks.map((c) => scoreCheck(c, { kind: "empty" })));
    world.runToRest();
    world.setImage(V2);
    world.runToRest();
    assert.equal(world.app.status?.primaryImage, V1, "promoted without evidence");
    const failed = world.app.status?.failedImages?.[0];
    assert.equal(failed?.reason, "NoEvidence");
    // The fake world runs the checks as the spec gives them; the reconciler records them rendered.
    assert.match(
      failed?.query ?? "",
      /istio_requests_total\{.*destination_canonical_revision="\{\{secondaryRevision\}\}"/,
    );
    assert.deepEqual(world.routedHistory(), [0, 10, 0], "held at the first step, then back to the primary");
  });
});
