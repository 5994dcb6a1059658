import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { accessOver, app, checkOf, secretFor, startFakeSource, type FakeSource } from "./fake-source.test-helpers.js";
import { graphiteAnalysis } from "./graphite.js";

/**
 * The render API's JSON, as documented at https://graphite.readthedocs.io/en/latest/render_api.html#json:
 * `[{"target": "entries", "datapoints": [[1.0, 1311836008], [2.0, 1311836009], [3.0, 1311836010], [5.0, 1311836011], [6.0, 1311836012]]}]`
 * (a datapoint is [value or null, epoch seconds]).
 */
const DOCUMENTED_ENTRIES = [
  {
    target: "entries",
    datapoints: [
      [1.0, 1311836008],
      [2.0, 1311836009],
      [3.0, 1311836010],
      [5.0, 1311836011],
      [6.0, 1311836012],
    ],
  },
];

describe("Graphite (the documented render API)", () => {
  let server: FakeSource;
  let reply: () => { status?: number; body: unknown };
  before(async () => {
    server = await startFakeSource(() => reply());
  });
  after(() => server.close());

  const spec = (secret = true) => ({
    type: "graphite" as const,
    address: server.url,
    ...(secret && { secretRef: { name: "graphite" } }),
  });
  const analysis = () =>
    graphiteAnalysis(
      accessOver({ "team-a/graphite": secretFor({ username: "shop", password: "s3cret" }, server.url) }),
    );

  test("an instant check renders its target over its window as JSON and answers the last datapoint", async () => {
    reply = () => ({ body: DOCUMENTED_ENTRIES });
    assert.deepEqual(await analysis().run(app, [checkOf("entries", spec())]), [{ kind: "value", value: 6 }]);
    const sent = server.requests.at(-1);
    const url = new URL(sent?.url ?? "", server.url);
    assert.equal(url.pathname, "/render");
    assert.deepEqual(Object.fromEntries(url.searchParams), {
      target: "entries",
      from: "1777636500",
      until: "1777636800",
      format: "json",
    });
    assert.equal(sent?.headers.authorization, `Basic ${Buffer.from("shop:s3cret").toString("base64")}`);
  });

  test("without a Secret nothing is sent but the query; nulls are skipped; several targets answer values", async () => {
    reply = () => ({
      body: [
        {
          target: "a",
          datapoints: [
            [1, 1],
            [null, 2],
          ],
        },
        { target: "b", datapoints: [[null, 1]] },
        { target: "c", datapoints: [[3, 1]] },
      ],
    });
    assert.deepEqual(await analysis().run(app, [checkOf("group(a,b,c)", spec(false))]), [
      { kind: "values", values: [1, 3], labels: ["a", "c"] },
    ]);
    assert.equal(server.requests.at(-1)?.headers.authorization, undefined);
  });

  test("a judged check renders from start until end and answers the datapoints as samples", async () => {
    reply = () => ({ body: DOCUMENTED_ENTRIES });
    const range = { start: "2011-07-28T06:53:28Z", end: "2011-07-28T06:53:32Z", stepSeconds: 1 };
    assert.deepEqual(await analysis().run(app, [checkOf("entries", spec(), range)]), [
      { kind: "samples", values: [1, 2, 3, 5, 6] },
    ]);
    const url = new URL(server.requests.at(-1)?.url ?? "", server.url);
    assert.equal(url.searchParams.get("from"), "1311836007");
    assert.equal(url.searchParams.get("until"), "1311836012");
  });

  test("a bad target's 400 is an error outcome; a check without an address is not sent", async () => {
    reply = () => ({ status: 400, body: "Invalid target: unknownFunction(entries)\n" });
    const [outcome] = await analysis().run(app, [checkOf("unknownFunction(entries)", spec())]);
    assert.match(outcome?.kind === "error" ? outcome.message : "", /HTTP 400: Invalid target/);
    const [none] = await analysis().run(app, [checkOf("entries", { type: "graphite" })]);
    assert.match(none?.kind === "error" ? none.message : "", /provider\.address is required/);
  });
});
