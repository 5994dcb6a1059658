/**
 * The Graphite provider against a real graphite-web (Debian's package, Django's server, started by
 * e2e/metric-servers.ts; `make metric-servers` installs it): whisper files written with Debian's whisper module,
 * read back through the render API as the controller runs instant and judged checks. Needs no cluster.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { startGraphite, type RunningGraphite } from "../../e2e/metric-servers.js";
import { accessOver, app, checkOf } from "../../src/analysis/providers/fake-source.test-helpers.js";
import { graphiteAnalysis } from "../../src/analysis/providers/graphite.js";

// Whisper's 10-second slots: points on them are stored as written.
const NOW = Math.floor(Date.now() / 10_000) * 10;

describe("Graphite provider against a real graphite-web", () => {
  let graphite: RunningGraphite;

  before(async () => {
    graphite = await startGraphite();
    graphite.write(
      "shop.secondary.latency",
      [0.2, 0.3, 0.25, 0.4].map((v, i): [number, number] => [NOW - 200 + i * 10, v]),
    );
    graphite.write("shop.primary.latency", [[NOW - 60, 0.1]]);
  });

  after(() => graphite?.stop());

  const spec = () => ({ type: "graphite" as const, address: graphite.url });
  const analysis = () => graphiteAnalysis(accessOver({}, { now: () => new Date() }));

  test("an instant check answers the latest datapoint; a wildcard answers one value a series; none is empty", async () => {
    const outcomes = await analysis().run(app, [
      checkOf("shop.secondary.latency", spec()),
      checkOf("shop.*.latency", spec()),
      checkOf("shop.canary.latency", spec()),
    ]);
    assert.deepEqual(outcomes, [
      { kind: "value", value: 0.4 },
      { kind: "values", values: [0.1, 0.4], labels: ["shop.primary.latency", "shop.secondary.latency"] },
      { kind: "empty" },
    ]);
  });

  test("a judged check answers the datapoints from start until end", async () => {
    const range = {
      start: new Date((NOW - 200) * 1000).toISOString(),
      end: new Date((NOW - 170) * 1000).toISOString(),
      stepSeconds: 10,
    };
    const [outcome] = await analysis().run(app, [checkOf("shop.secondary.latency", spec(), range)]);
    assert.deepEqual(outcome, { kind: "samples", values: [0.2, 0.3, 0.25, 0.4] });
  });

  test("a target graphite-web cannot evaluate is an error outcome", async () => {
    const [outcome] = await analysis().run(app, [checkOf("noSuchFunction(shop.secondary.latency)", spec())]);
    assert.match(
      outcome?.kind === "error" ? outcome.message : "",
      /^Graphite http:\/\/127\.0\.0\.1:\d+: HTTP [45]\d\d/,
    );
  });
});
