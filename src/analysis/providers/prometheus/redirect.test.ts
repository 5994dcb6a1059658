/**
 * The URL policy holds on redirects, and what a server says in its error is shown only in a short,
 * printable form: against local HTTP servers that count their connections.
 */
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, afterEach, before, describe, test } from "node:test";
import type { CanaryApp } from "../../../api/types.js";
import { prometheusAccess } from "./access.js";
import { PrometheusConfigError } from "./errors.js";
import { clearProviderCache, providerFor } from "./factory.js";
import { PrometheusProvider } from "./client.js";
import { STATUS_MESSAGE_MAX } from "../message-text.js";
import { runAppQueries } from "../prometheus.js";
import { allowsUrl, parseUrlPolicy } from "../url-policy.js";

interface Listener {
  url: string;
  connections: number;
  requests: { url: string; authorization: string | undefined }[];
  close(): Promise<void>;
}

/** A server on 127.0.0.1 that counts TCP connections and answers with `answer`. */
async function listener(answer: (path: string) => { status: number; headers?: Record<string, string>; body: string }) {
  const state = { connections: 0, requests: [] as Listener["requests"] };
  const server: Server = createServer((req, res) => {
    state.requests.push({ url: req.url ?? "", authorization: req.headers.authorization });
    const reply = answer(req.url ?? "");
    res.writeHead(reply.status, { "content-type": "application/json", ...reply.headers });
    res.end(reply.body);
  });
  server.on("connection", () => state.connections++);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(state, {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  }) satisfies Listener;
}

const SCALAR = JSON.stringify({ status: "success", data: { resultType: "scalar", result: [1, "1"] } });
const noRetry = { retries: 0 };

describe("redirects and the URL policy", () => {
  let outside: Listener;
  let inside: Listener;
  let redirector: Listener;

  before(async () => {
    outside = await listener(() => ({ status: 200, body: SCALAR }));
    inside = await listener(() => ({ status: 200, body: SCALAR }));
    redirector = await listener((path) => ({
      status: 302,
      headers: { location: path.includes("inside") ? `${inside.url}/api/v1/query` : `${outside.url}/api/v1/query` },
      body: "",
    }));
  });
  after(async () => {
    await Promise.all([outside.close(), inside.close(), redirector.close()]);
  });

  function provider(endpoint: string) {
    const policy = parseUrlPolicy([redirector.url, inside.url]);
    return new PrometheusProvider({
      endpoint,
      retry: noRetry,
      auth: { bearerToken: "s3cr3t" },
      allowRedirect: (url) => allowsUrl(policy, url),
    });
  }

  test("a redirect outside the policy is not followed: no connection reaches its target", async () => {
    await assert.rejects(provider(`${redirector.url}/to-outside`).query("up"), (err: unknown) => {
      assert.ok(err instanceof PrometheusConfigError, String(err));
      assert.match(
        err.message,
        /redirected to http:\/\/127\.0\.0\.1:\d+\/api\/v1\/query, outside the controller's Prometheus URL policy \(or where the credentials sent may go\); not followed/,
      );
      return true;
    });
    assert.equal(outside.connections, 0);
  });

  test("a redirect inside the policy is followed", async () => {
    const before = inside.requests.length;
    assert.deepEqual(await provider(`${redirector.url}/to-inside`).query("up"), { kind: "value", value: 1 });
    assert.equal(inside.requests.length - before, 1);
  });
});

describe("error text in status", () => {
  const hostile = `{"status":"error","errorType":"bad_data","error":"${"\\u001b[31m".repeat(3)}${"x".repeat(5000)}"}`;
  let server: Listener;
  before(async () => {
    server = await listener((path) =>
      path.includes("plain")
        ? { status: 400, headers: { "content-type": "text/plain" }, body: `first line\n${"secret ".repeat(500)}` }
        : { status: 422, body: hostile },
    );
  });
  after(() => server.close());
  afterEach(() => clearProviderCache());

  const app = (url: string): CanaryApp => ({
    metadata: { name: "web", namespace: "shop" },
    spec: { image: "web:v1", imageListenPort: 8080, prometheusURL: url },
  });

  test("a long or unprintable error is cut to a short printable message", async () => {
    const run = (a: CanaryApp, queries: string[]) =>
      runAppQueries(a, queries, { defaults: { retry: noRetry }, readSecret: () => Promise.resolve(null) });
    const [outcome] = await run(app(server.url), ["up"]);
    assert.equal(outcome?.kind, "error");
    const message = outcome?.kind === "error" ? outcome.message : "";
    assert.ok(message.length <= STATUS_MESSAGE_MAX, `${message.length} characters`);
    assert.match(message, /^[\x20-\x7e…]+$/);
    assert.match(message, /HTTP 422 bad_data/);
  });

  test("a non-Prometheus body is shown by its first line only", async () => {
    const run = (a: CanaryApp, queries: string[]) =>
      runAppQueries(a, queries, { defaults: { retry: noRetry }, readSecret: () => Promise.resolve(null) });
    const [outcome] = await run(app(`${server.url}/plain`), ["up"]);
    const message = outcome?.kind === "error" ? outcome.message : "";
    assert.match(message, /HTTP 400: first line$/);
    assert.doesNotMatch(message, /secret/);
  });
});

