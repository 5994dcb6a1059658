/** Ranks of pooled samples, ties given their average rank. Pure. */

/** The ranks (1-based, ties averaged) of `values`, in their order, and the sizes of the groups of ties. */
export function averageRanks(values: readonly number[]): { ranks: number[]; tieSizes: number[] } {
  const order = values.map((v, i) => ({ v, i })).sort((a, b) => a.v - b.v);
  const ranks = new Array<number>(values.length).fill(0);
  const tieSizes: number[] = [];
  let start = 0;
  while (start < order.length) {
    let end = start + 1;
    while (end < order.length && (order[end] as { v: number }).v === (order[start] as { v: number }).v) end++;
    // Positions start … end − 1 are ranks start + 1 … end; their mean:
    const rank = (start + 1 + end) / 2;
    for (let k = start; k < end; k++) ranks[(order[k] as { i: number }).i] = rank;
    tieSizes.push(end - start);
    start = end;
  }
  return { ranks, tieSizes };
}

/** Σ (t³ − t) over the groups of ties: the tie correction of the U statistic's variance. */
export function tieTerm(tieSizes: readonly number[]): number {
  return tieSizes.reduce((sum, t) => sum + (t * t * t - t), 0);
}
