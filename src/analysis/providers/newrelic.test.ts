import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { accessOver, app, checkOf, secretFor, startFakeSource, type FakeSource } from "./fake-source.test-helpers.js";
import { NRQL_DOCUMENT, newRelicAnalysis } from "./newrelic.js";

/**
 * NerdGraph's answer to an NRQL query, as documented at
 * https://docs.newrelic.com/docs/apis/nerdgraph/examples/nerdgraph-nrql-tutorial/ ("This query example would
 * return a result like this": `{"data": {"actor": {"account": {"nrql": {"results": [{"count": 1000}]}}}}}`).
 */
function nrqlAnswer(results: Record<string, unknown>[]) {
  return { data: { actor: { account: { nrql: { results } } } } };
}

/**
 * A TIMESERIES query's results: one row a bucket with `beginTimeSeconds` and `endTimeSeconds` beside the
 * function's field (https://docs.newrelic.com/docs/nrql/nrql-syntax-clauses-functions/#sel-timeseries).
 */
const TIMESERIES_RESULTS = [
  { beginTimeSeconds: 1777636000, endTimeSeconds: 1777636010, "average.duration": 0.21 },
  { beginTimeSeconds: 1777636010, endTimeSeconds: 1777636020, "average.duration": null },
  { beginTimeSeconds: 1777636020, endTimeSeconds: 1777636030, "average.duration": 0.25 },
];

/**
 * A GraphQL error for a query NRQL cannot parse: NerdGraph answers 200 with `errors`
 * (https://docs.newrelic.com/docs/apis/nerdgraph/get-started/nerdgraph-explorer/, "errors" in the response).
 */
const NRQL_SYNTAX_ERROR = {
  data: { actor: { account: { nrql: null } } },
  errors: [
    { message: "NRQL Syntax Error: Error at line 1 position 7, unexpected 'FRM'", path: ["actor", "account", "nrql"] },
  ],
};

describe("New Relic (NRQL through the documented NerdGraph API)", () => {
  let server: FakeSource;
  let reply: () => { status?: number; body: unknown };
  before(async () => {
    server = await startFakeSource(() => reply());
  });
  after(() => server.close());

  const spec = () => ({
    type: "newrelic" as const,
    address: server.url,
    secretRef: { name: "nr" },
    accountId: "1234567",
  });
  const analysis = () => newRelicAnalysis(accessOver({ "team-a/nr": secretFor({ apiKey: "NRAK-0123" }, server.url) }));

  test("an instant check posts its NRQL with the API-Key and the account, and answers the count", async () => {
    reply = () => ({ body: nrqlAnswer([{ count: 1000 }]) });
    const nrql = "SELECT count(*) FROM Transaction SINCE 1 HOUR AGO";
    assert.deepEqual(await analysis().run(app, [checkOf(nrql, spec())]), [{ kind: "value", value: 1000 }]);
    const sent = server.requests.at(-1);
    assert.equal(sent?.method, "POST");
    assert.equal(sent?.url, "/graphql");
    assert.equal(sent?.headers["api-key"], "NRAK-0123");
    assert.equal(sent?.headers["content-type"], "application/json");
    assert.deepEqual(JSON.parse(sent?.body ?? ""), { query: NRQL_DOCUMENT, variables: { accountId: 1234567, nrql } });
  });

  test("a FACET query answers one value a facet; no rows answer empty", async () => {
    reply = () => ({
      body: nrqlAnswer([
        { facet: "v1", "average.duration": 0.1 },
        { facet: "v2", "average.duration": 0.3 },
      ]),
    });
    const check = checkOf("SELECT average(duration) FROM Transaction FACET appVersion", spec());
    assert.deepEqual(await analysis().run(app, [check]), [
      { kind: "values", values: [0.1, 0.3], labels: ['"v1"', '"v2"'] },
    ]);
    reply = () => ({ body: nrqlAnswer([]) });
    assert.deepEqual(await analysis().run(app, [check]), [{ kind: "empty" }]);
  });

  test("a judged check appends SINCE … UNTIL … TIMESERIES and answers the buckets as samples", async () => {
    reply = () => ({ body: nrqlAnswer(TIMESERIES_RESULTS) });
    const range = { start: "2026-05-01T11:46:40Z", end: "2026-05-01T11:50:00Z", stepSeconds: 10 };
    const check = checkOf("SELECT average(duration) FROM Transaction WHERE appVersion = 'v2'", spec(), range);
    assert.deepEqual(await analysis().run(app, [check]), [{ kind: "samples", values: [0.21, 0.25] }]);
    const { variables } = JSON.parse(server.requests.at(-1)?.body ?? "") as { variables: { nrql: string } };
    assert.equal(
      variables.nrql,
      "SELECT average(duration) FROM Transaction WHERE appVersion = 'v2' SINCE 1777636000000 UNTIL 1777636200000 TIMESERIES 10 seconds",
    );
  });

  test("NerdGraph's errors become the outcome's message; an account that is not a number is not sent", async () => {
    reply = () => ({ body: NRQL_SYNTAX_ERROR });
    const [outcome] = await analysis().run(app, [checkOf("SELECT count(*) FRM Transaction", spec())]);
    assert.equal(outcome?.kind, "error");
    assert.match(outcome?.kind === "error" ? outcome.message : "", /^New Relic http:.*: NRQL Syntax Error/);
    const before = server.requests.length;
    const [bad] = await analysis().run(app, [checkOf("SELECT 1", { ...spec(), accountId: "acme" })]);
    assert.match(bad?.kind === "error" ? bad.message : "", /provider\.accountId/);
    assert.equal(server.requests.length, before);
  });
});
