/**
 * Which CA certificates verify the API server when the kubeconfig names none: the system's, as kubectl's,
 * not Node's bundled Mozilla roots. Each case runs a client in a fresh process whose system store is set
 * by SSL_CERT_FILE and SSL_CERT_DIR (read by Node as by Go and OpenSSL).
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { serverRoots, systemRoots } from "./ca-roots.js";
import { createTestCa, type TestCa } from "./test-pki.test-helpers.js";

const run = promisify(execFile);
const REST = new URL("./rest.js", import.meta.url).href;

/** Lists namespaces with KubeRest in a new process; prints "ok" or the error's message. */
const CLIENT = `
const { KubeRest } = await import(${JSON.stringify(REST)});
const api = KubeRest.connect(process.argv[1], { env: {} });
try {
  await api.list({ group: "", version: "v1", plural: "namespaces" });
  console.log("ok");
} catch (err) {
  console.log(String(err?.message) + " " + String(err?.code ?? ""));
} finally {
  await api.close();
}`;

describe("the roots that verify the API server", () => {
  const dir = mkdtempSync(join(tmpdir(), "ca-roots-"));
  const emptyDir = join(dir, "empty");
  mkdirSync(emptyDir);
  let ca: TestCa;
  let other: TestCa;
  let server: Server;
  let url = "";

  before(async () => {
    ca = createTestCa(dir, "cluster-ca");
    other = createTestCa(dir, "other-ca");
    server = createServer(ca.server("apiserver"), (_req, res) => {
      res.writeHead(200, { "content-type": "application/json" }).end('{"items":[]}');
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
    writeFileSync(join(dir, "empty.pem"), "");
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });

  /** A kubeconfig for the test server with a bearer token, and `cluster` fields added. */
  function kubeconfig(name: string, cluster: Record<string, unknown> = {}): string {
    const path = join(dir, name);
    writeFileSync(
      path,
      JSON.stringify({
        "current-context": "c",
        clusters: [{ name: "c", cluster: { server: url, ...cluster } }],
        users: [{ name: "u", user: { token: "t" } }],
        contexts: [{ name: "c", context: { cluster: "c", user: "u" } }],
      }),
    );
    return path;
  }

  /** Runs the client with the system store set to `certFile` (and an empty folder) and NODE_EXTRA_CA_CERTS. */
  async function listWith(path: string, certFile: string, extra?: string): Promise<string> {
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, SSL_CERT_FILE: certFile, SSL_CERT_DIR: emptyDir };
    if (extra !== undefined) env.NODE_EXTRA_CA_CERTS = extra;
    const { stdout } = await run(process.execPath, ["--input-type=module", "-e", CLIENT, path], {
      env,
      cwd: fileURLToPath(new URL(".", import.meta.url)),
    });
    return stdout.trim();
  }

  test("no CA in the kubeconfig: the system's store verifies the server, Node's bundle is not used", async () => {
    const path = kubeconfig("no-ca");
    assert.equal(await listWith(path, ca.certFile), "ok", "the cluster's CA is in the system store");
    const refused = await listWith(path, other.certFile);
    assert.match(refused, /UNABLE_TO_VERIFY_LEAF_SIGNATURE|unable to verify/i, "the system store lacks it");
  });

  test("NODE_EXTRA_CA_CERTS adds to the system's store, as it does to Node's default roots", async () => {
    assert.equal(await listWith(kubeconfig("extra"), other.certFile, ca.certFile), "ok");
  });

  test("an empty system store is an error that says how to fix it", async () => {
    const message = await listWith(kubeconfig("empty-store"), join(dir, "empty.pem"));
    assert.match(message, /no CA certificates to verify https:\/\/127\.0\.0\.1:\d+ with/);
    assert.match(message, /certificate-authority/);
    assert.match(message, /SSL_CERT_FILE/);
  });

  test("the kubeconfig's CA is the only root when it names one; insecure-skip-tls-verify needs none", async () => {
    const empty = join(dir, "empty.pem");
    const withCa = kubeconfig("with-ca", { "certificate-authority-data": ca.cert.toString("base64") });
    assert.equal(await listWith(withCa, empty), "ok");
    const otherCa = kubeconfig("other-ca", { "certificate-authority-data": other.cert.toString("base64") });
    assert.match(await listWith(otherCa, ca.certFile), /unable to verify|UNABLE_TO_VERIFY/i);
    assert.equal(await listWith(kubeconfig("insecure", { "insecure-skip-tls-verify": true }), empty), "ok");
  });
});

describe("serverRoots", () => {
  const store =
    (system: string[], extra: string[] = []) =>
    (type: "system" | "extra"): string[] =>
      type === "system" ? system : extra;

  test("the kubeconfig's CA, else nothing when verification is skipped, else the system's and the extra", () => {
    const ca = Buffer.from("KUBECONFIG-CA");
    assert.deepEqual(serverRoots({ ca, rejectUnauthorized: true }, "s", store(["SYS"])), { ca, source: "kubeconfig" });
    assert.deepEqual(serverRoots({ rejectUnauthorized: false }, "s", store(["SYS"])), {
      source: "none: insecure-skip-tls-verify",
    });
    assert.deepEqual(serverRoots({ rejectUnauthorized: true }, "s", store(["SYS"], ["EXTRA"])), {
      ca: ["SYS", "EXTRA"],
      source: "system",
    });
  });

  test("an empty store throws, naming what to set", () => {
    assert.throws(() => systemRoots("https://k.example", store([])), /https:\/\/k\.example.*SSL_CERT_FILE/s);
    assert.deepEqual(systemRoots("x", store([], ["EXTRA"])), ["EXTRA"]);
  });
});
