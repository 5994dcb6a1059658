import type { AnalysisRecord, CanaryState, MetricResult } from "../api/types.js";
import type { Verdict } from "../analysis/verdicts.js";
import { describeResult, formatNumber, judgeAnalysis } from "../analysis/verdicts.js";
import type { CanaryView, PlanContext, PlanView } from "./context.js";
import { capacityMessage, PROMOTION_OVERDUE, WAITING_FOR_CAPACITY } from "./status-conditions.js";
import { emit } from "./context.js";
import type { GateAnswer, GateType } from "./test-facts.js";
import {
  capacityWait,
  gateDue,
  promotionDue,
  promotionGateReached,
  rollbackDue,
  stepComplete,
  stepDue,
} from "./decisions.js";
import { replicasForWeight } from "./replicas.js";
import { progressOf, secondaryReadyNow, testFacts } from "./facts.js";
import { enterFinalising, enterPromoting, finishIfDrained, startRollback } from "./lifecycle.js";
import { primaryRunning } from "./observation.js";
import { stepWeight } from "./steps.js";
import { revisionOf } from "../identity/revision.js";
import { deployedImage, testedTemplate } from "./subject.js";
import { hasElapsed } from "../time/timestamps.js";
import { holdForApproval, primaryRestored, waitForApproval } from "./batch-release.js";

/** Moves a test on by at most one stage, as the observation allows. */
export function advanceStage(ctx: PlanContext, canary: CanaryState): void {
  switch (canary.stage) {
    case "WaitingForSecondary":
    case "Stepping":
    case "AwaitingPromotion":
      return progress(ctx, canary);
    case "Promoting":
      return awaitPrimaryRollout(ctx, canary);
    case "Finalising":
    case "RollingBack":
      return finishIfDrained(ctx, canary);
  }
}

function shiftedMessage(ctx: PlanView, canary: CanaryView): string {
  const phase = canary.step >= 0 ? ctx.spec.analysis.phases[canary.step] : undefined;
  if (phase?.kind === "mirror") {
    return `mirrored ${phase.percent}% of traffic to the secondary, its answers discarded (image ${canary.image})`;
  }
  if (phase?.kind === "match") {
    return `sent the requests matching spec.analysis.match to the secondary (A/B; image ${canary.image})`;
  }
  const weight = stepWeight(ctx.spec.analysis.weights, canary.step);
  return `shifted ${weight}% of traffic to the secondary (image ${canary.image})`;
}

/**
 * WaitingForSecondary, Stepping and AwaitingPromotion: the decisions (decisions.ts) say what is due; this
 * applies it. A step whose analysis is due but has no results yet asks for them (`analysisWanted`).
 */
