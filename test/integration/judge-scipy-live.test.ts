/**
 * The judge's Mann-Whitney test against SciPy itself, on cases drawn from a new seed each run (printed;
 * JUDGE_SEED=<n> draws a run's cases again). Needs a python3 that imports scipy (`make scipy`): $PYTHON, else
 * the first of python3 and /usr/bin/python3 that does.
 *
 *   node --test dist/test/integration/judge-scipy-live.test.js
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { test } from "node:test";
import { referenceCases } from "../../tools/judge/cases.js";
import { disagreements, type Reference } from "../../tools/judge/agreement.js";

// dist/test/integration/ → the repository's tools/judge/reference.py.
const SCRIPT = fileURLToPath(new URL("../../../tools/judge/reference.py", import.meta.url));

function python(): string {
  const candidates = process.env.PYTHON !== undefined ? [process.env.PYTHON] : ["python3", "/usr/bin/python3"];
  const found = candidates.find((p) => spawnSync(p, ["-c", "import scipy"], { stdio: "ignore" }).status === 0);
  assert.ok(found !== undefined, `no python with scipy among ${candidates.join(", ")}: run make scipy`);
  return found;
}

test("SciPy answers fresh cases as the judge does", (t) => {
  const seed = process.env.JUDGE_SEED !== undefined ? Number(process.env.JUDGE_SEED) : Date.now() % 2 ** 31;
  assert.ok(Number.isInteger(seed), `JUDGE_SEED=${process.env.JUDGE_SEED} is not an integer`);
  t.diagnostic(`seed ${seed} (JUDGE_SEED=${seed} draws these cases again)`);
  console.log(`scipy-live: seed ${seed}`);
  const run = spawnSync(python(), [SCRIPT], {
    input: JSON.stringify(referenceCases(seed)),
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  });
  assert.equal(run.status, 0, `reference.py failed: ${run.stderr}`);
  const reference = JSON.parse(run.stdout) as Reference;
  t.diagnostic(`SciPy ${reference.scipy}, ${reference.cases.length} cases`);
  const { compared, differ } = disagreements(reference);
  assert.ok(compared > 2500, `only ${compared} answers`);
  assert.deepEqual(differ, [], `seed ${seed}`);
});
