/**
 * A Prometheus-compatible server named by a check (`provider: {type: prometheus, address}`) against a real
 * VictoriaMetrics (Debian's victoria-metrics, started by e2e/metric-servers.ts; `make metric-servers` installs
 * it): samples imported with its Prometheus import API, then an instant check and a judged check's range query
 * through the controller's Prometheus path, while the app's own Prometheus is elsewhere. Needs no cluster.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { startVictoriaMetrics, type RunningServer } from "../../e2e/metric-servers.js";
import { analysisByProvider } from "../../src/analysis/providers/by-provider.js";
import { app, checkOf } from "../../src/analysis/providers/fake-source.test-helpers.js";
import { ProviderPool } from "../../src/analysis/providers/prometheus/factory.js";
import { prometheusAnalysis } from "../../src/analysis/providers/prometheus.js";

const NOW = Math.floor(Date.now() / 1000);

describe("a Prometheus-compatible provider address against a real VictoriaMetrics", () => {
  let vm: RunningServer;

  before(async () => {
    vm = await startVictoriaMetrics();
    const lines = [
      ...[0.2, 0.3, 0.25, 0.4].map((v, i) => `latency_seconds{track="secondary"} ${v} ${(NOW - 200 + i * 10) * 1000}`),
      `latency_seconds{track="primary"} 0.1 ${(NOW - 20) * 1000}`,
    ];
    const res = await fetch(`${vm.url}/api/v1/import/prometheus`, { method: "POST", body: lines.join("\n") });
    assert.equal(res.status, 204);
    await fetch(`${vm.url}/internal/force_flush`);
  });

  after(() => vm?.stop());

  // The app's own Prometheus is a closed port: every answer below came from the check's address.
  const own = { ...app, spec: { ...app.spec, prometheusURL: "http://127.0.0.1:9" } };
  const analysis = analysisByProvider(
    {},
    prometheusAnalysis({
      defaults: { retry: { retries: 0 } },
      readSecret: () => Promise.resolve(null),
      pool: new ProviderPool(),
    }),
  );

  test("instant checks run at the check's address", async () => {
    const spec = { type: "prometheus" as const, address: vm.url };
    const outcomes = await analysis.run(own, [
      checkOf('latency_seconds{track="primary"}', spec),
      checkOf('latency_seconds{track="canary"}', spec),
    ]);
    assert.deepEqual(outcomes, [{ kind: "value", value: 0.1 }, { kind: "empty" }]);
  });

  test("a judged check runs query_range and answers one sample a step", async () => {
    const range = {
      start: new Date((NOW - 200) * 1000).toISOString(),
      end: new Date((NOW - 170) * 1000).toISOString(),
      stepSeconds: 10,
    };
    const [outcome] = await analysis.run(own, [
      checkOf('latency_seconds{track="secondary"}', { type: "prometheus", address: vm.url }, range),
    ]);
    assert.deepEqual(outcome, { kind: "samples", values: [0.2, 0.3, 0.25, 0.4] });
  });

  test("a check without an address still goes to the app's Prometheus, and says so when it is down", async () => {
    const [outcome] = await analysis.run(own, [checkOf("vector(1)", undefined)]);
    assert.match(outcome?.kind === "error" ? outcome.message : "", /Prometheus http:\/\/127\.0\.0\.1:9.*ECONNREFUSED/);
  });
});
