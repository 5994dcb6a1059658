import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer as createHttpsServer } from "node:https";
import { createSecureServer, type Http2SecureServer, type Http2ServerRequest } from "node:http2";
import type { IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { TLSSocket } from "node:tls";
import { startTcpProxy } from "../../test/support/tcp-proxy.js";
import {
  http2FromEnv,
  keepChecked,
  PING_TIMEOUT_MS,
  PingTimeoutError,
  READ_IDLE_TIMEOUT_MS,
  withRoom,
  type Pingable,
} from "./http2-watches.js";
import { statusCodeOf } from "./errors.js";
import type { ApiEndpoint, TlsSettings } from "./kubeconfig.js";
import { KubeRest, type KubeRestOptions, type RequestVerb } from "./rest.js";
import { createTestCa, type TestCa } from "./test-pki.test-helpers.js";

describe("http2FromEnv: the HTTP/2 settings kubectl reads from its environment", () => {
  const cases: [string, Record<string, string>, ReturnType<typeof http2FromEnv>][] = [
    ["none: client-go's defaults", {}, { disabled: false, readIdleTimeoutMs: 30_000, pingTimeoutMs: 15_000 }],
    [
      "DISABLE_HTTP2, any value",
      { DISABLE_HTTP2: "false" },
      { disabled: true, readIdleTimeoutMs: 30_000, pingTimeoutMs: 15_000 },
    ],
    [
      "DISABLE_HTTP2 empty is unset",
      { DISABLE_HTTP2: "" },
      { disabled: false, readIdleTimeoutMs: 30_000, pingTimeoutMs: 15_000 },
    ],
    [
      "both timeouts",
      { HTTP2_READ_IDLE_TIMEOUT_SECONDS: "10", HTTP2_PING_TIMEOUT_SECONDS: "+5" },
      { disabled: false, readIdleTimeoutMs: 10_000, pingTimeoutMs: 5_000 },
    ],
    [
      "read-idle 0: no PINGs",
      { HTTP2_READ_IDLE_TIMEOUT_SECONDS: "0" },
      { disabled: false, readIdleTimeoutMs: 0, pingTimeoutMs: 15_000 },
    ],
    [
      "PING timeout 0: Go's default",
      { HTTP2_PING_TIMEOUT_SECONDS: "0" },
      { disabled: false, readIdleTimeoutMs: 30_000, pingTimeoutMs: 15_000 },
    ],
    [
      "not integers (Go's Atoi fails): the defaults",
      { HTTP2_READ_IDLE_TIMEOUT_SECONDS: "10s", HTTP2_PING_TIMEOUT_SECONDS: "1.5" },
      { disabled: false, readIdleTimeoutMs: 30_000, pingTimeoutMs: 15_000 },
    ],
  ];
  for (const [name, env, expected] of cases) test(name, () => assert.deepEqual(http2FromEnv(env), expected));
});

describe("withRoom: which connection a new watch goes on", () => {
  const c = (name: string, streams: number, maxStreams: number, draining = false) => ({
    name,
    streams,
    maxStreams,
    draining,
  });
  const cases: [string, ReturnType<typeof c>[], string | undefined][] = [
    ["none yet: a new one", [], undefined],
    ["the first with room", [c("a", 100, 100), c("b", 3, 100), c("c", 0, 100)], "b"],
    ["all full: a new one", [c("a", 100, 100), c("b", 2, 2)], undefined],
    ["not one that drains (GOAWAY, retired)", [c("a", 0, 100, true), c("b", 1, 100)], "b"],
    ["the server lowered its limit below the streams open", [c("a", 5, 4), c("b", 0, 4)], "b"],
  ];
  for (const [name, connections, expected] of cases) {
    test(name, () => assert.equal(withRoom(connections)?.name, expected));
  }
});

/** A session as keepChecked sees it: "timeout" is emitted by the test, as Node's timer would after a silence. */
class FakeSession extends EventEmitter implements Pingable {
  destroyed = false;
  closed = false;
  destroyedWith: Error | undefined;
  readonly armed: number[] = [];
  readonly pings: ((err: Error | null) => void)[] = [];
  setTimeout(ms: number): void {
    this.armed.push(ms);
  }
  ping(callback: (err: Error | null) => void): boolean {
    this.pings.push(callback);
    return true;
  }
  close(): void {
    this.closed = true;
  }
  destroy(err?: Error): void {
    this.destroyed = true;
    this.destroyedWith = err;
  }
}

describe("keepChecked: a silent connection is pinged, and closed when the PING goes unanswered", () => {
  const settings = { readIdleTimeoutMs: 30_000, pingTimeoutMs: 15_000 };

  test("silent with watches: a PING; answered in time, the timer is set again and nothing closes", (t) => {
    t.mock.timers.enable({ apis: ["setTimeout"] });
    const session = new FakeSession();
    keepChecked(session, "https://api", settings, () => 3);
    assert.deepEqual(session.armed, [30_000]);
    session.emit("timeout");
    assert.equal(session.pings.length, 1);
    t.mock.timers.tick(14_999);
    session.pings[0]?.(null);
    t.mock.timers.tick(60_000);
    assert.equal(session.destroyed, false);
    assert.equal(session.closed, false);
    assert.deepEqual(session.armed, [30_000, 30_000], "Node does not count the answer as activity");
  });

  test("a PING unanswered for the PING timeout destroys the session with a PingTimeoutError", (t) => {
    t.mock.timers.enable({ apis: ["setTimeout"] });
    const session = new FakeSession();
    keepChecked(session, "https://api", settings, () => 1);
    session.emit("timeout");
    t.mock.timers.tick(14_999);
    assert.equal(session.destroyed, false);
    // Another silence while the PING is out sends no second one.
    session.emit("timeout");
    assert.equal(session.pings.length, 1);
    t.mock.timers.tick(1);
    assert.equal(session.destroyed, true);
    assert.ok(session.destroyedWith instanceof PingTimeoutError);
    assert.equal(session.destroyedWith.code, "ETIMEDOUT");
    assert.match(session.destroyedWith.message, /^https:\/\/api: no answer to an HTTP\/2 PING in 15000 ms/);
  });

  test("silent without watches: closed (gracefully), never pinged", (t) => {
    t.mock.timers.enable({ apis: ["setTimeout"] });
    const session = new FakeSession();
    keepChecked(session, "https://api", settings, () => 0);
    session.emit("timeout");
    assert.equal(session.closed, true);
    assert.equal(session.pings.length, 0);
  });

  test("PINGs off (read-idle 0): never pinged; an idle session is still closed after the default silence", (t) => {
    t.mock.timers.enable({ apis: ["setTimeout"] });
    let streams = 2;
    const session = new FakeSession();
    keepChecked(session, "https://api", { readIdleTimeoutMs: 0, pingTimeoutMs: PING_TIMEOUT_MS }, () => streams);
    assert.deepEqual(session.armed, [READ_IDLE_TIMEOUT_MS]);
    session.emit("timeout");
    assert.equal(session.pings.length, 0);
    assert.deepEqual(session.armed, [READ_IDLE_TIMEOUT_MS, READ_IDLE_TIMEOUT_MS]);
    streams = 0;
    session.emit("timeout");
    assert.equal(session.closed, true);
  });

  test("a PING cancelled by the session's end leaves nothing armed", (t) => {
    t.mock.timers.enable({ apis: ["setTimeout"] });
    const session = new FakeSession();
    keepChecked(session, "https://api", settings, () => 1);
    session.emit("timeout");
    session.destroyed = true;
    session.pings[0]?.(new Error("ERR_HTTP2_PING_CANCEL"));
    session.destroyed = false;
    t.mock.timers.tick(60_000);
    assert.equal(session.destroyedWith, undefined);
    assert.deepEqual(session.armed, [30_000]);
  });
});

/** One request the test servers saw: the protocol, the client certificate's common name, the connection. */
interface Seen {
  httpVersion: string;
  path: string;
  authorization: string | undefined;
  accept: string | undefined;
  cn: string;
  /** The client's port: names the connection (an HTTP/2 request's `socket` is a stand-in for it, not it). */
  port: number;
}

/** The answer to a watch, over HTTP/1.1 or HTTP/2. */
interface Answer {
  writeHead(status: number, headers: Record<string, string>): unknown;
  write(chunk: string): unknown;
  end(chunk: string): unknown;
  end(): unknown;
}

type Handler = (req: IncomingMessage | Http2ServerRequest, res: Answer) => void;

/** Answers a watch with one ADDED event and keeps it open; `answers` holds the answers, to write more or end them. */
function watchHandler(seen: Seen[], answers: Answer[]): Handler {
  return (req, res) => {
    const socket = req.socket as TLSSocket;
    seen.push({
      httpVersion: req.httpVersion,
      path: req.url ?? "",
      authorization: req.headers.authorization,
      accept: req.headers.accept,
      cn: String(socket.getPeerCertificate().subject.CN),
      port: socket.remotePort ?? 0,
    });
    if (req.url?.startsWith("/api/v1/refused")) {
      res.writeHead(401, { "content-type": "application/json" });
      res.end(JSON.stringify({ kind: "Status", status: "Failure", reason: "Unauthorized", code: 401 }));
      return;
    }
    res.writeHead(200, { "content-type": "application/json" });
    res.write(`${JSON.stringify({ type: "ADDED", object: { metadata: { name: `n${seen.length}` } } })}\n`);
    answers.push(res);
  };
}

interface TestServer {
  url: string;
  seen: Seen[];
  /** The answers to the watches, open: to write more events, or end them. */
  answers: Answer[];
  /** TLS connections accepted so far. */
  connections: () => number;
  /** Whether the connection from this client port is open. */
  isOpen: (port: number | undefined) => boolean;
  stop(): void;
}

/**
 * An https server that requires client certificates of `clientCa`: HTTP/2 and HTTP/1.1 (`h2`, with at most
 * `maxStreams` streams a connection), or HTTP/1.1 only.
 */
async function startServer(
  ca: TestCa,
  clientCa: TestCa,
  kind: "h2" | "http/1.1",
  maxStreams = 100,
): Promise<TestServer> {
  const seen: Seen[] = [];
  const answers: Answer[] = [];
  const tls = {
    ...ca.server(`server-${kind.replace("/", "")}`),
    ca: clientCa.cert,
    requestCert: true,
    rejectUnauthorized: true,
  };
  const handler = watchHandler(seen, answers);
  const server: Http2SecureServer | ReturnType<typeof createHttpsServer> =
    kind === "h2"
      ? createSecureServer({ ...tls, allowHTTP1: true, settings: { maxConcurrentStreams: maxStreams } }, handler)
      : createHttpsServer(tls, handler);
  let connections = 0;
  const open = new Set<number>();
  server.on("secureConnection", (socket: TLSSocket) => {
    connections++;
    const port = socket.remotePort ?? 0;
    open.add(port);
    socket.once("close", () => open.delete(port));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    answers,
    connections: () => connections,
    isOpen: (port) => port !== undefined && open.has(port),
    stop: () => {
      for (const res of answers) res.end();
      server.close();
    },
  };
}

/** An endpoint with a bearer token whose client certificate is `tls()` as of the last authenticate. */
function endpoint(server: string, tls: () => TlsSettings): ApiEndpoint {
  let current = tls();
  return {
    server,
    get tls() {
      return current;
    },
    authenticate: () => {
      current = tls();
      return Promise.resolve({ Authorization: "Bearer s3cret" });
    },
    source: "kubeconfig",
  };
}

const until = async (what: string, check: () => boolean, timeoutMs = 5_000): Promise<void> => {
  for (const start = Date.now(); !check(); await new Promise((r) => setTimeout(r, 10))) {
    if (Date.now() - start > timeoutMs) assert.fail(`timed out waiting for ${what}`);
  }
};

describe("KubeRest watches over HTTP/2", () => {
  const dir = mkdtempSync(join(tmpdir(), "http2-watches-"));
  let ca: TestCa;
  let clientCa: TestCa;
  let first: TlsSettings;
  let second: TlsSettings;
  const servers: TestServer[] = [];
  const clients: KubeRest[] = [];

  before(() => {
    ca = createTestCa(dir, "server-ca");
    clientCa = createTestCa(dir, "client-ca");
    first = { ca: ca.cert, ...clientCa.client("first", "first"), rejectUnauthorized: true };
    second = { ca: ca.cert, ...clientCa.client("second", "second"), rejectUnauthorized: true };
  });
  after(async () => {
    for (const client of clients) await client.close();
    for (const server of servers) server.stop();
  });

  async function server(kind: "h2" | "http/1.1", maxStreams?: number): Promise<TestServer> {
    const started = await startServer(ca, clientCa, kind, maxStreams);
    servers.push(started);
    return started;
  }

  function client(url: string, options: KubeRestOptions = {}, tls = () => first): KubeRest {
    const rest = new KubeRest(endpoint(url, tls), options);
    clients.push(rest);
    return rest;
  }

  /** Opens a watch of `plural`; its events' names go to `names`, and how it ended to `ended`. */
  async function watch(rest: KubeRest, plural: string) {
    const names: string[] = [];
    const state: { ended: unknown } = { ended: "open" };
    const handle = await rest.watch(
      `/api/v1/${plural}`,
      { resourceVersion: "1" },
      (_type, object) => names.push((object as { metadata: { name: string } }).metadata.name),
      (err) => (state.ended = err),
    );
    return { names, ended: (): unknown => state.ended, abort: () => handle.abort() };
  }

  test("share one connection, as the user (bearer token, client certificate); past the server's streams, another", async () => {
    const h2 = await server("h2", 2);
    const sent: RequestVerb[] = [];
    const rest = client(h2.url, { onRequest: (verb) => sent.push(verb) });
    const watches = [await watch(rest, "a"), await watch(rest, "b"), await watch(rest, "c")];
    // The third is past the server's limit of 2 streams a connection: node:http2 would hold it unsent forever.
    await until("every watch's first event", () => watches.every((w) => w.names.length === 1));
    assert.deepEqual(
      h2.seen.map((s) => [s.httpVersion, s.path, s.authorization, s.accept, s.cn]),
      ["a", "b", "c"].map((p) => [
        "2.0",
        `/api/v1/${p}?resourceVersion=1&watch=true`,
        "Bearer s3cret",
        "application/json",
        "first",
      ]),
    );
    assert.equal(h2.connections(), 2);
    assert.equal(h2.seen[0]?.port, h2.seen[1]?.port, "the first two on one connection");
    assert.deepEqual(sent, ["watch", "watch", "watch"]);
    // A server that ends a watch ends it for its reader; the others go on.
    h2.answers[0]?.end();
    await until("the first watch ended", () => watches[0]?.ended() !== "open");
    assert.equal(watches[0]?.ended(), null);
    h2.answers[1]?.write(`${JSON.stringify({ type: "ADDED", object: { metadata: { name: "more" } } })}\n`);
    await until("the second watch's next event", () => watches[1]?.names.length === 2);
    for (const w of watches) w.abort();
  });

  test("a watch refused (401): the endpoint renews the credential first, then the watch ends with the Status", async () => {
    const h2 = await server("h2");
    const told: Record<string, string>[] = [];
    const refusing: ApiEndpoint = {
      ...endpoint(h2.url, () => first),
      refused: async (headers) => {
        told.push(headers);
        // An exec plugin takes a while: the refusal's body must still be read whole.
        await new Promise((r) => setTimeout(r, 50));
        return true;
      },
    };
    const rest = new KubeRest(refusing);
    clients.push(rest);
    const w = await watch(rest, "refused");
    await until("the watch ended", () => w.ended() !== "open");
    assert.equal(statusCodeOf(w.ended()), 401);
    assert.match((w.ended() as { body: string }).body, /"reason":"Unauthorized"/);
    assert.deepEqual(told, [{ Authorization: "Bearer s3cret" }]);
    assert.equal(h2.seen[0]?.httpVersion, "2.0");
  });

  test("a server that chooses HTTP/1.1 (ALPN) is watched over HTTP/1.1; so is any with HTTP/2 turned off", async () => {
    const h1 = await server("http/1.1");
    const rest = client(h1.url);
    const watches = [await watch(rest, "a"), await watch(rest, "b")];
    await until("both watches' first events", () => watches.every((w) => w.names.length === 1));
    assert.deepEqual(
      h1.seen.map((s) => [s.httpVersion, s.authorization]),
      [
        ["1.1", "Bearer s3cret"],
        ["1.1", "Bearer s3cret"],
      ],
    );
    for (const w of watches) w.abort();

    const h2 = await server("h2");
    for (const env of [{ DISABLE_HTTP2: "1" }, {}] as Record<string, string>[]) {
      const w = await watch(clientWithEnv(h2.url, env), "a");
      await until("the watch's first event", () => w.names.length === 1);
      w.abort();
    }
    assert.deepEqual(
      h2.seen.map((s) => s.httpVersion),
      ["1.1", "2.0"],
    );
  });

  /** `KubeRest.connect` to `url` as the user of the first certificate, with the environment `env`. */
  function clientWithEnv(url: string, env: Record<string, string>): KubeRest {
    const path = join(dir, "kubeconfig");
    const b64 = (data: Buffer | undefined): string => data?.toString("base64") ?? "";
    writeFileSync(
      path,
      JSON.stringify({
        "current-context": "c",
        clusters: [{ name: "c", cluster: { server: url, "certificate-authority-data": b64(ca.cert) } }],
        users: [{ name: "u", user: { "client-certificate-data": b64(first.cert), "client-key-data": b64(first.key) } }],
        contexts: [{ name: "c", context: { cluster: "c", user: "u" } }],
      }),
    );
    const rest = KubeRest.connect(path, { env });
    clients.push(rest);
    return rest;
  }

  test("a rotated client certificate: new watches on a new connection with it; the old watch finishes on its own", async () => {
    const h2 = await server("h2");
    let cert = first;
    const rest = client(h2.url, {}, () => cert);
    const before = await watch(rest, "before");
    await until("the first watch's event", () => before.names.length === 1);
    cert = second;
    const afterRotation = await watch(rest, "after");
    await until("the second watch's event", () => afterRotation.names.length === 1);
    assert.deepEqual(
      h2.seen.map((s) => s.cn),
      ["first", "second"],
    );
    assert.notEqual(h2.seen[0]?.port, h2.seen[1]?.port);
    const old = h2.seen[0]?.port;
    h2.answers[0]?.write(`${JSON.stringify({ type: "ADDED", object: { metadata: { name: "still" } } })}\n`);
    await until("the old watch's next event", () => before.names.length === 2);
    assert.ok(h2.isOpen(old), "the old connection is open while its watch is");
    h2.answers[0]?.end();
    await until("the old watch ended", () => before.ended() !== "open");
    await until("the old connection closed", () => !h2.isOpen(old));
    assert.equal(afterRotation.ended(), "open");
    afterRotation.abort();
  });

  test("a connection that stops forwarding: its watches end with a PingTimeoutError, the next watch gets a new one", async () => {
    const h2 = await server("h2");
    const proxy = await startTcpProxy(new URL(h2.url).host);
    try {
      const rest = client(proxy.url.replace("http:", "https:"), {
        http2: { readIdleTimeoutMs: 200, pingTimeoutMs: 200 },
      });
      const w = await watch(rest, "a");
      await until("the first event", () => w.names.length === 1);
      // Quiet but answered: PINGs keep it open.
      await new Promise((r) => setTimeout(r, 1_000));
      assert.equal(w.ended(), "open");
      proxy.blackHole();
      const cut = Date.now();
      await until("the watch ended", () => w.ended() !== "open");
      const ms = Date.now() - cut;
      assert.ok(w.ended() instanceof PingTimeoutError, String(w.ended()));
      assert.ok(ms < 1_500, `${ms} ms`);
      const next = await watch(rest, "b");
      await until("the next watch's event", () => next.names.length === 1);
      assert.equal(proxy.connections(), 2);
      next.abort();
    } finally {
      await proxy.stop();
    }
  });

  test("a connection left without watches is closed once idle; the next watch opens another", async () => {
    const h2 = await server("h2");
    const rest = client(h2.url, { http2: { readIdleTimeoutMs: 200, pingTimeoutMs: 1_000 } });
    const w = await watch(rest, "a");
    await until("the first event", () => w.names.length === 1);
    w.abort();
    await until("the idle connection closed", () => !h2.isOpen(h2.seen[0]?.port), 2_000);
    const next = await watch(rest, "b");
    await until("the next watch's event", () => next.names.length === 1);
    assert.equal(h2.connections(), 2);
    next.abort();
  });
});
