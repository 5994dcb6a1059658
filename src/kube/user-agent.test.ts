import assert from "node:assert/strict";
import { mkdtemp, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, test } from "node:test";
import { KubeRest } from "./rest.js";
import { controllerUserAgent, packageVersion } from "./user-agent.js";

describe("controllerUserAgent", () => {
  test("canaryapp/<version> (<identity>), the version read from package.json", () => {
    assert.equal(controllerUserAgent("canaryapp-7d9f-x2k", "1.2.3"), "canaryapp/1.2.3 (canaryapp-7d9f-x2k)");
    assert.match(controllerUserAgent("pod-a"), /^canaryapp\/\d+\.\d+\.\d+\S* \(pod-a\)$/);
  });

  test("an identity with what a header comment may not carry is made safe", () => {
    assert.equal(controllerUserAgent("a(b)\\c\nd é", "1"), "canaryapp/1 (a_b__c_d _)");
  });

  test("packageVersion: the version field, or unknown without a readable one", async () => {
    const dir = await mkdtemp(join(tmpdir(), "canaryapp-version-"));
    await writeFile(join(dir, "good.json"), JSON.stringify({ version: "9.8.7" }));
    await writeFile(join(dir, "bad.json"), "{");
    assert.equal(packageVersion(pathToFileURL(join(dir, "good.json"))), "9.8.7");
    assert.equal(packageVersion(pathToFileURL(join(dir, "bad.json"))), "unknown");
    assert.equal(packageVersion(pathToFileURL(join(dir, "missing.json"))), "unknown");
  });
});

describe("KubeRest's userAgent", () => {
  test("is the User-Agent of every request and watch; without it, none is added", async () => {
    const agents: (string | undefined)[] = [];
    const server = createServer((req, res) => {
      agents.push(req.headers["user-agent"]);
      res.writeHead(200, { "content-type": "application/json" });
      res.end(req.url?.includes("watch=true") ? "" : JSON.stringify({ items: [] }));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const endpoint = {
      server: url,
      tls: { rejectUnauthorized: true },
      authenticate: () => Promise.resolve({}),
      source: "kubeconfig" as const,
    };
    const named = new KubeRest(endpoint, { userAgent: "canaryapp/1.0.0 (replica-a)" });
    const plain = new KubeRest(endpoint);
    try {
      const ref = { group: "apps", version: "v1", plural: "deployments", namespace: "shop" };
      await named.list(ref);
      await named.create(ref, { metadata: { name: "web" } });
      await named.apply({ ...ref, name: "web" }, {}, { fieldManager: "canaryapp" });
      await new Promise<void>((resolve, reject) => {
        void named
          .watch(
            "/apis/apps/v1/deployments",
            {},
            () => undefined,
            () => resolve(),
          )
          .catch(reject);
      });
      await plain.get({ ...ref, name: "web" });
    } finally {
      await named.close();
      await plain.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
    assert.deepEqual(agents.slice(0, 4), Array(4).fill("canaryapp/1.0.0 (replica-a)"));
    assert.equal(agents.length, 5);
    assert.equal(agents[4], undefined, "Node sends no User-Agent of its own");
  });
});