function progress(ctx: PlanContext, canary: CanaryState): void {
  // A batch that waits for a person moves on only by approval (batch-release.ts).
  if (holdForApproval(ctx, canary)) return;
  let evidence = progressOf(ctx, canary);
  let facts = testFacts(ctx, canary, evidence);
  const gate = gateDue(facts);
  if (gate !== undefined) {
    const answer = gateAnswer(ctx, gate);
    if (answer === undefined) {
      if (gateAskDue(ctx, canary, gate)) ctx.gateWanted = gate;
      return;
    }
    if (answer.passed) passGate(ctx, canary, gate);
    else if (gate !== "pre-rollout") return holdAtGate(ctx, canary, gate, answer);
    // Seen after the gate: passing confirm-rollout restarts the deadline's clock.
    evidence = { ...progressOf(ctx, canary), gate: answer };
    facts = testFacts(ctx, canary, evidence);
  }
  if (capacityWait(facts)) waitForCapacity(ctx, canary);
  const results = ctx.observed.analysis;
  let verdict: Verdict | undefined;
  if (stepComplete(facts)) {
    if (results === undefined) {
      ctx.analysisWanted = true;
      return;
    }
    verdict = judgeAnalysis(results, ctx.spec.analysis);
    facts = testFacts(ctx, canary, { ...evidence, verdict });
  }
  const start = stepDue(facts);
  const promotion = promotionDue(facts);
  const rollback = rollbackDue(facts);
  const promotionGate = promotionGateReached(facts);

  if (start === "ReadinessChanged") return restartStep(ctx, canary);
  if (verdict !== undefined && results !== undefined) {
    canary.lastAnalysis = analysisRecord(ctx, verdict, results);
    // Whatever the verdict, the next analysis is one whole interval away.
    canary.stepStartedAt = ctx.at;
    if (start === "PrometheusAnswered") return resumeTraffic(ctx, canary);
    tellVerdict(ctx, canary, verdict);
  }
  if (rollback !== undefined) return startRollback(ctx, canary, rollback);
  if (promotion !== undefined) return promoteAfterLastStep(ctx, canary);
  if (start === "SecondaryReady") {
    canary.stage = "Stepping";
    canary.step = 0;
    canary.stepStartedAt = ctx.at;
    canary.stepBeganAt = ctx.at;
    emit(ctx, "Normal", "StepAdvanced", shiftedMessage(ctx, canary));
    return;
  }
  if (start === "AnalysisPassed") {
    if (waitForApproval(ctx, canary)) return;
    canary.step += 1;
    canary.stepBeganAt = ctx.at;
    emit(ctx, "Normal", "StepAdvanced", shiftedMessage(ctx, canary));
    return;
  }
  if (promotionGate) {
    canary.stage = "AwaitingPromotion";
    const what = ctx.spec.analysis.manualPromotion
      ? "the promote annotation"
      : "the confirm-promotion webhooks to answer 2xx (or the promote annotation)";
    emit(
      ctx,
      "Normal",
      "AwaitingPromotion",
      `${canary.image} passed all ${ctx.spec.analysis.weights.length} steps; waiting for ${what}`,
    );
  }
}

/** What the gate's webhooks answered in this plan, when the reconciler called them. */
function gateAnswer(ctx: PlanContext, type: GateType): GateAnswer | undefined {
  const gate = ctx.observed.gate;
  if (gate?.type !== type) return undefined;
  const decisive = gate.results.find((r) => !r.passed);
  return { type, passed: decisive === undefined, ...(decisive !== undefined ? { decisive } : {}) };
}

/** A gate is asked at once, and again one interval after a call that did not answer 2xx. */
function gateAskDue(ctx: PlanView, canary: CanaryView, type: GateType): boolean {
  const waiting = canary.gates?.waiting;
  return waiting?.type !== type || hasElapsed(ctx.now, waiting.checkedAt, ctx.spec.analysis.intervalSeconds);
}

function passGate(ctx: PlanContext, canary: CanaryState, type: GateType): void {
  const passed = canary.gates?.passed ?? [];
  canary.gates = { passed: [...passed, type] };
  // The secondary starts only now (secondaryHeld): its progress deadline counts from here.
  if (type === "confirm-rollout") canary.stepStartedAt = ctx.at;
  emit(ctx, "Normal", "GatePassed", `the ${type} webhooks answered 2xx for ${canary.image}`);
}

/** A confirm gate that did not answer 2xx holds the test; the reason is said once, when the wait begins. */
function holdAtGate(ctx: PlanContext, canary: CanaryState, type: GateType, answer: GateAnswer): void {
  const previous = canary.gates?.waiting;
  const name = answer.decisive?.name ?? type;
  const message = answer.decisive !== undefined ? describeResult(answer.decisive) : `${type} did not answer 2xx`;
  canary.gates = {
    ...canary.gates,
    waiting: { type, name, message, since: previous?.type === type ? previous.since : ctx.at, checkedAt: ctx.at },
  };
  if (previous?.type !== type) {
    emit(ctx, "Normal", "WaitingForWebhook", `${canary.image} waits for the ${type} webhook ${name}: ${message}`);
  }
}

