/**
 * How every process of the project talks to the API server: one connection pool per kubeconfig, shared by any
 * number of client sets and watches, that survives clients being built, stopped and built again, and a
 * process that starts before the API server is ready. The demo, the simulator and the recorders build several
 * client sets on one kubeconfig, which is what these tests do.
 */
import assert from "node:assert/strict";
import { mkdtemp, stat } from "node:fs/promises";
import { request as httpsRequest } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { V1ConfigMap } from "@kubernetes/client-node";
import pino from "pino";
import { startControlPlane } from "../../e2e/cluster/control-plane.js";
import { waitFor } from "../../e2e/cluster/wait.js";
import type { Informer, ObjectWithMeta } from "../../src/controller/informer.js";
import { createInformer } from "../../src/controller/create-informer.js";
import { handedEach } from "../../src/kube/list-watch.js";
import { createClients, loadKubeConfig, PooledKubeConfig, type KubeClients } from "../../src/kube/client.js";
import { statusCodeOf } from "../../src/kube/errors.js";
import { isFallback, readKubeConfig } from "../../src/kube/kubeconfig.js";
import { managedFieldsBytes } from "../../src/kube/list-items.js";
import { KubeRest, resourcePath } from "../../src/kube/rest.js";
import { StreamWatch } from "../../src/kube/watch.js";
import { watchEventManagedFields } from "../../src/kube/watch-stream.js";
import { createTestNamespace, testKubeConfig, testKubeConfigPath } from "../support/kube.js";
import { startTcpProxy, type TcpProxy } from "../support/tcp-proxy.js";

const silent = pino({ level: "silent" });

type ConfigMap = V1ConfigMap & ObjectWithMeta;

function configMapInformer(
  clients: KubeClients,
  namespace: string,
  log = silent,
  backoff?: { initialMs: number; maxMs: number },
): Informer<ConfigMap> {
  return createInformer<ConfigMap>({
    type: { group: "", version: "v1", plural: "configmaps" },
    namespaces: [namespace],
    list: ({ each }) => handedEach(clients.core.listNamespacedConfigMap({ namespace }), each),
    watcher: clients.watch,
    log,
    backoff,
  });
}

async function createConfigMap(clients: KubeClients, namespace: string, name: string): Promise<void> {
  await clients.core.createNamespacedConfigMap({ namespace, body: { metadata: { name }, data: { a: "1" } } });
}

async function seen(informer: Informer<ConfigMap>, namespace: string, name: string): Promise<void> {
  await waitFor(`ConfigMap ${namespace}/${name} in the cache`, () => Promise.resolve(informer.get(namespace, name)), {
    timeoutMs: 15_000,
  });
}

/** A PooledKubeConfig for the test cluster whose server is reached through `proxy`, so connections can be counted. */
function throughProxy(proxy: TcpProxy): PooledKubeConfig {
  const direct = loadKubeConfig(testKubeConfigPath());
  const kc = new PooledKubeConfig();
  kc.loadFromOptions({
    clusters: direct.clusters.map((c) => ({ ...c, server: proxy.url.replace("http://", "https://") })),
    users: direct.users,
    contexts: direct.contexts,
    currentContext: direct.currentContext,
  });
  return kc;
}

