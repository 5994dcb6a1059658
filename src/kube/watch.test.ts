import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { after, describe, test } from "node:test";
import { PooledKubeConfig } from "./connections.js";
import { statusCodeOf } from "./errors.js";
import { StreamWatch } from "./watch.js";

/** A plain HTTP endpoint that answers each watch request with `handler`; only the stream format matters here. */
async function serve(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<{
  kc: PooledKubeConfig;
  server: Server;
  urls: string[];
}> {
  const urls: string[] = [];
  const server = createServer((req, res) => {
    urls.push(req.url ?? "");
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const kc = new PooledKubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: "c", server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
    users: [{ name: "u", token: "t" }],
    contexts: [{ name: "x", cluster: "c", user: "u" }],
    currentContext: "x",
  });
  return { kc, server, urls };
}

interface Outcome {
  events: [string, unknown][];
  err: unknown;
  doneCalls: number;
}

function watchUntilDone(watch: StreamWatch, params: Record<string, string> = {}): Promise<Outcome> {
  return new Promise((resolve) => {
    const outcome: Outcome = { events: [], err: undefined, doneCalls: 0 };
    void watch.watch(
      "/api/v1/namespaces/a/configmaps",
      params,
      (type, object) => outcome.events.push([type, object]),
      (err: unknown) => {
        outcome.doneCalls++;
        outcome.err = err;
        // Let a second, wrong call to done show up before resolving.
        setTimeout(() => resolve(outcome), 50);
      },
    );
  });
}

describe("StreamWatch", () => {
  const servers: Server[] = [];
  after(() => {
    for (const s of servers) s.closeAllConnections();
    for (const s of servers) s.close();
  });

  test("delivers each line's event in order, with the query, and ends with no error when the server ends", async () => {
    const { kc, server, urls } = await serve((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.write(`${JSON.stringify({ type: "ADDED", object: { metadata: { name: "a" } } })}\n`);
      // One event split across two chunks, and a blank line.
      const second = JSON.stringify({ type: "BOOKMARK", object: { metadata: { resourceVersion: "7" } } });
      res.write(second.slice(0, 10));
      setTimeout(() => {
        res.write(`${second.slice(10)}\n\n`);
        res.end(`${JSON.stringify({ type: "DELETED", object: { metadata: { name: "a" } } })}\n`);
      }, 20);
    });
    servers.push(server);
    const outcome = await watchUntilDone(new StreamWatch(kc), { resourceVersion: "5", labelSelector: "x=y" });
    assert.deepEqual(
      outcome.events.map(([type]) => type),
      ["ADDED", "BOOKMARK", "DELETED"],
    );
    assert.equal(outcome.err, null);
    assert.equal(outcome.doneCalls, 1);
    const query = new URL(urls[0] ?? "", "http://x").searchParams;
    assert.equal(query.get("watch"), "true");
    assert.equal(query.get("resourceVersion"), "5");
    assert.equal(query.get("labelSelector"), "x=y");
  });

  test("a refused watch ends with the HTTP status, so 410 and 429 can be told apart", async () => {
    for (const code of [410, 429, 403]) {
      const { kc, server } = await serve((_req, res) => {
        res.writeHead(code, { "content-type": "application/json" });
        res.end(JSON.stringify({ kind: "Status", code, message: "no" }));
      });
      servers.push(server);
      const outcome = await watchUntilDone(new StreamWatch(kc));
      assert.equal(statusCodeOf(outcome.err), code);
      assert.equal(outcome.doneCalls, 1);
    }
  });

  test("a silent watch ends with a TimeoutError after the inactivity timeout, once", async () => {
    const { kc, server } = await serve((_req, res) => {
      res.writeHead(200);
      res.write(`${JSON.stringify({ type: "ADDED", object: {} })}\n`);
    });
    servers.push(server);
    const started = Date.now();
    const outcome = await watchUntilDone(new StreamWatch(kc, 300));
    assert.ok(outcome.err instanceof Error && outcome.err.name === "TimeoutError", String(outcome.err));
    assert.ok(Date.now() - started >= 300);
    assert.equal(outcome.events.length, 1);
    assert.equal(outcome.doneCalls, 1);
  });

  test("abort ends the watch with no error, once, and no event follows", async () => {
    let respond: ServerResponse | undefined;
    const { kc, server } = await serve((_req, res) => {
      res.writeHead(200);
      res.write("\n");
      respond = res;
    });
    servers.push(server);
    const events: string[] = [];
    const done: unknown[] = [];
    const handle = await new StreamWatch(kc).watch(
      "/api/v1/configmaps",
      {},
      (type) => events.push(type),
      (err: unknown) => done.push(err),
    );
    await new Promise((r) => setTimeout(r, 100));
    handle.abort();
    respond?.write(`${JSON.stringify({ type: "ADDED", object: {} })}\n`);
    await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(done, [null]);
    assert.deepEqual(events, []);
  });
});
