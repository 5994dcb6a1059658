import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { describe, test } from "node:test";
import type { AnalysisProvider } from "./analysis-provider.js";
import { analysisByProvider } from "./by-provider.js";
import { app, checkOf } from "./fake-source.test-helpers.js";

/** A provider that answers each check with its name and query, after `delayMs`, counting those in flight. */
function echo(name: string, stats: { inFlight: number; max: number }, delayMs = 20): AnalysisProvider {
  return {
    run: async (_app, checks) => {
      stats.inFlight++;
      stats.max = Math.max(stats.max, stats.inFlight);
      await sleep(delayMs);
      stats.inFlight--;
      return checks.map((c) => ({ kind: "error" as const, message: `${name}:${c.query}` }));
    },
  };
}

describe("analysisByProvider", () => {
  test("each check goes to its provider.type's provider, the rest to the fallback; in order, side by side", async () => {
    const stats = { inFlight: 0, max: 0 };
    const byProvider = analysisByProvider(
      { datadog: echo("datadog", stats), influxdb: echo("influxdb", stats) },
      echo("prometheus", stats),
    );
    const outcomes = await byProvider.run(app, [
      checkOf("a", { type: "influxdb" }),
      checkOf("b", undefined),
      checkOf("c", { type: "datadog" }),
      checkOf("d", { type: "prometheus", address: "http://thanos:9090" }),
      checkOf("e", { type: "influxdb" }),
      checkOf("f", { type: "newrelic" }),
    ]);
    assert.deepEqual(
      outcomes.map((o) => (o.kind === "error" ? o.message : o.kind)),
      ["influxdb:a", "prometheus:b", "datadog:c", "prometheus:d", "influxdb:e", "prometheus:f"],
    );
    assert.equal(stats.max, 3);
  });

  test("no checks, no calls", async () => {
    const stats = { inFlight: 0, max: 0 };
    assert.deepEqual(await analysisByProvider({}, echo("p", stats)).run(app, []), []);
    assert.equal(stats.max, 0);
  });
});