describe("connections to the API server", () => {
  let namespace = "";
  before(async () => {
    namespace = await createTestNamespace(testKubeConfig(), "connections");
  });

  test("client sets built on one kubeconfig share it without closing each other's connections", async () => {
    // The demo's shape: the simulator and the story recorder each build their clients on the same config.
    const kc = loadKubeConfig(testKubeConfigPath());
    const first = createClients(kc);
    const second = createClients(kc);
    const informers = [configMapInformer(first, namespace), configMapInformer(second, namespace)];
    try {
      for (const informer of informers) informer.start();
      await waitFor(
        "both informers synced",
        () => Promise.resolve(informers.every((i) => i.hasSynced()) || undefined),
        {
          timeoutMs: 15_000,
        },
      );
      for (let i = 0; i < 10; i++) {
        await createConfigMap(i % 2 === 0 ? first : second, namespace, `shared-${i}`);
        await first.core.readNamespacedConfigMap({ namespace, name: `shared-${i}` });
        await second.core.readNamespacedConfigMap({ namespace, name: `shared-${i}` });
      }
      for (const informer of informers) await seen(informer, namespace, "shared-9");
      assert.equal(kc.poolCount, 1, "one pool for one cluster and user");
    } finally {
      await Promise.all(informers.map((i) => i.stop()));
      await kc.close();
    }
  });

  test("a long-lived process opens, closes and reopens clients and watches over few connections", async () => {
    const target = new URL(loadKubeConfig(testKubeConfigPath()).getCurrentCluster()?.server ?? "").host;
    const proxy = await startTcpProxy(target);
    const kc = throughProxy(proxy);
    try {
      for (let round = 0; round < 3; round++) {
        const clients = createClients(kc);
        const informer = configMapInformer(clients, namespace);
        informer.start();
        await waitFor(`round ${round}: synced`, () => Promise.resolve(informer.hasSynced() || undefined), {
          timeoutMs: 15_000,
        });
        const before = proxy.connections();
        for (let i = 0; i < 20; i++) await clients.core.listNamespacedConfigMap({ namespace });
        await createConfigMap(clients, namespace, `round-${round}`);
        await seen(informer, namespace, `round-${round}`);
        // The watch and the requests share the pool's connection (HTTP/2): at most one new one per round.
        assert.ok(
          proxy.connections() - before <= 1,
          `round ${round}: ${proxy.connections() - before} new connections for 21 requests`,
        );
        console.log(`# round ${round}: ${proxy.connections()} connections so far`);
        await informer.stop();
        // Every other round ends with the whole pool closed, as a process that shuts its clients down does.
        if (round % 2 === 0) await kc.close();
      }
      console.log(`# 3 rounds of list+watch+21 requests over ${proxy.connections()} TCP connections`);
      assert.ok(proxy.connections() <= 6, `${proxy.connections()} connections in all`);
    } finally {
      await kc.close();
      await proxy.stop();
    }
  });

  test("the controller's REST client: requests and watches share one pool, closed and reopened", async () => {
    const read = readKubeConfig(testKubeConfigPath());
    assert.ok(!isFallback(read), "the test kubeconfig (client certificate) is read without client-node");
    const proxy = await startTcpProxy(new URL(read.server).host);
    const api = new KubeRest({ ...read, server: proxy.url.replace("http://", "https://") });
    const CONFIGMAPS = { group: "", version: "v1", plural: "configmaps", namespace } as const;
    try {
      for (let round = 0; round < 3; round++) {
        const informer = createInformer<ConfigMap>({
          type: { group: "", version: "v1", plural: "configmaps" },
          namespaces: [namespace],
          list: ({ each }) => api.listEach<ConfigMap>(CONFIGMAPS, {}, each),
          watcher: api,
          log: silent,
        });
        informer.start();
        await waitFor(`round ${round}: synced`, () => Promise.resolve(informer.hasSynced() || undefined), {
          timeoutMs: 15_000,
        });
        const before = proxy.connections();
        for (let i = 0; i < 20; i++) await api.list(CONFIGMAPS);
        await api.create(CONFIGMAPS, { metadata: { name: `rest-${round}` }, data: { a: "1" } });
        await seen(informer, namespace, `rest-${round}`);
        // The open watch has its own connection (HTTP/2), the 21 requests take turns on one other (HTTP/1.1).
        assert.ok(
          proxy.connections() - before <= 1,
          `round ${round}: ${proxy.connections() - before} new connections for 21 requests`,
        );
        await informer.stop();
        if (round % 2 === 0) await api.close();
      }
      console.log(`# REST client: 3 rounds of list+watch+21 requests over ${proxy.connections()} TCP connections`);
      assert.ok(proxy.connections() <= 8, `${proxy.connections()} connections in all`);
    } finally {
      await api.close();
      await proxy.stop();
    }
  });

  test("a quiet watch ends by its own inactivity timeout, and is resumed by the informer", async () => {
    const kc = loadKubeConfig(testKubeConfigPath());
    const watch = new StreamWatch(kc, 1_500);
    const started = Date.now();
    const ended = await new Promise<unknown>((resolve) => {
      void watch.watch(`/api/v1/namespaces/${namespace}/configmaps`, { resourceVersion: "" }, () => undefined, resolve);
    });
    // A fresh watch from "" first replays the existing objects; the timeout then counts from the last of them.
    assert.ok(ended instanceof Error && ended.name === "TimeoutError", `ended with ${String(ended)}`);
    assert.ok(Date.now() - started >= 1_500);
    await kc.close();
  });

  for (const kind of ["services", "canaryapps"] as const) {
    test(`a list over 128 KB comes compressed, and reads as the API server's JSON less managedFields (${kind})`, async () => {
      const read = readKubeConfig(testKubeConfigPath());
      assert.ok(!isFallback(read));
      const big = await createTestNamespace(testKubeConfig(), `big-${kind}`);
      const api = new KubeRest(read);
      const ref =
        kind === "services"
          ? ({ group: "", version: "v1", plural: "services", namespace: big } as const)
          : ({ group: "canaryapp.io", version: "v1alpha1", plural: "canaryapps", namespace: big } as const);
      const note = { note: "x".repeat(1200) };
      const body = (name: string, labels: Record<string, string>) =>
        kind === "services"
          ? { metadata: { name, labels, annotations: note }, spec: { ports: [{ port: 80 }], selector: { app: name } } }
          : {
              apiVersion: "canaryapp.io/v1alpha1",
              kind: "CanaryApp",
              metadata: { name, labels, annotations: note },
              spec: { image: "app:v1", imageListenPort: 8080, replicas: 1, testReplicas: 1 },
            };
      try {
        for (let batch = 0; batch < 8; batch++) {
          await Promise.all(
            // One of each batch with a label `name`: a custom resource's managedFields is then parsed, not cut.
            Array.from({ length: 20 }, (_, i) =>
              api.create(ref, body(`x-${batch}-${i}`, i === 0 ? { name: "x" } : { app: `x-${batch}-${i}` })),
            ),
          );
        }
        const path = resourcePath(ref);
        // The API server compresses this answer when asked (it is over 128 KB)...
        const auth = await read.authenticate();
        const encoding = await new Promise<string | undefined>((resolve, reject) => {
          const req = httpsRequest(new URL(read.server + path), {
            ...read.tls,
            headers: { ...auth, "accept-encoding": "gzip" },
          });
          req.on("response", (res) => {
            res.resume();
            resolve(res.headers["content-encoding"]);
          });
          req.on("error", reject);
          req.end();
        });
        assert.equal(encoding, "gzip");
        // ...its items are laid out as the reader expects (managedFields found in all but the labelled ones)...
        const plain = await api.request<{ items: { metadata: { managedFields?: unknown } }[] }>("GET", path);
        assert.equal(plain.items.length, 160);
        const cut = plain.items.filter((i) => managedFieldsBytes(Buffer.from(JSON.stringify(i))) !== undefined);
        assert.equal(cut.length, kind === "services" ? 160 : 152);
        // ...and what listEach hands over is what the uncompressed answer holds, less metadata.managedFields.
        assert.ok(plain.items.every((i) => Array.isArray(i.metadata.managedFields)));
        for (const item of plain.items) delete item.metadata.managedFields;
        const handed: unknown[] = [];
        await api.listEach(ref, {}, (item) => handed.push(item), { withoutManagedFields: true });
        assert.deepEqual(handed, plain.items);
      } finally {
        await api.close();
      }
    });
  }

  test("watch events read as the API server's lines less managedFields, cut out before parsing (built-in and custom)", async () => {
    const read = readKubeConfig(testKubeConfigPath());
    assert.ok(!isFallback(read));
    const watched = await createTestNamespace(testKubeConfig(), "watched");
    const api = new KubeRest(read);
    const refs = [
      { group: "", version: "v1", plural: "services", namespace: watched },
      { group: "canaryapp.io", version: "v1alpha1", plural: "canaryapps", namespace: watched },
    ] as const;
    const body = (plural: string, name: string, image: string) =>
      plural === "services"
        ? {
            apiVersion: "v1",
            kind: "Service",
            metadata: { name, labels: { app: name }, annotations: { image } },
            spec: { ports: [{ port: 80 }], selector: { app: name } },
          }
        : {
            apiVersion: "canaryapp.io/v1alpha1",
            kind: "CanaryApp",
            metadata: { name, labels: { app: name } },
            spec: { image, imageListenPort: 8080, replicas: 1, testReplicas: 1 },
          };
    const handles: { abort(): void }[] = [];
    try {
      for (const ref of refs) {
        const path = resourcePath(ref);
        // The raw lines, as the API server writes them...
        const auth = await read.authenticate();
        const lines: string[] = [];
        let pending = "";
        const raw = httpsRequest(new URL(`${read.server}${path}?watch=true`), { ...read.tls, headers: auth });
        raw.on("response", (res) => {
          res.setEncoding("utf8");
          res.on("data", (text: string) => {
            pending += text;
            const parts = pending.split("\n");
            pending = parts.pop() ?? "";
            lines.push(...parts.filter((l) => l !== ""));
          });
        });
        raw.end();
        handles.push({ abort: () => raw.destroy() });
        // ...and the events the controller's client hands over from the same changes.
        const events: [string, unknown][] = [];
        handles.push(
          await api.watch(
            path,
            {},
            (type, object) => events.push([type, object]),
            () => undefined,
            {
              withoutManagedFields: true,
            },
          ),
        );
        await new Promise((resolve) => setTimeout(resolve, 500));
        for (const name of ["a", "b", "c"]) {
          await api.apply({ ...ref, name }, body(ref.plural, name, "app:v1"), { fieldManager: "canaryapp" });
        }
        await api.apply({ ...ref, name: "b" }, body(ref.plural, "b", "app:v2"), { fieldManager: "canaryapp" });
        await api.delete({ ...ref, name: "c" });
        await waitFor(
          `${ref.plural}: 5 events both ways`,
          () => Promise.resolve(lines.length >= 5 && events.length >= 5 ? true : undefined),
          {
            timeoutMs: 10_000,
          },
        );
        assert.deepEqual(
          lines.map((l) => (JSON.parse(l) as { type: string }).type),
          ["ADDED", "ADDED", "ADDED", "MODIFIED", "DELETED"],
        );
        // Every line carries managedFields, and its layout proves where: none is parsed.
        for (const line of lines) {
          assert.ok(line.includes('"managedFields":['), line);
          assert.ok(watchEventManagedFields(Buffer.from(line)) !== undefined, line);
        }
        const expected = lines.map((line) => {
          const event = JSON.parse(line) as { type: string; object: { metadata: { managedFields?: unknown } } };
          delete event.object.metadata.managedFields;
          return [event.type, event.object];
        });
        assert.deepEqual(events, expected);
      }
    } finally {
      for (const handle of handles) handle.abort();
      await api.close();
    }
  });

  test("a watch the server refuses reports its status", async () => {
    const kc = loadKubeConfig(testKubeConfigPath());
    const ended = await new Promise<unknown>((resolve) => {
      void new StreamWatch(kc).watch("/apis/no.such.group/v1/things", {}, () => undefined, resolve);
    });
    assert.equal(statusCodeOf(ended), 404);
    await kc.close();
  });
});

