import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import type { V1Service } from "@kubernetes/client-node";
import pino from "pino";
import { createInformer } from "../controller/create-informer.js";
import { handedEach } from "./list-watch.js";
import type { ObjectWithMeta } from "../controller/informer.js";
import { createClients, loadKubeConfig, PooledKubeConfig } from "./client.js";
import { FakeApiServer, status } from "./fake-apiserver.test-helpers.js";

function kubeconfigFile(dir: string, name: string, server: string): string {
  const file = join(dir, name);
  writeFileSync(
    file,
    [
      "apiVersion: v1",
      "kind: Config",
      `current-context: ${name}`,
      "clusters:",
      `- name: ${name}`,
      `  cluster: { server: "${server}" }`,
      "users:",
      `- name: ${name}`,
      "  user: { token: abc }",
      "contexts:",
      `- name: ${name}`,
      `  context: { cluster: ${name}, user: ${name} }`,
    ].join("\n"),
  );
  return file;
}

describe("loadKubeConfig", () => {
  const dir = mkdtempSync(join(tmpdir(), "kubeconfig-"));
  const a = kubeconfigFile(dir, "a", "https://a.example:6443");
  const b = kubeconfigFile(dir, "b", "https://b.example:6443");

  test("an explicit path wins over $KUBECONFIG", () => {
    const kc = loadKubeConfig(a, { env: { KUBECONFIG: b } });
    assert.equal(kc.getCurrentCluster()?.server, "https://a.example:6443");
  });

  test("$KUBECONFIG with several files merges them, the first one's context current", () => {
    const kc = loadKubeConfig(undefined, { env: { KUBECONFIG: `${a}${delimiter}${b}` } });
    assert.equal(kc.getCurrentContext(), "a");
    assert.deepEqual(
      kc
        .getClusters()
        .map((c) => c.name)
        .sort(),
      ["a", "b"],
    );
  });

  test("falls back to ~/.kube/config", () => {
    const home = mkdtempSync(join(tmpdir(), "home-"));
    mkdirSync(join(home, ".kube"));
    kubeconfigFile(join(home, ".kube"), "config", "https://home.example");
    const kc = loadKubeConfig(undefined, { env: {}, home });
    assert.equal(kc.getCurrentCluster()?.server, "https://home.example");
  });

  test("in a cluster, the service account wins over ~/.kube/config", () => {
    const kc = loadKubeConfig(undefined, {
      env: { KUBERNETES_SERVICE_HOST: "10.0.0.1" },
      home: "/nonexistent",
      fileExists: () => true,
    });
    assert.equal(kc.getCurrentContext(), "inClusterContext");
  });

  test("without any source it fails and says where it looked", () => {
    assert.throws(
      () => loadKubeConfig(undefined, { env: {}, home: "/nonexistent", fileExists: () => false }),
      /no kubeconfig: .*\/nonexistent\/\.kube\/config is missing/,
    );
  });

  test("createClients builds every client from one config", () => {
    const clients = createClients(loadKubeConfig(a, { env: {} }));
    assert.ok(clients.core && clients.apps && clients.coordination && clients.customObjects && clients.objects);
    assert.ok(clients.kubeConfig instanceof PooledKubeConfig);
  });
});

describe("clients started while the API server answers 429 'storage is (re)initializing'", () => {
  test("an informer on them retries the list and the watch, and syncs once the server answers", async () => {
    const server = new FakeApiServer();
    const refusals = { list: 0, watch: 0 };
    server.handler = (req) => {
      if (req.path !== "/api/v1/namespaces/a/services") return undefined;
      const watching = req.query.get("watch") === "true";
      const refuse = watching ? refusals.watch < 2 : refusals.list < 3;
      if (refuse) {
        refusals[watching ? "watch" : "list"]++;
        return status(429, "TooManyRequests", "storage is (re)initializing");
      }
      if (watching) return { status: 200, body: { type: "ADDED", object: service("t", "11") } };
      return {
        status: 200,
        body: { kind: "ServiceList", metadata: { resourceVersion: "10" }, items: [service("s", "9")] },
      };
    };
    const kc = await server.start();
    const warnings: string[] = [];
    const log = pino({ level: "warn" }, { write: (line: string) => warnings.push(line) });
    const clients = createClients(kc);
    const informer = createInformer<V1Service & ObjectWithMeta>({
      type: { group: "", version: "v1", plural: "services" },
      namespaces: ["a"],
      list: ({ each }) => handedEach(clients.core.listNamespacedService({ namespace: "a" }), each),
      watcher: clients.watch,
      log,
      backoff: { initialMs: 10, maxMs: 20 },
    });
    try {
      informer.start();
      for (let waited = 0; informer.get("a", "t") === undefined && waited < 5_000; waited += 10) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      assert.ok(informer.hasSynced());
      assert.ok(informer.get("a", "s"), "the listed object");
      assert.deepEqual(refusals, { list: 3, watch: 2 });
      assert.ok(
        warnings.some((w) => w.includes("storage is (re)initializing")),
        warnings.join("\n"),
      );
    } finally {
      await informer.stop();
      await server.stop();
    }
  });
});

function service(name: string, resourceVersion: string): object {
  return { apiVersion: "v1", kind: "Service", metadata: { name, namespace: "a", resourceVersion } };
}
