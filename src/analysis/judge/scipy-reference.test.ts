/**
 * The judge's Mann-Whitney test and normal tails agree with SciPy's answers recorded in scipy-reference.json
 * (`make judge-reference` writes it), and the recorded cases are still the generator's
 * (tools/judge/cases.ts), so that the file cannot drift from it.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { referenceCases, REFERENCE_SEED } from "../../../tools/judge/cases.js";
import { disagreements, type Reference } from "../../../tools/judge/agreement.js";

// dist/src/analysis/judge/ → the repository's src/analysis/judge/.
const FILE = new URL("../../../../src/analysis/judge/scipy-reference.json", import.meta.url);
const reference = JSON.parse(readFileSync(FILE, "utf8")) as Reference;

test("the recorded cases are the generator's, from its seed", () => {
  assert.equal(reference.seed, REFERENCE_SEED);
  const generated = referenceCases(REFERENCE_SEED);
  assert.deepEqual(
    reference.cases.map(({ id, x, y }) => ({ id, x, y })),
    generated.cases,
  );
  assert.deepEqual(
    reference.normalSf.map(({ z }) => z),
    generated.z,
  );
  assert.deepEqual(
    reference.normalIsf.map(({ p }) => p),
    generated.p,
  );
});

test(`every recorded SciPy answer (SciPy ${reference.scipy}) is ours`, () => {
  const { compared, differ } = disagreements(reference);
  assert.ok(compared > 2500, `only ${compared} answers recorded`);
  assert.deepEqual(differ, []);
});
