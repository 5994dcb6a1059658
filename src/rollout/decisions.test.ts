import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { CanaryState, MetricResult } from "../api/types.js";
import type { Verdict } from "../analysis/verdicts.js";
import type { ApprovalAnswer, ObservedDigest } from "./decisions.js";
import type { Progress, TestFacts } from "./test-facts.js";
import {
  approvalDue,
  digestFailure,
  capacityWait,
  gateDue,
  promoteRefusal,
  promotionDue,
  promotionGateReached,
  rollbackDue,
  routeHandoverDue,
  secondaryHeld,
  secondaryRemovable,
  secondaryServiceTrack,
  stepComplete,
  stepDue,
} from "./decisions.js";
import { routeCarries, stepClockStart } from "./test-facts.js";
import { clockAfterPause, resumedClocks } from "./paused-clocks.js";
import { replicasForWeight, secondaryReplicas } from "./replicas.js";
import type { Weights } from "./types.js";

/*
 * One table per question. The baseline is a test of v2 stepping at step 1 of 5, secondary ready (and
 * ready before), one interval passed, no request, a valid spec; each row changes what it names.
 */

const failure: MetricResult = { name: "error-rate", value: 7, passed: false, reason: "AboveMax", message: "7 > 1" };
const PASSED: Verdict = { kind: "passed" };
const FAILED: Verdict = { kind: "failed", decisive: failure };
const INCONCLUSIVE: Verdict = { kind: "inconclusive", cause: "PrometheusUnavailable", message: "prometheus down" };

function facts(over: Partial<Omit<TestFacts, "progress">> = {}, progress: Partial<Progress> | null = {}): TestFacts {
  const base: TestFacts = {
    stage: "Stepping",
    image: "app:v2",
    specImage: "app:v2",
    primaryImage: "app:v1",
    step: 1,
    steps: 5,
    paused: false,
    secondaryReady: true,
    specValid: true,
    manualPromotion: false,
    abortRequested: false,
    promoteRequested: false,
    failedChecks: 0,
    threshold: 1,
    progressDeadlineSeconds: 600,
    inconclusiveLimit: 5,
    trafficWithheld: false,
    nextStepCapacity: true,
    ...over,
  };
  if (progress === null) return base;
  return {
    ...base,
    progress: {
      readinessChanged: false,
      deadlinePassed: false,
      routed: true,
      intervalPassed: true,
      inconclusiveAnalyses: 0,
      noVerdictDeadlinePassed: false,
      ...progress,
    },
  };
}

const last = { step: 4 };

describe("stepComplete: when does a step end?", () => {
  const cases: { name: string; f: TestFacts; want: boolean }[] = [
    { name: "one interval at the step's weight", f: facts(), want: true },
    { name: "before the interval", f: facts({}, { intervalPassed: false }), want: false },
    {
      name: "decided but never seen on the route (however long ago)",
      f: facts({}, { routed: false, intervalPassed: true }),
      want: false,
    },
    { name: "paused", f: facts({ paused: true }), want: false },
    { name: "secondary not ready", f: facts({ secondaryReady: false }), want: false },
    { name: "readiness just changed (the step restarts)", f: facts({}, { readinessChanged: true }), want: false },
    { name: "invalid spec: the checks cannot run", f: facts({ specValid: false }), want: false },
    { name: "waiting for the secondary", f: facts({ stage: "WaitingForSecondary", step: -1 }), want: false },
    { name: "awaiting promotion", f: facts({ stage: "AwaitingPromotion", ...last }), want: false },
    { name: "while requests are answered (no progress yet)", f: facts({}, null), want: false },
    { name: "the next step's pods not yet Available (weighted)", f: facts({ nextStepCapacity: false }), want: false },
    { name: "on the last step no weight is added", f: facts({ nextStepCapacity: false, ...last }), want: true },
  ];
  for (const c of cases) test(c.name, () => assert.equal(stepComplete(c.f), c.want));
});

describe("capacityWait: when does a step wait for pods?", () => {
  const cases: { name: string; f: TestFacts; want: boolean }[] = [
    { name: "the next step's pods not yet Available", f: facts({ nextStepCapacity: false }), want: true },
    { name: "they are", f: facts(), want: false },
    { name: "before the interval", f: facts({ nextStepCapacity: false }, { intervalPassed: false }), want: false },
    { name: "paused", f: facts({ nextStepCapacity: false, paused: true }), want: false },
    { name: "the last step adds no weight", f: facts({ nextStepCapacity: false, ...last }), want: false },
    { name: "secondary not ready", f: facts({ nextStepCapacity: false, secondaryReady: false }), want: false },
  ];
  for (const c of cases) test(c.name, () => assert.equal(capacityWait(c.f), c.want));
});

