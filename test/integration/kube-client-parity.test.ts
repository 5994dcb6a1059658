/**
 * The controller's client (KubeRest) against a real API server, as kubectl (client-go) would behave.
 *
 * Proxies: it reaches the API server through the proxy kubectl would use: HTTPS_PROXY unless NO_PROXY names the
 * server (never for loopback), and the cluster's proxy-url before either. The server is named
 * `kubernetes.default.svc`, which is in its certificate but which only the test's CONNECT proxy can resolve: a
 * request that does not go through the proxy fails to resolve it, and one that does is verified against the
 * kubeconfig's CA inside the tunnel.
 *
 * Exec plugins: a ServiceAccount token that the API server stops accepting (the Secret it is bound to is
 * deleted) is renewed by running the plugin again, once, and the request refused is sent again with it.
 */
import assert from "node:assert/strict";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { CoreV1Api, RbacAuthorizationV1Api } from "@kubernetes/client-node";
import { load } from "js-yaml";
import { pino } from "pino";
import { waitFor } from "../../e2e/cluster/wait.js";
import { ListWatchInformer } from "../../src/controller/list-watch-informer.js";
import type { ObjectWithMeta } from "../../src/controller/informer.js";
import { KubeApiError } from "../../src/kube/errors.js";
import { KubeRest, type RequestVerb } from "../../src/kube/rest.js";
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

/**
 * An exec plugin that counts its runs (one byte appended to `runs` in its folder per run) and prints the token in
 * the file `token-<run>` of its folder.
 */
const TOKEN_PLUGIN = `#!${process.execPath}
import { appendFileSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
const dir = dirname(process.argv[1]);
appendFileSync(join(dir, "runs"), "x");
const run = readFileSync(join(dir, "runs"), "utf8").length;
const token = readFileSync(join(dir, "token-" + run), "utf8");
const status = { token };
console.log(JSON.stringify({ apiVersion: "client.authentication.k8s.io/v1", kind: "ExecCredential", status }));
`;

