import assert from "node:assert/strict";
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { describe, test } from "node:test";
import {
  clientNodeEndpoint,
  isFallback,
  readKubeConfig,
  TOKEN_FILE_REREAD_MS,
  type ApiEndpoint,
  type Fallback,
} from "./kubeconfig.js";

const dir = mkdtempSync(join(tmpdir(), "kubeconfig-read-"));
const b64 = (text: string) => Buffer.from(text).toString("base64");

/** Writes a kubeconfig (JSON is YAML) with one cluster, one user and one context named `name`. */
function kubeconfig(
  file: string,
  name: string,
  cluster: Record<string, unknown>,
  user: Record<string, unknown> | undefined,
): string {
  const path = join(dir, file);
  const doc = {
    apiVersion: "v1",
    kind: "Config",
    "current-context": name,
    clusters: [{ name, cluster }],
    users: user === undefined ? [] : [{ name, user }],
    contexts: [{ name, context: user === undefined ? { cluster: name } : { cluster: name, user: name } }],
  };
  writeFileSync(path, JSON.stringify(doc));
  return path;
}

function endpoint(read: ApiEndpoint | Fallback): ApiEndpoint {
  assert.ok(!isFallback(read), `read by client-node: ${isFallback(read) ? read.reason : ""}`);
  return read;
}