describe("secondaryReplicas: how many pods does the secondary run?", () => {
  const weights = [10, 25, 50];
  const base = { replicas: 10, testReplicas: 1, weights, scaling: "weighted" as const };
  const cases: { name: string; f: Parameters<typeof secondaryReplicas>[0]; want: number }[] = [
    { name: "fixed: testReplicas throughout", f: { ...base, scaling: "fixed", stage: "Stepping", step: 1 }, want: 1 },
    { name: "starting: the first step's weight", f: { ...base, stage: "WaitingForSecondary", step: -1 }, want: 1 },
    { name: "step 0 (10 %): ready for step 1 (25 % of 10 → 3)", f: { ...base, stage: "Stepping", step: 0 }, want: 3 },
    { name: "step 1: ready for 50 % → 5", f: { ...base, stage: "Stepping", step: 1 }, want: 5 },
    { name: "last step: its own weight", f: { ...base, stage: "Stepping", step: 2 }, want: 5 },
    { name: "awaiting promotion: the last weight", f: { ...base, stage: "AwaitingPromotion", step: 2 }, want: 5 },
    { name: "promoting: the last weight", f: { ...base, stage: "Promoting", step: 2 }, want: 5 },
    { name: "rolling back: kept until it goes", f: { ...base, stage: "RollingBack", step: 1 }, want: 3 },
    { name: "never below testReplicas", f: { ...base, testReplicas: 4, stage: "Stepping", step: 0 }, want: 4 },
  ];
  for (const c of cases) test(c.name, () => assert.equal(secondaryReplicas(c.f), c.want));

  test("replicasForWeight is ceil(replicas × weight / 100), at least testReplicas", () => {
    assert.equal(replicasForWeight(10, 1, 50), 5);
    assert.equal(replicasForWeight(10, 1, 51), 6);
    assert.equal(replicasForWeight(3, 1, 10), 1);
    assert.equal(replicasForWeight(3, 2, 0), 2);
    assert.equal(replicasForWeight(1000, 1, 100), 1000);
  });
});

describe("stepDue: when does a step begin?", () => {
  const waiting = { stage: "WaitingForSecondary" as const, step: -1 };
  const cases: { name: string; f: TestFacts; want: ReturnType<typeof stepDue> }[] = [
    {
      name: "the secondary became ready: the first step",
      f: facts(waiting, { readinessChanged: true }),
      want: "SecondaryReady",
    },
    { name: "first step, but paused", f: facts({ ...waiting, paused: true }), want: undefined },
    { name: "first step, but the checks cannot run", f: facts({ ...waiting, specValid: false }), want: undefined },
    { name: "first step, secondary not ready", f: facts({ ...waiting, secondaryReady: false }), want: undefined },
    { name: "a passed step that is not the last", f: facts({}, { verdict: PASSED }), want: "AnalysisPassed" },
    { name: "the last step passed: promotion, not a step", f: facts(last, { verdict: PASSED }), want: undefined },
    { name: "a failed step", f: facts({}, { verdict: FAILED }), want: undefined },
    { name: "an inconclusive step", f: facts({}, { verdict: INCONCLUSIVE }), want: undefined },
    { name: "no verdict yet", f: facts(), want: undefined },
    {
      name: "readiness changed: the step restarts",
      f: facts({}, { readinessChanged: true }),
      want: "ReadinessChanged",
    },
    {
      name: "readiness changed while paused: restarts too",
      f: facts({ paused: true }, { readinessChanged: true }),
      want: "ReadinessChanged",
    },
    {
      name: "readiness changed awaiting promotion",
      f: facts({ stage: "AwaitingPromotion", ...last }, { readinessChanged: true }),
      want: "ReadinessChanged",
    },
    { name: "promoting", f: facts({ stage: "Promoting" }, { verdict: PASSED }), want: undefined },
    { name: "while requests are answered", f: facts({}, null), want: undefined },
  ];
  for (const c of cases) test(c.name, () => assert.equal(stepDue(c.f), c.want));
});

describe("promotionDue: when does it promote?", () => {
  const requested = { promoteRequested: true };
  const awaiting = { stage: "AwaitingPromotion" as const, ...last };
  const cases: { name: string; f: TestFacts; want: ReturnType<typeof promotionDue> }[] = [
    { name: "the last step passed", f: facts(last, { verdict: PASSED }), want: "AnalysisPassed" },
    { name: "a step that is not the last passed", f: facts({}, { verdict: PASSED }), want: undefined },
    { name: "the last step failed", f: facts(last, { verdict: FAILED }), want: undefined },
    { name: "the last step was inconclusive", f: facts(last, { verdict: INCONCLUSIVE }), want: undefined },
    {
      name: "the last step passed behind a manual gate",
      f: facts({ ...last, manualPromotion: true }, { verdict: PASSED }),
      want: undefined,
    },
    { name: "awaiting, the gate removed from the spec", f: facts(awaiting), want: "AnalysisPassed" },
    { name: "awaiting, the gate still set", f: facts({ ...awaiting, manualPromotion: true }), want: undefined },
    { name: "awaiting, paused", f: facts({ ...awaiting, paused: true }), want: undefined },
    { name: "awaiting, the secondary not ready", f: facts({ ...awaiting, secondaryReady: false }), want: undefined },
    { name: "awaiting, readiness just changed", f: facts(awaiting, { readinessChanged: true }), want: undefined },
    { name: "requested while stepping", f: facts(requested, null), want: "PromotedManually" },
    { name: "requested while paused", f: facts({ ...requested, paused: true }, null), want: "PromotedManually" },
    {
      name: "requested before the first step, the secondary ready",
      f: facts({ ...requested, stage: "WaitingForSecondary", step: -1 }, null),
      want: "PromotedManually",
    },
    {
      name: "requested at the manual gate",
      f: facts({ ...requested, ...awaiting, manualPromotion: true }, null),
      want: "PromotedManually",
    },
    {
      name: "requested, secondary not ready",
      f: facts({ ...requested, secondaryReady: false }, null),
      want: undefined,
    },
    { name: "requested, spec.image changed", f: facts({ ...requested, specImage: "app:v3" }, null), want: undefined },
    { name: "requested while rolling back", f: facts({ ...requested, stage: "RollingBack" }, null), want: undefined },
    { name: "requested while promoting", f: facts({ ...requested, stage: "Promoting" }, null), want: undefined },
  ];
  for (const c of cases) test(c.name, () => assert.equal(promotionDue(c.f), c.want));
});

