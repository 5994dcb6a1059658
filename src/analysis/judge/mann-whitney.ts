/**
 * The Mann-Whitney U test (Wilcoxon rank-sum), answering as SciPy's `scipy.stats.mannwhitneyu(x, y,
 * use_continuity, alternative, method)` does (SciPy 1.10, `scipy/stats/_mannwhitneyu.py`). Pure.
 *
 * - U is x's: R₁ − n(n+1)/2, R₁ the sum of x's ranks in the pooled sample, ties given their average rank.
 * - `greater` tests whether x tends to be larger than y, on U₁; `less` on U₂ = n·m − U₁ (the same tail by
 *   symmetry); `two-sided` on max(U₁, U₂), its one-sided p doubled and capped at 1.
 * - `exact`: P(U ≥ ⌊U⌋) from the exact null distribution (u-distribution.ts). It assumes no ties; with ties it
 *   still answers as SciPy does (on U truncated to an integer), but `auto` never picks it then.
 * - `asymptotic`: z = (U − n·m/2 − ½·continuity) / σ with σ² = n·m/12 · ((N + 1) − Σ(t³ − t)/(N(N − 1))),
 *   N = n + m, t the sizes of the groups of ties; p = P(Z > z).
 * - `auto` (SciPy's `_mwu_choose_method`): asymptotic when both samples have more than 8 values or when the
 *   pooled sample has a tie; exact otherwise.
 *
 * One departure: when every value is the same, σ = 0 and SciPy answers NaN without the continuity correction
 * (0/0). There is no evidence of any difference then, and the judge needs a probability: p = 1.
 */
import { averageRanks, tieTerm } from "./ranks.js";
import { normalSf } from "./normal.js";
import { uPmf, uSf } from "./u-distribution.js";

export type Alternative = "two-sided" | "greater" | "less";

export interface MannWhitneyOptions {
  /** Subtract ½ from |U − mean| in the normal approximation (default true, as SciPy). */
  continuity?: boolean;
  /** `auto` (default) chooses as SciPy does; see the module's comment. */
  method?: "auto" | "exact" | "asymptotic";
}

export interface MannWhitneyResult {
  /** U of x (SciPy's `statistic`). */
  u: number;
  /** The p-value of the alternative, in [0, 1]. */
  p: number;
  method: "exact" | "asymptotic";
  /** With `asymptotic`: the standardised statistic whose upper normal tail (doubled for two-sided) is p. */
  z?: number;
}

function checkSample(name: string, sample: readonly number[]): void {
  if (sample.length === 0) throw new RangeError(`mannWhitneyU: ${name} is empty`);
  if (!sample.every(Number.isFinite)) throw new RangeError(`mannWhitneyU: ${name} has a non-finite value`);
}

/** Mann-Whitney U of x against y; see the module's comment for how it matches SciPy. */
export function mannWhitneyU(
  x: readonly number[],
  y: readonly number[],
  alternative: Alternative,
  options: MannWhitneyOptions = {},
): MannWhitneyResult {
  checkSample("x", x);
  checkSample("y", y);
  const n = x.length;
  const m = y.length;
  const { ranks, tieSizes } = averageRanks([...x, ...y]);
  const ties = tieSizes.some((t) => t > 1);
  const requested = options.method ?? "auto";
  const method = requested !== "auto" ? requested : (n > 8 && m > 8) || ties ? "asymptotic" : "exact";

  let r1 = 0;
  for (let i = 0; i < n; i++) r1 += ranks[i] as number;
  const u1 = r1 - (n * (n + 1)) / 2;
  const u2 = n * m - u1;
  const [u, factor] = alternative === "greater" ? [u1, 1] : alternative === "less" ? [u2, 1] : [Math.max(u1, u2), 2];

  if (method === "exact") {
    const p = uSf(uPmf(n, m), Math.trunc(u));
    return { u: u1, p: Math.min(1, Math.max(0, p * factor)), method };
  }
  const total = n + m;
  const sigma = Math.sqrt(((n * m) / 12) * (total + 1 - tieTerm(tieSizes) / (total * (total - 1))));
  const numerator = u - (n * m) / 2 - (options.continuity === false ? 0 : 0.5);
  // All values equal (σ = 0, or N = 1 is impossible with two non-empty samples): no evidence, see above.
  if (!(sigma > 0)) return { u: u1, p: 1, method };
  const z = numerator / sigma;
  return { u: u1, p: Math.min(1, Math.max(0, normalSf(z) * factor)), method, z };
}