describe("readKubeConfig: the forms read without client-node", () => {
  test("a bearer token, a CA from inline data, the server without a trailing slash", async () => {
    const path = kubeconfig(
      "token",
      "t",
      { server: "https://k.example:6443/", "certificate-authority-data": b64("CA") },
      { token: "abc" },
    );
    const ep = endpoint(readKubeConfig(path, { env: {} }));
    assert.equal(ep.server, "https://k.example:6443");
    assert.equal(ep.tls.ca?.toString(), "CA");
    assert.equal(ep.tls.rejectUnauthorized, true);
    assert.deepEqual(await ep.authenticate(), { authorization: "Bearer abc" });
    assert.equal(ep.source, "kubeconfig");
  });

  test("a token file, relative to the kubeconfig, read again once a minute has passed", async () => {
    mkdirSync(join(dir, "tokens"), { recursive: true });
    writeFileSync(join(dir, "tokens", "t"), "first\n");
    const path = kubeconfig("tokenfile", "tf", { server: "https://k.example" }, { tokenFile: "tokens/t" });
    let now = 1_000_000;
    const ep = endpoint(readKubeConfig(path, { env: {}, now: () => now }));
    assert.deepEqual(await ep.authenticate(), { authorization: "Bearer first" });
    writeFileSync(join(dir, "tokens", "t"), "second\n");
    now += TOKEN_FILE_REREAD_MS - 1;
    assert.deepEqual(await ep.authenticate(), { authorization: "Bearer first" }, "not yet read again");
    now += 1;
    assert.deepEqual(await ep.authenticate(), { authorization: "Bearer second" }, "a rotated token is picked up");
  });

  test("a client certificate and key, inline or as files; insecure-skip-tls-verify; tls-server-name", async () => {
    writeFileSync(join(dir, "client.crt"), "CERT");
    writeFileSync(join(dir, "client.key"), "KEY");
    writeFileSync(join(dir, "ca.crt"), "CA-FILE");
    const files = endpoint(
      readKubeConfig(
        kubeconfig(
          "cert-files",
          "cf",
          { server: "https://k.example", "certificate-authority": "ca.crt", "tls-server-name": "api.internal" },
          { "client-certificate": join(dir, "client.crt"), "client-key": "client.key" },
        ),
        { env: {} },
      ),
    );
    assert.equal(files.tls.cert?.toString(), "CERT");
    assert.equal(files.tls.key?.toString(), "KEY");
    assert.equal(files.tls.ca?.toString(), "CA-FILE");
    assert.equal(files.tls.servername, "api.internal");
    assert.deepEqual(await files.authenticate(), {}, "no header: the certificate authenticates");
    const inline = endpoint(
      readKubeConfig(
        kubeconfig(
          "cert-data",
          "cd",
          { server: "https://k.example", "insecure-skip-tls-verify": true },
          { "client-certificate-data": b64("CERT2"), "client-key-data": b64("KEY2") },
        ),
        { env: {} },
      ),
    );
    assert.equal(inline.tls.cert?.toString(), "CERT2");
    assert.equal(inline.tls.key?.toString(), "KEY2");
    assert.equal(inline.tls.rejectUnauthorized, false);
  });

  test("a context without a user: plain requests", async () => {
    const ep = endpoint(readKubeConfig(kubeconfig("anon", "a", { server: "http://127.0.0.1:8080" }, undefined), {}));
    assert.deepEqual(await ep.authenticate(), {});
  });

  test("in a pod: the service account's token and CA, the service host (IPv6 in brackets)", async () => {
    const sa = mkdtempSync(join(tmpdir(), "sa-"));
    writeFileSync(join(sa, "token"), "pod-token");
    writeFileSync(join(sa, "ca.crt"), "POD-CA");
    const env = { KUBERNETES_SERVICE_HOST: "fd00::1", KUBERNETES_SERVICE_PORT: "443" };
    const ep = endpoint(readKubeConfig(undefined, { env, serviceAccountDir: sa }));
    assert.equal(ep.server, "https://[fd00::1]:443");
    assert.equal(ep.tls.ca?.toString(), "POD-CA");
    assert.deepEqual(await ep.authenticate(), { authorization: "Bearer pod-token" });
    assert.equal(ep.source, "in-cluster");
    const v4 = endpoint(
      readKubeConfig(undefined, { env: { KUBERNETES_SERVICE_HOST: "10.0.0.1" }, serviceAccountDir: sa }),
    );
    assert.equal(v4.server, "https://10.0.0.1:443");
  });

  test("the proxy: the cluster's proxy-url, else the environment's (in a pod too), less NO_PROXY", () => {
    const withUrl = kubeconfig("proxy-url", "p", { server: "https://k.example", "proxy-url": "http://px:3128" }, {});
    const env = { HTTPS_PROXY: "http://env-proxy:3128", NO_PROXY: "*" };
    const ep = endpoint(readKubeConfig(withUrl, { env }));
    assert.deepEqual([ep.proxy?.url.href, ep.proxy?.from], ["http://px:3128/", "proxy-url"]);
    const plain = kubeconfig("no-proxy-url", "n", { server: "https://k.example" }, {});
    assert.equal(endpoint(readKubeConfig(plain, { env })).proxy, undefined);
    assert.equal(endpoint(readKubeConfig(plain, { env: { https_proxy: "px:1" } })).proxy?.from, "https_proxy");
    const bad = kubeconfig("bad-proxy-url", "b", { server: "https://k.example", "proxy-url": "ftp://px" }, {});
    assert.throws(() => readKubeConfig(bad, { env: {} }), /cluster "b": proxy-url .*must be http, https, or socks5/);

    const sa = mkdtempSync(join(tmpdir(), "sa-"));
    writeFileSync(join(sa, "token"), "t");
    writeFileSync(join(sa, "ca.crt"), "CA");
    const pod = { KUBERNETES_SERVICE_HOST: "10.96.0.1", HTTPS_PROXY: "http://px:3128" };
    assert.equal(endpoint(readKubeConfig(undefined, { env: pod, serviceAccountDir: sa })).proxy?.from, "HTTPS_PROXY");
    const excluded = { ...pod, NO_PROXY: "10.96.0.0/12" };
    assert.equal(endpoint(readKubeConfig(undefined, { env: excluded, serviceAccountDir: sa })).proxy, undefined);
  });

  test("order: a path, then $KUBECONFIG (merged, first wins), then in-cluster, then ~/.kube/config", () => {
    const a = kubeconfig("a", "a", { server: "https://a.example" }, { token: "a" });
    const b = kubeconfig("b", "b", { server: "https://b.example" }, { token: "b" });
    assert.equal(endpoint(readKubeConfig(a, { env: { KUBECONFIG: b } })).server, "https://a.example");
    assert.equal(
      endpoint(readKubeConfig(undefined, { env: { KUBECONFIG: `${b}${delimiter}${a}` } })).server,
      "https://b.example",
    );
    const home = mkdtempSync(join(tmpdir(), "home-"));
    mkdirSync(join(home, ".kube"));
    writeFileSync(
      join(home, ".kube", "config"),
      [
        "apiVersion: v1",
        "current-context: h",
        "clusters: [{ name: h, cluster: { server: 'https://home.example' } }]",
        "users: [{ name: h, user: { token: h } }]",
        "contexts: [{ name: h, context: { cluster: h, user: h } }]",
      ].join("\n"),
    );
    assert.equal(endpoint(readKubeConfig(undefined, { env: {}, home })).server, "https://home.example");
    // A pod ignores a stray ~/.kube/config from its image.
    const sa = mkdtempSync(join(tmpdir(), "sa-"));
    writeFileSync(join(sa, "token"), "t");
    writeFileSync(join(sa, "ca.crt"), "c");
    const inPod = readKubeConfig(undefined, {
      env: { KUBERNETES_SERVICE_HOST: "10.0.0.1" },
      home,
      serviceAccountDir: sa,
    });
    assert.equal(endpoint(inPod).source, "in-cluster");
  });

  test("a merged $KUBECONFIG takes the context from the first file and a cluster from a later one", () => {
    const contextOnly = join(dir, "context-only");
    writeFileSync(
      contextOnly,
      JSON.stringify({ "current-context": "b", contexts: [{ name: "b", context: { cluster: "b", user: "b" } }] }),
    );
    const b = kubeconfig("b2", "b", { server: "https://b2.example" }, { token: "b" });
    const ep = endpoint(readKubeConfig(undefined, { env: { KUBECONFIG: `${contextOnly}${delimiter}${b}` } }));
    assert.equal(ep.server, "https://b2.example");
  });

  test("errors say what is missing", () => {
    const home = mkdtempSync(join(tmpdir(), "home-"));
    assert.throws(() => readKubeConfig(undefined, { env: {}, home }), /no kubeconfig: .*\.kube\/config is missing/);
    const noCluster = join(dir, "no-cluster");
    writeFileSync(noCluster, JSON.stringify({ "current-context": "x", contexts: [{ name: "x", context: {} }] }));
    assert.throws(() => readKubeConfig(noCluster, {}), /current context "x" names no cluster/);
    const noContext = join(dir, "no-context");
    writeFileSync(noContext, JSON.stringify({ clusters: [] }));
    assert.throws(() => readKubeConfig(noContext, {}), /no current-context/);
    const half = kubeconfig("half", "h", { server: "https://k.example" }, { "client-certificate-data": b64("C") });
    assert.throws(() => readKubeConfig(half, {}), /client certificate or key but not both/);
    const bad = join(dir, "bad");
    writeFileSync(bad, "clusters: [unclosed");
    assert.throws(() => readKubeConfig(bad, {}), /kubeconfig .*bad:/);
  });

  test("a user's exec plugin is read here: its token is used; the cluster's proxy-url", async () => {
    const plugin = join(dir, "plugin.sh");
    writeFileSync(
      plugin,
      `#!/bin/sh\necho '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"from-exec"}}'\n`,
    );
    chmodSync(plugin, 0o755);
    const read = readKubeConfig(
      kubeconfig(
        "exec",
        "e",
        { server: "https://k.example", "certificate-authority-data": b64("CA"), "proxy-url": "socks5://px:1080" },
        { exec: { command: plugin, apiVersion: "client.authentication.k8s.io/v1", interactiveMode: "Never" } },
      ),
      { env: { HTTPS_PROXY: "http://env-proxy:3128" } },
    );
    const ep = endpoint(read);
    assert.equal(ep.source, "kubeconfig");
    assert.equal(ep.server, "https://k.example");
    assert.deepEqual([ep.proxy?.url.href, ep.proxy?.from], ["socks5://px:1080", "proxy-url"], "its proxy-url");
    assert.equal(ep.tls.ca?.toString(), "CA");
    assert.deepEqual(await ep.authenticate(), { authorization: "Bearer from-exec" });
  });
});

