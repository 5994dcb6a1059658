/**
 * Where the judge's answers differ from SciPy's, for a reference file written by tools/judge/reference.py:
 * U within a relative 1e-9, p within a relative 1e-6, normal tails and quantiles within a relative 1e-9 (quantiles near 0 within 1e-14).
 * SciPy's NaN p (all values tied, no continuity correction) is expected as 1 (mann-whitney.ts says why).
 */
import { mannWhitneyU, type Alternative } from "../../src/analysis/judge/mann-whitney.js";
import { normalIsf, normalSf } from "../../src/analysis/judge/normal.js";
import type { ReferenceCase } from "./cases.js";

export interface Answer {
  alternative: Alternative;
  continuity: boolean;
  method: "auto" | "exact" | "asymptotic";
  statistic: number;
  pvalue: number | null;
}

export interface Reference {
  scipy: string;
  seed: number;
  cases: (ReferenceCase & { answers: Answer[] })[];
  normalSf: { z: number; sf: number }[];
  normalIsf: { p: number; isf: number }[];
}

const close = (ours: number, theirs: number, rel: number, abs = 0): boolean =>
  ours === theirs || Math.abs(ours - theirs) <= rel * Math.max(Math.abs(ours), Math.abs(theirs)) + abs;

/** One line for each answer that differs; empty when all agree. Also counts the answers compared. */
export function disagreements(reference: Reference): { compared: number; differ: string[] } {
  const differ: string[] = [];
  let compared = 0;
  for (const c of reference.cases) {
    for (const a of c.answers) {
      const ours = mannWhitneyU(c.x, c.y, a.alternative, { continuity: a.continuity, method: a.method });
      const expectedP = a.pvalue ?? 1;
      compared++;
      if (!close(ours.u, a.statistic, 1e-9) || !close(ours.p, expectedP, 1e-6)) {
        const how = `${a.alternative}, continuity ${a.continuity}, ${a.method}`;
        differ.push(`${c.id} (${how}): ours U=${ours.u} p=${ours.p}, SciPy U=${a.statistic} p=${a.pvalue}`);
      }
    }
  }
  for (const { z, sf } of reference.normalSf) {
    compared++;
    if (!close(normalSf(z), sf, 1e-9)) differ.push(`norm.sf(${z}): ours ${normalSf(z)}, SciPy ${sf}`);
  }
  for (const { p, isf } of reference.normalIsf) {
    compared++;
    if (!close(normalIsf(p), isf, 1e-9, 1e-14)) differ.push(`norm.isf(${p}): ours ${normalIsf(p)}, SciPy ${isf}`);
  }
  return { compared, differ };
}
