/**
 * A client certificate from an exec plugin (client.authentication.k8s.io ExecCredential) that expires and is
 * replaced: the controller's client uses the new one for its next requests, against a TLS server that
 * requires client certificates and refuses the old one once it is replaced; a watch opened before the
 * rotation is left to finish on its connection.
 */
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { TLSSocket } from "node:tls";
import type { ServerResponse } from "node:http";
import { KubeRest } from "./rest.js";
import { createTestCa } from "./test-pki.test-helpers.js";

/**
 * Prints an ExecCredential: the first certificate, valid for 300 ms, until the file argv[6] exists; then the
 * second, valid for an hour.
 */
const PLUGIN = `
import { existsSync, readFileSync } from "node:fs";
const [firstCert, firstKey, secondCert, secondKey, rotated] = process.argv.slice(2);
const first = !existsSync(rotated);
const status = {
  clientCertificateData: readFileSync(first ? firstCert : secondCert, "utf8"),
  clientKeyData: readFileSync(first ? firstKey : secondKey, "utf8"),
  expirationTimestamp: new Date(Date.now() + (first ? 300 : 3600_000)).toISOString(),
};
console.log(JSON.stringify({ apiVersion: "client.authentication.k8s.io/v1", kind: "ExecCredential", status }));
`;

/** How long the first certificate is valid for (the plugin's 300 ms), and a margin. */
const FIRST_VALID_MS = 400;
const NAMESPACES = { group: "", version: "v1", plural: "namespaces" } as const;

describe("an exec plugin's client certificate, rotated", () => {
  const dir = mkdtempSync(join(tmpdir(), "exec-cert-"));
  let server: Server;
  let url = "";
  /** Set once the first certificate is replaced: the server refuses it from then on. */
  let rotated = false;
  /** The client certificate's common name of each request, in order. */
  const seen: string[] = [];
  /** Open connections by the common name of their client certificate. */
  const open = new Map<TLSSocket, string>();
  let watchResponse: ServerResponse | undefined;

  before(async () => {
    const serverCa = createTestCa(dir, "server-ca");
    const clientCa = createTestCa(dir, "client-ca");
    clientCa.client("first", "first");
    clientCa.client("second", "second");
    server = createServer(
      { ...serverCa.server("apiserver"), ca: clientCa.cert, requestCert: true, rejectUnauthorized: true },
      (req, res) => {
        const cn = String((req.socket as TLSSocket).getPeerCertificate().subject.CN);
        seen.push(cn);
        if (cn === "first" && rotated) {
          res.writeHead(401, { "content-type": "application/json" });
          res.end(JSON.stringify({ kind: "Status", status: "Failure", reason: "Unauthorized", code: 401 }));
          return;
        }
        res.writeHead(200, { "content-type": "application/json" });
        if (req.url?.includes("watch=true")) {
          watchResponse = res;
          res.write(JSON.stringify({ type: "ADDED", object: { metadata: { name: "before" } } }) + "\n");
          return;
        }
        res.end('{"items":[]}');
      },
    );
    server.on("secureConnection", (socket: TLSSocket) => {
      open.set(socket, String(socket.getPeerCertificate().subject.CN));
      socket.once("close", () => open.delete(socket));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });

  const openWith = (cn: string): number => [...open.values()].filter((c) => c === cn).length;

  async function until(what: string, check: () => boolean): Promise<void> {
    for (const start = Date.now(); !check(); await new Promise((r) => setTimeout(r, 20))) {
      if (Date.now() - start > 5_000) assert.fail(`timed out waiting for ${what}`);
    }
  }

  test("new requests use the new certificate; the watch opened before finishes on the old one", async () => {
    const plugin = join(dir, "plugin.mjs");
    writeFileSync(plugin, PLUGIN);
    const rotatedFile = join(dir, "rotated");
    const path = join(dir, "kubeconfig");
    writeFileSync(
      path,
      JSON.stringify({
        "current-context": "c",
        clusters: [{ name: "c", cluster: { server: url, "certificate-authority": join(dir, "server-ca.crt") } }],
        users: [
          {
            name: "u",
            user: {
              exec: {
                apiVersion: "client.authentication.k8s.io/v1",
                command: process.execPath,
                args: [
                  plugin,
                  ...["first", "second"].flatMap((f) => [`${f}.crt`, `${f}.key`].map((n) => join(dir, n))),
                  rotatedFile,
                ],
                interactiveMode: "Never",
              },
            },
          },
        ],
        contexts: [{ name: "c", context: { cluster: "c", user: "u" } }],
      }),
    );
    const api = KubeRest.connect(path, { env: {} });
    const events: string[] = [];
    let ended: unknown = "open";
    try {
      const watch = await api.watch(
        "/api/v1/namespaces",
        {},
        (_type, object) => events.push((object as { metadata: { name: string } }).metadata.name),
        (err) => (ended = err),
      );
      await until("the watch's first event", () => events.length === 1);
      await api.list(NAMESPACES);
      assert.deepEqual(seen, ["first", "first"]);
      assert.equal(openWith("first"), 2, "one connection for the watch and one for requests");

      // The first certificate, re-issued as it expires, keeps the pool.
      await new Promise((r) => setTimeout(r, FIRST_VALID_MS));
      await api.list(NAMESPACES);
      assert.deepEqual(seen, ["first", "first", "first"]);
      assert.equal(openWith("first"), 2, "the same connections");

      writeFileSync(rotatedFile, "");
      rotated = true;
      await new Promise((r) => setTimeout(r, FIRST_VALID_MS));
      for (let i = 0; i < 3; i++) await api.list(NAMESPACES);
      assert.deepEqual(
        seen.slice(3),
        ["second", "second", "second"],
        `requests after the rotation: ${seen.join(", ")}`,
      );
      await until("the idle connection of the old certificate closed", () => openWith("first") === 1);
      assert.equal(openWith("second"), 1, "one kept-alive connection for the three requests");

      // The watch stays on its connection and certificate, and that connection closes once it ends.
      watchResponse?.write(JSON.stringify({ type: "ADDED", object: { metadata: { name: "after" } } }) + "\n");
      await until("the watch's event after the rotation", () => events.length === 2);
      assert.deepEqual(events, ["before", "after"]);
      assert.equal(ended, "open");
      watchResponse?.end();
      await until("the watch ended", () => ended !== "open");
      await until("the old certificate's last connection closed", () => openWith("first") === 0);
      watch.abort();
    } finally {
      await api.close();
    }
  });
});