describe("the provider factory with the controller's access rules", () => {
  let server: Listener;
  before(async () => {
    server = await listener(() => ({ status: 200, body: SCALAR }));
  });
  after(() => server.close());
  afterEach(() => clearProviderCache());

  test("a refused app gets a config error and its URL is never connected to", async () => {
    const access = prometheusAccess({
      policyEntries: ["*.svc"],
      defaultPrometheusURL: undefined,
      secrets: { get: () => undefined },
    });
    const app: CanaryApp = {
      metadata: { name: "web", namespace: "shop" },
      spec: { image: "web:v1", imageListenPort: 8080, prometheusURL: server.url },
    };
    await assert.rejects(providerFor(app, { vet: access.vet }, access.readSecret), (err: unknown) => {
      assert.ok(err instanceof PrometheusConfigError);
      assert.match(err.message, /^CanaryApp shop\/web: spec\.prometheusURL http:\/\/127\.0\.0\.1:\d+ is outside/);
      return true;
    });
    const run = (a: CanaryApp, queries: string[]) =>
      runAppQueries(a, queries, { defaults: { vet: access.vet }, readSecret: access.readSecret });
    const outcomes = await run(app, ["up", "up"]);
    assert.deepEqual(
      outcomes.map((o) => (o.kind === "error" ? o.reason : o.kind)),
      ["PrometheusConfigInvalid", "PrometheusConfigInvalid"],
    );
    assert.equal(server.connections, 0);
  });

  test("credentials go where their Secret says, on the first request and on every redirect", async () => {
    const token = "t0k3n-of-the-team";
    const elsewhere = await listener(() => ({ status: 200, body: SCALAR }));
    const home = await listener(() => ({ status: 200, body: SCALAR }));
    // Redirects from the Prometheus the Secret names to another address the URL policy allows.
    const redirector = await listener(() => ({
      status: 302,
      headers: { location: `${elsewhere.url}/api/v1/query` },
      body: "",
    }));
    try {
      const secretFor = (allowedUrls: string | undefined) => ({
        metadata: {
          namespace: "shop",
          name: "prom",
          labels: { "canaryapp.io/credentials": "true" },
          ...(allowedUrls !== undefined && { annotations: { "canaryapp.io/allowed-urls": allowedUrls } }),
        },
        data: { token: Buffer.from(token).toString("base64") },
      });
      let stored = secretFor(redirector.url);
      const access = prometheusAccess({
        policyEntries: ["127.0.0.1"],
        defaultPrometheusURL: undefined,
        secrets: { get: () => stored },
        allowPlainHttpCredentials: true,
      });
      const defaults = {
        retry: noRetry,
        allowRedirect: access.allowRedirect,
        credentialsMayGo: access.credentialsMayGo,
      };
      const app = (url: string): CanaryApp => ({
        metadata: { name: "web", namespace: "shop" },
        spec: {
          image: "web:v1",
          imageListenPort: 8080,
          prometheusURL: url,
          prometheus: { secretRef: { name: "prom" } },
        },
      });
      const redirected = await providerFor(app(redirector.url), defaults, access.readSecret);
      await assert.rejects(redirected.query("up"), /\(or where the credentials sent may go\); not followed/);
      assert.equal(elsewhere.connections, 0, "the token did not follow the redirect");
      assert.deepEqual(
        redirector.requests.map((r) => r.authorization),
        [`Bearer ${token}`],
        "it went to the Prometheus the Secret names",
      );

      // The Secret as read decides, whatever the vet saw: its annotation names another Prometheus now.
      stored = secretFor(home.url);
      await assert.rejects(providerFor(app(redirector.url), defaults, access.readSecret), (err: unknown) => {
        assert.ok(err instanceof PrometheusConfigError);
        assert.match(
          err.message,
          /spec\.prometheus\.secretRef prom: URL http:\/\/127\.0\.0\.1:\d+ is not where the Secret may be sent/,
        );
        return true;
      });
      stored = secretFor(undefined);
      await assert.rejects(providerFor(app(home.url), defaults, access.readSecret), /has no annotation/);
      assert.equal(home.connections, 0);
    } finally {
      await Promise.all([elsewhere.close(), home.close(), redirector.close()]);
    }
  });
});
