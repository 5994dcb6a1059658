/**
 * A kubeconfig user's exec plugin, as the controller's client (KubeRest) runs it, against a local HTTPS server
 * that accepts the bearer tokens a test lets it: what client-go's exec authenticator does
 * (k8s.io/client-go/plugin/pkg/client/auth/exec/exec.go) — the credential kept until it expires, renewed once
 * when the server refuses it, the ExecCredential handed to the plugin, and the errors of a plugin that fails.
 */
import assert from "node:assert/strict";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { KubeApiError } from "./errors.js";
import { KubeRest } from "./rest.js";
import { createTestCa, type TestCa } from "./test-pki.test-helpers.js";

/**
 * An exec plugin (run as its own executable, so that errors name it): counts its runs by appending to the file
 * `runs` in its folder, writes its environment to `env-<run>.json`, and prints the token `token-<run>`, valid for
 * PLUGIN_VALID_MS from now when that is set. PLUGIN_FAIL makes it fail, PLUGIN_API_VERSION changes the
 * version it answers with.
 */
const PLUGIN = `#!${process.execPath}
import { appendFileSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
const dir = dirname(process.argv[1]);
appendFileSync(join(dir, "runs"), "x");
const run = readFileSync(join(dir, "runs"), "utf8").length;
writeFileSync(join(dir, "env-" + run + ".json"), JSON.stringify(process.env));
if (process.env.PLUGIN_FAIL) {
  process.stderr.write("no credentials for you\\n");
  process.exit(3);
}
const validMs = Number(process.env.PLUGIN_VALID_MS);
const status = { token: "token-" + run };
if (Number.isFinite(validMs)) status.expirationTimestamp = new Date(Date.now() + validMs).toISOString();
const apiVersion = process.env.PLUGIN_API_VERSION ?? "client.authentication.k8s.io/v1";
console.log(JSON.stringify({ apiVersion, kind: "ExecCredential", status }));
`;

const V1 = "client.authentication.k8s.io/v1";
const CONFIGMAPS = { group: "", version: "v1", plural: "configmaps", namespace: "ns" } as const;

/** One request the server received. */
interface Seen {
  method: string;
  path: string;
  token: string;
  status: number;
  body: string;
}

