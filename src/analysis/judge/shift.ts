/**
 * The shift between two samples: the Hodges-Lehmann estimate and its distribution-free confidence interval
 * (Moses 1953; Bauer 1972; Hollander & Wolfe, *Nonparametric Statistical Methods*, §4.3). Pure.
 *
 * - The estimate is the median of the n·m differences xᵢ − yⱼ: the shift that makes the U test least able to
 *   tell x − shift from y.
 * - The interval is [d₍ₖ₎, d₍ₙₘ₊₁₋ₖ₎] over the sorted differences, k the lower α/2 quantile of U's null
 *   distribution (R's `wilcox.test(conf.int = TRUE)` takes the same k: the smallest with P(U ≤ k) ≥ α/2, at
 *   least 1). Its coverage is 1 − 2·P(U ≤ k − 1) ≥ 1 − α when k > 1.
 * - k comes from the exact distribution when n·m ≤ 2500 (e.g. 50 × 50), from the normal approximation
 *   k = ⌊n·m/2 − z₍α/2₎·√(n·m(n + m + 1)/12)⌋ (at least 1) above it. Ties are not corrected for: with ties
 *   the coverage is approximate, as in R.
 * - Samples so small that no k reaches α/2 (k = 1) give the whole range of the differences, whose coverage
 *   is then below 1 − α: `coverage` says what it is.
 */
import { normalIsf } from "./normal.js";
import { uCdf, uPmf } from "./u-distribution.js";

/** Above this many differences, k comes from the normal approximation. */
export const EXACT_CI_LIMIT = 2500;

export interface Shift {
  /** The Hodges-Lehmann estimate of x − y. */
  estimate: number;
  ciLow: number;
  ciHigh: number;
  /** The interval's coverage (exact when the exact distribution gave k; the nominal 1 − α otherwise). */
  coverage: number;
}

/** The median of sorted values. */
export function median(sorted: ArrayLike<number>): number {
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/** The sorted differences xᵢ − yⱼ. */
export function pairwiseDifferences(x: readonly number[], y: readonly number[]): Float64Array {
  const d = new Float64Array(x.length * y.length);
  let k = 0;
  for (const a of x) for (const b of y) d[k++] = a - b;
  return d.sort();
}

/** k of the interval (see the module's comment) and its coverage. */
export function ciRank(n: number, m: number, alpha: number): { k: number; coverage: number } {
  if (n * m <= EXACT_CI_LIMIT) {
    const pmf = uPmf(n, m);
    let cdf = 0;
    let k = 0;
    while (k < pmf.length && cdf + (pmf[k] as number) < alpha / 2) cdf += pmf[k++] as number;
    // cdf is now P(U ≤ k − 1) < α/2 ≤ P(U ≤ k).
    const rank = Math.max(1, k);
    return { k: rank, coverage: 1 - 2 * uCdf(pmf, rank - 1) };
  }
  const z = normalIsf(alpha / 2);
  const k = Math.floor((n * m) / 2 - z * Math.sqrt((n * m * (n + m + 1)) / 12));
  return { k: Math.max(1, k), coverage: 1 - alpha };
}

/** The Hodges-Lehmann shift of x against y and its 1 − alpha confidence interval. */
export function hodgesLehmann(x: readonly number[], y: readonly number[], alpha: number): Shift {
  if (x.length === 0 || y.length === 0) throw new RangeError("hodgesLehmann: a sample is empty");
  if (!(alpha > 0 && alpha < 1)) throw new RangeError(`hodgesLehmann: alpha=${alpha} is not in (0, 1)`);
  const d = pairwiseDifferences(x, y);
  const rank = ciRank(x.length, y.length, alpha);
  // Past the middle the interval would turn over (only for alpha near 1): the estimate's own rank at most.
  const k = Math.min(rank.k, Math.floor((d.length + 1) / 2));
  const coverage = rank.coverage;
  return {
    estimate: median(d),
    ciLow: d[k - 1] as number,
    ciHigh: d[d.length - k] as number,
    coverage,
  };
}
