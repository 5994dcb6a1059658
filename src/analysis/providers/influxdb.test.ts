/**
 * The InfluxDB provider's requests, against a server speaking the documented 1.x query API; the real
 * InfluxDB 1.x is test/integration/influxdb-source.test.ts. InfluxDB 2's v1-compatible API takes the same
 * request with a token (`Authorization: Token …`), which Debian's 1.x cannot check, so it is asserted here.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { accessOver, app, checkOf, secretFor, startFakeSource, type FakeSource } from "./fake-source.test-helpers.js";
import { influxDbAnalysis, influxQL } from "./influxdb.js";

/**
 * The answer to `SELECT mean("value") … GROUP BY time(…)`, in the shape documented at
 * https://docs.influxdata.com/influxdb/v1/tools/api/#query-http-endpoint (with `epoch=s`, times are seconds):
 * `{"results":[{"statement_id":0,"series":[{"name":…,"columns":["time","mean"],"values":[[…]]}]}]}`.
 */
const MEAN_BY_TIME = {
  results: [
    {
      statement_id: 0,
      series: [
        {
          name: "latency",
          columns: ["time", "mean"],
          values: [
            [1777636000, 0.2],
            [1777636010, null],
            [1777636020, 0.3],
          ],
        },
      ],
    },
  ],
};

/** A statement InfluxDB refuses: 200 with the statement's `error` (same documentation page, "Errors"). */
const DATABASE_NOT_FOUND = { results: [{ statement_id: 0, error: "database not found: shop" }] };

describe("InfluxDB (the documented /query API; InfluxDB 2's v1-compatible one with a token)", () => {
  let server: FakeSource;
  let reply: () => { status?: number; body: unknown };
  before(async () => {
    server = await startFakeSource(() => reply());
  });
  after(() => server.close());

  const spec = () => ({
    type: "influxdb" as const,
    address: server.url,
    database: "shop",
    secretRef: { name: "influx" },
  });
  const analysis = () => influxDbAnalysis(accessOver({ "team-a/influx": secretFor({ token: "tok-123" }, server.url) }));
  const range = { start: "2026-05-01T11:46:40Z", end: "2026-05-01T11:47:10Z", stepSeconds: 10 };

  test("a judged check sends db, epoch=s and the InfluxQL with its range and step, with the token", async () => {
    reply = () => ({ body: MEAN_BY_TIME });
    const query = `SELECT mean("value") FROM "latency" WHERE $timeFilter GROUP BY time($interval)`;
    assert.deepEqual(await analysis().run(app, [checkOf(query, spec(), range)]), [
      { kind: "samples", values: [0.2, 0.3] },
    ]);
    const sent = server.requests.at(-1);
    const url = new URL(sent?.url ?? "", server.url);
    assert.equal(url.pathname, "/query");
    assert.deepEqual(Object.fromEntries(url.searchParams), {
      db: "shop",
      epoch: "s",
      q: `SELECT mean("value") FROM "latency" WHERE time >= '2026-05-01T11:46:40.000Z' AND time <= '2026-05-01T11:47:10.000Z' GROUP BY time(10s)`,
    });
    assert.equal(sent?.headers.authorization, "Token tok-123");
  });

  test("an instant check's $timeFilter is its window up to now", () => {
    assert.equal(
      influxQL(checkOf(`SELECT last("value") FROM "latency" WHERE $timeFilter`, spec())),
      `SELECT last("value") FROM "latency" WHERE time > now() - 300s`,
    );
  });

  test("a statement's error is the outcome's; a judged query without $timeFilter is not sent", async () => {
    reply = () => ({ body: DATABASE_NOT_FOUND });
    const [outcome] = await analysis().run(app, [checkOf(`SELECT last("value") FROM "latency"`, spec())]);
    assert.match(outcome?.kind === "error" ? outcome.message : "", /: database not found: shop$/);
    const before = server.requests.length;
    const [bad] = await analysis().run(app, [checkOf(`SELECT mean("value") FROM "latency"`, spec(), range)]);
    assert.match(bad?.kind === "error" ? bad.message : "", /must have WHERE \$timeFilter/);
    assert.equal(server.requests.length, before);
  });
});