describe("the controller's client and exec plugins, as kubectl", () => {
  const dir = mkdtempSync(join(tmpdir(), "kube-client-exec-"));
  const core = testKubeConfig().makeApiClient(CoreV1Api);
  const ACCOUNT = "exec-plugin-user";
  let namespace = "";
  let CONFIGMAPS = { group: "", version: "v1", plural: "configmaps", namespace } as const;

  before(async () => {
    const kc = testKubeConfig();
    namespace = await createTestNamespace(kc, "exec");
    CONFIGMAPS = { ...CONFIGMAPS, namespace };
    await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: ACCOUNT } } });
    // A Role of its own: the aggregated ClusterRoles (edit, view) are empty without kube-controller-manager.
    const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
    await rbac.createNamespacedRole({
      namespace,
      body: {
        metadata: { name: ACCOUNT },
        rules: [{ apiGroups: [""], resources: ["configmaps"], verbs: ["get", "list", "watch", "create"] }],
      },
    });
    await rbac.createNamespacedRoleBinding({
      namespace,
      body: {
        metadata: { name: ACCOUNT },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: ACCOUNT },
        subjects: [{ kind: "ServiceAccount", name: ACCOUNT, namespace }],
      },
    });
  });

  /** A token of the ServiceAccount that the API server accepts until the Secret `secret` is deleted. */
  async function boundToken(secret: string): Promise<string> {
    await core.createNamespacedSecret({ namespace, body: { metadata: { name: secret } } });
    const request = await core.createNamespacedServiceAccountToken({
      name: ACCOUNT,
      namespace,
      body: {
        spec: {
          audiences: [],
          expirationSeconds: 3600,
          boundObjectRef: { kind: "Secret", apiVersion: "v1", name: secret },
        },
      },
    });
    return request.status?.token ?? assert.fail("no token issued");
  }

  /** Deletes the Secret `secret` and waits until the API server refuses `token` (it caches good tokens ~10 s). */
  async function revoke(secret: string, token: string): Promise<void> {
    await core.deleteNamespacedSecret({ name: secret, namespace });
    const probe = KubeRest.connect(kubeconfig(`probe-${secret}`, { token }));
    try {
      await waitFor(
        `token bound to ${secret} refused`,
        () =>
          probe.list(CONFIGMAPS).then(
            () => undefined,
            (err: unknown) => (err instanceof KubeApiError && err.code === 401) || undefined,
          ),
        { timeoutMs: 30_000, intervalMs: 250 },
      );
    } finally {
      await probe.close();
    }
  }

  /** The test cluster's kubeconfig with `user` as its user, written to `file` in the test's folder. */
  function kubeconfig(file: string, user: Record<string, unknown>): string {
    const doc = load(readFileSync(testKubeConfigPath(), "utf8")) as { users: { user: unknown }[] };
    for (const entry of doc.users) entry.user = user;
    const path = join(dir, file);
    writeFileSync(path, JSON.stringify(doc), { mode: 0o600 });
    return path;
  }

  /** A folder with the plugin and the tokens it prints, run after run; the kubeconfig that runs it. */
  function plugin(name: string, tokens: string[]) {
    const folder = join(dir, name);
    mkdirSync(folder);
    const command = join(folder, "plugin.mjs");
    writeFileSync(command, TOKEN_PLUGIN);
    chmodSync(command, 0o755);
    tokens.forEach((token, i) => writeFileSync(join(folder, `token-${i + 1}`), token));
    return {
      kubeconfig: kubeconfig(`${name}-kubeconfig`, {
        exec: { apiVersion: "client.authentication.k8s.io/v1", command, interactiveMode: "Never" },
      }),
      runs: () => (existsSync(join(folder, "runs")) ? readFileSync(join(folder, "runs"), "utf8").length : 0),
    };
  }

  test("a revoked token: the next request gets 401, the plugin runs again once, the request succeeds", async () => {
    const first = await boundToken("first-token");
    const exec = plugin("request", [first, await boundToken("second-token")]);
    const sent: RequestVerb[] = [];
    const api = KubeRest.connect(exec.kubeconfig, undefined, { onRequest: (verb) => sent.push(verb) });
    try {
      await api.list(CONFIGMAPS);
      assert.equal(exec.runs(), 1);

      await revoke("first-token", first);
      sent.length = 0;
      await api.create(CONFIGMAPS, { metadata: { name: "after-revocation" }, data: { a: "1" } });
      assert.equal(exec.runs(), 2, "the plugin ran again exactly once");
      assert.deepEqual(sent, ["post", "post"], "refused once (401), then sent again with the new token");

      sent.length = 0;
      const names = (await api.list<{ metadata: { name: string } }>(CONFIGMAPS)).items.map((c) => c.metadata.name);
      assert.ok(names.includes("after-revocation"));
      assert.deepEqual(sent, ["get"]);
      assert.equal(exec.runs(), 2, "the new token is kept");
    } finally {
      await api.close();
    }
  });

  test("a watch refused with 401 is reopened by the informer with the renewed token", async () => {
    const first = await boundToken("watch-first-token");
    const exec = plugin("watch", [first, await boundToken("watch-second-token")]);
    const api = KubeRest.connect(exec.kubeconfig);
    const logged: string[] = [];
    const log = pino(
      { level: "info" },
      {
        write: (line: string) => {
          const entry = JSON.parse(line) as { msg?: string; err?: { message?: string } };
          logged.push(`${entry.msg ?? ""}: ${entry.err?.message ?? ""}`);
        },
      },
    );
    const informer = new ListWatchInformer<ObjectWithMeta>({
      resource: "configmaps",
      path: `/api/v1/namespaces/${namespace}/configmaps`,
      list: (_narrower, each) => api.listEach<ObjectWithMeta>(CONFIGMAPS, {}, each),
      watcher: api,
      log,
      backoff: { initialMs: 100, maxMs: 1000 },
      // The server ends each watch after a second, so that one is opened again while the token is refused.
      watchTimeoutSeconds: () => 1,
    });
    try {
      informer.start();
      await waitFor("synced", () => Promise.resolve(informer.hasSynced() || undefined), { timeoutMs: 15_000 });
      assert.equal(exec.runs(), 1);
      await revoke("watch-first-token", first);
      // A watch opened before the revocation may still be open: make the ConfigMap once one has been refused.
      await waitFor(
        "a watch refused",
        () => Promise.resolve(logged.some((f) => f.startsWith("watch failed; restarting")) || undefined),
        { timeoutMs: 15_000 },
      );
      await core.createNamespacedConfigMap({ namespace, body: { metadata: { name: "watched-after-revocation" } } });
      await waitFor(
        "the ConfigMap made after the revocation in the cache",
        () => Promise.resolve(informer.get(namespace, "watched-after-revocation")),
        { timeoutMs: 20_000 },
      );
      assert.equal(exec.runs(), 2, "the plugin ran again exactly once");
      assert.ok(
        logged.some((f) => f.startsWith("watch failed; restarting") && /401|Unauthorized/.test(f)),
        `the informer's watch was refused and restarted: ${logged.join(" | ")}`,
      );
    } finally {
      await informer.stop();
      await api.close();
    }
  });
});
