import assert from "node:assert/strict";
import { test } from "node:test";
import { averageRanks, tieTerm } from "./ranks.js";

test("ties share their average rank, in the values' order", () => {
  assert.deepEqual(averageRanks([3, 1, 3, 2, 3]), { ranks: [4, 1, 4, 2, 4], tieSizes: [1, 1, 3] });
  assert.deepEqual(averageRanks([0.5, 0.5]), { ranks: [1.5, 1.5], tieSizes: [2] });
  assert.deepEqual(averageRanks([]), { ranks: [], tieSizes: [] });
});

test("the tie term: Σ t³ − t, 0 without ties", () => {
  assert.equal(tieTerm([1, 1, 3]), 24);
  assert.equal(tieTerm([1, 1, 1]), 0);
});
