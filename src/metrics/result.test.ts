import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { UnexpectedResultError } from "./errors.js";
import { parsePrometheusFloat, toOutcome } from "./result.js";

describe("parsePrometheusFloat", () => {
  test("reads Go's spellings", () => {
    assert.equal(parsePrometheusFloat("+Inf"), Infinity);
    assert.equal(parsePrometheusFloat("-Inf"), -Infinity);
    assert.ok(Number.isNaN(parsePrometheusFloat("NaN")));
    assert.equal(parsePrometheusFloat("0.25"), 0.25);
    assert.equal(parsePrometheusFloat("1e-3"), 0.001);
  });
  test("rejects what is not a number", () => {
    assert.throws(() => parsePrometheusFloat(""), /not a number/);
    assert.throws(() => parsePrometheusFloat("abc"), /not a number/);
  });
});

describe("toOutcome", () => {
  const series = (value: string) => ({ metric: {}, value: [1_700_000_000, value] });
  test("scalar → value", () => {
    assert.deepEqual(toOutcome({ resultType: "scalar", result: [1, "42.5"] }, "e"), { kind: "value", value: 42.5 });
  });
  test("scalar +Inf stays infinite, NaN passes through", () => {
    assert.deepEqual(toOutcome({ resultType: "scalar", result: [1, "+Inf"] }, "e"), { kind: "value", value: Infinity });
    const nan = toOutcome({ resultType: "scalar", result: [1, "NaN"] }, "e");
    assert.ok(nan.kind === "value" && Number.isNaN(nan.value));
  });
  test("one series → value; several → values in order; none → empty", () => {
    assert.deepEqual(toOutcome({ resultType: "vector", result: [series("7")] }, "e"), { kind: "value", value: 7 });
    assert.deepEqual(toOutcome({ resultType: "vector", result: [series("3"), series("1")] }, "e"), {
      kind: "values",
      values: [3, 1],
    });
    assert.deepEqual(toOutcome({ resultType: "vector", result: [] }, "e"), { kind: "empty" });
  });
  test("several labelled series → values with each series' labels, sorted, without __name__", () => {
    const labelled = (value: string, labels: Record<string, string>) => ({
      metric: { __name__: "latency", ...labels },
      value: [1_700_000_000, value],
    });
    assert.deepEqual(
      toOutcome(
        { resultType: "vector", result: [labelled("1", { zone: "b", pod: "a" }), labelled("2", { pod: "c" })] },
        "e",
      ),
      { kind: "values", values: [1, 2], labels: ['{pod="a", zone="b"}', '{pod="c"}'] },
    );
  });
  test("vector samples keep Go's spellings of infinity; a malformed one is unexpected", () => {
    assert.deepEqual(toOutcome({ resultType: "vector", result: [series("+Inf"), series("-Inf")] }, "e"), {
      kind: "values",
      values: [Infinity, -Infinity],
    });
    assert.throws(
      () => toOutcome({ resultType: "vector", result: [series("zz")] }, "e"),
      /vector result: not a number/,
    );
    assert.throws(() => toOutcome({ resultType: "vector", result: [{ metric: {} }] }, "e"), UnexpectedResultError);
  });
  test("matrix and string are unexpected", () => {
    assert.throws(() => toOutcome({ resultType: "matrix", result: [] }, "e"), UnexpectedResultError);
    assert.throws(() => toOutcome({ resultType: "string", result: [1, "x"] }, "e"), UnexpectedResultError);
  });
  test("malformed scalar is unexpected", () => {
    assert.throws(() => toOutcome({ resultType: "scalar", result: [1, "zz"] }, "e"), /scalar result: not a number/);
  });
});
