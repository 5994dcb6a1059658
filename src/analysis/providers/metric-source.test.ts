/**
 * The tenant boundary every metric source keeps (metric-source.ts), shown with Graphite and Datadog: the URL
 * policy, the Secret's label and its `canaryapp.io/allowed-urls`, no redirect followed, messages without
 * secret values, and which failures are retried or rejected.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { datadogAnalysis } from "./datadog.js";
import { accessOver, app, checkOf, secretFor, startFakeSource, type FakeSource } from "./fake-source.test-helpers.js";
import { graphiteAnalysis } from "./graphite.js";

const RENDERED = [{ target: "x", datapoints: [[7, 1]] }];

function messageOf(outcome: unknown): string {
  const o = outcome as { kind?: string; message?: string } | undefined;
  assert.equal(o?.kind, "error");
  return o?.message ?? "";
}

describe("metric sources: where a query and its credentials may go", () => {
  let server: FakeSource;
  let elsewhere: FakeSource;
  let reply: (n: number) => { status?: number; headers?: Record<string, string>; body: unknown };
  before(async () => {
    server = await startFakeSource((_, n) => reply(n));
    elsewhere = await startFakeSource(() => ({ body: RENDERED }));
  });
  after(async () => {
    await server.close();
    await elsewhere.close();
  });

  const graphite = (secret?: string) => ({
    type: "graphite" as const,
    address: server.url,
    ...(secret !== undefined && { secretRef: { name: secret } }),
  });
  const password = "pa55-do-not-show";

  test("a Secret that is not a usable credentials Secret is named, and nothing is sent", async () => {
    const before = server.requests.length;
    const [outcome] = await graphiteAnalysis(accessOver({})).run(app, [checkOf("x", graphite("missing"))]);
    assert.match(
      messageOf(outcome),
      /Secret team-a\/missing not found, or without the label canaryapp\.io\/credentials=true/,
    );
    assert.equal(server.requests.length, before);
  });

  test("a Secret bound elsewhere is not sent to the address, and its values never appear", async () => {
    const access = accessOver({ "team-a/g": secretFor({ username: "u", password }, elsewhere.url) });
    const before = server.requests.length;
    const [outcome] = await graphiteAnalysis(access).run(app, [checkOf("x", graphite("g"))]);
    const message = messageOf(outcome);
    assert.match(message, /is not where the Secret may be sent \(canaryapp\.io\/allowed-urls/);
    assert.ok(!message.includes(password));
    assert.equal(server.requests.length, before);
  });

  test("a Secret without its required keys names the keys, not their values", async () => {
    const access = accessOver({ "team-a/dd": secretFor({ apiKey: "only-the-api-key" }, server.url) });
    const [outcome] = await datadogAnalysis(access).run(app, [
      checkOf("avg:x{*}", { type: "datadog", address: server.url, secretRef: { name: "dd" } }),
    ]);
    const message = messageOf(outcome);
    assert.match(message, /has no key "applicationKey"/);
    assert.ok(!message.includes("only-the-api-key"));
  });

  test("an address outside the controller's URL policy is refused before anything is read or sent", async () => {
    let secretsRead = 0;
    const access = accessOver(
      {},
      {
        refuseUrl: (_app, url) =>
          Promise.resolve(`provider.address ${url} is outside the controller's Prometheus URL policy`),
        readSecret: () => {
          secretsRead++;
          return Promise.resolve(null);
        },
      },
    );
    const before = server.requests.length;
    const [outcome] = await graphiteAnalysis(access).run(app, [checkOf("x", graphite("g"))]);
    assert.match(
      messageOf(outcome),
      /^CanaryApp team-a\/shop: Graphite: provider\.address .* outside the controller's/,
    );
    assert.equal(secretsRead, 0);
    assert.equal(server.requests.length, before);
  });

  test("a redirect is not followed: the credentials never reach where it points", async () => {
    const access = accessOver({ "team-a/g": secretFor({ username: "u", password }, `${server.url},${elsewhere.url}`) });
    reply = () => ({ status: 302, headers: { Location: `${elsewhere.url}/render` }, body: "" });
    const before = elsewhere.requests.length;
    const [outcome] = await graphiteAnalysis(access).run(app, [checkOf("x", graphite("g"))]);
    assert.match(messageOf(outcome), /HTTP 302: redirects are not followed/);
    assert.equal(elsewhere.requests.length, before);
  });

  test("5xx and 429 are retried, other refusals are not", async () => {
    const access = accessOver({}, { retries: 2 });
    let attempt = 0;
    reply = () => {
      attempt++;
      return attempt === 3 ? { body: RENDERED } : { status: attempt === 1 ? 503 : 429, body: "busy" };
    };
    const before = server.requests.length;
    assert.deepEqual(await graphiteAnalysis(access).run(app, [checkOf("x", graphite())]), [
      { kind: "value", value: 7 },
    ]);
    assert.equal(server.requests.length - before, 3);
    reply = () => ({ status: 401, body: "Unauthorized" });
    const [outcome] = await graphiteAnalysis(access).run(app, [checkOf("x", graphite())]);
    assert.match(messageOf(outcome), /HTTP 401: Unauthorized/);
    assert.equal(server.requests.length - before, 4);
  });

  test("a Secret that could not be read rejects, to be retried with the reconcile", async () => {
    const access = accessOver({}, { readSecret: () => Promise.reject(new Error("apiserver down")) });
    await assert.rejects(
      graphiteAnalysis(access).run(app, [checkOf("x", graphite("g"))]),
      /reading Secret team-a\/g failed/,
    );
  });
});
