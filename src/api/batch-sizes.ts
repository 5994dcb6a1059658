/**
 * What `spec.strategy.batches` means in replicas (ADR 0014): the size of each batch, and the weight
 * sequence the spec resolves to (defaults.ts). The rollout's decisions about batches are in
 * rollout/batches.ts. Pure.
 */

/**
 * The new version's replicas in batch `batch` (1-based) of `count`, for an app of `total` replicas:
 * `1 + (batch − 1) × round(total / count)`, at least 1, the last batch all of them, never more than `total`.
 */
export function batchReplicas(total: number, count: number, batch: number): number {
  if (total <= 0) return 0;
  if (batch >= count) return total;
  return Math.min(total, Math.max(1, 1 + (Math.max(1, batch) - 1) * batchStepSize(total, count)));
}

/** The replicas one batch adds (`round(total / count)`, at least 1): also the pace of the hand-over. */
export function batchStepSize(total: number, count: number): number {
  return Math.max(1, Math.round(total / Math.max(1, count)));
}

/** The secondary's share of the replicas at each batch, in whole percents: the weight sequence of a batch release. */
export function batchWeightSequence(total: number, count: number): number[] {
  const weights: number[] = [];
  for (let batch = 1; batch <= count; batch++) {
    weights.push(total > 0 ? Math.round((100 * batchReplicas(total, count, batch)) / total) : 0);
  }
  return weights;
}