describe("a process that starts before the API server is ready", () => {
  let stopControlPlane: (() => Promise<void>) | undefined;
  after(async () => stopControlPlane?.());

  // The 429 "storage is (re)initializing" answers of a starting server are covered in src/kube/client.test.ts;
  // a real server's window for them is too short to hit reliably.
  test("its informers ride out a server that is not there yet, then sync", async () => {
    const errors = new Map<string, number>();
    const log = pino(
      { level: "warn" },
      {
        write: (line: string) => {
          const entry = JSON.parse(line) as { err?: { message?: string } };
          const message = entry.err?.message ?? "";
          const kind = /\b429\b|initializ/i.test(message)
            ? "429 storage initializing"
            : /ECONNREFUSED|fetch failed/.test(message)
              ? "connection refused"
              : (/HTTP (\d+)/.exec(message)?.[0] ?? message.slice(0, 60));
          errors.set(kind, (errors.get(kind) ?? 0) + 1);
        },
      },
    );
    // The control plane writes its kubeconfig before etcd and the API server are up: clients start on it at once.
    const workDir = await mkdtemp(join(tmpdir(), "canaryapp-early-"));
    const kubeconfigPath = join(workDir, "kubeconfig");
    const cp = startControlPlane({ profile: "api", handleSignals: false, workDir });
    cp.then(
      (c) => (stopControlPlane = () => c.stop()),
      () => undefined,
    );
    await waitFor(
      "the new control plane's kubeconfig",
      async () => (await stat(kubeconfigPath).catch(() => undefined)) && true,
      {
        timeoutMs: 60_000,
        intervalMs: 20,
      },
    );
    const kc = loadKubeConfig(kubeconfigPath);
    const clients = createClients(kc);
    const informer = configMapInformer(clients, "default", log, { initialMs: 20, maxMs: 50 });
    const started = Date.now();
    informer.start();
    try {
      const ready = await cp;
      await waitFor(
        "informer synced after the API server became ready",
        () => Promise.resolve(informer.hasSynced() || undefined),
        {
          timeoutMs: 30_000,
        },
      );
      await createConfigMap(clients, "default", "after-start");
      await seen(informer, "default", "after-start");
      const summary = [...errors].map(([k, n]) => `${k} ×${n}`).join(", ");
      console.log(
        `# informer started ${ready.startupMs} ms before the control plane was ready; synced ${Date.now() - started} ms after start; errors on the way: ${summary || "none"}`,
      );
    } finally {
      await informer.stop();
      await kc.close();
    }
  });
});