describe("promoteRefusal: why a promote request is not followed", () => {
  const requested = { promoteRequested: true };
  const cases: { name: string; f: TestFacts; want: ReturnType<typeof promoteRefusal> }[] = [
    { name: "followed", f: facts(requested, null), want: undefined },
    { name: "no request", f: facts({}, null), want: undefined },
    { name: "rolling back", f: facts({ ...requested, stage: "RollingBack" }, null), want: "RollingBack" },
    { name: "promoting already", f: facts({ ...requested, stage: "Promoting" }, null), want: "NotTesting" },
    { name: "finalising", f: facts({ ...requested, stage: "Finalising" }, null), want: "NotTesting" },
    { name: "spec.image changed", f: facts({ ...requested, specImage: "app:v3" }, null), want: "SpecImageChanged" },
    { name: "secondary not ready", f: facts({ ...requested, secondaryReady: false }, null), want: "SecondaryNotReady" },
  ];
  for (const c of cases) test(c.name, () => assert.equal(promoteRefusal(c.f), c.want));

  test("a followed request is exactly one that promotionDue promotes", () => {
    for (const c of cases) {
      assert.equal(
        promotionDue(c.f) === "PromotedManually",
        c.f.promoteRequested && promoteRefusal(c.f) === undefined,
        c.name,
      );
    }
  });
});

describe("promotionGateReached: when does it wait for a person?", () => {
  const gated = { ...last, manualPromotion: true };
  const cases: { name: string; f: TestFacts; want: boolean }[] = [
    { name: "the last step passed behind the gate", f: facts(gated, { verdict: PASSED }), want: true },
    { name: "no gate", f: facts(last, { verdict: PASSED }), want: false },
    { name: "not the last step", f: facts({ manualPromotion: true }, { verdict: PASSED }), want: false },
    { name: "the last step failed", f: facts(gated, { verdict: FAILED }), want: false },
    { name: "no verdict", f: facts(gated), want: false },
  ];
  for (const c of cases) test(c.name, () => assert.equal(promotionGateReached(c.f), c.want));
});