/**
 * The step lasted its interval, but the next step's pods are not all Available: its analysis waits for
 * them. Recorded for the condition and the message; said once, when the wait begins.
 */
function waitForCapacity(ctx: PlanContext, canary: CanaryState): void {
  const { spec } = ctx;
  const weight = stepWeight(spec.analysis.weights, canary.step + 1);
  const needed = replicasForWeight(spec.replicas, spec.testReplicas, weight);
  const available = Math.min(needed, ctx.observed.secondary?.currentAvailable ?? 0);
  ctx.capacityWait = { available, needed, weight };
  const previousReason = ctx.previous.conditions?.find((c) => c.type === "Progressing")?.reason;
  if (previousReason !== WAITING_FOR_CAPACITY) {
    emit(ctx, "Normal", WAITING_FOR_CAPACITY, `${capacityMessage(ctx.capacityWait)} (${canary.image})`);
  }
}

/** The secondary's readiness changed: the step begins again, and its weight follows readiness. */
function restartStep(ctx: PlanContext, canary: CanaryState): void {
  canary.stepStartedAt = ctx.at;
  canary.stepBeganAt = ctx.at;
  delete canary.trafficWithheld;
  if (secondaryReadyNow(ctx, canary)) {
    emit(ctx, "Normal", "SecondaryReady", `the secondary is ready again; ${shiftedMessage(ctx, canary)}`);
    return;
  }
  const deadline = ctx.spec.analysis.progressDeadlineSeconds;
  emit(
    ctx,
    "Warning",
    "SecondaryNotReady",
    `the secondary (${canary.image}) is not ready: it gets no traffic, and the test rolls back unless it recovers within ${deadline}s`,
  );
}

/** What status keeps of one analysis: every result as judged, the verdict, and whether evidence was waived. */
function analysisRecord(ctx: PlanView, verdict: Verdict, results: readonly MetricResult[]): AnalysisRecord {
  const names = { passed: "Passed", failed: "Failed", inconclusive: "Inconclusive" } as const;
  return {
    time: ctx.at,
    passed: verdict.kind === "passed",
    verdict: names[verdict.kind],
    ...(ctx.spec.analysis.requireTraffic ? {} : { trafficNotRequired: true }),
    metrics: structuredClone([...results]),
  };
}

/** One analysis as people read it in an Event: every result with its query, window and rule. */
export function analysisDetails(results: readonly MetricResult[]): string {
  return results
    .map((r) => {
      const facts = [
        ...(r.window !== undefined ? [`window ${r.window}`] : []),
        ...(r.sampleSize !== undefined && r.kind !== "traffic" ? [`${formatNumber(r.sampleSize)} requests`] : []),
        ...(r.rule !== undefined ? [`rule ${r.rule}`] : []),
        ...(r.query !== undefined ? [`query ${r.query}`] : []),
      ];
      return facts.length > 0 ? `${describeResult(r)} [${facts.join("; ")}]` : describeResult(r);
    })
    .join(" | ");
}

/**
 * Prometheus answers again: the secondary gets its step's weight back, and the step starts over. The
 * record of analyses without a verdict stays until one reaches a verdict, so that a Prometheus that
 * flaps cannot hold the test open beyond the progress deadline.
 */
function resumeTraffic(ctx: PlanContext, canary: CanaryState): void {
  delete canary.trafficWithheld;
  canary.stepBeganAt = ctx.at;
  emit(
    ctx,
    "Normal",
    "AnalysisResumed",
    `Prometheus answers again; the step starts over: ${shiftedMessage(ctx, canary)}`,
  );
}

