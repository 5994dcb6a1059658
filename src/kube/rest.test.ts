import assert from "node:assert/strict";
import { createServer, type RequestListener, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { gzipSync } from "node:zlib";
import { after, before, beforeEach, describe, test } from "node:test";
import { isNetworkError, isNotFound, KubeApiError, retryAfterMs, statusCodeOf } from "./errors.js";
import { FakeApiServer, status } from "./fake-apiserver.test-helpers.js";
import { KubeRest, resourcePath } from "./rest.js";

const DEPLOYMENTS = { group: "apps", version: "v1", plural: "deployments" } as const;

/** A plain node:http server answering with `handler`, and KubeRest clients for it without credentials. */
interface RawServer {
  client(): KubeRest;
  stop(): Promise<void>;
}

async function rawServer(handler: RequestListener): Promise<RawServer> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    client: () =>
      new KubeRest({
        server: url,
        tls: { rejectUnauthorized: true },
        authenticate: () => Promise.resolve({}),
        source: "kubeconfig",
      }),
    stop: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describe("resourcePath", () => {
  test("core and named groups, cluster-wide and namespaced, objects and the status subresource", () => {
    assert.equal(resourcePath({ group: "", version: "v1", plural: "pods" }), "/api/v1/pods");
    assert.equal(resourcePath({ ...DEPLOYMENTS, namespace: "shop" }), "/apis/apps/v1/namespaces/shop/deployments");
    assert.equal(
      resourcePath({
        group: "canaryapp.io",
        version: "v1alpha1",
        plural: "canaryapps",
        namespace: "a b",
        name: "w",
        subresource: "status",
      }),
      "/apis/canaryapp.io/v1alpha1/namespaces/a%20b/canaryapps/w/status",
    );
  });
});

describe("KubeRest against an HTTP API server", () => {
  const server = new FakeApiServer();
  let api: KubeRest;

  before(async () => {
    await server.start();
    api = server.rest();
  });
  after(async () => {
    await api.close();
    await server.stop();
  });
  beforeEach(() => {
    server.requests.length = 0;
    server.handler = (req) => ({
      status: req.method === "POST" ? 201 : 200,
      body: { method: req.method, got: req.body ?? null },
    });
  });

  test("each call's method, path, query, content type and body; the parsed answer", async () => {
    await api.get({ ...DEPLOYMENTS, namespace: "shop", name: "web" });
    await api.list({ ...DEPLOYMENTS }, { labelSelector: "a=b" });
    const created = await api.create<{ method: string }>(
      { group: "", version: "v1", plural: "events", namespace: "shop" },
      { x: 1 },
    );
    await api.replace(
      { group: "coordination.k8s.io", version: "v1", plural: "leases", namespace: "ns", name: "l" },
      { y: 2 },
    );
    await api.mergePatch({ ...DEPLOYMENTS, namespace: "shop", name: "web" }, { z: null }, { fieldManager: "m" });
    await api.apply(
      { ...DEPLOYMENTS, namespace: "shop", name: "web" },
      { kind: "Deployment" },
      { fieldManager: "m", force: true },
    );
    await api.delete({ ...DEPLOYMENTS, namespace: "shop", name: "web" }, { propagationPolicy: "Background" });
    assert.deepEqual(created, { method: "POST", got: { x: 1 } });
    const calls = server.calls().map((c) => [c.method, c.path, c.query.toString(), c.contentType, c.body]);
    assert.deepEqual(calls, [
      ["GET", "/apis/apps/v1/namespaces/shop/deployments/web", "", "", undefined],
      ["GET", "/apis/apps/v1/deployments", "labelSelector=a%3Db", "", undefined],
      ["POST", "/api/v1/namespaces/shop/events", "", "application/json", { x: 1 }],
      ["PUT", "/apis/coordination.k8s.io/v1/namespaces/ns/leases/l", "", "application/json", { y: 2 }],
      [
        "PATCH",
        "/apis/apps/v1/namespaces/shop/deployments/web",
        "fieldManager=m",
        "application/merge-patch+json",
        { z: null },
      ],
      [
        "PATCH",
        "/apis/apps/v1/namespaces/shop/deployments/web",
        "fieldManager=m&force=true",
        "application/apply-patch+yaml",
        { kind: "Deployment" },
      ],
      ["DELETE", "/apis/apps/v1/namespaces/shop/deployments/web", "propagationPolicy=Background", "", undefined],
    ]);
    assert.ok(server.requests.every((r) => r.method !== undefined));
  });

  test("a refusal is a KubeApiError with the Status' message, code and reason", async () => {
    server.handler = () => status(404, "NotFound", 'deployments.apps "web" not found');
    const error = await api.get({ ...DEPLOYMENTS, namespace: "shop", name: "web" }).catch((e: unknown) => e);
    assert.ok(error instanceof KubeApiError);
    assert.equal(error.code, 404);
    assert.equal(error.reason, "NotFound");
    assert.equal(error.message, 'deployments.apps "web" not found (HTTP 404)');
    assert.ok(isNotFound(error));
    server.handler = () => ({ status: 503, body: "not json" });
    const plain = await api.list({ ...DEPLOYMENTS }).catch((e: unknown) => e);
    assert.equal(statusCodeOf(plain), 503);
  });

  test("requests reuse one kept-alive connection; after close a new one is opened", async () => {
    const own = new FakeApiServer();
    own.handler = () => ({ status: 200, body: { items: [] } });
    await own.start();
    const rest = own.rest();
    try {
      let connections = 0;
      // The FakeApiServer's node:http server counts the TCP connections it accepts.
      (own as unknown as { server: Server }).server.on("connection", () => connections++);
      for (let i = 0; i < 20; i++) await rest.list({ ...DEPLOYMENTS });
      assert.equal(connections, 1, "20 sequential requests over one connection");
      await rest.close();
      await rest.list({ ...DEPLOYMENTS });
      assert.equal(connections, 2);
    } finally {
      await rest.close();
      await own.stop();
    }
  });

  test("no server: a network error, worth retrying", async () => {
    const gone = new FakeApiServer();
    await gone.start();
    const rest = gone.rest();
    await gone.stop();
    const error = await rest.list({ ...DEPLOYMENTS }).catch((e: unknown) => e);
    assert.ok(isNetworkError(error), String(error));
  });
});

describe("KubeRest.watch", () => {
  let raw: RawServer;
  before(async () => {
    raw = await rawServer((req, res) => {
      const u = new URL(req.url ?? "/", "http://x");
      if (u.pathname === "/api/v1/configmaps" && u.searchParams.get("watch") === "true") {
        res.writeHead(200, { "content-type": "application/json" });
        res.write(`${JSON.stringify({ type: "ADDED", object: { metadata: { name: "a" } } })}\n`);
        res.write(`not json\n\n`);
        res.end(
          `${JSON.stringify({ type: "BOOKMARK", object: { metadata: { resourceVersion: u.searchParams.get("resourceVersion") } } })}\n`,
        );
        return;
      }
      res.writeHead(410, { "content-type": "application/json" });
      res.end(JSON.stringify({ kind: "Status", code: 410, reason: "Expired", message: "too old" }));
    });
  });
  after(() => raw.stop());
  const client = () => raw.client();

  test("events in order, unreadable lines skipped, done once with nothing when the server ends it", async () => {
    const rest = client();
    const events: [string, unknown][] = [];
    const ended = await new Promise<unknown>((resolve) => {
      void rest.watch(
        "/api/v1/configmaps",
        { resourceVersion: "7", labelSelector: undefined },
        (type, object) => events.push([type, object]),
        resolve,
      );
    });
    assert.equal(ended, null);
    assert.deepEqual(events, [
      ["ADDED", { metadata: { name: "a" } }],
      ["BOOKMARK", { metadata: { resourceVersion: "7" } }],
    ]);
    await rest.close();
  });

  test("a refused watch ends with its HTTP status and Status body", async () => {
    const rest = client();
    const ended = await new Promise<unknown>((resolve) => {
      void rest.watch("/api/v1/secrets", {}, () => undefined, resolve);
    });
    assert.equal(statusCodeOf(ended), 410);
    assert.match((ended as { body: string }).body, /Expired/);
    await rest.close();
  });
});

describe("KubeRest onRequest", () => {
  test("is told of every request sent: API calls and watches", async () => {
    const server = new FakeApiServer();
    server.handler = (req) => {
      if (req.query.get("watch") === "true")
        return { status: 200, body: { type: "ADDED", object: { kind: "Service" } } };
      return { status: 200, body: { kind: "ServiceList", metadata: { resourceVersion: "1" }, items: [] } };
    };
    await server.start();
    const told: string[] = [];
    const api = server.rest({ onRequest: (verb) => told.push(verb) });
    try {
      await api.list({ group: "", version: "v1", plural: "services", namespace: "a" });
      await api.get({ group: "", version: "v1", plural: "services", namespace: "a", name: "s" });
      const watched = await new Promise<unknown>((resolve) => {
        void api.watch(
          "/api/v1/namespaces/a/services",
          { resourceVersion: "1" },
          (_type, object) => resolve(object),
          () => undefined,
        );
      });
      assert.ok(watched, "the watch delivered its event");
      assert.equal(server.requests.length, 3);
      assert.deepEqual(told, ["get", "get", "watch"], "one count per request the server saw, by verb");
    } finally {
      await api.close();
      await server.stop();
    }
  });
});

describe("KubeRest answers of priority and fairness", () => {
  test("a 429's Retry-After header, or its Status' retryAfterSeconds, is what retryAfterMs reads", async () => {
    const server = new FakeApiServer();
    let withHeader = true;
    server.handler = () => ({
      status: 429,
      body: { kind: "Status", reason: "TooManyRequests", message: "slow down", details: { retryAfterSeconds: 2 } },
      ...(withHeader && { headers: { "retry-after": "3" } }),
    });
    await server.start();
    const api = server.rest();
    try {
      const fromHeader = await api.get({ ...DEPLOYMENTS, namespace: "a", name: "w" }).catch((e: unknown) => e);
      assert.ok(fromHeader instanceof KubeApiError);
      assert.equal(fromHeader.code, 429);
      assert.equal(retryAfterMs(fromHeader), 3000);
      withHeader = false;
      const fromStatus = await api.get({ ...DEPLOYMENTS, namespace: "a", name: "w" }).catch((e: unknown) => e);
      assert.equal(retryAfterMs(fromStatus), 2000);
    } finally {
      await api.close();
      await server.stop();
    }
  });
});

describe("KubeRest.listEach", () => {
  const items = Array.from({ length: 300 }, (_, i) => ({
    metadata: { name: `cm-${i}` },
    data: { v: "x".repeat(200) },
  }));
  const whole = JSON.stringify({ kind: "ConfigMapList", metadata: { resourceVersion: "42" }, items });
  let raw: RawServer;
  before(async () => {
    raw = await rawServer((req, res) => {
      if (req.url?.startsWith("/api/v1/namespaces/gz")) {
        // As the API server answers a large list to a client that accepts gzip; "gzcut": cut off half way.
        assert.equal(req.headers["accept-encoding"], "gzip");
        const gz = gzipSync(whole);
        res.writeHead(200, { "content-type": "application/json", "content-encoding": "gzip" });
        if (req.url.startsWith("/api/v1/namespaces/gzcut/"))
          res.write(gz.subarray(0, gz.length / 2), () => res.destroy());
        else res.end(gz);
        return;
      }
      res.writeHead(200, { "content-type": "application/json", "content-length": String(Buffer.byteLength(whole)) });
      if (req.url?.startsWith("/api/v1/namespaces/cut/")) {
        // Half the list, then the connection drops.
        res.write(whole.slice(0, whole.length / 2), () => res.destroy());
        return;
      }
      res.end(whole);
    });
  });
  after(() => raw.stop());
  const client = () => raw.client();
  const CONFIGMAPS = { group: "", version: "v1", plural: "configmaps" } as const;

  test("every item handed over in order, then the list's metadata", async () => {
    const rest = client();
    const names: string[] = [];
    const meta = await rest.listEach<{ metadata: { name: string } }>({ ...CONFIGMAPS, namespace: "all" }, {}, (item) =>
      names.push(item.metadata.name),
    );
    assert.deepEqual(
      names,
      items.map((i) => i.metadata.name),
    );
    assert.deepEqual(meta, { metadata: { resourceVersion: "42" } });
    await rest.close();
  });

  test("a compressed list is inflated as it arrives", async () => {
    const rest = client();
    const names: string[] = [];
    const meta = await rest.listEach<{ metadata: { name: string } }>({ ...CONFIGMAPS, namespace: "gz" }, {}, (item) =>
      names.push(item.metadata.name),
    );
    assert.deepEqual(
      names,
      items.map((i) => i.metadata.name),
    );
    assert.deepEqual(meta, { metadata: { resourceVersion: "42" } });
    await rest.close();
  });

  for (const namespace of ["cut", "gzcut"]) {
    test(`a list cut off part way rejects, after the items that were whole (${namespace})`, async () => {
      const rest = client();
      const names: string[] = [];
      const failed = await rest
        .listEach<{ metadata: { name: string } }>({ ...CONFIGMAPS, namespace }, {}, (item) =>
          names.push(item.metadata.name),
        )
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      assert.ok(failed instanceof Error, `resolved: ${String(failed)}`);
      assert.ok(names.length < items.length, `${names.length} items handed`);
      await rest.close();
    });
  }

  test("an item its reader refuses ends the list with that error, and the client goes on", async () => {
    const rest = client();
    const refusal = new Error("refused");
    const failed = await rest
      .listEach({ ...CONFIGMAPS, namespace: "all" }, {}, () => {
        throw refusal;
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    assert.equal(failed, refusal);
    let count = 0;
    await rest.listEach({ ...CONFIGMAPS, namespace: "all" }, {}, () => count++);
    assert.equal(count, items.length);
    await rest.close();
  });
});