describe("rollbackDue: when does it roll back?", () => {
  const waiting = { stage: "WaitingForSecondary" as const, step: -1, secondaryReady: false };
  const notReady = { secondaryReady: false };
  const cases: { name: string; f: TestFacts; want: string | undefined }[] = [
    { name: "a healthy step", f: facts(), want: undefined },
    { name: "abort while stepping", f: facts({ abortRequested: true }, null), want: "Aborted" },
    {
      name: "abort while waiting for the secondary",
      f: facts({ ...waiting, abortRequested: true }, null),
      want: "Aborted",
    },
    { name: "abort while promoting", f: facts({ stage: "Promoting", abortRequested: true }, null), want: "Aborted" },
    {
      name: "abort while finalising: too late",
      f: facts({ stage: "Finalising", abortRequested: true }, null),
      want: undefined,
    },
    {
      name: "abort while rolling back",
      f: facts({ stage: "RollingBack", abortRequested: true }, null),
      want: undefined,
    },
    {
      name: "abort beats a changed spec.image",
      f: facts({ abortRequested: true, specImage: "app:v3" }, null),
      want: "Aborted",
    },
    { name: "spec.image changed", f: facts({ specImage: "app:v3" }, null), want: "Superseded" },
    { name: "spec.image back to the primary's", f: facts({ specImage: "app:v1" }, null), want: "Superseded" },
    {
      name: "spec.image changed, a promote request unanswered: answered first",
      f: facts({ specImage: "app:v3", promoteRequested: true }, null),
      want: undefined,
    },
    {
      name: "spec.image changed while promoting: the tested image goes on",
      f: facts({ stage: "Promoting", specImage: "app:v3" }, null),
      want: undefined,
    },
    {
      name: "secondary never ready within the deadline",
      f: facts(waiting, { deadlinePassed: true }),
      want: "ProgressDeadlineExceeded",
    },
    { name: "secondary not ready yet, within the deadline", f: facts(waiting), want: undefined },
    {
      name: "a step the route has not carried for the deadline, its apply refused",
      f: facts({ applyRefused: "VirtualService a/web: apply: denied" }, { routed: false, deadlinePassed: true }),
      want: "RouteRefused",
    },
    {
      name: "the same within the deadline",
      f: facts({ applyRefused: "VirtualService a/web: apply: denied" }, { routed: false }),
      want: undefined,
    },
    {
      name: "the same, paused",
      f: facts(
        { applyRefused: "VirtualService a/web: apply: denied", paused: true },
        { routed: false, deadlinePassed: true },
      ),
      want: undefined,
    },
    {
      name: "a step not on the route for the deadline, nothing refused (the route is applied again)",
      f: facts({}, { routed: false, deadlinePassed: true }),
      want: undefined,
    },
    {
      name: "an apply refused while the route carries the step: nothing holds it",
      f: facts({ applyRefused: "Deployment a/web-secondary: apply: invalid" }, { deadlinePassed: true }),
      want: undefined,
    },
    {
      name: "an apply refused, the secondary not ready for the deadline: that is the reason",
      f: facts({ applyRefused: "denied", secondaryReady: false }, { routed: false, deadlinePassed: true }),
      want: "SecondaryNotReady",
    },
    {
      name: "an apply refused while awaiting promotion: a person decides, nothing is held",
      f: facts(
        { stage: "AwaitingPromotion", ...last, applyRefused: "denied" },
        { routed: false, deadlinePassed: true },
      ),
      want: undefined,
    },
    {
      name: "secondary not ready past the deadline, paused",
      f: facts({ ...waiting, paused: true }, { deadlinePassed: true }),
      want: undefined,
    },
    {
      name: "stepping secondary not ready for the deadline",
      f: facts(notReady, { deadlinePassed: true }),
      want: "SecondaryNotReady",
    },
    { name: "stepping secondary not ready, within the deadline", f: facts(notReady), want: undefined },
    {
      name: "stepping secondary just went not ready: the deadline counts from now",
      f: facts(notReady, { deadlinePassed: true, readinessChanged: true }),
      want: undefined,
    },
    {
      name: "awaiting promotion, secondary not ready for the deadline",
      f: facts({ ...notReady, stage: "AwaitingPromotion", ...last }, { deadlinePassed: true }),
      want: "SecondaryNotReady",
    },
    {
      name: "paused, secondary not ready for the deadline",
      f: facts({ ...notReady, paused: true }, { deadlinePassed: true }),
      want: undefined,
    },
    { name: "a failed analysis at the threshold", f: facts({}, { verdict: FAILED }), want: "AnalysisFailed" },
    {
      name: "a failed analysis reaching a threshold of 3",
      f: facts({ threshold: 3, failedChecks: 2 }, { verdict: FAILED }),
      want: "AnalysisFailed",
    },
    {
      name: "a failed analysis below the threshold",
      f: facts({ threshold: 3, failedChecks: 1 }, { verdict: FAILED }),
      want: undefined,
    },
    { name: "an inconclusive analysis", f: facts({}, { verdict: INCONCLUSIVE }), want: undefined },
    { name: "a passed analysis", f: facts({}, { verdict: PASSED }), want: undefined },
    {
      name: "a failed verdict before the step is complete",
      f: facts({}, { verdict: FAILED, intervalPassed: false }),
      want: undefined,
    },
    { name: "while requests are answered, a deadline does not count", f: facts(waiting, null), want: undefined },
  ];
  for (const c of cases) test(c.name, () => assert.equal(rollbackDue(c.f)?.reason, c.want));

  test("an analysis failure records the decisive metric and value", () => {
    assert.deepEqual(rollbackDue(facts({}, { verdict: FAILED })), {
      result: "Failed",
      reason: "AnalysisFailed",
      message: "error-rate 7 > 1",
      metric: "error-rate",
      value: 7,
    });
  });

  test("a superseded test is not a failure; an aborted one is", () => {
    assert.equal(rollbackDue(facts({ specImage: "app:v3" }, null))?.result, "Superseded");
    assert.equal(rollbackDue(facts({ abortRequested: true }, null))?.result, "Aborted");
  });

  test("an abort during promotion says where the primary returns", () => {
    assert.match(
      rollbackDue(facts({ stage: "Promoting", abortRequested: true }, null))?.message ?? "",
      /returns to app:v1/,
    );
  });
});

describe("secondaryRemovable: when may the secondary go?", () => {
  const T = new Date("2026-03-01T12:00:10.000Z");
  const ago = (seconds: number) => new Date(T.getTime() - seconds * 1000).toISOString();
  const base = { stage: "RollingBack" as const, drained: true, neverRouted: false, drainSeconds: 5, now: T };
  const cases: { name: string; facts: Parameters<typeof secondaryRemovable>[0]; removable: boolean }[] = [
    {
      name: "the route still sends it traffic",
      facts: { ...base, drained: false, drainedAt: undefined },
      removable: false,
    },
    { name: "drained just now: the drain begins", facts: { ...base, drainedAt: ago(0) }, removable: false },
    { name: "drained 4.9 s ago", facts: { ...base, drainedAt: ago(4.9) }, removable: false },
    { name: "drained 5 s ago", facts: { ...base, drainedAt: ago(5) }, removable: true },
    {
      name: "finalising, drained long ago",
      facts: { ...base, stage: "Finalising", drainedAt: ago(60) },
      removable: true,
    },
    { name: "no drain period", facts: { ...base, drainSeconds: 0, drainedAt: ago(0) }, removable: true },
    {
      name: "never routed (ended before the first step): nothing to drain",
      facts: { ...base, neverRouted: true, drainedAt: undefined },
      removable: true,
    },
    {
      name: "never routed, but the route is not yet observed at 0",
      facts: { ...base, neverRouted: true, drained: false, drainedAt: undefined },
      removable: false,
    },
    {
      name: "a test still running is never removed",
      facts: { ...base, stage: "Stepping", drainedAt: ago(60) },
      removable: false,
    },
  ];
  for (const c of cases) test(c.name, () => assert.equal(secondaryRemovable(c.facts), c.removable));
});

