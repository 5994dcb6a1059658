import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { UnexpectedResultError } from "./errors.js";
import { parsePrometheusFloat, respellInfinities, toOutcome } from "./result.js";

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

describe("respellInfinities", () => {
  test("rewrites vector and matrix samples so parseFloat keeps infinities", () => {
    const body = {
      status: "success",
      data: {
        resultType: "vector",
        result: [
          { metric: {}, value: [1, "+Inf"] },
          { metric: {}, value: [1, "-Inf"] },
          { metric: {}, value: [1, "3"] },
        ],
      },
    };
    respellInfinities(body);
    assert.deepEqual(
      body.data.result.map((s) => parseFloat(s.value[1] as string)),
      [Infinity, -Infinity, 3],
    );
  });
  test("ignores bodies that are not query results", () => {
    assert.doesNotThrow(() => respellInfinities("<html>"));
    assert.doesNotThrow(() => respellInfinities(null));
    assert.doesNotThrow(() => respellInfinities({ data: { result: "x" } }));
  });
});

describe("toOutcome", () => {
  const series = (value: number) => ({ metric: {}, value: { time: new Date(), value } });
  test("scalar → value", () => {
    assert.deepEqual(toOutcome({ resultType: "scalar", result: [1, "42.5"] }, "e"), { kind: "value", value: 42.5 });
  });
  test("scalar +Inf stays infinite, NaN passes through", () => {
    assert.deepEqual(toOutcome({ resultType: "scalar", result: [1, "+Inf"] }, "e"), { kind: "value", value: Infinity });
    const nan = toOutcome({ resultType: "scalar", result: [1, "NaN"] }, "e");
    assert.ok(nan.kind === "value" && Number.isNaN(nan.value));
  });
  test("one series → value; several → values in order; none → empty", () => {
    assert.deepEqual(toOutcome({ resultType: "vector", result: [series(7)] }, "e"), { kind: "value", value: 7 });
    assert.deepEqual(toOutcome({ resultType: "vector", result: [series(3), series(1)] }, "e"), {
      kind: "values",
      values: [3, 1],
    });
    assert.deepEqual(toOutcome({ resultType: "vector", result: [] }, "e"), { kind: "empty" });
  });
  test("several labelled series → values with each series' labels, sorted, without __name__", () => {
    const labelled = (value: number, labels: Record<string, string>) => ({
      metric: { name: "latency", labels: { __name__: "latency", ...labels } },
      value: { time: new Date(), value },
    });
    assert.deepEqual(
      toOutcome(
        { resultType: "vector", result: [labelled(1, { zone: "b", pod: "a" }), labelled(2, { pod: "c" })] },
        "e",
      ),
      { kind: "values", values: [1, 2], labels: ['{pod="a", zone="b"}', '{pod="c"}'] },
    );
  });
  test("matrix and string are unexpected", () => {
    assert.throws(() => toOutcome({ resultType: "matrix", result: [] }, "e"), UnexpectedResultError);
    assert.throws(() => toOutcome({ resultType: "string", result: [1, "x"] }, "e"), UnexpectedResultError);
  });
  test("malformed scalar is unexpected", () => {
    assert.throws(() => toOutcome({ resultType: "scalar", result: [1, "zz"] }, "e"), /scalar result: not a number/);
  });
});
