/**
 * The standard normal distribution's upper tail and its inverse, to the precision the judge's p-values need
 * (relative error near 1e-15 over the whole range, far in the tail included). Pure.
 */

const SQRT_PI = Math.sqrt(Math.PI);

/**
 * erfc(x) for x >= 0. Below 3: erf by its series of positive terms, erf(x) = 2/√π · e^(−x²) · Σ 2ⁿ x^(2n+1) /
 * (1·3·…·(2n+1)) (Abramowitz & Stegun 7.1.6), which has no cancellation. From 3 on: Laplace's continued
 * fraction erfc(x) = e^(−x²)/√π · 1/(x + ½/(x + 1/(x + 3⁄2/(x + …)))) (A&S 7.1.14), evaluated by Lentz's method,
 * which keeps its relative precision however small erfc is.
 */
function erfcNonNegative(x: number): number {
  if (x < 3) {
    let term = x;
    let sum = x;
    for (let n = 1; n < 200 && term > sum * 1e-17; n++) {
      term *= (2 * x * x) / (2 * n + 1);
      sum += term;
    }
    return 1 - (2 / SQRT_PI) * Math.exp(-x * x) * sum;
  }
  const tiny = 1e-300;
  let f = x;
  let c = x;
  let d = 0;
  for (let k = 1; k < 500; k++) {
    const a = k / 2;
    d = x + a * d;
    d = d === 0 ? tiny : 1 / d;
    c = x + a / c;
    if (c === 0) c = tiny;
    const delta = c * d;
    f *= delta;
    if (Math.abs(delta - 1) < 1e-16) break;
  }
  return Math.exp(-x * x) / SQRT_PI / f;
}

/** The complementary error function. */
export function erfc(x: number): number {
  if (Number.isNaN(x)) return NaN;
  return x >= 0 ? erfcNonNegative(x) : 2 - erfcNonNegative(-x);
}

/** P(Z > z) for a standard normal Z (SciPy's `scipy.stats.norm.sf`). */
export function normalSf(z: number): number {
  if (Number.isNaN(z)) return NaN;
  if (z === Infinity) return 0;
  if (z === -Infinity) return 1;
  return z >= 0 ? erfcNonNegative(z / Math.SQRT2) / 2 : 1 - erfcNonNegative(-z / Math.SQRT2) / 2;
}

/** The z with P(Z > z) = p (SciPy's `scipy.stats.norm.isf`), by bisection on `normalSf`; p in (0, 1). */
export function normalIsf(p: number): number {
  if (!(p > 0 && p < 1)) {
    if (p === 0) return Infinity;
    if (p === 1) return -Infinity;
    throw new RangeError(`normalIsf: p=${p} is not a probability`);
  }
  if (p === 0.5) return 0;
  let lo = -40;
  let hi = 40;
  // 200 halvings take the bracket below the spacing of doubles; stop earlier when it stops moving.
  for (let i = 0; i < 200; i++) {
    const mid = (lo + hi) / 2;
    if (mid === lo || mid === hi) break;
    if (normalSf(mid) > p) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}
