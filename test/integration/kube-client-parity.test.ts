/**
 * The controller's client (KubeRest) reaches the API server through the proxy kubectl would use: HTTPS_PROXY
 * unless NO_PROXY names the server (never for loopback), and the cluster's proxy-url before either. The server
 * is named `kubernetes.default.svc`, which is in its certificate but which only the test's CONNECT proxy can
 * resolve: a request that does not go through the proxy fails to resolve it, and one that does is verified
 * against the kubeconfig's CA inside the tunnel.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { load } from "js-yaml";
import { waitFor } from "../../e2e/cluster/wait.js";
import { KubeRest } from "../../src/kube/rest.js";
import { createTestNamespace, testKubeConfig, testKubeConfigPath } from "../support/kube.js";
import { startConnectProxy, type ConnectProxy } from "../support/connect-proxy.js";

const NAME = "kubernetes.default.svc";
const NAMESPACES = { group: "", version: "v1", plural: "namespaces" } as const;

type Kubeconfig = { clusters: { cluster: Record<string, unknown> }[] };

describe("the controller's client and proxies, as kubectl", () => {
  const dir = mkdtempSync(join(tmpdir(), "kube-client-parity-"));
  let port = "";
  let proxy: ConnectProxy;
  let other: ConnectProxy;
  let namespace = "";

  before(async () => {
    const doc = load(readFileSync(testKubeConfigPath(), "utf8")) as Kubeconfig;
    port = new URL(String(doc.clusters[0]?.cluster.server)).port;
    proxy = await startConnectProxy({ [NAME]: "127.0.0.1" });
    other = await startConnectProxy({ [NAME]: "127.0.0.1" });
    namespace = await createTestNamespace(testKubeConfig(), "parity");
  });
  after(async () => {
    await proxy.stop();
    await other.stop();
  });

  /** The test cluster's kubeconfig with its cluster's `server` host replaced and `fields` added. */
  function kubeconfig(file: string, host: string, fields: Record<string, unknown> = {}): string {
    const doc = load(readFileSync(testKubeConfigPath(), "utf8")) as Kubeconfig;
    for (const { cluster } of doc.clusters) Object.assign(cluster, { server: `https://${host}:${port}` }, fields);
    const path = join(dir, file);
    writeFileSync(path, JSON.stringify(doc), { mode: 0o600 });
    return path;
  }

  async function namespaceNames(api: KubeRest): Promise<string[]> {
    return (await api.list<{ metadata: { name: string } }>(NAMESPACES)).items.map((n) => n.metadata.name);
  }

  test("HTTPS_PROXY: lists and a watch go through its CONNECT tunnels, kept alive", async () => {
    const logged: Record<string, unknown>[] = [];
    const api = KubeRest.connect(
      kubeconfig("env-proxy", NAME),
      { env: { HTTPS_PROXY: `http://canary:s3cret@${new URL(proxy.url).host}` } },
      { log: { info: (fields) => logged.push(fields) } },
    );
    const before = proxy.tunnels.length;
    const CONFIGMAPS = { group: "", version: "v1", plural: "configmaps", namespace } as const;
    const events: string[] = [];
    try {
      assert.ok((await namespaceNames(api)).includes(namespace));
      const watch = await api.watch(
        `/api/v1/namespaces/${namespace}/configmaps`,
        {},
        (type, object) => events.push(`${type} ${(object as { metadata: { name: string } }).metadata.name}`),
        () => undefined,
      );
      for (let i = 0; i < 20; i++) await namespaceNames(api);
      await api.create(CONFIGMAPS, { metadata: { name: "through-the-proxy" } });
      await waitFor("the watch event", () => Promise.resolve(events.includes("ADDED through-the-proxy") || undefined), {
        timeoutMs: 15_000,
      });
      watch.abort();
      const tunnels = proxy.tunnels.slice(before);
      // One tunnel held by the watch, one or two taken in turn by the 22 requests.
      assert.ok(tunnels.length >= 2 && tunnels.length <= 3, `${tunnels.length} tunnels`);
      for (const tunnel of tunnels) {
        assert.equal(tunnel.target, `${NAME}:${port}`);
        assert.equal(tunnel.authorization, `Basic ${Buffer.from("canary:s3cret").toString("base64")}`);
      }
      assert.deepEqual(logged, [
        {
          server: `https://${NAME}:${port}`,
          proxy: proxy.url,
          proxyFrom: "HTTPS_PROXY",
          caRoots: "kubeconfig",
        },
      ]);
    } finally {
      await api.close();
    }
  });

  test("NO_PROXY (or a loopback server) is reached directly", async () => {
    const before = proxy.tunnels.length;
    for (const env of [
      { HTTPS_PROXY: proxy.url, NO_PROXY: "10.0.0.0/8, .svc" },
      { https_proxy: proxy.url, no_proxy: `${NAME}:${port}` },
    ]) {
      const api = KubeRest.connect(kubeconfig("no-proxy", NAME), { env });
      // Direct, the name does not resolve: what only the proxy could have done was not asked of it.
      await assert.rejects(namespaceNames(api), (err: NodeJS.ErrnoException) =>
        ["ENOTFOUND", "EAI_AGAIN"].includes(err.code ?? ""),
      );
      await api.close();
    }
    // Go never sends loopback through HTTPS_PROXY.
    const loopback = KubeRest.connect(kubeconfig("loopback", "127.0.0.1"), { env: { HTTPS_PROXY: proxy.url } });
    assert.ok((await namespaceNames(loopback)).includes("default"));
    await loopback.close();
    assert.equal(proxy.tunnels.length, before, "no tunnel");
  });

  test("the cluster's proxy-url wins over HTTPS_PROXY and NO_PROXY, loopback included", async () => {
    const [beforeOther, beforeEnv] = [other.tunnels.length, proxy.tunnels.length];
    const env = { HTTPS_PROXY: proxy.url, NO_PROXY: "*" };
    for (const host of [NAME, "127.0.0.1"]) {
      const api = KubeRest.connect(kubeconfig(`proxy-url-${host}`, host, { "proxy-url": other.url }), { env });
      try {
        assert.ok((await namespaceNames(api)).includes("default"));
      } finally {
        await api.close();
      }
    }
    assert.deepEqual(
      other.tunnels.slice(beforeOther).map((t) => t.target),
      [`${NAME}:${port}`, `127.0.0.1:${port}`],
    );
    assert.equal(proxy.tunnels.length, beforeEnv);
  });
});
