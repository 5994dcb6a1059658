import assert from "node:assert/strict";
import { test } from "node:test";
import { backoffMs } from "./backoff.js";

test("backoffMs: doubles from the first failure, capped, finite however many failures", () => {
  const cases: [failures: number, expected: number][] = [
    [0, 0],
    [1, 5],
    [2, 10],
    [3, 20],
    [10, 1000],
    [5000, 1000],
  ];
  for (const [failures, expected] of cases) assert.equal(backoffMs(failures, 5, 1000), expected, `${failures}`);
});