describe("an exec plugin's credential, as client-go keeps and renews it", () => {
  const root = mkdtempSync(join(tmpdir(), "exec-plugin-"));
  let ca: TestCa;
  let server: Server;
  let url = "";
  /** The tokens the server accepts; any other is refused with 401. */
  const accepted = new Set<string>();
  let seen: Seen[] = [];

  before(async () => {
    ca = createTestCa(root, "ca");
    server = createServer(ca.server("apiserver"), (req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", () => {
        const token = (req.headers.authorization ?? "").replace(/^Bearer /, "");
        const ok = accepted.has(token);
        seen.push({
          method: req.method ?? "",
          path: req.url ?? "",
          token,
          status: ok ? 200 : 401,
          body: Buffer.concat(chunks).toString("utf8"),
        });
        res.writeHead(ok ? 200 : 401, { "content-type": "application/json" });
        if (!ok) {
          res.end(JSON.stringify({ kind: "Status", status: "Failure", reason: "Unauthorized", code: 401 }));
        } else if (req.url?.includes("watch=true")) {
          res.end(JSON.stringify({ type: "ADDED", object: { metadata: { name: "watched" } } }) + "\n");
        } else {
          res.end(req.method === "GET" ? '{"items":[]}' : '{"metadata":{"name":"made"}}');
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });

  let made = 0;
  /**
   * A folder with the plugin and a kubeconfig whose user runs it with `exec` (merged over apiVersion v1,
   * interactiveMode Never) and whose cluster has `cluster` (merged over the test server).
   */
  function setUp(exec: Record<string, unknown> = {}, cluster: Record<string, unknown> = {}) {
    const dir = join(root, String(++made));
    const plugin = join(dir, "plugin.mjs");
    const kubeconfig = join(dir, "kubeconfig");
    return {
      dir,
      plugin,
      kubeconfig,
      write(): string {
        mkdirSync(dir, { recursive: true });
        writeFileSync(plugin, PLUGIN);
        chmodSync(plugin, 0o755);
        writeFileSync(
          kubeconfig,
          JSON.stringify({
            "current-context": "c",
            clusters: [{ name: "c", cluster: { server: url, "certificate-authority": ca.certFile, ...cluster } }],
            users: [
              { name: "u", user: { exec: { apiVersion: V1, command: plugin, interactiveMode: "Never", ...exec } } },
            ],
            contexts: [{ name: "c", context: { cluster: "c", user: "u" } }],
          }),
        );
        return kubeconfig;
      },
      runs(): number {
        const file = join(dir, "runs");
        return existsSync(file) ? readFileSync(file, "utf8").length : 0;
      },
    };
  }

  const validFor = (ms: number) => ({ env: [{ name: "PLUGIN_VALID_MS", value: String(ms) }] });

  test("a token refused with 401 runs the plugin again, once, and the request is sent again with the new one", async () => {
    const plugin = setUp();
    const api = KubeRest.connect(plugin.write());
    accepted.add("token-1");
    seen = [];
    try {
      await api.list(CONFIGMAPS);
      assert.equal(plugin.runs(), 1);

      // The server stops accepting the first token; the plugin's next one is good.
      accepted.delete("token-1");
      accepted.add("token-2");
      const created = await api.create(CONFIGMAPS, { metadata: { name: "after-401" } });
      assert.deepEqual(created, { metadata: { name: "made" } }, "the caller sees no error");
      assert.equal(plugin.runs(), 2, "the plugin ran again exactly once");
      assert.deepEqual(
        seen.map((s) => `${s.method} ${s.token} ${s.status}`),
        ["GET token-1 200", "POST token-1 401", "POST token-2 200"],
      );
      assert.equal(seen[2]?.body, seen[1]?.body, "the same body sent again");

      await api.list(CONFIGMAPS);
      assert.equal(plugin.runs(), 2, "the new token is kept");
    } finally {
      await api.close();
    }
  });

  test("requests refused together run the plugin once; a request refused again is not retried twice", async () => {
    const plugin = setUp();
    const api = KubeRest.connect(plugin.write());
    accepted.add("token-1");
    seen = [];
    try {
      await Promise.all([1, 2, 3, 4, 5].map(() => api.list(CONFIGMAPS)));
      assert.equal(plugin.runs(), 1, "the first requests share one run");

      accepted.delete("token-1");
      accepted.add("token-2");
      await Promise.all([1, 2, 3, 4, 5].map(() => api.list(CONFIGMAPS)));
      assert.equal(plugin.runs(), 2, "five requests refused the same token share one run");
      assert.equal(seen.filter((s) => s.token === "token-2").length, 5);

      // A new credential the server refuses too: the request fails with the 401 after one more run.
      accepted.delete("token-2");
      await assert.rejects(api.list(CONFIGMAPS), (err: unknown) => err instanceof KubeApiError && err.code === 401);
      assert.equal(plugin.runs(), 4, "one run for token-2 refused, one for token-3 refused on the retry");
    } finally {
      await api.close();
    }
  });

  test("a watch refused with 401 ends with the 401, and the next watch opens with the new token", async () => {
    const plugin = setUp();
    const api = KubeRest.connect(plugin.write());
    accepted.add("token-1");
    seen = [];
    const watchOnce = () =>
      new Promise<unknown>((resolve) => {
        void api.watch("/api/v1/namespaces/ns/configmaps", {}, () => undefined, resolve);
      });
    try {
      assert.equal(await watchOnce(), null);
      accepted.delete("token-1");
      accepted.add("token-2");
      const refused = await watchOnce();
      assert.equal((refused as { statusCode?: number }).statusCode, 401);
      assert.equal(plugin.runs(), 2, "the refusal ran the plugin");
      assert.equal(await watchOnce(), null, "the informer's next watch succeeds");
      assert.deepEqual(
        seen.map((s) => `${s.token} ${s.status}`),
        ["token-1 200", "token-1 401", "token-2 200"],
      );
    } finally {
      await api.close();
    }
  });

  test("a credential is kept until its expirationTimestamp, and the plugin runs again after it", async () => {
    const plugin = setUp(validFor(1500));
    const api = KubeRest.connect(plugin.write());
    for (let i = 1; i <= 3; i++) accepted.add(`token-${i}`);
    seen = [];
    try {
      await api.list(CONFIGMAPS);
      const issued = Date.now();
      await api.list(CONFIGMAPS);
      await api.list(CONFIGMAPS);
      assert.ok(Date.now() - issued < 1500, "the requests before expiry were quick enough to test");
      assert.equal(plugin.runs(), 1, "not run again before the credential expires");
      await new Promise((resolve) => setTimeout(resolve, 1500 - (Date.now() - issued) + 100));
      await api.list(CONFIGMAPS);
      await api.list(CONFIGMAPS);
      assert.equal(plugin.runs(), 2, "run again once after it expired");
      assert.deepEqual(
        seen.map((s) => s.token),
        ["token-1", "token-1", "token-1", "token-2", "token-2"],
      );
    } finally {
      await api.close();
    }
  });

  test("requests that find the credential expired together run the plugin once", async () => {
    const plugin = setUp(validFor(300));
    const api = KubeRest.connect(plugin.write());
    for (let i = 1; i <= 3; i++) accepted.add(`token-${i}`);
    try {
      await api.list(CONFIGMAPS);
      await new Promise((resolve) => setTimeout(resolve, 400));
      await Promise.all([1, 2, 3, 4, 5].map(() => api.list(CONFIGMAPS)));
      assert.equal(plugin.runs(), 2);
    } finally {
      await api.close();
    }
  });

  test("a credential that has already expired is used once, and the plugin runs for every request", async () => {
    const plugin = setUp(validFor(-1000));
    const api = KubeRest.connect(plugin.write());
    for (let i = 1; i <= 3; i++) accepted.add(`token-${i}`);
    seen = [];
    try {
      for (let i = 0; i < 3; i++) await api.list(CONFIGMAPS);
      assert.equal(plugin.runs(), 3);
      assert.deepEqual(
        seen.map((s) => s.token),
        ["token-1", "token-2", "token-3"],
      );
    } finally {
      await api.close();
    }
  });
});

describe("the ExecCredential and the plugin's environment, as client-go gives them", () => {
  const root = mkdtempSync(join(tmpdir(), "exec-plugin-env-"));
  let ca: TestCa;
  let server: Server;
  let url = "";

  before(async () => {
    ca = createTestCa(root, "ca");
    server = createServer(ca.server("apiserver"), (_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end('{"items":[]}');
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });

  let made = 0;
  function write(user: Record<string, unknown>, cluster: Record<string, unknown> = {}) {
    const dir = mkdtempSync(join(root, `${++made}-`));
    const plugin = join(dir, "plugin.mjs");
    writeFileSync(plugin, PLUGIN);
    chmodSync(plugin, 0o755);
    const exec = { command: plugin, ...user };
    const kubeconfig = join(dir, "kubeconfig");
    writeFileSync(
      kubeconfig,
      JSON.stringify({
        "current-context": "c",
        clusters: [{ name: "c", cluster: { server: url, "certificate-authority": ca.certFile, ...cluster } }],
        users: [{ name: "u", user: { exec } }],
        contexts: [{ name: "c", context: { cluster: "c", user: "u" } }],
      }),
    );
    const runs = () => (existsSync(join(dir, "runs")) ? readFileSync(join(dir, "runs"), "utf8").length : 0);
    const env = () => JSON.parse(readFileSync(join(dir, "env-1.json"), "utf8")) as Record<string, string | undefined>;
    return { kubeconfig, plugin, runs, env };
  }

  async function listWith(kubeconfig: string): Promise<void> {
    const api = KubeRest.connect(kubeconfig);
    try {
      await api.list(CONFIGMAPS);
    } finally {
      await api.close();
    }
  }

  test("KUBERNETES_EXEC_INFO: interactive false, no cluster unless provideClusterInfo; the plugin's env wins", async () => {
    const plain = write({
      apiVersion: V1,
      interactiveMode: "Never",
      env: [
        { name: "PLUGIN_GREETING", value: "hello" },
        { name: "HOME", value: "/elsewhere" },
      ],
    });
    await listWith(plain.kubeconfig);
    const env = plain.env();
    assert.deepEqual(JSON.parse(env.KUBERNETES_EXEC_INFO ?? "null"), {
      kind: "ExecCredential",
      apiVersion: V1,
      spec: { interactive: false },
    });
    assert.equal(env.PLUGIN_GREETING, "hello");
    assert.equal(env.HOME, "/elsewhere", "the kubeconfig's env over the process's");
    assert.equal(env.PATH, process.env.PATH, "the process's environment is inherited");

    const withCluster = write(
      { apiVersion: V1, interactiveMode: "IfAvailable", provideClusterInfo: true },
      {
        "tls-server-name": "api.example",
        "proxy-url": "http://127.0.0.1:1",
        extensions: [
          { name: "other", extension: { x: 1 } },
          { name: "client.authentication.k8s.io/exec", extension: { audience: "canary" } },
        ],
      },
    );
    // The plugin runs before the request, which then fails: the server is not api.example, the proxy not there.
    await assert.rejects(listWith(withCluster.kubeconfig));
    assert.deepEqual(JSON.parse(withCluster.env().KUBERNETES_EXEC_INFO ?? "null"), {
      kind: "ExecCredential",
      apiVersion: V1,
      spec: {
        cluster: {
          server: url,
          "tls-server-name": "api.example",
          "certificate-authority-data": ca.cert.toString("base64"),
          "proxy-url": "http://127.0.0.1:1",
          config: { audience: "canary" },
        },
        interactive: false,
      },
    });
  });

  test("v1beta1 (interactiveMode defaulting to IfAvailable), and a plugin answering another version is refused", async () => {
    const beta = write({
      apiVersion: "client.authentication.k8s.io/v1beta1",
      env: [{ name: "PLUGIN_API_VERSION", value: "client.authentication.k8s.io/v1beta1" }],
    });
    await listWith(beta.kubeconfig);
    assert.equal(
      (JSON.parse(beta.env().KUBERNETES_EXEC_INFO ?? "{}") as { apiVersion?: string }).apiVersion,
      "client.authentication.k8s.io/v1beta1",
    );

    const other = write({
      apiVersion: V1,
      interactiveMode: "Never",
      env: [{ name: "PLUGIN_API_VERSION", value: "client.authentication.k8s.io/v1beta1" }],
    });
    await assert.rejects(listWith(other.kubeconfig), {
      message: `exec plugin ${other.plugin}: configured to use API version ${V1}, plugin returned version client.authentication.k8s.io/v1beta1`,
    });
  });

  test("a plugin that must be interactive, or a v1 plugin without interactiveMode, is not run", async () => {
    const always = write({ apiVersion: V1, interactiveMode: "Always" });
    await assert.rejects(listWith(always.kubeconfig), {
      message: `exec plugin ${always.plugin}: cannot support interactive mode: standard input is unavailable`,
    });
    const unset = write({ apiVersion: V1 });
    await assert.rejects(listWith(unset.kubeconfig), {
      message: 'kubeconfig: user "u": interactiveMode must be specified to use exec authentication plugin',
    });
    assert.equal(always.runs() + unset.runs(), 0);
  });

  test("a plugin that fails: the error names the command, its exit code and its stderr", async () => {
    const failing = write({ apiVersion: V1, interactiveMode: "Never", env: [{ name: "PLUGIN_FAIL", value: "1" }] });
    await assert.rejects(listWith(failing.kubeconfig), {
      message: `exec plugin ${failing.plugin}: executable failed with exit code 3: no credentials for you`,
    });
    const missing = write({
      apiVersion: V1,
      interactiveMode: "Never",
      command: "/nonexistent/credential-plugin",
      installHint: "install it with: apt-get install credential-plugin",
    });
    await assert.rejects(listWith(missing.kubeconfig), {
      message:
        "exec plugin /nonexistent/credential-plugin: executable not found\n\n" +
        "install it with: apt-get install credential-plugin",
    });
  });
});
