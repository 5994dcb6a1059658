import assert from "node:assert/strict";
import { afterEach, describe, test } from "node:test";
import type { CanaryApp } from "../../../api/types.js";
import { PrometheusConfigError } from "./errors.js";
import { scalarBody, startFakePrometheus } from "./fake-prometheus.test-helpers.js";
import type { SecretData, SecretReader } from "../credentials.js";
import { clearProviderCache, connectionFor, providerFor } from "./factory.js";
import type { PrometheusProvider } from "./client.js";

function app(spec: Partial<CanaryApp["spec"]> = {}): CanaryApp {
  return { metadata: { name: "web", namespace: "shop" }, spec: { image: "web:v1", imageListenPort: 8080, ...spec } };
}

const b64 = (s: string) => Buffer.from(s, "utf8").toString("base64");

/** A reader over a fixed set of Secrets, recording what it was asked for. */
function secrets(store: Record<string, Record<string, string>>): SecretReader & { asked: string[] } {
  const asked: string[] = [];
  const reader = (namespace: string, name: string): Promise<SecretData | undefined> => {
    asked.push(`${namespace}/${name}`);
    const data = store[`${namespace}/${name}`];
    return Promise.resolve(
      data ? { data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, b64(v)])) } : undefined,
    );
  };
  return Object.assign(reader, { asked });
}

const none = secrets({});

afterEach(() => clearProviderCache());

describe("connectionFor", () => {
  test("the app's URL wins over the controller's default; the timeout comes from the spec", async () => {
    const settings = await connectionFor(
      app({ prometheusURL: "http://app-prom:9090", prometheus: { timeoutSeconds: 2 } }),
      { prometheusURL: "http://default:9090" },
      none,
    );
    assert.deepEqual(settings, { endpoint: "http://app-prom:9090", timeoutMs: 2_000 });
  });

  test("the controller's default and the default timeout apply when the app sets none", async () => {
    assert.deepEqual(await connectionFor(app(), { prometheusURL: "http://default:9090" }, none), {
      endpoint: "http://default:9090",
      timeoutMs: 5_000,
    });
  });

  test("no URL anywhere, or a malformed one, is a config error naming the app", async () => {
    await assert.rejects(connectionFor(app(), {}, none), (err: unknown) => {
      assert.ok(err instanceof PrometheusConfigError);
      assert.match(err.message, /^CanaryApp shop\/web: no Prometheus URL/);
      return true;
    });
    await assert.rejects(connectionFor(app({ prometheusURL: "prom:9090" }), {}, none), PrometheusConfigError);
  });

  test("reads token, basic auth and CA from the app's Secret, in the app's namespace", async () => {
    const reader = secrets({
      "shop/token": { token: "abc\n", "ca.crt": "-----BEGIN CERTIFICATE-----" },
      "shop/basic": { username: "ann", password: "pw" },
    });
    const withToken = await connectionFor(
      app({ prometheusURL: "https://p", prometheus: { secretRef: { name: "token" } } }),
      {},
      reader,
    );
    assert.deepEqual(withToken.auth, { bearerToken: "abc" });
    assert.equal(withToken.caPem, "-----BEGIN CERTIFICATE-----");
    const withBasic = await connectionFor(
      app({ prometheusURL: "https://p", prometheus: { secretRef: { name: "basic" } } }),
      {},
      reader,
    );
    assert.deepEqual(withBasic.auth, { username: "ann", password: "pw" });
    assert.equal(withBasic.caPem, undefined);
    assert.deepEqual(reader.asked, ["shop/token", "shop/basic"]);
  });

  test("a missing Secret or a username without password is a config error naming the Secret", async () => {
    const reader = secrets({ "shop/half": { username: "ann" } });
    await assert.rejects(
      connectionFor(app({ prometheusURL: "http://p", prometheus: { secretRef: { name: "gone" } } }), {}, reader),
      /CanaryApp shop\/web: Secret shop\/gone \(spec.prometheus.secretRef\) not found/,
    );
    await assert.rejects(
      connectionFor(app({ prometheusURL: "http://p", prometheus: { secretRef: { name: "half" } } }), {}, reader),
      /Secret shop\/half has "username" but no "password"/,
    );
  });

  test("a failing Secret read is not a config error, and keeps its cause", async () => {
    const failing: SecretReader = () => Promise.reject(new Error("connection refused"));
    await assert.rejects(
      connectionFor(app({ prometheusURL: "http://p", prometheus: { secretRef: { name: "s" } } }), {}, failing),
      (err: unknown) => {
        assert.ok(err instanceof Error && !(err instanceof PrometheusConfigError));
        assert.match(err.message, /reading Secret shop\/s failed/);
        assert.equal((err.cause as Error).message, "connection refused");
        return true;
      },
    );
  });
});

describe("providerFor", () => {
  test("one provider per distinct connection", async () => {
    const reader = secrets({ "shop/a": { token: "a" }, "shop/b": { token: "b" } });
    const defaults = { prometheusURL: "http://default:9090" };
    const first = await providerFor(app(), defaults, reader);
    const other = { ...app(), metadata: { name: "api", namespace: "shop" } };
    assert.equal(await providerFor(other, defaults, reader), first, "same URL and auth share a provider");
    const withA = await providerFor(app({ prometheus: { secretRef: { name: "a" } } }), defaults, reader);
    const withB = await providerFor(app({ prometheus: { secretRef: { name: "b" } } }), defaults, reader);
    assert.notEqual(withA, first);
    assert.notEqual(withA, withB);
    assert.notEqual(await providerFor(app({ prometheus: { timeoutSeconds: 1 } }), defaults, reader), first);
    assert.equal((first as PrometheusProvider).endpoint, "http://default:9090");
  });

  test("a rotated Secret gets a new provider that uses the new credentials", async () => {
    const server = await startFakePrometheus(() => ({ status: 200, body: scalarBody("1") }));
    try {
      const store: Record<string, Record<string, string>> = { "shop/s": { token: "old" } };
      const reader = secrets(store);
      const spec = { prometheusURL: server.url, prometheus: { secretRef: { name: "s" } } };
      await (await providerFor(app(spec), {}, reader)).query("up");
      store["shop/s"] = { token: "new" };
      await (await providerFor(app(spec), {}, reader)).query("up");
      assert.deepEqual(
        server.requests.map((r) => r.headers.authorization),
        ["Bearer old", "Bearer new"],
      );
    } finally {
      await server.close();
    }
  });
});