/** Counts a failed analysis and says what the analysis found when it did not pass. */
function tellVerdict(ctx: PlanContext, canary: CanaryState, verdict: Verdict): void {
  const results = ctx.observed.analysis ?? [];
  if (verdict.kind !== "inconclusive") delete canary.inconclusive;
  if (verdict.kind === "passed") {
    const waived = verdict.trafficNotRequired === true;
    emit(
      ctx,
      "Normal",
      "AnalysisPassed",
      `analysis of ${canary.image} passed${waived ? " without evidence of traffic (analysis.requireTraffic: false)" : ""}: ${analysisDetails(results)}`,
    );
    return;
  }
  if (verdict.kind === "failed") {
    canary.failedChecks += 1;
    emit(
      ctx,
      "Warning",
      "AnalysisFailed",
      `analysis of ${canary.image} failed (${canary.failedChecks} of ${ctx.spec.analysis.threshold} failed checks): ${describeResult(verdict.decisive)}; ${analysisDetails(results)}`,
    );
    return;
  }
  const previous = canary.inconclusive;
  canary.inconclusive = {
    count: (previous?.count ?? 0) + (verdict.cause === "NoEvidence" ? 1 : 0),
    since: previous?.since ?? ctx.at,
  };
  const withheld = verdict.cause === "PrometheusUnavailable";
  if (withheld) canary.trafficWithheld = true;
  const next = withheld
    ? `the secondary gets no traffic until Prometheus answers (at most ${ctx.spec.analysis.progressDeadlineSeconds}s)`
    : `the step goes on (${canary.inconclusive.count} of ${ctx.spec.analysis.inconclusiveLimit} analyses without evidence)`;
  emit(
    ctx,
    "Warning",
    "AnalysisInconclusive",
    `analysis of ${canary.image} was inconclusive (${withheld ? "Prometheus gave no answer" : "no evidence of traffic"}); ${next}: ${analysisDetails(results)}`,
  );
}

function promoteAfterLastStep(ctx: PlanContext, canary: CanaryState): void {
  const steps = ctx.spec.analysis.weights.length;
  enterPromoting(ctx, canary, "AnalysisPassed", `passed all ${steps} steps`);
  emit(ctx, "Normal", "Promoting", `${canary.image} passed all ${steps} steps; rolling it out on the primary`);
}

/** True when the primary has had the whole progress deadline to roll out the promoted image. */
export function promotionOverdue(ctx: PlanView, canary: CanaryView): boolean {
  return (
    canary.stage === "Promoting" && hasElapsed(ctx.now, canary.stepStartedAt, ctx.spec.analysis.progressDeadlineSeconds)
  );
}

/**
 * Promoting waits for the primary to run the tested image. A primary that misses the deadline is not
 * rolled back automatically: it already holds the new template, its old pods keep serving while the
 * Deployment controller waits (maxUnavailable), and the image passed its analysis, so a slow rollout is
 * most likely capacity (unschedulable pods, quota, pulls), which reverting would hit just as hard.
 * The test keeps going and warns once (the Progressing reason records that the warning was given);
 * the abort annotation returns the primary to the last promoted image if a person decides so.
 */
function awaitPrimaryRollout(ctx: PlanContext, canary: CanaryState): void {
  const image = deployedImage(canary.image, canary.digest);
  // A batch release hands over batch by batch: the primary is done once it runs all the replicas.
  const handedOver = ctx.spec.strategy.type !== "batches" || primaryRestored(ctx);
  if (handedOver && primaryRunning(ctx.observed, image, revisionOf(image, testedTemplate(ctx, canary)))) {
    enterFinalising(ctx, canary);
    return;
  }
  const previousReason = ctx.previous.conditions?.find((c) => c.type === "Progressing")?.reason;
  if (promotionOverdue(ctx, canary) && previousReason !== PROMOTION_OVERDUE) {
    emit(
      ctx,
      "Warning",
      "PromotionSlow",
      `the primary has not finished rolling out ${canary.image} within ${ctx.spec.analysis.progressDeadlineSeconds}s; still waiting (the abort annotation returns it to ${ctx.status.primaryImage ?? "the previous image"})`,
    );
  }
}
