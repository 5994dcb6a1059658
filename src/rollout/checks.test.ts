import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { withDefaults } from "../api/defaults.js";
import type { CanaryAppSpec } from "../api/types.js";
import { DEFAULT_SUCCESS_RATE_MIN, SEED_CHECK_NAME, analysisChecks, checkProblems } from "./checks.js";
import { makeApp } from "./fixtures.test-helpers.js";
import { BUILTIN_QUERIES } from "./templates.js";

const spec = (extra: Partial<CanaryAppSpec>) => withDefaults({ ...makeApp().spec, ...extra });

describe("analysisChecks", () => {
  test("no check at all: the built-in success rate with min 99", () => {
    assert.deepEqual(analysisChecks(spec({})), [
      {
        name: "request-success-rate",
        mode: "threshold",
        query: BUILTIN_QUERIES["request-success-rate"],
        min: DEFAULT_SUCCESS_RATE_MIN,
      },
    ]);
  });

  test("the seed query alone is one seed-mode check", () => {
    assert.deepEqual(analysisChecks(spec({ prometheusQuery: "up == 0" })), [
      { name: SEED_CHECK_NAME, mode: "seed", query: "up == 0" },
    ]);
  });

  test("seed query first, then the metrics in order; built-ins get their templates, min/max as given", () => {
    const checks = analysisChecks(
      spec({
        prometheusQuery: "errors > 2",
        analysis: {
          metrics: [
            { name: "request-duration", max: 500 },
            { name: "request-success-rate", min: 95 },
            { name: "queue", query: "sum(queue{app='{{name}}'})", min: 0, max: 10 },
          ],
        },
      }),
    );
    assert.deepEqual(checks, [
      { name: SEED_CHECK_NAME, mode: "seed", query: "errors > 2" },
      { name: "request-duration", mode: "threshold", query: BUILTIN_QUERIES["request-duration"], max: 500 },
      { name: "request-success-rate", mode: "threshold", query: BUILTIN_QUERIES["request-success-rate"], min: 95 },
      { name: "queue", mode: "threshold", query: "sum(queue{app='{{name}}'})", min: 0, max: 10 },
    ]);
  });

  test("a built-in name with its own query uses that query", () => {
    const [check] = analysisChecks(spec({ analysis: { metrics: [{ name: "request-duration", query: "q", max: 1 }] } }));
    assert.equal(check?.query, "q");
  });
});

describe("checkProblems", () => {
  const cases: { name: string; spec: Partial<CanaryAppSpec>; problems: RegExp[] }[] = [
    { name: "defaults", spec: {}, problems: [] },
    { name: "seed query with known variables", spec: { prometheusQuery: "x{ns='{{namespace}}'}" }, problems: [] },
    {
      name: "seed query with an unknown variable",
      spec: { prometheusQuery: "x{{{pod}}}" },
      problems: [/prometheusQuery .*\{\{pod\}\}/],
    },
    {
      name: "custom metric without query",
      spec: { analysis: { metrics: [{ name: "latency", max: 3 }] } },
      problems: [/latency needs a query/],
    },
    {
      name: "metric without bounds",
      spec: { analysis: { metrics: [{ name: "request-duration" }] } },
      problems: [/request-duration needs min, max or both/],
    },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const problems = checkProblems(spec(c.spec));
      assert.equal(problems.length, c.problems.length, problems.join("; "));
      c.problems.forEach((re, i) => assert.match(problems[i] ?? "", re));
    });
  }
});
