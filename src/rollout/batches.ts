/**
 * Batch releases (spec.strategy.type: batches, ADR 0014): the replica arithmetic and the decisions that are
 * particular to them, one function per question:
 *
 * - how many new pods does batch N run?            `batchReplicas` (api/batch-sizes.ts: the spec's meaning)
 * - how many old pods are left?                    {@link oldReplicas}
 * - how many pods may run beyond `replicas`?       {@link batchSurge}
 * - what does each Deployment run now?             {@link batchPlanReplicas}
 * - what share of the traffic does the new get?    {@link replicaShare}
 * - is a batch rolled out (its clock may start)?   {@link batchComplete}
 * - when does a batch wait for a person?           {@link pausesAfter}
 *
 * A batch release is a test whose steps are batches: step `s` (0-based, as `status.canary.step`) runs batch
 * `s + 1`. Everything else (analysis per step, rollback, promotion after the last step) is the planner's
 * usual decisions (decisions.ts). Pure: imports nothing that does I/O.
 */
import { batchReplicas, batchStepSize } from "../api/batch-sizes.js";
import type { BatchPause, BatchState, BatchStatus, CanaryStage, CanaryState } from "../api/types.js";

/**
 * The most pods a batch release runs beyond `total` while it moves forward: the largest growth from one
 * batch to the next (the new pods are started before the old ones go, and an old pod goes only once a new
 * one is available), and the hand-over's pace. A rollback is not bound by it: it restores the old version
 * to `total` at once, because the new one failed.
 */
export function batchSurge(total: number, count: number): number {
  let surge = batchStepSize(total, count);
  for (let batch = 1; batch <= count; batch++) {
    surge = Math.max(
      surge,
      batchReplicas(total, count, batch) - (batch > 1 ? batchReplicas(total, count, batch - 1) : 0),
    );
  }
  return surge;
}

/** The old version's replicas while the new one has `newAvailable` pods available: never below 0. */
export function oldReplicas(total: number, newAvailable: number): number {
  return Math.max(0, total - Math.max(0, newAvailable));
}

/**
 * What traffic share (percent) the new version gets with Istio: its share of the ready pods. Never 0 while
 * it has a ready pod and never 100 while the old one has, so the route always names what serves.
 */
export function replicaShare(newReady: number, oldReady: number): number {
  const n = Math.max(0, newReady);
  const o = Math.max(0, oldReady);
  if (n === 0) return 0;
  if (o === 0) return 100;
  return Math.min(99, Math.max(1, Math.round((100 * n) / (n + o))));
}

/** When does a batch wait for a person? After batch `batch` passed, before the next one: never after the last. */
export function pausesAfter(pause: BatchPause, batch: number, count: number): boolean {
  if (batch >= count) return false;
  switch (pause) {
    case "first":
      return batch === 1;
    case "all":
      return true;
    case "none":
      return false;
  }
}

/** What a batch release's replicas are decided from. */
export interface BatchReplicaFacts {
  total: number;
  count: number;
  stage: CanaryStage;
  /** The current step (-1 before the first); step `s` runs batch `s + 1`. */
  step: number;
  /**
   * Pods of the secondary available with the tested template; undefined while its status has not caught
   * up with its spec (or it does not run the tested template yet).
   */
  secondaryAvailable: number | undefined;
  /** The primary's replicas as its Deployment holds them now, when it exists. */
  primaryReplicas: number | undefined;
  /** The secondary's replicas as its Deployment holds them now, when it exists. */
  secondaryReplicas?: number | undefined;
  /**
   * Pods of the primary available with its current template (while promoting: with the tested one, 0 while
   * it does not run it yet); undefined while its status has not caught up.
   */
  primaryAvailable: number | undefined;
}

/**
 * What does each Deployment run now?
 * - While testing: the secondary runs the current batch; the primary `total − secondary available`, so that
 *   an old pod goes only once a new one serves. While the secondary's status lags, the primary keeps its
 *   replicas (never fewer than the batch leaves it), so nothing is removed on a guess.
 * - Promoting (the hand-over): the primary takes the tested template and grows by one batch's size at a
 *   time as its pods become available; the secondary shrinks to what the primary does not yet serve. While
 *   the primary's status lags, both hold what they have.
 * - Finalising: the primary runs everything; the secondary nothing.
 * - RollingBack: the primary returns to `total` at once; the secondary shrinks as the primary's pods
 *   become available (it drains; it never grows again), and goes when the route is drained.
 */