describe("readKubeConfig: other forms go to client-node", () => {
  test("an auth provider and basic auth are handed over with the reason", () => {
    for (const [user, reason] of [
      [{ "auth-provider": { name: "oidc" } }, "user.auth-provider"],
      [{ username: "u", password: "p" }, "user.username"],
    ] as const) {
      const read = readKubeConfig(kubeconfig(`fb-${reason}`, "f", { server: "https://k.example" }, user), {});
      assert.ok(isFallback(read));
      assert.equal(read.reason, reason);
    }
  });

  test("basic auth, through client-node's public KubeConfig; the cluster's proxy-url", async () => {
    const read = readKubeConfig(
      kubeconfig(
        "basic",
        "b",
        { server: "https://k.example", "certificate-authority-data": b64("CA"), "proxy-url": "socks5://px:1080" },
        { username: "canary", password: "s3cret" },
      ),
      {},
    );
    assert.ok(isFallback(read));
    const ep = await clientNodeEndpoint(read, { HTTPS_PROXY: "http://env-proxy:3128" });
    assert.equal(ep.source, "client-node");
    assert.equal(ep.server, "https://k.example");
    assert.deepEqual([ep.proxy?.url.href, ep.proxy?.from], ["socks5://px:1080", "proxy-url"], "its proxy-url");
    assert.equal(ep.tls.ca?.toString(), "CA");
    assert.deepEqual(await ep.authenticate(), { authorization: `Basic ${b64("canary:s3cret")}` });
  });
});
