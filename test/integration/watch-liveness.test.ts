/**
 * A watch whose connection stops carrying bytes without closing (a load balancer that failed over: the old
 * connection is a black hole, new ones reach a live API server) is noticed within a minute and resumed on a new
 * connection, because the controller's client pings its HTTP/2 connections as client-go does (ADR 0017). And a
 * quiet watch makes no API request while it is pinged: a PING frame is not a request.
 */
import assert from "node:assert/strict";
import { request } from "node:https";
import { after, before, describe, test } from "node:test";
import type { V1ConfigMap } from "@kubernetes/client-node";
import pino from "pino";
import { waitFor } from "../../e2e/cluster/wait.js";
import { createInformer } from "../../src/controller/create-informer.js";
import type { Informer, ObjectWithMeta } from "../../src/controller/informer.js";
import { isFallback, readKubeConfig, type ApiEndpoint } from "../../src/kube/kubeconfig.js";
import { KubeRest, type KubeRestOptions, type RequestVerb } from "../../src/kube/rest.js";
import { createTestNamespace, testKubeConfig, testKubeConfigPath } from "../support/kube.js";
import { startTcpProxy, type TcpProxy } from "../support/tcp-proxy.js";

type ConfigMap = V1ConfigMap & ObjectWithMeta;

const silent = pino({ level: "silent" });
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** The API server's own count of the requests it served for `resource`, by verb (apiserver_request_total). */
async function servedRequests(endpoint: ApiEndpoint, resource: string): Promise<Record<string, number>> {
  const text = await new Promise<string>((resolve, reject) => {
    const { ca, cert, key } = endpoint.tls;
    const req = request(new URL("/metrics", endpoint.server), { ca, cert, key }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end();
  });
  const counts: Record<string, number> = {};
  for (const line of text.split("\n")) {
    if (!line.startsWith("apiserver_request_total{") || !line.includes(`resource="${resource}"`)) continue;
    const verb = /verb="([A-Z]+)"/.exec(line)?.[1] ?? "?";
    counts[verb] = (counts[verb] ?? 0) + Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return counts;
}

describe("a watch over a connection that stops forwarding", () => {
  const kubeconfig = readKubeConfig(testKubeConfigPath());
  if (isFallback(kubeconfig)) throw new Error("the test kubeconfig (client certificate) is read without client-node");
  const read: ApiEndpoint = kubeconfig;
  const direct = new KubeRest(read);
  let namespace = "";
  let proxy: TcpProxy;
  const clients: KubeRest[] = [];

  before(async () => {
    namespace = await createTestNamespace(testKubeConfig(), "liveness");
    proxy = await startTcpProxy(new URL(read.server).host);
  });
  after(async () => {
    for (const api of [direct, ...clients]) await api.close();
    await proxy.stop();
  });

  /** A client of the API server that reaches it through the proxy, as through a load balancer. */
  function throughProxy(options: KubeRestOptions = {}): KubeRest {
    const api = new KubeRest({ ...read, server: proxy.url.replace("http://", "https://") }, options);
    clients.push(api);
    return api;
  }

  function configMaps(api: KubeRest): Informer<ConfigMap> {
    const ref = { group: "", version: "v1", plural: "configmaps", namespace } as const;
    return createInformer<ConfigMap>({
      type: { group: "", version: "v1", plural: "configmaps" },
      namespaces: [namespace],
      list: ({ each }) => api.listEach<ConfigMap>(ref, {}, each),
      watcher: api,
      log: silent,
    });
  }

  test("is noticed within 60 s and resumed on a new connection: an object created afterwards is seen", async () => {
    // One client with short timings, one with client-go's (a PING after 30 s without a frame, 15 s for its answer).
    const informers = {
      short: configMaps(throughProxy({ http2: { readIdleTimeoutMs: 1_000, pingTimeoutMs: 1_000 } })),
      defaults: configMaps(throughProxy()),
    };
    const CONFIGMAPS = { group: "", version: "v1", plural: "configmaps", namespace } as const;
    try {
      for (const informer of Object.values(informers)) informer.start();
      await direct.create(CONFIGMAPS, { metadata: { name: "before" } });
      for (const [name, informer] of Object.entries(informers)) {
        await waitFor(`${name}: "before" seen`, () => Promise.resolve(informer.get(namespace, "before")), {
          timeoutMs: 15_000,
        });
      }
      const connections = proxy.connections();
      proxy.blackHole();
      const cut = Date.now();
      await direct.create(CONFIGMAPS, { metadata: { name: "after" } });
      const seenAfter = async (name: string, informer: Informer<ConfigMap>): Promise<number> => {
        await waitFor(`${name}: "after" seen`, () => Promise.resolve(informer.get(namespace, "after")), {
          timeoutMs: 60_000,
        });
        return Date.now() - cut;
      };
      const [short, defaults] = await Promise.all([
        seenAfter("short timings", informers.short),
        seenAfter("client-go's timings", informers.defaults),
      ]);
      console.log(`# "after" seen ${short} ms after the black hole (1 s + 1 s), ${defaults} ms (30 s + 15 s)`);
      assert.ok(short < 10_000, `short timings: ${short} ms`);
      assert.ok(defaults < 60_000, `client-go's timings: ${defaults} ms`);
      assert.ok(proxy.connections() >= connections + 2, "each resumed on a new connection");
    } finally {
      await Promise.all(Object.values(informers).map((i) => i.stop()));
    }
  });

  test("a quiet watch makes no API request: the API server serves none while its connection is pinged", async () => {
    const sent: RequestVerb[] = [];
    const api = throughProxy({
      http2: { readIdleTimeoutMs: 500, pingTimeoutMs: 5_000 },
      onRequest: (v) => sent.push(v),
    });
    const events: string[] = [];
    let ended: unknown = "open";
    // PodTemplates: nothing else in the api profile reads them, so the API server's count is this test's.
    const path = `/api/v1/namespaces/${namespace}/podtemplates`;
    const watch = await api.watch(
      path,
      { timeoutSeconds: 600 },
      (type, object) => events.push(`${type} ${(object as ObjectWithMeta).metadata?.name}`),
      (err) => (ended = err),
    );
    try {
      await sleep(1_000);
      const [served, bytes, connections] = [
        await servedRequests(read, "podtemplates"),
        proxy.bytesForwarded(),
        proxy.connections(),
      ];
      await sleep(5_000);
      const quiet = await servedRequests(read, "podtemplates");
      const pinged = proxy.bytesForwarded() - bytes;
      console.log(
        `# 5 s of a quiet watch: ${pinged} bytes through the proxy, served ${JSON.stringify(served)} → ${JSON.stringify(quiet)}`,
      );
      assert.deepEqual(quiet, served, "no request served");
      assert.deepEqual(sent, ["watch"], "none sent but the watch");
      assert.ok(pinged > 0, "the connection was pinged");
      assert.equal(proxy.connections(), connections, "on the same connection");

      // The watch is alive: an object created now arrives on it; once it ends, the server counts it.
      await direct.create(
        { group: "", version: "v1", plural: "podtemplates", namespace },
        {
          metadata: { name: "quiet" },
          template: { spec: { containers: [{ name: "c", image: "busybox" }] } },
        },
      );
      await waitFor("the watch event", () => Promise.resolve(events.includes("ADDED quiet") || undefined), {
        timeoutMs: 10_000,
      });
      assert.equal(ended, "open");
      watch.abort();
      const counted = await waitFor(
        "the watch counted once it ended",
        async () => {
          const now = await servedRequests(read, "podtemplates");
          return now.WATCH === (served.WATCH ?? 0) + 1 ? now : undefined;
        },
        { timeoutMs: 10_000 },
      );
      console.log(`# served once the watch ended: ${JSON.stringify(counted)}`);
    } finally {
      watch.abort();
    }
  });
});
