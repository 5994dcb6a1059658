import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer as createHttpsServer } from "node:https";
import { createServer as createTcpServer, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { pino } from "pino";
import {
  PrometheusConfigError,
  PrometheusQueryError,
  PrometheusUnavailableError,
  UnexpectedResultError,
} from "./errors.js";
import {
  scalarBody,
  startFakePrometheus,
  vectorBody,
  type Reply,
  type TestServer,
} from "./fake-prometheus.test-helpers.js";
import { safeEndpoint } from "../message-text.js";
import { PrometheusProvider, type PrometheusProviderOptions } from "./client.js";

/** Fast retries so the tests measure attempts, not waiting. */
const FAST = { retries: 3, minTimeoutMs: 5, factor: 2, maxRetryTimeMs: 5_000 };

function provider(url: string, extra: Partial<PrometheusProviderOptions> = {}) {
  return new PrometheusProvider({ endpoint: url, timeoutMs: 2_000, retry: FAST, ...extra });
}

async function withServer<T>(script: (n: number) => Reply, run: (server: TestServer) => Promise<T>): Promise<T> {
  const server = await startFakePrometheus(script);
  try {
    return await run(server);
  } finally {
    await server.close();
  }
}

/** A free loopback port with nothing listening on it. */
async function closedPort(): Promise<number> {
  const server = createTcpServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe("PrometheusProvider against a scripted server", () => {
  test("a 500 then a 200 is retried and succeeds", async () => {
    await withServer(
      (n) => (n === 0 ? { status: 500, body: "internal error" } : { status: 200, body: scalarBody("0.99") }),
      async (server) => {
        assert.deepEqual(await provider(server.url).query("up"), { kind: "value", value: 0.99 });
        assert.equal(server.requests.length, 2);
      },
    );
  });

  test("a persistent 503 is given up after 1 + retries attempts", async () => {
    await withServer(
      () => ({ status: 503, body: { status: "error", errorType: "unavailable", error: "not ready" } }),
      async (server) => {
        const err = await provider(server.url)
          .query("up")
          .then(
            () => assert.fail("should reject"),
            (e: unknown) => e,
          );
        assert.ok(err instanceof PrometheusUnavailableError);
        assert.equal(err.status, 503);
        assert.equal(err.errorType, "unavailable");
        assert.equal(server.requests.length, 4);
      },
    );
  });

  test("a 429 and a proxy's 502 page are retried", async () => {
    await withServer(
      (n) =>
        n === 0
          ? { status: 429, body: "Too Many Requests" }
          : n === 1
            ? { status: 502, body: "<html><body>Bad Gateway</body></html>" }
            : { status: 200, body: vectorBody(["1"]) },
      async (server) => {
        assert.deepEqual(await provider(server.url).query("up"), { kind: "value", value: 1 });
        assert.equal(server.requests.length, 3);
      },
    );
  });

  test("400 bad_data is a query error and is not retried", async () => {
    await withServer(
      () => ({ status: 400, body: { status: "error", errorType: "bad_data", error: "parse error at char 5" } }),
      async (server) => {
        await assert.rejects(provider(server.url).query("sum("), (err: unknown) => {
          assert.ok(err instanceof PrometheusQueryError);
          assert.equal(err.status, 400);
          assert.equal(err.errorType, "bad_data");
          assert.match(err.message, /parse error at char 5/);
          return true;
        });
        assert.equal(server.requests.length, 1);
      },
    );
  });

  test("a plain-text 400 keeps its status and is not retried", async () => {
    await withServer(
      () => ({ status: 400, body: "bad request from a proxy" }),
      async (server) => {
        await assert.rejects(provider(server.url).query("up"), (err: unknown) => {
          assert.ok(err instanceof PrometheusQueryError);
          assert.equal(err.status, 400);
          assert.match(err.message, /HTTP 400: bad request from a proxy/);
          return true;
        });
        assert.equal(server.requests.length, 1);
      },
    );
  });

  test("401 is not retried", async () => {
    await withServer(
      () => ({ status: 401, body: "Unauthorized" }),
      async (server) => {
        await assert.rejects(provider(server.url).query("up"), PrometheusQueryError);
        assert.equal(server.requests.length, 1);
      },
    );
  });

  test("a matrix result is unexpected and not retried", async () => {
    await withServer(
      () => ({
        status: 200,
        body: { status: "success", data: { resultType: "matrix", result: [{ metric: {}, values: [[1, "1"]] }] } },
      }),
      async (server) => {
        await assert.rejects(provider(server.url).query("up[1m]"), UnexpectedResultError);
        assert.equal(server.requests.length, 1);
      },
    );
  });

  test("a 200 that is not a Prometheus answer (a wrong URL) is unexpected and not retried", async () => {
    await withServer(
      () => ({ status: 200, body: "<html>login</html>" }),
      async (server) => {
        await assert.rejects(provider(server.url).query("up"), (err: unknown) => {
          assert.ok(err instanceof UnexpectedResultError);
          assert.match(err.message, /not a Prometheus API response/);
          return true;
        });
        assert.equal(server.requests.length, 1);
      },
    );
  });

  test("a slow answer times out, is retried, and ends as unavailable", async () => {
    await withServer(
      () => ({ status: 200, body: scalarBody("1"), delayMs: 1_000 }),
      async (server) => {
        const started = Date.now();
        const slow = provider(server.url, { timeoutMs: 100, retry: { ...FAST, retries: 1 } });
        await assert.rejects(slow.query("up"), (err: unknown) => {
          assert.ok(err instanceof PrometheusUnavailableError);
          assert.equal(err.errorType, "timeout");
          return true;
        });
        assert.equal(server.requests.length, 2);
        assert.ok(Date.now() - started < 900, "gave up before the server answered");
      },
    );
  });

  test("connection refused: unavailable after every attempt failed", async () => {
    const lines: { msg?: string; attempt?: number }[] = [];
    const log = pino({ level: "debug" }, { write: (line: string) => void lines.push(JSON.parse(line) as never) });
    const url = `http://127.0.0.1:${await closedPort()}`;
    await assert.rejects(provider(url, { log }).query("up"), (err: unknown) => {
      assert.ok(err instanceof PrometheusUnavailableError);
      assert.equal(err.errorType, "ECONNREFUSED");
      assert.ok(err.message.startsWith(`Prometheus ${url}: ECONNREFUSED`), err.message);
      return true;
    });
    const attempts = lines.filter((l) => l.msg === "metrics query attempt failed").map((l) => l.attempt);
    assert.deepEqual(attempts, [1, 2, 3, 4]);
  });

  test("connections reset by the server are retried; every attempt reaches it", async () => {
    let connections = 0;
    const server = createTcpServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = server.address() as AddressInfo;
      await assert.rejects(provider(`http://127.0.0.1:${port}`).query("up"), PrometheusUnavailableError);
      assert.equal(connections, 4);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  test("sends the evaluation time, the evaluation timeout and the query", async () => {
    await withServer(
      () => ({ status: 200, body: vectorBody(["1", "2", "+Inf"]) }),
      async (server) => {
        const p = provider(`${server.url}/prom`, { now: () => new Date(1_700_000_000_000), timeoutMs: 1_500 });
        assert.deepEqual(await p.query('sum(rate(x{a="b"}[1m]))'), {
          kind: "values",
          values: [1, 2, Infinity],
          labels: ['{series="0"}', '{series="1"}', '{series="2"}'],
        });
        const url = new URL(server.requests[0]?.url ?? "", server.url);
        assert.equal(url.pathname, "/prom/api/v1/query");
        assert.equal(url.searchParams.get("query"), 'sum(rate(x{a="b"}[1m]))');
        assert.equal(url.searchParams.get("time"), "1700000000");
        assert.equal(url.searchParams.get("timeout"), "1500ms");
      },
    );
  });

  test("authenticates with a bearer token or basic auth", async () => {
    await withServer(
      () => ({ status: 200, body: scalarBody("1") }),
      async (server) => {
        await provider(server.url, { auth: { bearerToken: "s3cret" } }).query("up");
        await provider(server.url, { auth: { username: "ann", password: "" } }).query("up");
        assert.equal(server.requests[0]?.headers.authorization, "Bearer s3cret");
        assert.equal(server.requests[1]?.headers.authorization, `Basic ${Buffer.from("ann:").toString("base64")}`);
      },
    );
  });

  test("rejects URLs that cannot work, without leaking credentials", () => {
    assert.throws(() => provider("not a url"), PrometheusConfigError);
    assert.throws(() => provider("ftp://prom"), PrometheusConfigError);
    assert.equal(safeEndpoint("https://user:pw@prom:9090/x/?token=1"), "https://prom:9090/x");
  });
});

describe("PrometheusProvider over HTTPS", () => {
  let dir: string;
  let url: string;
  let ca: string;
  let requests = 0;
  const server = createHttpsServer();

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "canaryapp-tls-"));
    execFileSync(
      "openssl",
      [
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-keyout",
        join(dir, "key.pem"),
        "-out",
        join(dir, "cert.pem"),
        "-days",
        "1",
        "-subj",
        "/CN=127.0.0.1",
        "-addext",
        "subjectAltName=IP:127.0.0.1",
      ],
      { stdio: "ignore" },
    );
    ca = readFileSync(join(dir, "cert.pem"), "utf8");
    server.setSecureContext({ key: readFileSync(join(dir, "key.pem")), cert: ca });
    server.on("request", (_req, res) => {
      requests++;
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(scalarBody("5")));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  after(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    rmSync(dir, { recursive: true, force: true });
  });

  test("verifies the server with the given CA", async () => {
    assert.deepEqual(await provider(url, { caPem: ca }).query("up"), { kind: "value", value: 5 });
  });

  test("an untrusted certificate fails at once, without retries", async () => {
    requests = 0;
    await assert.rejects(provider(url).query("up"), (err: unknown) => {
      assert.ok(err instanceof PrometheusUnavailableError);
      assert.equal(err.retryable, false);
      assert.equal(err.errorType, "DEPTH_ZERO_SELF_SIGNED_CERT");
      return true;
    });
    assert.equal(requests, 0, "no request got through the TLS handshake");
  });
});
