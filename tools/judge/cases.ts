/**
 * The cases the judge's Mann-Whitney test is checked on against SciPy (tools/judge/reference.py), drawn by
 * fast-check from a fixed seed, so that the recorded answers (src/analysis/judge/scipy-reference.json) can be
 * regenerated and their cases checked against this generator.
 *
 * `node dist/tools/judge/cases.js [seed]` prints them as JSON (default seed: REFERENCE_SEED).
 */
import fc from "fast-check";

/** The seed of the recorded reference. */
export const REFERENCE_SEED = 20301;

export interface ReferenceCase {
  id: string;
  x: number[];
  y: number[];
}

export interface ReferenceCases {
  seed: number;
  cases: ReferenceCase[];
  /** z values whose normal upper tail SciPy gives (scipy.stats.norm.sf). */
  z: number[];
  /** Probabilities whose normal upper quantile SciPy gives (scipy.stats.norm.isf). */
  p: number[];
}

/** Values on a grid of 0.01 between lo and hi: few ties when the range is wide, many when it is narrow. */
const values = (lo: number, hi: number, min: number, max: number): fc.Arbitrary<number[]> =>
  fc.array(
    fc.integer({ min: Math.round(lo * 100), max: Math.round(hi * 100) }).map((v) => v / 100),
    { minLength: min, maxLength: max },
  );

/** A pair of samples, the second possibly shifted so that both tails of the test are reached. */
const pair = (lo: number, hi: number, min: number, max: number): fc.Arbitrary<{ x: number[]; y: number[] }> =>
  fc
    .record({ x: values(lo, hi, min, max), y: values(lo, hi, min, max), shift: fc.constantFrom(0, 0, 1, -1, 5) })
    .map(({ x, y, shift }) => ({ x, y: y.map((v) => Math.round((v + shift) * 100) / 100) }));

const FAMILIES: { name: string; count: number; arbitrary: fc.Arbitrary<{ x: number[]; y: number[] }> }[] = [
  { name: "tiny", count: 40, arbitrary: pair(0, 100, 1, 8) },
  { name: "tiny-ties", count: 30, arbitrary: pair(0, 0.04, 1, 8) },
  { name: "small", count: 30, arbitrary: pair(0, 100, 5, 20) },
  { name: "small-ties", count: 30, arbitrary: pair(0, 0.05, 5, 20) },
  { name: "large", count: 20, arbitrary: pair(10, 30, 55, 65) },
  { name: "large-ties", count: 15, arbitrary: pair(0, 0.1, 55, 65) },
];

/** Cases written out by hand: samples of one, equal samples, all values tied, complete separation. */
const FIXED: ReferenceCase[] = [
  { id: "one-each-apart", x: [2], y: [1] },
  { id: "one-each-equal", x: [1], y: [1] },
  { id: "one-against-many", x: [5], y: [1, 2, 3, 4, 6, 7, 8, 9, 10] },
  { id: "equal-samples", x: [1, 2, 3, 4, 5], y: [1, 2, 3, 4, 5] },
  { id: "all-tied", x: [3, 3, 3, 3], y: [3, 3, 3] },
  { id: "separated", x: [11, 12, 13, 14, 15, 16, 17, 18, 19, 20], y: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10] },
  { id: "textbook", x: [19, 22, 16, 29, 24], y: [20, 11, 17, 12] },
];

const Z = [
  -40, -8, -3, -1.5, -0.5, 0, 1e-8, 0.3, 1, 1.644853626951472, 1.96, 2.5, 2.9999, 3, 3.0001, 4, 6, 8.5, 12, 20, 37,
];
const P = [1e-300, 1e-20, 1e-9, 1e-4, 0.0025, 0.005, 0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 0.975, 0.999999];

/** The cases drawn from `seed`: the same seed, the same cases. */
export function referenceCases(seed: number): ReferenceCases {
  const cases = [...FIXED];
  FAMILIES.forEach((family, f) => {
    fc.sample(family.arbitrary, { seed: seed + f, numRuns: family.count }).forEach((c, i) => {
      cases.push({ id: `${family.name}-${i}`, x: c.x, y: c.y });
    });
  });
  return { seed, cases, z: Z, p: P };
}

if (import.meta.url === `file://${process.argv[1] ?? ""}`) {
  const seed = process.argv[2] === undefined ? REFERENCE_SEED : Number(process.argv[2]);
  if (!Number.isInteger(seed)) throw new Error(`cases: seed ${process.argv[2]} is not an integer`);
  process.stdout.write(JSON.stringify(referenceCases(seed)) + "\n");
}