export function batchPlanReplicas(f: BatchReplicaFacts): { primary: number; secondary: number } {
  const current = batchReplicas(f.total, f.count, Math.max(1, f.step + 1));
  switch (f.stage) {
    case "WaitingForSecondary":
    case "Stepping":
    case "AwaitingPromotion": {
      if (f.secondaryAvailable !== undefined) {
        return { primary: oldReplicas(f.total, Math.min(current, f.secondaryAvailable)), secondary: current };
      }
      const held = Math.min(f.total, f.primaryReplicas ?? f.total);
      return { primary: Math.max(oldReplicas(f.total, current), held), secondary: current };
    }
    case "Promoting": {
      // A status that lags (a scale just applied) says nothing: both hold, so nothing flaps on a guess.
      if (f.primaryAvailable === undefined) {
        const primary = Math.min(f.total, f.primaryReplicas ?? batchStepSize(f.total, f.count));
        return { primary, secondary: Math.min(current, f.secondaryReplicas ?? current) };
      }
      const served = Math.min(f.total, f.primaryAvailable);
      const secondary = Math.max(0, Math.min(current, f.total - served));
      // The secondary shrinks first, the primary grows after: never both in one plan, whose two writes
      // would otherwise show the grown primary beside the secondary not yet shrunk.
      if (f.secondaryReplicas !== undefined && f.secondaryReplicas > secondary) {
        return { primary: Math.min(f.total, f.primaryReplicas ?? served), secondary };
      }
      return { primary: Math.min(f.total, served + batchStepSize(f.total, f.count)), secondary };
    }
    case "Finalising":
      return { primary: f.total, secondary: 0 };
    case "RollingBack": {
      const held = Math.min(current, f.secondaryReplicas ?? current);
      if (f.primaryAvailable === undefined) return { primary: f.total, secondary: held };
      return { primary: f.total, secondary: Math.max(0, Math.min(held, f.total - f.primaryAvailable)) };
    }
  }
}

/**
 * Is the current batch rolled out? The secondary has the batch's pods available with the tested template
 * and the primary has been scaled down to what the batch leaves it. Only then is the batch timed and
 * judged: its analysis looks at the batch as it is meant to run.
 */
export function batchComplete(f: {
  total: number;
  count: number;
  step: number;
  secondaryAvailable: number | undefined;
  primaryReplicas: number | undefined;
}): boolean {
  const wanted = batchReplicas(f.total, f.count, Math.max(1, f.step + 1));
  return (
    f.secondaryAvailable !== undefined &&
    f.secondaryAvailable >= wanted &&
    (f.primaryReplicas ?? 0) <= oldReplicas(f.total, wanted)
  );
}

/**
 * What status shows of a batch release (`status.batch`), derived from the test's state: each batch's
 * replicas and state, the current one, and the rollback's state. `previous` is kept once the test is over.
 */
export function batchStatus(
  total: number,
  count: number,
  canary: CanaryState | undefined,
  previous: BatchStatus | undefined,
  ended: { reason: string } | undefined,
): BatchStatus | undefined {
  if (canary === undefined) {
    if (previous?.rollback?.state === "running") {
      const rollback = { state: "finished" as const, ...(ended !== undefined ? { reason: ended.reason } : {}) };
      return { ...previous, rollback, summary: `${previous.current}/${previous.count} rolled back` };
    }
    return previous;
  }
  const promoted = canary.stage === "Promoting" || canary.stage === "Finalising";
  const current = promoted ? count : Math.min(count, Math.max(1, canary.step + 1));
  const stateOf = (batch: number): BatchState => {
    if (promoted || batch < current) return "finished";
    if (batch > current) return "pending";
    if (canary.approval?.batch === batch) return "paused";
    return canary.stage === "AwaitingPromotion" ? "finished" : "running";
  };
  const batches = Array.from({ length: count }, (_, i) => ({
    batch: i + 1,
    replicas: batchReplicas(total, count, i + 1),
    state: stateOf(i + 1),
  }));
  const rolling = canary.stage === "RollingBack";
  const state = rolling ? "rolling back" : (batches[current - 1]?.state ?? "running");
  return {
    current,
    count,
    batches,
    summary: `${current}/${count} ${state}`,
    ...(rolling ? { rollback: { state: "running", reason: canary.outcome?.reason ?? "RolledBack" } } : {}),
  };
}