describe("the decisions never contradict each other", () => {
  test("at most one of step, promotion, gate and rollback is due for any facts", () => {
    const stages = ["WaitingForSecondary", "Stepping", "AwaitingPromotion", "Promoting"] as const;
    const verdicts = [undefined, PASSED, FAILED, INCONCLUSIVE];
    const bools = [false, true];
    let seen = 0;
    for (const stage of stages)
      for (const step of [-1, 1, 4])
        for (const verdict of verdicts)
          for (const paused of bools)
            for (const secondaryReady of bools)
              for (const readinessChanged of bools)
                for (const deadlinePassed of bools)
                  for (const manualPromotion of bools) {
                    const f = facts(
                      { stage, step, paused, secondaryReady, manualPromotion },
                      { readinessChanged, deadlinePassed, ...(verdict ? { verdict } : {}) },
                    );
                    const due = [
                      stepDue(f) !== undefined,
                      promotionDue(f) !== undefined,
                      promotionGateReached(f),
                      rollbackDue(f) !== undefined,
                    ].filter(Boolean).length;
                    assert.ok(due <= 1, JSON.stringify(f));
                    seen += 1;
                  }
    assert.equal(seen, 4 * 3 * 4 * 2 ** 5);
  });
});

describe("the decisions never contradict each other, gates included", () => {
  test("at most one of step, promotion, gate, webhook gate and rollback is due for any facts", () => {
    const stages = ["WaitingForSecondary", "Stepping", "AwaitingPromotion", "Promoting"] as const;
    const pendings = [[], ["confirm-rollout", "pre-rollout"], ["pre-rollout"], ["confirm-promotion"]] as const;
    const bools = [false, true];
    let seen = 0;
    for (const stage of stages)
      for (const step of [-1, 4])
        for (const verdict of [undefined, PASSED, FAILED])
          for (const pendingGates of pendings)
            for (const paused of bools)
              for (const secondaryReady of bools)
                for (const readinessChanged of bools)
                  for (const manualPromotion of bools) {
                    const f = facts(
                      { stage, step, paused, secondaryReady, manualPromotion, pendingGates },
                      { readinessChanged, ...(verdict ? { verdict } : {}) },
                    );
                    const due = [
                      stepDue(f) !== undefined,
                      promotionDue(f) !== undefined,
                      promotionGateReached(f),
                      gateDue(f) !== undefined,
                      rollbackDue(f) !== undefined,
                    ].filter(Boolean).length;
                    assert.ok(due <= 1, JSON.stringify(f));
                    seen += 1;
                  }
    assert.equal(seen, 4 * 2 * 3 * 4 * 2 ** 4);
  });
});

describe("no evidence: when does waiting for it end?", () => {
  const NO_TRAFFIC: Verdict = {
    kind: "inconclusive",
    cause: "NoEvidence",
    message: "secondary-traffic 3 requests < 20",
    decisive: {
      name: "secondary-traffic",
      kind: "traffic",
      value: 3,
      passed: false,
      reason: "TooFewRequests",
      query: "sum(increase(x[30s]))",
    },
  };
  const cases: { name: string; f: TestFacts; want: string | undefined }[] = [
    { name: "the first analysis without evidence waits", f: facts({}, { verdict: NO_TRAFFIC }), want: undefined },
    {
      name: "the limit's analysis without evidence rolls back",
      f: facts({ inconclusiveLimit: 3 }, { verdict: NO_TRAFFIC, inconclusiveAnalyses: 2 }),
      want: "NoEvidence",
    },
    {
      name: "one before the limit waits",
      f: facts({ inconclusiveLimit: 3 }, { verdict: NO_TRAFFIC, inconclusiveAnalyses: 1 }),
      want: undefined,
    },
    {
      name: "no verdict for the whole deadline rolls back",
      f: facts({}, { verdict: NO_TRAFFIC, noVerdictDeadlinePassed: true }),
      want: "NoEvidence",
    },
    {
      name: "Prometheus down does not count against the limit",
      f: facts({ inconclusiveLimit: 1 }, { verdict: INCONCLUSIVE, inconclusiveAnalyses: 4 }),
      want: undefined,
    },
    {
      name: "Prometheus down for the whole deadline rolls back",
      f: facts({}, { verdict: INCONCLUSIVE, noVerdictDeadlinePassed: true }),
      want: "NoEvidence",
    },
    {
      name: "paused: nothing ends",
      f: facts({ paused: true }, { verdict: NO_TRAFFIC, noVerdictDeadlinePassed: true }),
      want: undefined,
    },
  ];
  for (const c of cases) test(c.name, () => assert.equal(rollbackDue(c.f)?.reason, c.want));

  test("the NoEvidence failure carries the traffic check's value and query", () => {
    const failure = rollbackDue(facts({ inconclusiveLimit: 1 }, { verdict: NO_TRAFFIC }));
    assert.deepEqual(failure, {
      result: "Failed",
      reason: "NoEvidence",
      message:
        "no evidence that the secondary served traffic in 1 analyses in a row: secondary-traffic 3 requests < 20",
      metric: "secondary-traffic",
      value: 3,
      query: "sum(increase(x[30s]))",
    });
  });

  test("an inconclusive last step never promotes, nor opens the manual gate", () => {
    for (const manualPromotion of [false, true]) {
      for (const verdict of [NO_TRAFFIC, INCONCLUSIVE]) {
        const f = facts({ ...last, manualPromotion }, { verdict });
        assert.equal(promotionDue(f), undefined);
        assert.equal(promotionGateReached(f), false);
        assert.equal(stepDue(f), undefined);
      }
    }
  });
});

