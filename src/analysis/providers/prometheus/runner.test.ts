import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { describe, test } from "node:test";
import type { CanaryApp } from "../../../api/types.js";
import { PrometheusQueryError, PrometheusUnavailableError } from "./errors.js";
import { clearProviderCache } from "./factory.js";
import { scalarBody, startFakePrometheus } from "./fake-prometheus.test-helpers.js";
import type { DataOutcome, MetricsProvider } from "./provider.js";
import { runAppQueries } from "../prometheus.js";
import { runChecks } from "./runner.js";

/** A provider answering from a table, each answer after `delayMs`, counting queries in flight. */
function tableProvider(answers: Record<string, DataOutcome | Error>, delayMs = 20) {
  const stats = { inFlight: 0, maxInFlight: 0 };
  const provider: MetricsProvider = {
    async query(promql) {
      stats.inFlight++;
      stats.maxInFlight = Math.max(stats.maxInFlight, stats.inFlight);
      await sleep(delayMs);
      stats.inFlight--;
      const answer = answers[promql];
      if (answer === undefined) throw new Error(`unexpected query ${promql}`);
      if (answer instanceof Error) throw answer;
      return answer;
    },
  };
  return { provider, stats };
}

describe("runChecks", () => {
  test("one outcome per query, in order, errors with their reason; queries run in parallel", async () => {
    const { provider, stats } = tableProvider({
      a: { kind: "value", value: 1 },
      b: new PrometheusUnavailableError("Prometheus p: ECONNREFUSED", {}),
      c: { kind: "empty" },
      d: new PrometheusQueryError("Prometheus p: HTTP 400 bad_data: parse error"),
      e: { kind: "values", values: [1, 2] },
    });
    const outcomes = await runChecks(provider, ["a", "b", "c", "d", "e", "x"]);
    assert.deepEqual(outcomes, [
      { kind: "value", value: 1 },
      { kind: "error", message: "Prometheus p: ECONNREFUSED", reason: "PrometheusUnavailable" },
      { kind: "empty" },
      { kind: "error", message: "Prometheus p: HTTP 400 bad_data: parse error", reason: "QueryRejected" },
      { kind: "values", values: [1, 2] },
      { kind: "error", message: "unexpected query x", reason: "UnexpectedResult" },
    ]);
    assert.equal(stats.maxInFlight, 6);
  });

  test("no queries, no outcomes", async () => {
    assert.deepEqual(await runChecks(tableProvider({}).provider, []), []);
  });
});

describe("runAppQueries", () => {
  const app = (spec: Partial<CanaryApp["spec"]>): CanaryApp => ({
    metadata: { name: "web", namespace: "shop" },
    spec: { image: "web:v1", imageListenPort: 8080, ...spec },
  });

  test("queries the app's Prometheus", async () => {
    const server = await startFakePrometheus(() => ({ status: 200, body: scalarBody("0.5") }));
    try {
      const run = (a: CanaryApp, queries: string[]) =>
        runAppQueries(a, queries, { defaults: {}, readSecret: () => Promise.resolve(undefined) });
      assert.deepEqual(await run(app({ prometheusURL: server.url }), ["q1", "q2"]), [
        { kind: "value", value: 0.5 },
        { kind: "value", value: 0.5 },
      ]);
      assert.equal(server.requests.length, 2);
    } finally {
      await server.close();
      clearProviderCache();
    }
  });

  test("settings that cannot work become error outcomes naming the app", async () => {
    const run = (a: CanaryApp, queries: string[]) =>
      runAppQueries(a, queries, { defaults: {}, readSecret: () => Promise.resolve(undefined) });
    const outcomes = await run(app({}), ["q1", "q2"]);
    assert.equal(outcomes.length, 2);
    for (const o of outcomes) {
      assert.equal(o.kind, "error");
      assert.ok(o.kind === "error" && o.reason === "PrometheusConfigInvalid");
      assert.match(o.kind === "error" ? o.message : "", /CanaryApp shop\/web: no Prometheus URL/);
    }
  });

  test("a Secret that cannot be read rejects, so the reconcile is retried", async () => {
    const run = (a: CanaryApp, queries: string[]) =>
      runAppQueries(a, queries, { defaults: {}, readSecret: () => Promise.reject(new Error("apiserver down")) });
    await assert.rejects(
      run(app({ prometheusURL: "http://p", prometheus: { secretRef: { name: "s" } } }), ["q"]),
      /reading Secret shop\/s failed/,
    );
  });
});
