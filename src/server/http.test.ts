import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { request } from "node:http";
import { pino } from "pino";
import { startHttpServer, type Readiness, type RunningHttpServer } from "./http.js";
import { ControllerMetrics } from "./metrics.js";

describe("HTTP server", () => {
  let server: RunningHttpServer;
  let state: Readiness = false;
  const metrics = new ControllerMetrics();
  const base = (): string => `http://127.0.0.1:${server.port}`;

  before(async () => {
    server = await startHttpServer({
      host: "127.0.0.1",
      port: 0,
      ready: () => state,
      metrics,
      log: pino({ level: "silent" }),
    });
  });
  after(() => server.close());

  test("/healthz answers 200 while the process runs", async () => {
    const res = await fetch(`${base()}/healthz`);
    assert.equal(res.status, 200);
    assert.equal(await res.text(), "ok\n");
  });

  test("/readyz follows ready(), with a reason when not ready", async () => {
    state = false;
    let res = await fetch(`${base()}/readyz`);
    assert.equal(res.status, 503);
    assert.equal(await res.text(), "not ready: not ready\n");

    state = { ready: false, reason: "caches not synced" };
    res = await fetch(`${base()}/readyz`);
    assert.equal(res.status, 503);
    assert.equal(await res.text(), "not ready: caches not synced\n");

    state = true;
    res = await fetch(`${base()}/readyz`);
    assert.equal(res.status, 200);
    assert.equal(await res.text(), "ok\n");

    state = { ready: true };
    assert.equal((await fetch(`${base()}/readyz`)).status, 200);
  });

  test("/metrics serves the registry in the Prometheus text format", async () => {
    metrics.setAppState("shop", "web", { phase: "Progressing", secondaryWeight: 20 });
    const res = await fetch(`${base()}/metrics`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type") ?? "", /^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    assert.match(text, /^canaryapp_secondary_weight\{namespace="shop",name="web"\} 20$/m);
    assert.match(text, /^process_cpu_user_seconds_total /m, "process metrics included");
  });

  test("unknown paths are 404, other methods 405, HEAD has no body", async () => {
    assert.equal((await fetch(`${base()}/nope`)).status, 404);
    const post = await fetch(`${base()}/healthz`, { method: "POST" });
    assert.equal(post.status, 405);
    assert.equal(post.headers.get("allow"), "GET, HEAD");
    const head = await fetch(`${base()}/healthz`, { method: "HEAD" });
    assert.equal(head.status, 200);
    assert.equal(await head.text(), "");
  });

  test("query strings do not change the route", async () => {
    assert.equal((await fetch(`${base()}/healthz?verbose=1`)).status, 200);
  });
});

describe("HTTP server failures", () => {
  test("a failing ready() is a 503 that says why", async () => {
    const server = await startHttpServer({
      host: "127.0.0.1",
      port: 0,
      ready: () => {
        throw new Error("boom");
      },
      metrics: new ControllerMetrics({ processMetrics: false }),
      log: pino({ level: "silent" }),
    });
    try {
      const res = await fetch(`http://127.0.0.1:${server.port}/readyz`);
      assert.equal(res.status, 503);
      assert.equal(await res.text(), "not ready: readiness check failed: boom\n");
    } finally {
      await server.close();
    }
  });

  test("a failing metrics collection is a 500 and is logged", async () => {
    const lines: Record<string, unknown>[] = [];
    const server = await startHttpServer({
      host: "127.0.0.1",
      port: 0,
      ready: () => true,
      metrics: { contentType: "text/plain", metrics: () => Promise.reject(new Error("collector broke")) },
      log: pino({ level: "error" }, { write: (s: string) => lines.push(JSON.parse(s) as Record<string, unknown>) }),
    });
    try {
      const res = await fetch(`http://127.0.0.1:${server.port}/metrics`);
      assert.equal(res.status, 500);
      assert.equal(lines[0]?.msg, "request failed");
    } finally {
      await server.close();
    }
  });

  test("a port in use is reported at start", async () => {
    const first = await startHttpServer({
      host: "127.0.0.1",
      port: 0,
      ready: () => true,
      metrics: new ControllerMetrics({ processMetrics: false }),
      log: pino({ level: "silent" }),
    });
    try {
      await assert.rejects(
        startHttpServer({
          host: "127.0.0.1",
          port: first.port,
          ready: () => true,
          metrics: new ControllerMetrics({ processMetrics: false }),
          log: pino({ level: "silent" }),
        }),
        /EADDRINUSE/,
      );
    } finally {
      await first.close();
    }
  });

  test("close ends open keep-alive connections", async () => {
    const server = await startHttpServer({
      host: "127.0.0.1",
      port: 0,
      ready: () => true,
      metrics: new ControllerMetrics({ processMetrics: false }),
      log: pino({ level: "silent" }),
    });
    // A keep-alive request leaves the socket open after the response.
    await new Promise<void>((resolve, reject) => {
      const req = request(
        { host: "127.0.0.1", port: server.port, path: "/healthz", headers: { connection: "keep-alive" } },
        (res) => {
          res.resume();
          res.on("end", resolve);
        },
      );
      req.on("error", reject);
      req.end();
    });
    const closed = await Promise.race([
      server.close().then(() => "closed"),
      new Promise((resolve) => setTimeout(() => resolve("hung"), 2000)),
    ]);
    assert.equal(closed, "closed");
  });
});