describe("traffic withheld while Prometheus does not answer", () => {
  const withheld = { trafficWithheld: true };
  const cases: { name: string; f: TestFacts; step?: string; promotion?: string; rollback?: string }[] = [
    { name: "still no answer: nothing moves", f: facts(withheld, { verdict: INCONCLUSIVE }) },
    { name: "an answer: the step starts over", f: facts(withheld, { verdict: PASSED }), step: "PrometheusAnswered" },
    {
      name: "an answer at the last step: the step starts over, no promotion yet",
      f: facts({ ...withheld, ...last }, { verdict: PASSED }),
      step: "PrometheusAnswered",
    },
    {
      name: "an answer that fails: the step starts over, nothing counted",
      f: facts(withheld, { verdict: FAILED }),
      step: "PrometheusAnswered",
    },
    {
      name: "no answer for the whole deadline",
      f: facts(withheld, { verdict: INCONCLUSIVE, noVerdictDeadlinePassed: true }),
      rollback: "NoEvidence",
    },
  ];
  for (const c of cases) {
    test(c.name, () => {
      assert.equal(stepDue(c.f), c.step);
      assert.equal(promotionDue(c.f), c.promotion);
      assert.equal(rollbackDue(c.f)?.reason, c.rollback);
      assert.equal(promotionGateReached(c.f), false);
    });
  }
});

describe("gateDue: when does a webhook hold the test?", () => {
  const waiting = { stage: "WaitingForSecondary" as const, step: -1 };
  const all = ["confirm-rollout", "pre-rollout", "confirm-promotion"] as const;
  const awaiting = { stage: "AwaitingPromotion" as const, ...last };
  const cases: { name: string; f: TestFacts; want: ReturnType<typeof gateDue> }[] = [
    { name: "no gates", f: facts(waiting), want: undefined },
    {
      name: "the first step would begin: confirm-rollout first",
      f: facts({ ...waiting, pendingGates: all }),
      want: "confirm-rollout",
    },
    {
      name: "confirm-rollout answered: pre-rollout",
      f: facts({ ...waiting, pendingGates: ["pre-rollout", "confirm-promotion"] }),
      want: "pre-rollout",
    },
    {
      name: "the secondary not started yet: confirm-rollout is asked before it runs",
      f: facts({ ...waiting, secondaryReady: false, pendingGates: all }),
      want: "confirm-rollout",
    },
    {
      name: "confirm-rollout answered, the secondary not ready yet: pre-rollout waits for it",
      f: facts({ ...waiting, secondaryReady: false, pendingGates: ["pre-rollout", "confirm-promotion"] }),
      want: undefined,
    },
    { name: "paused", f: facts({ ...waiting, paused: true, pendingGates: all }), want: undefined },
    { name: "the checks cannot run", f: facts({ ...waiting, specValid: false, pendingGates: all }), want: undefined },
    {
      name: "stepping: no gate",
      f: facts({ pendingGates: ["confirm-promotion"] }, { verdict: PASSED }),
      want: undefined,
    },
    {
      name: "awaiting promotion: confirm-promotion",
      f: facts({ ...awaiting, pendingGates: ["confirm-promotion"] }),
      want: "confirm-promotion",
    },
    {
      name: "awaiting a person (manualPromotion): no webhook asked",
      f: facts({ ...awaiting, manualPromotion: true, pendingGates: ["confirm-promotion"] }),
      want: undefined,
    },
    {
      name: "awaiting promotion, readiness changed",
      f: facts({ ...awaiting, pendingGates: ["confirm-promotion"] }, { readinessChanged: true }),
      want: undefined,
    },
    { name: "while requests are answered", f: facts({ ...waiting, pendingGates: all }, null), want: undefined },
  ];
  for (const c of cases) test(c.name, () => assert.equal(gateDue(c.f), c.want));

  test("a pending gate keeps the first step and promotion from happening", () => {
    assert.equal(stepDue(facts({ ...waiting, pendingGates: ["pre-rollout"] })), undefined);
    assert.equal(promotionDue(facts({ ...last, pendingGates: ["confirm-promotion"] }, { verdict: PASSED })), undefined);
    assert.equal(
      promotionGateReached(facts({ ...last, pendingGates: ["confirm-promotion"] }, { verdict: PASSED })),
      true,
    );
    assert.equal(promotionDue(facts({ ...awaiting, pendingGates: ["confirm-promotion"] })), undefined);
    assert.equal(promotionDue(facts(awaiting)), "AnalysisPassed");
  });

  test("confirm-rollout holds the secondary back: no pods, no deadline", () => {
    const held = { ...waiting, secondaryReady: false, pendingGates: all };
    assert.equal(secondaryHeld(held), true);
    assert.equal(secondaryHeld({ ...held, pendingGates: ["pre-rollout", "confirm-promotion"] }), false);
    assert.equal(secondaryHeld({ stage: "Stepping", pendingGates: all }), false);
    assert.equal(secondaryHeld(waiting), false);
    assert.equal(rollbackDue(facts(held, { deadlinePassed: true })), undefined);
    assert.equal(
      rollbackDue(facts({ ...held, pendingGates: ["pre-rollout"] }, { deadlinePassed: true }))?.reason,
      "ProgressDeadlineExceeded",
    );
  });

  test("a pre-rollout that did not answer 2xx rolls back, with the webhook's answer", () => {
    const decisive: MetricResult = {
      name: "migrate",
      kind: "webhook",
      value: 500,
      passed: false,
      reason: "WebhookRejected",
      message: "answered 500",
      query: "http://jobs.svc/migrate",
    };
    const failure = rollbackDue(facts(waiting, { gate: { type: "pre-rollout", passed: false, decisive } }));
    assert.deepEqual(failure, {
      result: "Failed",
      reason: "PreRolloutFailed",
      message: "pre-rollout webhook migrate answered 500",
      metric: "migrate",
      value: 500,
      query: "http://jobs.svc/migrate",
    });
    assert.equal(
      rollbackDue(facts(waiting, { gate: { type: "confirm-rollout", passed: false, decisive } })),
      undefined,
    );
  });
});

