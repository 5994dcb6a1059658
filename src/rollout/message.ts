import type { CanaryAppStatus, CanaryState, FailedImage, Phase, Track } from "../api/types.js";
import { describeResult, judgeAnalysis } from "../analysis/verdicts.js";

/** What the status sentence is made from. Nothing here depends on the clock, so it changes only with the state. */
export interface MessageFacts {
  phase: Phase;
  status: CanaryAppStatus;
  /** The weight sequence and analysis settings of the spec. */
  weights: readonly number[];
  threshold: number;
  failWhenPrometheusFails: boolean;
  requireTraffic: boolean;
  /** The secondary's planned weight. */
  secondaryWeight: number;
  /** What the secondary gets now, in words (steps.ts describeShare): a weight, a mirror, the A/B phase. */
  secondaryShare: string;
  secondaryReady: boolean;
  /** The failed record of spec.image, when phase is Failed. */
  failed: FailedImage | undefined;
  problems: readonly string[];
  promotionOverdue: boolean;
  progressDeadlineSeconds: number;
  /** The API server's message while the last apply of the children was refused. */
  applyRefused?: string;
  /** Why the route's implementation does not carry the route as written (Observation.routeNotCarried). */
  routeNotCarried?: string;
  /** The pods the secondary's Service selects (secondaryServiceTrack). */
  secondaryServiceTrack?: Track;
  commands: { retry: string; promote: string; abort: string; resume: string };
}

function stepText(canary: CanaryState, weights: readonly number[]): string {
  return `step ${Math.min(canary.step, weights.length - 1) + 1} of ${weights.length}`;
}

function lastAnalysisText(facts: MessageFacts, canary: CanaryState): string {
  const last = canary.lastAnalysis;
  if (last === undefined) return "";
  if (last.passed) {
    const waived =
      last.trafficNotRequired === true ? " without evidence of traffic (analysis.requireTraffic: false)" : "";
    return `; last analysis passed${waived} (${last.metrics.map(describeResult).join(", ")})`;
  }
  const verdict = judgeAnalysis(last.metrics, facts);
  if (canary.trafficWithheld === true) {
    return `; last analysis inconclusive: Prometheus gave no answer (${verdict.kind === "inconclusive" ? verdict.message : "no verdict"}), so the secondary gets no traffic until it does`;
  }
  const failures = last.metrics.filter((m) => !m.passed).map(describeResult);
  if (verdict.kind === "inconclusive") return `; last analysis inconclusive (${verdict.message})`;
  return `; last analysis failed (${failures.join(", ")}), ${canary.failedChecks} of ${facts.threshold} failed checks`;
}

function testingMessage(facts: MessageFacts, canary: CanaryState): string {
  const image = canary.image;
  if (canary.stage === "WaitingForSecondary") {
    return `Testing ${image}: waiting for the secondary to become available.`;
  }
  if (canary.stage === "AwaitingPromotion") {
    const held = facts.secondaryReady ? facts.secondaryShare : "the secondary is not ready";
    return `${image} passed all ${facts.weights.length} steps (${held}); promote it with: ${facts.commands.promote}`;
  }
  // A step the route does not carry: its write refused by the API server, or not carried by its implementation.
  const routeWait =
    facts.applyRefused !== undefined
      ? `the route, whose apply is refused (${facts.applyRefused})`
      : facts.routeNotCarried !== undefined
        ? `the route's implementation to carry it (${facts.routeNotCarried})`
        : undefined;
  if (facts.secondaryReady && canary.stepRoutedAt === undefined && routeWait !== undefined) {
    return `Testing ${image}: ${stepText(canary, facts.weights)} waits for ${routeWait}; the test rolls back (RouteRefused) if the step is not routed within ${facts.progressDeadlineSeconds}s of its start.`;
  }
  const traffic = facts.secondaryReady ? facts.secondaryShare : "the secondary is not ready, so it gets no traffic";
  return `Testing ${image}: ${stepText(canary, facts.weights)}, ${traffic}${lastAnalysisText(facts, canary)}.`;
}

function canaryMessage(facts: MessageFacts, canary: CanaryState): string {
  const primary = facts.status.primaryImage ?? "the primary";
  const image = canary.image;
  switch (canary.stage) {
    case "WaitingForSecondary":
    case "Stepping":
    case "AwaitingPromotion": {
      if (facts.phase === "Invalid") {
        return `Holding the test of ${image}: the spec cannot be acted on: ${facts.problems.join("; ")}.`;
      }
      if (canary.pausedAt === undefined) return testingMessage(facts, canary);
      const where = canary.step < 0 ? "before the first step" : `at ${stepText(canary, facts.weights)}`;
      return `Paused testing ${image} ${where} (${facts.secondaryShare}); resume with: ${facts.commands.resume}`;
    }
    case "Promoting": {
      const share = `the secondary keeps ${facts.secondaryShare} meanwhile`;
      if (facts.promotionOverdue) {
        return `Promoting ${image}: the primary has not finished rolling it out within ${facts.progressDeadlineSeconds}s (${share}); still waiting. To return the primary to ${primary}: ${facts.commands.abort}`;
      }
      return `Promoting ${image}: the primary is rolling it out; ${share}.`;
    }
    case "Finalising":
      return `Promoted ${image} on the primary; moving all traffic to it before removing the secondary.`;
    case "RollingBack": {
      const outcome = canary.outcome;
      const ending =
        outcome?.result === "Superseded"
          ? `Ending the test of ${image} (${outcome.message}); moving all traffic to the primary (${primary}).`
          : `Rolling back ${image}: ${outcome?.message ?? "the test failed"}; moving all traffic to ${primary}.`;
      if (facts.secondaryServiceTrack !== "primary") return ending;
      // A RouteRefused outcome has said why already.
      const why = outcome?.reason === "RouteRefused" ? "" : ` (${facts.applyRefused ?? "its apply is refused"})`;
      return `${ending} The route still cannot be written${why} and gives the secondary a share: the secondary's pods stay until the route shows them drained.`;
    }
  }
}

/** The sentence in status.message that says what is going on. */
export function statusMessage(facts: MessageFacts): string {
  const canary = facts.status.canary;
  if (canary !== undefined) return canaryMessage(facts, canary);
  const primary = facts.status.primaryImage ?? "the image";
  if (facts.phase === "Invalid") return `The spec cannot be acted on: ${facts.problems.join("; ")}.`;
  if (facts.phase === "Initializing") return `Starting ${primary} on the primary; waiting for it to become available.`;
  const f = facts.failed;
  if (facts.phase === "Failed" && f !== undefined) {
    return `Rolled back ${f.image}: ${f.message}; traffic is back on ${primary}. It failed at ${f.failedAt} (${f.reason}); to test it again: ${facts.commands.retry}`;
  }
  return `${primary} runs on the primary and takes all traffic.`;
}
