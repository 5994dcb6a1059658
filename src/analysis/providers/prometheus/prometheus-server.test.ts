/**
 * The provider against a real Prometheus (the distribution's binary, started by e2e/prometheus.ts), reached
 * through a counting proxy so attempts can be asserted. Needs /usr/bin/prometheus (`make deps`).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { startPrometheus, type RunningPrometheus } from "../../../../e2e/prometheus.js";
import { PrometheusQueryError, UnexpectedResultError } from "./errors.js";
import { startCountingProxy, type TestServer } from "./fake-prometheus.test-helpers.js";
import { PrometheusProvider } from "./client.js";
import type { DataOutcome } from "./provider.js";
import { runChecks } from "./runner.js";

describe("PrometheusProvider against a real Prometheus", () => {
  let prometheus: RunningPrometheus;
  let proxy: TestServer;
  let provider: PrometheusProvider;

  before(async () => {
    prometheus = await startPrometheus({ targets: [], handleSignals: false });
    proxy = await startCountingProxy(prometheus.url);
    provider = new PrometheusProvider({
      endpoint: proxy.url,
      timeoutMs: 5_000,
      retry: { retries: 3, minTimeoutMs: 10, factor: 2 },
    });
  });

  after(async () => {
    await proxy?.close();
    await prometheus?.stop();
  });

  const cases: { query: string; expected: DataOutcome }[] = [
    { query: "0.25", expected: { kind: "value", value: 0.25 } },
    { query: "vector(3)", expected: { kind: "value", value: 3 } },
    {
      query: 'sort(label_replace(vector(2), "s", "b", "", "") or label_replace(vector(1), "s", "a", "", ""))',
      expected: { kind: "values", values: [1, 2], labels: ['{s="a"}', '{s="b"}'] },
    },
    { query: "vector(1) > 5", expected: { kind: "empty" } },
    { query: "1/0", expected: { kind: "value", value: Infinity } },
    { query: "vector(-1)/0", expected: { kind: "value", value: -Infinity } },
  ];
  for (const c of cases) {
    const shown = c.expected.kind === "value" ? String(c.expected.value) : JSON.stringify(c.expected);
    test(`${c.query} → ${shown}`, async () => {
      assert.deepEqual(await provider.query(c.query), c.expected);
    });
  }

  test("NaN is passed through as a number, scalar or vector", async () => {
    for (const query of ["0/0", "vector(0)/0"]) {
      const outcome = await provider.query(query);
      assert.ok(outcome.kind === "value" && Number.isNaN(outcome.value), `${query}: ${JSON.stringify(outcome)}`);
    }
  });

  test("a bad query is a permanent error, asked once", async () => {
    const before = proxy.requests.length;
    await assert.rejects(provider.query("sum(rate(x[1m])"), (err: unknown) => {
      assert.ok(err instanceof PrometheusQueryError);
      assert.equal(err.status, 400);
      assert.equal(err.errorType, "bad_data");
      assert.match(err.message, /parse error/);
      return true;
    });
    assert.equal(proxy.requests.length - before, 1);
  });

  test("a range vector or a string is an unexpected result, asked once", async () => {
    const before = proxy.requests.length;
    await assert.rejects(provider.query("vector(1)[10s:1s]"), /returned a matrix/);
    await assert.rejects(provider.query('"text"'), UnexpectedResultError);
    assert.equal(proxy.requests.length - before, 2);
  });

  test("runChecks keeps order and turns failures into outcomes", async () => {
    assert.deepEqual(await runChecks(provider, ["vector(1)", "sum(", "vector(1) > 5"]), [
      { kind: "value", value: 1 },
      {
        kind: "error",
        reason: "QueryRejected",
        message: `Prometheus ${proxy.url}: HTTP 400 bad_data: invalid parameter "query": 1:5: parse error: unclosed left parenthesis`,
      },
      { kind: "empty" },
    ]);
  });

  test("a range query answers one sample a step; several series are not one track's; none is empty", async () => {
    const end = new Date(Math.floor(Date.now() / 1000) * 1000);
    const range = { start: new Date(end.getTime() - 40_000).toISOString(), end: end.toISOString(), stepSeconds: 10 };
    assert.deepEqual(await provider.queryRange("vector(0.5)", range), {
      kind: "samples",
      values: [0.5, 0.5, 0.5, 0.5, 0.5],
    });
    await assert.rejects(
      provider.queryRange(
        'label_replace(vector(1), "s", "a", "", "") or label_replace(vector(2), "s", "b", "", "")',
        range,
      ),
      /returned 2 series; a judged metric needs one/,
    );
    assert.deepEqual(await provider.queryRange("vector(1) > 5", range), { kind: "empty" });
    assert.deepEqual(await runChecks(provider, [{ query: "vector(2)", range }]), [
      { kind: "samples", values: [2, 2, 2, 2, 2] },
    ]);
  });
});