describe("stepClockStart: when does a step's clock start?", () => {
  const cases: { name: string; canary: { stepStartedAt: string; stepRoutedAt?: string }; want: string | undefined }[] =
    [
      {
        name: "not seen on the route: not started",
        canary: { stepStartedAt: "2026-03-01T12:00:00.000Z" },
        want: undefined,
      },
      {
        name: "seen on the route after the decision: from the route",
        canary: { stepStartedAt: "2026-03-01T12:00:00.000Z", stepRoutedAt: "2026-03-01T12:05:00.000Z" },
        want: "2026-03-01T12:05:00.000Z",
      },
      {
        name: "an analysis (or a resume) after the route was seen: from that",
        canary: { stepStartedAt: "2026-03-01T12:01:00.000Z", stepRoutedAt: "2026-03-01T12:00:00.500Z" },
        want: "2026-03-01T12:01:00.000Z",
      },
      {
        name: "an unreadable decision time counts as the epoch: from the route",
        canary: { stepStartedAt: "garbage", stepRoutedAt: "2026-03-01T12:00:00.500Z" },
        want: "2026-03-01T12:00:00.500Z",
      },
    ];
  for (const c of cases) test(c.name, () => assert.equal(stepClockStart(c.canary), c.want));
});

describe("routeCarries", () => {
  const cases: { name: string; routed: Weights | null; want: boolean }[] = [
    { name: "the planned split", routed: { primary: 80, secondary: 20 }, want: true },
    { name: "the previous step's split", routed: { primary: 90, secondary: 10 }, want: false },
    { name: "a split that does not sum up", routed: { primary: 100, secondary: 20 }, want: false },
    { name: "no route", routed: null, want: false },
  ];
  for (const c of cases) {
    test(c.name, () => assert.equal(routeCarries(c.routed, { primary: 80, secondary: 20 }), c.want));
  }
});

describe("clockAfterPause: how does a pause count toward a deadline?", () => {
  const t = (seconds: number): string => new Date(Date.UTC(2026, 2, 1, 12, 0, seconds)).toISOString();
  // Paused at 100 s, resumed at 1000 s.
  const cases: { name: string; since: string; want: string }[] = [
    { name: "a clock started before the pause: moved by the whole pause", since: t(40), want: t(940) },
    { name: "started the moment the pause began: moved by the whole pause", since: t(100), want: t(1000) },
    {
      name: "started during the pause (readiness changed while paused): from the resume",
      since: t(400),
      want: t(1000),
    },
    { name: "started the moment of the resume: unchanged", since: t(1000), want: t(1000) },
    {
      name: "an unreadable start counts as the epoch: moved by the whole pause",
      since: "garbage",
      want: new Date(900_000).toISOString(),
    },
  ];
  for (const c of cases) test(c.name, () => assert.equal(clockAfterPause(c.since, t(100), t(1000)), c.want));

  test("the time left on a clock after the pause is the time it had left when the pause began", () => {
    for (const since of [0, 30, 99]) {
      const moved = Date.parse(clockAfterPause(t(since), t(100), t(1000)));
      assert.equal(moved + 600_000 - Date.parse(t(1000)), Date.parse(t(since)) + 600_000 - Date.parse(t(100)));
    }
  });
});

describe("resumedClocks: every clock of a paused test moves, nothing else does", () => {
  const t = (seconds: number): string => new Date(Date.UTC(2026, 2, 1, 12, 0, seconds)).toISOString();
  const paused: CanaryState = {
    image: "app:v2",
    stage: "Stepping",
    step: 1,
    startedAt: t(0),
    stepStartedAt: t(60),
    stepBeganAt: t(10),
    stepRoutedAt: t(12),
    pausedAt: t(100),
    failedChecks: 0,
    inconclusive: { count: 2, since: t(30) },
    gates: {
      passed: ["confirm-rollout"],
      waiting: { type: "confirm-promotion", name: "hook", message: "503", since: t(20), checkedAt: t(90) },
    },
    approval: { batch: 1, since: t(50) },
  };
  const resumed = resumedClocks(paused, t(1000));
  const cases: { name: string; got: unknown; want: unknown }[] = [
    { name: "the progress deadline and the interval (stepStartedAt)", got: resumed.stepStartedAt, want: t(960) },
    { name: "the interval's start on the route (stepRoutedAt)", got: resumed.stepRoutedAt, want: t(912) },
    {
      name: "the deadline for a verdict (inconclusive.since)",
      got: resumed.inconclusive,
      want: { count: 2, since: t(930) },
    },
    { name: "a held gate's next ask (checkedAt)", got: resumed.gates?.waiting?.checkedAt, want: t(990) },
    { name: "the gates passed are kept", got: resumed.gates?.passed, want: ["confirm-rollout"] },
    { name: "the gate's wait began when it began", got: resumed.gates?.waiting?.since, want: t(20) },
    { name: "the approval's wait began when it began", got: resumed.approval, want: { batch: 1, since: t(50) } },
    { name: "the evidence window keeps the paused traffic (stepBeganAt)", got: resumed.stepBeganAt, want: t(10) },
    { name: "the test started when it started", got: resumed.startedAt, want: t(0) },
    { name: "no longer paused", got: "pausedAt" in resumed, want: false },
  ];
  for (const c of cases) test(c.name, () => assert.deepEqual(c.got, c.want));

  test("absent clocks stay absent; the input is not modified", () => {
    const bare: CanaryState = { ...paused };
    delete bare.stepRoutedAt;
    delete bare.inconclusive;
    delete bare.gates;
    const before = structuredClone(bare);
    const r = resumedClocks(bare, t(1000));
    assert.deepEqual(bare, before);
    assert.equal("stepRoutedAt" in r || "inconclusive" in r || "gates" in r, false);
  });

  test("a test that was not paused is unchanged", () => {
    const { pausedAt: _, ...running } = paused;
    assert.deepEqual(resumedClocks(running, t(1000)), running);
  });
});

