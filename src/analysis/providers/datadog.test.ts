import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { DATADOG_DEFAULT_ADDRESS, datadogAnalysis } from "./datadog.js";
import { accessOver, app, checkOf, secretFor, startFakeSource, type FakeSource } from "./fake-source.test-helpers.js";

/**
 * The 200 answer of `GET /api/v1/query`, in the shape of the example response documented at
 * https://docs.datadoghq.com/api/latest/metrics/#query-timeseries-points (v1): `series[].pointlist` holds
 * [milliseconds since the epoch, value or null] pairs, `scope` the series' tags.
 */
function queryAnswer(series: { scope: string; pointlist: [number, number | null][] }[]) {
  return {
    status: "ok",
    res_type: "time_series",
    resp_version: 1,
    query: "avg:trace.http.request.duration{service:shop} by {version}",
    message: "",
    error: "",
    from_date: 1777636500000,
    to_date: 1777636800000,
    group_by: ["version"],
    series: series.map((s) => ({
      metric: "trace.http.request.duration",
      display_name: "trace.http.request.duration",
      unit: null,
      pointlist: s.pointlist,
      end: 1777636799000,
      interval: 20,
      start: 1777636500000,
      length: s.pointlist.length,
      aggr: "avg",
      scope: s.scope,
      expression: `avg:trace.http.request.duration{${s.scope}}`,
      tag_set: s.scope.split(","),
      query_index: 0,
    })),
  };
}

/**
 * The 403 answer for a key that may not query, in the documented error shape `{"errors": [...]}`
 * (https://docs.datadoghq.com/api/latest/metrics/#query-timeseries-points, "Forbidden").
 */
const FORBIDDEN = { errors: ["Forbidden"] };

describe("Datadog (the documented metrics query API v1)", () => {
  let server: FakeSource;
  let reply: () => { status?: number; body: unknown };
  before(async () => {
    server = await startFakeSource(() => reply());
  });
  after(() => server.close());

  const keys = { apiKey: "dd-api-0123", applicationKey: "dd-app-4567" };
  const provider = () => ({ type: "datadog" as const, address: server.url, secretRef: { name: "dd" } });
  const analysis = () => datadogAnalysis(accessOver({ "team-a/dd": secretFor(keys, server.url) }));

  test("an instant check asks its window up to now with both keys and answers the last point", async () => {
    reply = () => ({
      body: queryAnswer([
        {
          scope: "service:shop",
          pointlist: [
            [1777636700000, 0.31],
            [1777636780000, 0.42],
            [1777636790000, null],
          ],
        },
      ]),
    });
    const query = "avg:trace.http.request.duration{service:shop}";
    const outcomes = await analysis().run(app, [checkOf(query, provider())]);
    assert.deepEqual(outcomes, [{ kind: "value", value: 0.42 }]);
    const sent = server.requests.at(-1);
    assert.ok(sent);
    const url = new URL(sent.url, server.url);
    assert.equal(sent.method, "GET");
    assert.equal(url.pathname, "/api/v1/query");
    // now() is 2026-05-01T12:00:00Z; the window 5m.
    assert.deepEqual(Object.fromEntries(url.searchParams), { from: "1777636500", to: "1777636800", query });
    assert.equal(sent.headers["dd-api-key"], keys.apiKey);
    assert.equal(sent.headers["dd-application-key"], keys.applicationKey);
  });

  test("several series answer several values named by their scope; none answer empty", async () => {
    reply = () => ({
      body: queryAnswer([
        { scope: "version:1", pointlist: [[1777636780000, 1]] },
        { scope: "version:2", pointlist: [[1777636780000, 2]] },
      ]),
    });
    const check = checkOf("avg:x{*} by {version}", provider());
    assert.deepEqual(await analysis().run(app, [check]), [
      { kind: "values", values: [1, 2], labels: ["version:1", "version:2"] },
    ]);
    reply = () => ({ body: queryAnswer([]) });
    assert.deepEqual(await analysis().run(app, [check]), [{ kind: "empty" }]);
  });

  test("a judged check asks its range and answers the series' points as samples", async () => {
    reply = () => ({
      body: queryAnswer([
        {
          scope: "version:2",
          pointlist: [
            [1777636000000, 0.2],
            [1777636010000, null],
            [1777636020000, 0.3],
          ],
        },
      ]),
    });
    const range = { start: "2026-05-01T11:46:40Z", end: "2026-05-01T11:50:00Z", stepSeconds: 10 };
    const outcomes = await analysis().run(app, [checkOf("avg:x{version:2}.rollup(avg, 10)", provider(), range)]);
    assert.deepEqual(outcomes, [{ kind: "samples", values: [0.2, 0.3] }]);
    const url = new URL(server.requests.at(-1)?.url ?? "", server.url);
    assert.equal(url.searchParams.get("from"), "1777636000");
    assert.equal(url.searchParams.get("to"), "1777636200");
  });

  test("a refusal is an error outcome with Datadog's reason, never the keys", async () => {
    reply = () => ({ status: 403, body: FORBIDDEN });
    const [outcome] = await analysis().run(app, [checkOf("avg:x{*}", provider())]);
    assert.equal(outcome?.kind, "error");
    assert.match(
      outcome?.kind === "error" ? outcome.message : "",
      /^Datadog http:\/\/127\.0\.0\.1:\d+: HTTP 403: \["Forbidden"\]$/,
    );
  });

  test("a Secret without an address goes to Datadog's US1 API only, so one bound elsewhere is not sent", async () => {
    const before = server.requests.length;
    const [outcome] = await analysis().run(app, [checkOf("avg:x{*}", { type: "datadog", secretRef: { name: "dd" } })]);
    assert.equal(outcome?.kind, "error");
    const message = outcome?.kind === "error" ? outcome.message : "";
    assert.match(message, /Secret team-a\/dd/);
    assert.ok(message.includes(DATADOG_DEFAULT_ADDRESS), message);
    assert.ok(!message.includes(keys.apiKey) && !message.includes(keys.applicationKey));
    assert.equal(server.requests.length, before);
  });
});
