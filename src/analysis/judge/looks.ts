/**
 * The interim-look correction: the judge looks at a test once a step, so a test of k steps makes k
 * tests, and each must be held to a share of the test's alpha. Pure.
 *
 * The rule is Lan & DeMets' linear spending function α(t) = α·t over the planned looks, t = look / looks: each
 * look spends α/k, Bonferroni's share (ADR 0030 says why not O'Brien-Fleming). By the union bound, the chance
 * that any of the k looks rejects a canary no worse than its baseline is at most Σ αᵢ ≤ α, however the
 * looks' samples depend on each other.
 */

/**
 * The alpha of look `look` (1-based) of `looks` planned, for a test whose overall confidence is `confidence`:
 * (1 − confidence) / looks, lowered by an ulp at a time in the rare case where `looks` of them would add up
 * above 1 − confidence in floating point.
 */
export function lookAlpha(confidence: number, looks: number, look: number): number {
  if (!(confidence > 0 && confidence < 1)) {
    throw new RangeError(`lookAlpha: confidence ${confidence} is not in (0, 1)`);
  }
  if (!Number.isInteger(looks) || looks < 1) throw new RangeError(`lookAlpha: ${looks} looks planned`);
  if (!Number.isInteger(look) || look < 1 || look > looks) {
    throw new RangeError(`lookAlpha: look ${look} is not one of the ${looks} planned`);
  }
  const alpha = 1 - confidence;
  // Linear spending: α(t) = α·t spends the same share at every look.
  let share = alpha / looks;
  while (spentBy(share, looks) > alpha) share -= share * Number.EPSILON;
  return share;
}

/** The alpha spent by `looks` looks of `share` each, added up as a caller would. */
function spentBy(share: number, looks: number): number {
  let sum = 0;
  for (let i = 0; i < looks; i++) sum += share;
  return sum;
}
