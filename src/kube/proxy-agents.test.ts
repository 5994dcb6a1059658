/**
 * The proxy forms the integration test (test/integration/kube-client-parity.test.ts) does not reach with a
 * real API server: a SOCKS5 proxy-url, and an http server through HTTP_PROXY. The servers are named
 * `api.canaryapp.test`, which only the proxies resolve.
 */
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer as createHttpServer, type RequestListener } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo, Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { startConnectProxy, type ConnectProxy } from "../../test/support/connect-proxy.js";
import { startSocks5Proxy, type Socks5Proxy } from "../../test/support/socks5-proxy.js";
import { KubeRest } from "./rest.js";
import { createTestCa, type TestCa } from "./test-pki.test-helpers.js";

const NAME = "api.canaryapp.test";
const NAMESPACES = { group: "", version: "v1", plural: "namespaces" } as const;
const answer: RequestListener = (_req, res) => {
  res.writeHead(200, { "content-type": "application/json" }).end('{"items":[{"metadata":{"name":"default"}}]}');
};

describe("KubeRest through a SOCKS5 proxy-url and an HTTP_PROXY", () => {
  const dir = mkdtempSync(join(tmpdir(), "proxy-agents-"));
  let ca: TestCa;
  let other: TestCa;
  let https: Server;
  let http: Server;
  let socks: Socks5Proxy;
  let proxy: ConnectProxy;

  before(async () => {
    ca = createTestCa(dir, "server-ca");
    other = createTestCa(dir, "other-ca");
    https = createHttpsServer(ca.server("api", [NAME]), answer);
    http = createHttpServer(answer);
    for (const server of [https, http]) await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    socks = await startSocks5Proxy({ [NAME]: "127.0.0.1" });
    proxy = await startConnectProxy({ [NAME]: "127.0.0.1" });
  });
  after(async () => {
    for (const server of [https, http]) server.close();
    await socks.stop();
    await proxy.stop();
  });

  const port = (server: Server): number => (server.address() as AddressInfo).port;

  function kubeconfig(file: string, cluster: Record<string, unknown>): string {
    const path = join(dir, file);
    writeFileSync(
      path,
      JSON.stringify({
        "current-context": "c",
        clusters: [{ name: "c", cluster }],
        users: [{ name: "u", user: { token: "t" } }],
        contexts: [{ name: "c", context: { cluster: "c", user: "u" } }],
      }),
    );
    return path;
  }

  test("socks5 proxy-url: the name is resolved by the proxy (as Go's SOCKS5 dialer), TLS verified inside", async () => {
    const server = `https://${NAME}:${port(https)}`;
    const cluster = { server, "proxy-url": socks.url, "certificate-authority-data": ca.cert.toString("base64") };
    const api = KubeRest.connect(kubeconfig("socks", cluster), { env: { HTTPS_PROXY: proxy.url } });
    try {
      for (let i = 0; i < 5; i++) assert.equal((await api.list(NAMESPACES)).items.length, 1);
    } finally {
      await api.close();
    }
    assert.deepEqual(socks.destinations, [`${NAME}:${port(https)}`], "one kept-alive connection");
    assert.deepEqual(proxy.tunnels, [], "proxy-url wins over HTTPS_PROXY");

    const wrongCa = { ...cluster, "certificate-authority-data": other.cert.toString("base64") };
    const refused = KubeRest.connect(kubeconfig("socks-other-ca", wrongCa), { env: {} });
    await assert.rejects(refused.list(NAMESPACES), /unable to verify/i, "the server's certificate, not the proxy's");
    await refused.close();
  });

  test("an http server through HTTP_PROXY: requests forwarded by absolute URL, not tunnelled", async () => {
    const server = `http://${NAME}:${port(http)}`;
    const api = KubeRest.connect(kubeconfig("http", { server }), { env: { HTTP_PROXY: proxy.url } });
    try {
      for (let i = 0; i < 3; i++) assert.equal((await api.list(NAMESPACES)).items.length, 1);
    } finally {
      await api.close();
    }
    assert.deepEqual(proxy.forwarded, Array(3).fill(`${NAME}:${port(http)}`));
    assert.deepEqual(proxy.tunnels, []);
  });
});