describe("secondaryServiceTrack: which pods does the secondary's Service select?", () => {
  const still = { primary: 80, secondary: 20 };
  const cases: { name: string; f: Parameters<typeof secondaryServiceTrack>[0]; want: "primary" | "secondary" }[] = [
    {
      name: "a test under way",
      f: { stage: "Stepping", applyRefused: false, routedWeights: still },
      want: "secondary",
    },
    {
      name: "a step held by a refused route: the secondary keeps the share it was tested at",
      f: { stage: "Stepping", applyRefused: true, routedWeights: still },
      want: "secondary",
    },
    {
      name: "rolling back, the route still routed to the secondary and refused: the primary's pods",
      f: { stage: "RollingBack", applyRefused: true, routedWeights: still },
      want: "primary",
    },
    {
      name: "rolling back, the route refused but already drained: its own",
      f: { stage: "RollingBack", applyRefused: true, routedWeights: { primary: 100, secondary: 0 } },
      want: "secondary",
    },
    {
      name: "rolling back, the route refused and missing: nothing routes to it",
      f: { stage: "RollingBack", applyRefused: true, routedWeights: null },
      want: "secondary",
    },
    {
      name: "rolling back, nothing refused (the route is being written): its own",
      f: { stage: "RollingBack", applyRefused: false, routedWeights: still },
      want: "secondary",
    },
    {
      name: "finalising: the secondary runs the promoted image, its own",
      f: { stage: "Finalising", applyRefused: true, routedWeights: still },
      want: "secondary",
    },
  ];
  for (const c of cases) test(c.name, () => assert.equal(secondaryServiceTrack(c.f), c.want));
});

describe("routeHandoverDue: a VirtualService left from mesh: istio", () => {
  const now = new Date("2026-11-27T12:00:10.000Z");
  test("not yet handed over: route everything to the app's Service", () =>
    assert.deepEqual(routeHandoverDue({}, now, 5), { kind: "handOver" }));
  test("handed over less than drainSeconds ago: wait for the rest", () =>
    assert.deepEqual(routeHandoverDue({ handedOverAt: "2026-11-27T12:00:07.000Z" }, now, 5), {
      kind: "wait",
      seconds: 2,
    }));
  test("handed over drainSeconds ago: remove it", () =>
    assert.deepEqual(routeHandoverDue({ handedOverAt: "2026-11-27T12:00:05.000Z" }, now, 5), { kind: "remove" }));
});

describe("digestFailure: when does a test stop testing one build?", () => {
  const image = "shop:v2";
  const cases: [name: string, seen: ObservedDigest, recorded: string | undefined, reason: string | undefined][] = [
    ["no pod reports a digest yet", { kind: "unknown" }, undefined, undefined],
    ["no pod reports one, one recorded", { kind: "unknown" }, "sha256:a", undefined],
    ["the first digest reported (the planner records it)", { kind: "one", digest: "sha256:a" }, undefined, undefined],
    ["the recorded digest", { kind: "one", digest: "sha256:a" }, "sha256:a", undefined],
    ["another digest than the recorded one", { kind: "one", digest: "sha256:b" }, "sha256:a", "DigestChanged"],
    ["pods that disagree", { kind: "mixed", digests: ["sha256:a", "sha256:b"] }, undefined, "DigestsDiffer"],
    [
      "pods that disagree, one recorded",
      { kind: "mixed", digests: ["sha256:a", "sha256:b"] },
      "sha256:a",
      "DigestsDiffer",
    ],
  ];
  for (const [name, seen, recorded, reason] of cases) {
    test(name, () => {
      const failure = digestFailure(image, seen, recorded);
      assert.equal(failure?.reason, reason);
      if (failure !== undefined) {
        assert.equal(failure.result, "Failed");
        assert.match(failure.message, /shop:v2/);
      }
    });
  }
});

describe("approvalDue: when does an approved batch start the next one?", () => {
  const cases: [
    waitingForApproval: boolean,
    paused: boolean,
    approveRequested: boolean,
    answer: ApprovalAnswer | undefined,
  ][] = [
    [false, false, false, undefined],
    [false, false, true, undefined],
    [false, true, true, undefined],
    [true, false, false, "held"],
    [true, true, false, "held"],
    [true, true, true, "held"],
    [true, false, true, "approved"],
  ];
  for (const [waitingForApproval, paused, approveRequested, answer] of cases) {
    test(`waiting ${waitingForApproval}, paused ${paused}, approve annotation ${approveRequested}: ${answer ?? "not asked"}`, () => {
      assert.equal(approvalDue({ waitingForApproval, paused, approveRequested }), answer);
    });
  }
});
