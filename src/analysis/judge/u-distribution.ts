/**
 * The exact null distribution of the Mann-Whitney U statistic for samples of n and m without ties. Pure.
 *
 * The count of arrangements f(n, m, u) follows f(n, m, u) = f(n − 1, m, u − m) + f(n, m − 1, u) (Mann & Whitney
 * 1947; the recursion SciPy's `_MWU` uses). It is carried here as probabilities,
 * p(n, m, u) = n/(n+m) · p(n − 1, m, u − m) + m/(n+m) · p(n, m − 1, u): every term is positive, so there is no
 * cancellation and no count overflowing 2⁵³ for large samples. The cost is about n²m²/4 additions.
 */

/** P(U = u) for u = 0 … n·m. */
export function uPmf(n: number, m: number): Float64Array {
  if (!Number.isInteger(n) || !Number.isInteger(m) || n < 0 || m < 0) {
    throw new RangeError(`uPmf: sample sizes ${n} and ${m} must be non-negative integers`);
  }
  // row[j] holds p(i, j, ·) for the current i; p(0, j) and p(i, 0) put all their mass on u = 0.
  let row: Float64Array[] = Array.from({ length: m + 1 }, () => Float64Array.of(1));
  for (let i = 1; i <= n; i++) {
    const next: Float64Array[] = [Float64Array.of(1)];
    for (let j = 1; j <= m; j++) {
      const out = new Float64Array(i * j + 1);
      const fromX = row[j] as Float64Array; // p(i − 1, j), shifted by j
      const fromY = next[j - 1] as Float64Array; // p(i, j − 1)
      const a = i / (i + j);
      const b = j / (i + j);
      for (let u = 0; u < fromX.length; u++) out[u + j] = (out[u + j] as number) + a * (fromX[u] as number);
      for (let u = 0; u < fromY.length; u++) out[u] = (out[u] as number) + b * (fromY[u] as number);
      next.push(out);
    }
    row = next;
  }
  return row[m] as Float64Array;
}

/** P(U >= k), summed from the far tail inwards so that small tails keep their precision. */
export function uSf(pmf: Float64Array, k: number): number {
  if (k <= 0) return 1;
  let sum = 0;
  for (let u = pmf.length - 1; u >= k; u--) sum += pmf[u] as number;
  return Math.min(1, sum);
}

/** P(U <= k), summed from the far tail (u = 0) inwards. */
export function uCdf(pmf: Float64Array, k: number): number {
  if (k < 0) return 0;
  let sum = 0;
  for (let u = 0; u <= Math.min(k, pmf.length - 1); u++) sum += pmf[u] as number;
  return Math.min(1, sum);
}
