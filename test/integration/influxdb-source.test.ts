/**
 * The InfluxDB provider against a real InfluxDB 1.x (Debian's influxdb, started by e2e/metric-servers.ts;
 * `make metric-servers` installs it): authentication on, points written with its /write API, InfluxQL read
 * back through /query, as the controller runs an instant check and a judged one. Needs no cluster.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { startInfluxDb, type RunningServer } from "../../e2e/metric-servers.js";
import { analysisByProvider } from "../../src/analysis/providers/by-provider.js";
import { accessOver, app, checkOf, secretFor } from "../../src/analysis/providers/fake-source.test-helpers.js";
import { influxDbAnalysis } from "../../src/analysis/providers/influxdb.js";
import type { AnalysisProvider } from "../../src/analysis/providers/analysis-provider.js";

const NOW = Math.floor(Date.now() / 1000);

describe("InfluxDB provider against a real InfluxDB 1.x", () => {
  let influx: RunningServer;
  const admin = `Basic ${Buffer.from("admin:adm1n").toString("base64")}`;

  async function influxQL(q: string, auth = admin): Promise<unknown> {
    const res = await fetch(`${influx.url}/query`, {
      method: "POST",
      headers: { Authorization: auth, "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ q }),
    });
    assert.ok(res.ok, `${q}: HTTP ${res.status}`);
    return res.json();
  }

  before(async () => {
    influx = await startInfluxDb();
    // With authentication on and no user yet, InfluxDB takes this one statement unauthenticated.
    await influxQL("CREATE USER admin WITH PASSWORD 'adm1n' WITH ALL PRIVILEGES", "");
    await influxQL("CREATE DATABASE shop");
    await influxQL("CREATE USER reader WITH PASSWORD 'r3ader'");
    await influxQL('GRANT READ ON "shop" TO "reader"');
    const lines = [
      ...[0.2, 0.3, 0.25, 0.4].map((v, i) => `latency,track=secondary value=${v} ${NOW - 200 + i * 10}`),
      `latency,track=primary value=0.1 ${NOW - 60}`,
    ];
    const res = await fetch(`${influx.url}/write?db=shop&precision=s`, {
      method: "POST",
      headers: { Authorization: admin },
      body: lines.join("\n"),
    });
    assert.equal(res.status, 204);
  });

  after(() => influx?.stop());

  const spec = () => ({
    type: "influxdb" as const,
    address: influx.url,
    database: "shop",
    secretRef: { name: "influx" },
  });
  const analysis = (password = "r3ader"): AnalysisProvider =>
    analysisByProvider(
      {
        influxdb: influxDbAnalysis(
          accessOver(
            { "team-a/influx": secretFor({ username: "reader", password }, influx.url) },
            { now: () => new Date() },
          ),
        ),
      },
      { run: () => Promise.reject(new Error("not the app's Prometheus")) },
    );

  test("an instant check answers the latest figure; GROUP BY a tag answers one value a series", async () => {
    const last = checkOf(`SELECT last("value") FROM "latency" WHERE "track" = 'secondary' AND $timeFilter`, spec());
    const byTrack = checkOf(`SELECT mean("value") FROM "latency" WHERE $timeFilter GROUP BY "track"`, spec());
    const none = checkOf(`SELECT mean("value") FROM "latency" WHERE "track" = 'canary' AND $timeFilter`, spec());
    const outcomes = await analysis().run(app, [last, byTrack, none]);
    assert.deepEqual(outcomes[0], { kind: "value", value: 0.4 });
    assert.equal(outcomes[1]?.kind, "values");
    assert.deepEqual(outcomes[1]?.kind === "values" ? outcomes[1].labels : [], [
      'latency{track="primary"}',
      'latency{track="secondary"}',
    ]);
    const values = outcomes[1]?.kind === "values" ? outcomes[1].values : [];
    assert.equal(values[0], 0.1);
    assert.ok(Math.abs((values[1] ?? 0) - 0.2875) < 1e-9, String(values[1]));
    assert.deepEqual(outcomes[2], { kind: "empty" });
  });

  test("a judged check answers one sample a step over its range", async () => {
    const range = {
      start: new Date((NOW - 200) * 1000).toISOString(),
      end: new Date((NOW - 170) * 1000).toISOString(),
      stepSeconds: 10,
    };
    const check = checkOf(
      `SELECT mean("value") FROM "latency" WHERE "track" = 'secondary' AND $timeFilter GROUP BY time($interval)`,
      spec(),
      range,
    );
    const [outcome] = await analysis().run(app, [check]);
    assert.equal(outcome?.kind, "samples");
    // The buckets InfluxDB aligns to the step hold one point each, in time order (empty ones left out).
    assert.deepEqual(outcome, { kind: "samples", values: [0.2, 0.3, 0.25, 0.4] });
  });

  test("InfluxDB's own refusals come back as error outcomes: a wrong password, a bad statement", async () => {
    const [denied] = await analysis("wrong").run(app, [checkOf(`SELECT last("value") FROM "latency"`, spec())]);
    assert.match(denied?.kind === "error" ? denied.message : "", /^InfluxDB http:.*: HTTP 401: authorization failed/);
    const [bad] = await analysis().run(app, [checkOf(`SELEC last("value") FROM "latency"`, spec())]);
    assert.match(bad?.kind === "error" ? bad.message : "", /^InfluxDB http:.*: HTTP 400: error parsing query/);
  });
});
